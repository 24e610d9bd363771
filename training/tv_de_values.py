"""Slot values for the German TV commands: channels, apps, titles, people, topics, languages,
numbers, times and durations, each with the surface forms a user says and the argument value the
call carries (the conventions are in training/README.md)."""
import re

# ----------------------------------------------------------------------------------------------
# German number words

_ONES = ["null", "eins", "zwei", "drei", "vier", "fünf", "sechs", "sieben", "acht", "neun", "zehn", "elf", "zwölf",
         "dreizehn", "vierzehn", "fünfzehn", "sechzehn", "siebzehn", "achtzehn", "neunzehn"]
_TENS = {20: "zwanzig", 30: "dreißig", 40: "vierzig", 50: "fünfzig", 60: "sechzig", 70: "siebzig", 80: "achtzig",
         90: "neunzig"}


def number_word(n):
    """0..999 as one German word ("einundzwanzig", "hundertfünf"); 1 is "eins"."""
    if n < 0 or n > 999:
        raise ValueError(n)
    if n < 20:
        return _ONES[n]
    if n < 100:
        t, o = n - n % 10, n % 10
        return _TENS[t] if o == 0 else ("ein" if o == 1 else _ONES[o]) + "und" + _TENS[t]
    h, r = divmod(n, 100)
    head = "hundert" if h == 1 else _ONES[h] + "hundert"
    return head + (number_word(r) if r else "")



# ----------------------------------------------------------------------------------------------
# Channels: (value, nominative forms, "auf ..." forms, dative/location forms, "zu ..." forms).
# A name without an article gets the default forms: [N], [auf N], [auf N, bei N], [zu N].
# The value is the name the user used, in its standard spelling (spelling variants such as "Pro 7"
# map to "ProSieben"; "ARD" and "das Erste" stay what they are).

_DIGIT_WORDS = ["null", "eins", "zwei", "drei", "vier", "fünf", "sechs", "sieben", "acht", "neun", "zehn", "elf", "zwölf"]


def _num_word(n):
    return _DIGIT_WORDS[n] if n < len(_DIGIT_WORDS) else number_word(n)


def spelling_variants(name):
    """The ways a channel name with a number is written: "Sport1" / "Sport 1" / "Sport eins",
    "ORF 1" / "ORF1" / "ORF eins", "Sat.1" / "Sat 1" / "Sat1" / "Sat eins", "3sat" / "3 Sat" / "drei Sat",
    "tagesschau24" / "tagesschau 24" / "tagesschau vierundzwanzig". A name without a number has none."""
    words = name.split(" ")
    out = [name]
    for i, w in enumerate(words):
        m = re.fullmatch(r"([^\W\d_]+)\.?(\d+)", w)          # "Sport1", "Sat.1", "tagesschau24"
        if m:
            stem, num = m.group(1), int(m.group(2))
            for alt in (f"{stem}{num}", f"{stem} {num}", f"{stem} {_num_word(num)}"):
                out.append(" ".join(words[:i] + [alt] + words[i + 1:]))
            continue
        m = re.fullmatch(r"(\d+)([^\W\d_]+)", w)              # "3sat"
        if m:
            num, rest = int(m.group(1)), m.group(2)
            cap = rest[0].upper() + rest[1:]
            for alt in (f"{num}{rest}", f"{num}{cap}", f"{num} {cap}", f"{_num_word(num)} {cap}"):
                out.append(" ".join(words[:i] + [alt] + words[i + 1:]))
            continue
        if w.isdigit() and i > 0:                                 # "ORF 1", "Kabel 1 Doku"
            num = int(w)
            for alt in (words[i - 1] + w, words[i - 1] + " " + _num_word(num)):
                out.append(" ".join(words[:i - 1] + [alt] + words[i + 1:]))
    seen, res = set(), []
    for n in out:
        if n not in seen:
            seen.add(n)
            res.append(n)
    return res


def _plain(value, *spoken):
    names = []
    for n in list(spoken) or [value]:
        names += [v for v in spelling_variants(n) if v not in names]
    return (value, names, ["auf " + n for n in names], [p + n for n in names for p in ("auf ", "bei ")],
            ["zu " + n for n in names])


CHANNELS = [
    ("ARD", ["ARD", "die ARD"], ["auf ARD", "auf die ARD"], ["in der ARD", "auf ARD", "bei der ARD", "im ARD"],
     ["zur ARD", "zu ARD"]),
    ("Das Erste", ["das Erste", "Das Erste"], ["aufs Erste", "auf das Erste", "auf Das Erste", "ins Erste"],
     ["im Ersten", "auf dem Ersten", "auf Das Erste"], ["zum Ersten", "ins Erste"]),
    ("ZDF", ["ZDF", "das ZDF", "ZDF", "das Zweite"], ["auf ZDF", "aufs ZDF", "auf das ZDF", "ins ZDF", "aufs Zweite"],
     ["im ZDF", "auf ZDF", "beim ZDF", "bei ZDF", "im Zweiten"], ["zum ZDF", "zu ZDF", "ins ZDF", "zum Zweiten"]),
    ("RTL", ["RTL"], ["auf RTL"], ["auf RTL", "bei RTL", "im RTL"], ["zu RTL"]),
    _plain("ProSieben", "ProSieben", "Pro Sieben", "Pro7", "Pro 7"),
    _plain("Sat.1", "Sat.1", "Sat 1", "Sat eins", "SAT.1"),
    _plain("VOX", "VOX", "Vox"),
    _plain("kabel eins", "kabel eins", "Kabel 1", "Kabel eins"),
    _plain("RTL II", "RTL II", "RTL 2", "RTL zwei", "RTL2"),
    ("Arte", ["Arte", "arte"], ["auf Arte", "auf arte"], ["auf Arte", "bei Arte", "im Arte"], ["zu Arte"]),
    _plain("3sat", "3sat"),
    _plain("ZDFneo", "ZDFneo", "ZDF neo", "ZDF Neo", "ZDF-neo"),
    _plain("ONE", "ONE", "One"),
    _plain("tagesschau24", "tagesschau24", "Tagesschau24"),
    _plain("Phoenix", "Phoenix"),
    ("KiKA", ["KiKA", "Kika", "KIKA", "den Kinderkanal"], ["auf KiKA", "auf Kika", "auf KIKA", "auf den Kinderkanal"],
     ["auf KiKA", "bei Kika", "im Kinderkanal", "im KiKA", "bei KIKA"], ["zu KiKA", "zum Kinderkanal", "zu KIKA"]),
    _plain("NDR", "NDR", "NDR Fernsehen"),
    _plain("WDR", "WDR", "WDR Fernsehen"),
    _plain("BR", "BR", "BR Fernsehen", "Bayerisches Fernsehen"),
    _plain("SWR", "SWR", "SWR Fernsehen"),
    _plain("MDR", "MDR", "MDR Fernsehen"),
    _plain("HR", "HR", "hr-fernsehen", "HR Fernsehen"),
    _plain("RBB", "RBB", "rbb", "RBB Fernsehen"),
    _plain("n-tv", "n-tv", "ntv", "n tv", "NTV", "N-TV"),
    _plain("WELT", "WELT", "Welt", "Welt TV"),
    _plain("Eurosport", "Eurosport", "Eurosport 1"),
    _plain("Sport1", "Sport1", "Sport 1"),
    _plain("DMAX", "DMAX", "D Max", "D-Max", "Dmax"),
    _plain("TLC", "TLC"),
    _plain("sixx", "sixx", "Sixx"),
    _plain("Super RTL", "Super RTL", "SuperRTL"),
    _plain("Tele 5", "Tele 5", "Tele5"),
    _plain("ServusTV", "ServusTV", "Servus TV"),
    _plain("Comedy Central", "Comedy Central"),
    _plain("Nickelodeon", "Nickelodeon", "Nick", "Nick TV"),
    _plain("Disney Channel", "Disney Channel"),
    _plain("ProSieben MAXX", "ProSieben MAXX", "ProSieben Maxx", "Pro7 Maxx", "Pro 7 Maxx"),
    _plain("RTLup", "RTLup", "RTL up", "RTL Up"),
    _plain("Bibel TV", "Bibel TV"),
    _plain("Sky Sport", "Sky Sport"),
    _plain("ORF 1", "ORF 1", "ORF eins"),
    _plain("SRF 1", "SRF 1", "SRF eins"),
    _plain("QVC", "QVC"),
    _plain("Kabel eins Doku", "Kabel eins Doku", "Kabel 1 Doku"),
    _plain("ORF 2", "ORF 2"),
    _plain("SRF 2", "SRF 2", "SRF zwei"),
    _plain("Eurosport 2", "Eurosport 2"),
    _plain("ZDFinfo", "ZDFinfo", "ZDF info", "ZDF Info"),
    _plain("ARD alpha", "ARD alpha", "ARD-alpha", "ARD Alpha"),
    _plain("Nitro", "Nitro", "RTL Nitro"),
    _plain("VOXup", "VOXup", "VOX up", "Vox up"),
    _plain("Sky Cinema", "Sky Cinema"),
    _plain("Sky Atlantic", "Sky Atlantic"),
    _plain("MTV", "MTV"),
    _plain("Deluxe Music", "Deluxe Music"),
]

# ----------------------------------------------------------------------------------------------
# Apps: (value, [surface forms]). Names in their usual spelling; the system settings are "Settings".

APPS = [
    ("Netflix", ["Netflix", "netflix"]),
    ("YouTube", ["YouTube", "Youtube", "You Tube"]),
    ("Disney+", ["Disney+", "Disney Plus", "Disney plus"]),
    ("ARD Mediathek", ["ARD Mediathek", "ARD-Mediathek", "die ARD Mediathek", "die Mediathek der ARD"]),
    ("ZDF Mediathek", ["ZDF Mediathek", "ZDF-Mediathek", "die ZDF Mediathek", "ZDFmediathek"]),
    ("Prime Video", ["Prime Video", "Amazon Prime", "Amazon Prime Video", "Prime", "Amazon Video"]),
    ("Spotify", ["Spotify"]),
    ("Joyn", ["Joyn"]),
    ("RTL+", ["RTL+", "RTL Plus", "RTL plus"]),
    ("DAZN", ["DAZN", "Dazn"]),
    ("Apple TV", ["Apple TV", "die Apple TV App"]),
    ("Paramount+", ["Paramount+", "Paramount Plus"]),
    ("MagentaTV", ["MagentaTV", "Magenta TV", "Magenta"]),
    ("WOW", ["WOW", "Wow"]),
    ("Zattoo", ["Zattoo"]),
    ("waipu.tv", ["waipu.tv", "Waipu", "waipu tv"]),
    ("Twitch", ["Twitch"]),
    ("Arte Mediathek", ["Arte Mediathek", "die Arte Mediathek"]),
    ("Plex", ["Plex"]),
    ("Kodi", ["Kodi"]),
    ("VLC", ["VLC", "den VLC Player"]),
    ("Sky Go", ["Sky Go"]),
    ("Crunchyroll", ["Crunchyroll"]),
    ("TikTok", ["TikTok", "Tiktok"]),
    ("Deezer", ["Deezer"]),
    ("Tagesschau", ["die Tagesschau App", "die Tagesschau-App"]),
    ("Browser", ["den Browser", "den Webbrowser", "Browser"]),
    ("Play Store", ["den Play Store", "Play Store", "Google Play"]),
    ("Settings", ["die Einstellungen", "Einstellungen", "das Einstellungsmenü", "die Systemeinstellungen"]),
    ("Media Player", ["den Mediaplayer", "den Media Player"]),
    ("Photos", ["die Fotos", "die Fotogalerie"]),
    ("YouTube Kids", ["YouTube Kids", "Youtube Kids"]),
]
# every app that is a name is also "die X App" / "die X-App" ("Öffne die Netflix App")
for _v, _forms in APPS:
    if _v not in ("Settings", "Browser", "Play Store", "Media Player", "Photos", "Tagesschau") and " " not in _forms[0]:
        _forms += [f"die {_forms[0]} App"] + ([] if "+" in _forms[0] else [f"die {_forms[0]}-App"])

# ----------------------------------------------------------------------------------------------
# Titles of programs: (title, gender) with gender m/f/n/pl for the article, or None when the title
# is used without one. The value is the title as it appears in the utterance, without the article.

TITLES = [
    ("Tatort", "m"), ("Tagesschau", "f"), ("heute journal", "n"), ("Tagesthemen", "pl"),
    ("Wer wird Millionär", None), ("Let's Dance", None), ("Traumschiff", "n"), ("Bergdoktor", "m"),
    ("Die Rosenheim-Cops", None), ("SOKO Leipzig", None), ("Polizeiruf 110", "m"), ("Sportschau", "f"),
    ("aktuelle Sportstudio", "n"), ("Germany's Next Topmodel", None), ("The Voice of Germany", None),
    ("Sturm der Liebe", None), ("Rote Rosen", None), ("Gute Zeiten, schlechte Zeiten", None),
    ("In aller Freundschaft", None), ("Sendung mit der Maus", "f"), ("Markus Lanz", None),
    ("Maischberger", None), ("hart aber fair", None), ("Terra X", None), ("Babylon Berlin", None),
    ("Dark", None), ("How I Met Your Mother", None), ("The Big Bang Theory", None),
    ("Stranger Things", None), ("Game of Thrones", None), ("Breaking Bad", None), ("Simpsons", "pl"),
    ("Harry Potter", None), ("Herr der Ringe", "m"), ("Star Wars", None), ("Titanic", None),
    ("Avatar", None), ("Das Boot", None), ("Der Schuh des Manitu", None), ("Keinohrhasen", None),
    ("Good Bye, Lenin!", None), ("Das Leben der Anderen", None), ("Lola rennt", None),
    ("Fack ju Göhte", None), ("Der Untergang", None), ("Inception", None), ("Interstellar", None),
    ("Brennpunkt", "m"), ("RTL Aktuell", None), ("Formel 1", "f"), ("Bundesliga", "f"),
    ("Champions League", "f"), ("Tour de France", "f"), ("Wetten, dass..?", None),
    ("Schlag den Star", None), ("Bauer sucht Frau", None), ("Ich bin ein Star", None),
    ("Die Höhle der Löwen", None), ("Das perfekte Dinner", None), ("Shopping Queen", None),
    ("Tierärztin Dr. Mertens", None), ("Die Bergretter", None), ("Der Alte", None),
    ("Ein Fall für zwei", None), ("Notruf Hafenkante", None), ("WaPo Bodensee", None),
    ("Hubert ohne Staller", None), ("Um Himmels Willen", None), ("Der Lehrer", None),
    ("Alarm für Cobra 11", None), ("Navy CIS", None), ("Grey's Anatomy", None), ("Friends", None),
    ("Two and a Half Men", None), ("Modern Family", None), ("The Crown", None), ("Bridgerton", None),
    ("Squid Game", None), ("Haus des Geldes", None), ("Der Pate", None), ("Matrix", None),
    ("Jurassic Park", None), ("Zurück in die Zukunft", None), ("Forrest Gump", None), ("Der König der Löwen", None),
    ("Die Eiskönigin", None), ("Findet Nemo", None), ("Shrek", None), ("Toy Story", None),
    ("James Bond", None), ("Mission Impossible", None), ("Fluch der Karibik", None), ("Pippi Langstrumpf", None),
    ("Biene Maja", "f"), ("Sandmännchen", "n"), ("Peppa Wutz", None), ("Paw Patrol", None),
    ("Löwenzahn", None), ("logo!", None), ("Checker Tobi", None), ("Heidi", None), ("Wickie", None),
    ("ZDF Magazin Royale", "n"), ("extra 3", None), ("heute-show", "f"), ("Anstalt", "f"),
    ("Mord mit Aussicht", None), ("Der Kommissar und das Meer", None), ("Nord bei Nordwest", None),
    ("Wilsberg", None), ("Die Chefin", None), ("Der Staatsanwalt", None), ("Die Kanzlei", None),
    ("Quizduell", "n"), ("Gefragt - Gejagt", None), ("Wer weiß denn sowas?", None), ("Pointless", None),
    ("Galileo", None), ("Abenteuer Leben", None), ("Frauentausch", None), ("Die Sendung mit dem Elefanten", None),
    ("Musikantenstadl", "m"), ("Fernsehgarten", "m"), ("Eurovision Song Contest", "m"), ("Dschungelcamp", "n"),
    ("Morgenmagazin", "n"), ("Mittagsmagazin", "n"), ("Frühstücksfernsehen", "n"), ("Wetterbericht", "m"),
    ("Lindenstraße", "f"), ("Rentnercops", "pl"), ("Großstadtrevier", "n"), ("Fast & Furious", None),
    ("Die Tribute von Panem", None), ("Der Hobbit", None), ("Pulp Fiction", None), ("Oppenheimer", None),
    ("Barbie", None), ("Dune", None), ("Top Gun", None), ("Rocky", None), ("Rambo", None), ("Tschick", None),
    ("Vorstadtweiber", None), ("Charité", None), ("Der Tatortreiniger", None), ("Kitchen Impossible", None),
    ("Die Anstalt", None), ("Mario Barth deckt auf", None), ("Verstehen Sie Spaß?", None), ("Nuhr im Ersten", None),
    ("Sherlock", None), ("Stromberg", None), ("Pastewka", None), ("Mord ist ihr Hobby", None), ("Schwarzwaldklinik", "f"),
    ("Dahoam is Dahoam", None), ("Schloss Einstein", None), ("Die Pfefferkörner", None), ("Bibi Blocksberg", None),
    ("Benjamin Blümchen", None), ("Asterix", None), ("Avengers", None), ("Spider-Man", None), ("Batman", None),
    ("Ghostbusters", None), ("Das Wunder von Bern", None), ("Sonnenallee", None), ("Im Westen nichts Neues", None),
    ("Kontraste", None), ("Monitor", None), ("Panorama", None), ("Plusminus", None), ("Brisant", None),
    ("Exclusiv", None), ("Explosiv", None), ("taff", None), ("Doctor Who", None), ("The Office", None),
    ("Tagesschau um acht", "f"), ("Weltspiegel", "m"), ("Sportstudio", "n"), ("Ku'damm 56", None), ("SOKO München", None),
]

# People: well-known names plus combinations of common first and last names (so that the model learns
# to copy names it has never seen whole). The value is the name as it appears in the utterance.
PEOPLE = [
    "Til Schweiger", "Matthias Schweighöfer", "Elyas M'Barek", "Moritz Bleibtreu", "Heike Makatsch",
    "Diane Kruger", "Christoph Waltz", "Daniel Brühl", "Nora Tschirner", "Jan Josef Liefers", "Axel Prahl",
    "Brad Pitt", "Tom Hanks", "Meryl Streep", "Leonardo DiCaprio", "Julia Roberts", "Scarlett Johansson",
    "Günther Jauch", "Thomas Gottschalk", "Helene Fischer", "Stefan Raab", "Joko Winterscheidt",
    "Klaas Heufer-Umlauf", "Barbara Schöneberger", "Anke Engelke", "Bastian Pastewka", "Christoph Maria Herbst",
    "Olli Dittrich", "Iris Berben", "Veronica Ferres", "Mario Adorf", "Götz George", "Manfred Krug",
    "Uschi Glas", "Hannelore Elsner", "Sandra Bullock", "Tom Cruise", "Johnny Depp", "Keanu Reeves",
    "Morgan Freeman", "Denzel Washington", "Angelina Jolie", "Jennifer Lawrence", "Emma Watson",
    "Daniel Craig", "Bruce Willis", "Arnold Schwarzenegger", "Sylvester Stallone", "Jackie Chan",
    "Heinz Rühmann", "Loriot", "Otto Waalkes", "Michael Bully Herbig", "Karoline Herfurth", "Jella Haase",
    "Florian David Fitz", "Tom Schilling", "Ulrich Tukur", "Maria Furtwängler", "Wotan Wilke Möhring",
    "Devid Striesow", "Ulrike Folkerts", "Dietmar Bär", "Klaus J. Behrendt", "Martin Wuttke",
    "Jürgen Vogel", "Katja Riemann", "Alexandra Maria Lara", "Sibel Kekilli", "Fahri Yardim",
    "Frederick Lau", "Nina Hoss", "Sandra Hüller", "Lars Eidinger", "Margot Robbie", "Ryan Gosling",
    "Cillian Murphy", "Pedro Pascal", "Zendaya", "Timothée Chalamet", "Quentin Tarantino",
    "Steven Spielberg", "Christopher Nolan", "Wim Wenders", "Fatih Akin", "Werner Herzog",
    "Horst Lichter", "Steffen Henssler", "Tim Mälzer", "Dieter Bohlen", "Heidi Klum", "Kai Pflaume",
    "Jörg Pilawa", "Frank Plasberg", "Sandra Maischberger", "Caren Miosga", "Jan Böhmermann",
    "Dieter Nuhr", "Hape Kerkeling", "Carolin Kebekus", "Mark Forster", "Florian Silbereisen",
]

FIRST_NAMES = [
    "Anna", "Lena", "Lisa", "Julia", "Laura", "Sarah", "Hannah", "Lea", "Marie", "Sophie", "Emma", "Mia",
    "Katharina", "Johanna", "Clara", "Paula", "Greta", "Ida", "Nele", "Frieda", "Petra", "Sabine", "Monika",
    "Ursula", "Birgit", "Claudia", "Andrea", "Karin", "Susanne", "Renate", "Jana", "Svenja", "Miriam",
    "Lukas", "Jonas", "Leon", "Finn", "Paul", "Felix", "Max", "Elias", "Noah", "Ben", "Tim", "Jan",
    "Niklas", "Moritz", "David", "Philipp", "Simon", "Tobias", "Florian", "Stefan", "Michael", "Thomas",
    "Andreas", "Markus", "Peter", "Klaus", "Jürgen", "Wolfgang", "Dieter", "Uwe", "Frank", "Bernd",
    "Oliver", "Sebastian", "Christian", "Alexander", "Daniel", "Matthias", "Carsten", "Torsten", "Henrik",
    "Emil", "Anton", "Theo", "Oskar", "Karl", "Friedrich", "Ole", "Malte", "Hanna", "Ayşe", "Mehmet",
    "Can", "Deniz", "Emre", "Leyla", "Olga", "Igor", "Pierre", "Marco", "Giulia", "Luca", "Sofia", "Ana",
    "John", "Emily", "James", "Olivia", "Kevin", "Jessica", "Chris", "Kate", "Nick", "Amy",
]
LAST_NAMES = [
    "Müller", "Schmidt", "Schneider", "Fischer", "Weber", "Meyer", "Wagner", "Becker", "Schulz", "Hoffmann",
    "Schäfer", "Koch", "Bauer", "Richter", "Klein", "Wolf", "Schröder", "Neumann", "Schwarz", "Zimmermann",
    "Braun", "Krüger", "Hofmann", "Hartmann", "Lange", "Schmitt", "Werner", "Schmitz", "Krause", "Meier",
    "Lehmann", "Schmid", "Schulze", "Maier", "Köhler", "Herrmann", "König", "Walter", "Mayer", "Huber",
    "Kaiser", "Fuchs", "Peters", "Lang", "Scholz", "Möller", "Weiß", "Jung", "Hahn", "Schubert", "Vogel",
    "Friedrich", "Keller", "Günther", "Frank", "Berger", "Winkler", "Roth", "Beck", "Lorenz", "Baumann",
    "Franke", "Albrecht", "Schuster", "Simon", "Ludwig", "Böhm", "Winter", "Kraus", "Martin", "Schumacher",
    "Krämer", "Vogt", "Stein", "Jäger", "Otto", "Sommer", "Groß", "Seidel", "Heinrich", "Brandt", "Haas",
    "Schreiber", "Graf", "Dietrich", "Ziegler", "Kuhn", "Kühn", "Pohl", "Engel", "Horn", "Busch", "Bergmann",
    "Thomas", "Voigt", "Sauer", "Arnold", "Wolff", "Pfeiffer", "Yılmaz", "Kaya", "Demir", "Nowak", "Kowalski",
    "Rossi", "Smith", "Johnson", "Brown", "Miller", "Davis", "Wilson", "Taylor", "Anderson", "Garcia",
]

# Topics and genres people search for (free text, copied as said).
TOPICS = [
    "Krimis", "Komödien", "Tierdokus", "Naturdokus", "Dokus über Haie", "Kochsendungen", "Fußball",
    "Horrorfilme", "Science-Fiction", "Western", "Zeichentrickfilme", "Liebesfilme", "Thriller",
    "Quizshows", "Nachrichten", "Actionfilme", "Fantasy", "Dokumentationen über den Weltraum",
    "Reisedokus", "Musikvideos", "Konzerte", "Tennis", "Handball", "Formel 1", "Skispringen", "Biathlon",
    "Kinderserien", "Animes", "Märchen", "Heimatfilme", "Kriegsfilme", "Historienfilme", "Dinosaurier",
    "Ägypten", "Römer", "Vulkane", "Autos", "Eisenbahnen", "Gartenthemen", "Heimwerken", "Yoga",
    "Weihnachtsfilme", "Halloween", "Olympia", "Boxen", "Schach", "Wissenschaft", "Geschichte",
    "Politik", "Börse", "Wetter", "Kabarett", "Stand-up-Comedy", "Talkshows", "Mystery", "Superhelden",
    "Pferde", "Hunde", "Katzen", "Berlin", "Hamburg", "die Alpen", "Italien", "Japan", "den Mond",
]

# ----------------------------------------------------------------------------------------------
# Languages: value (English name, as the catalog's descriptions write them) -> German forms:
# noun ("Englisch"), adjective stem ("englisch").

LANGUAGES = [
    ("German", "Deutsch", "deutsch"), ("English", "Englisch", "englisch"), ("French", "Französisch", "französisch"),
    ("Spanish", "Spanisch", "spanisch"), ("Italian", "Italienisch", "italienisch"), ("Turkish", "Türkisch", "türkisch"),
    ("Polish", "Polnisch", "polnisch"), ("Russian", "Russisch", "russisch"), ("Dutch", "Niederländisch", "niederländisch"),
    ("Arabic", "Arabisch", "arabisch"), ("Japanese", "Japanisch", "japanisch"), ("Portuguese", "Portugiesisch", "portugiesisch"),
    ("Greek", "Griechisch", "griechisch"), ("Swedish", "Schwedisch", "schwedisch"), ("Danish", "Dänisch", "dänisch"),
    ("Chinese", "Chinesisch", "chinesisch"), ("Korean", "Koreanisch", "koreanisch"), ("Ukrainian", "Ukrainisch", "ukrainisch"),
    ("Czech", "Tschechisch", "tschechisch"), ("Hungarian", "Ungarisch", "ungarisch"), ("Croatian", "Kroatisch", "kroatisch"),
]
# the most frequent ones get more weight when sampling
LANGUAGE_WEIGHTS = [6, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]

def number_surface(rng, n, p_word=0.4):
    """n as digits or as a word."""
    if n <= 999 and rng.random() < p_word:
        return number_word(n)
    return str(n)


# ----------------------------------------------------------------------------------------------
# Times "HH:MM" and how they are said

_HOUR_WORDS = {h: number_word(h) for h in range(25)}
_HOUR_WORDS[1] = "ein"


def time_surface(rng, hh, mm):
    """A way to say the clock time hh:mm (24 h) -> text without the leading "um"."""
    forms = [f"{hh}:{mm:02d}", f"{hh}:{mm:02d} Uhr", f"{hh}.{mm:02d} Uhr", f"{hh} Uhr {mm}" if mm else f"{hh} Uhr"]
    words = f"{_HOUR_WORDS[hh]} Uhr" + (f" {number_word(mm)}" if mm else "")
    forms += [words] * 2
    if mm == 0:
        forms += [f"{hh} Uhr"] * 3
    if hh >= 13 and hh <= 23:
        h12 = hh - 12
        if mm == 0:
            forms += [f"{_HOUR_WORDS[h12]} Uhr abends" if hh >= 18 else f"{_HOUR_WORDS[h12]} Uhr nachmittags",
                      f"{h12} Uhr abends" if hh >= 18 else f"{h12} Uhr nachmittags"]
        if mm == 30 and hh >= 18:
            forms += [f"halb {_HOUR_WORDS[h12 + 1] if h12 + 1 != 1 else 'eins'} abends"]
        if mm == 15 and hh >= 18:
            forms += [f"Viertel nach {_HOUR_WORDS[h12] if h12 != 1 else 'eins'} abends"]
    return rng.choice(forms)


def sample_clock(rng):
    """A plausible program start: mostly evening, on the quarter hours and a few odd minutes."""
    hh = rng.choice([20] * 6 + [21] * 4 + [22] * 3 + [19] * 3 + [18] * 2 + [23, 17, 16, 15, 14, 12, 10, 9, 8, 6, 0])
    mm = rng.choice([0] * 6 + [15] * 5 + [30] * 4 + [45] * 2 + [5, 10, 20, 25, 35, 40, 50, 55, 10, 40])
    return hh, mm
