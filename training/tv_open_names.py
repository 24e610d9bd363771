"""Slot values for the tv270m set (make_data.py --set tv270m): open lists of names that the call copies
as said (apps, channels, titles, people, topics the catalog does not list), each split into training
names and held-out dev names, and the English surfaces of numbers, clock times, durations, languages,
channels and apps. tv_de_values.py (tv-mini's values) is read, never changed.

Held-out names: a name of an open list is held out when the hash of HELDOUT_SALT, its list and the
name falls in the lowest HELDOUT_SHARE; training never draws it, the dev set's held-out-name lines
draw only such names. Made-up people are a held-out first name and a held-out last name (training
combines only training halves), so a held-out person is never produced in training either."""
import hashlib
import re

import tv_de_values as V

HELDOUT_SALT = "tv270m-names-1"
HELDOUT_SHARE = 0.25


def is_heldout(kind, name):
    h = hashlib.sha256((HELDOUT_SALT + "\x00" + kind + "\x00" + name).encode()).digest()
    return int.from_bytes(h[:4], "little") / 2 ** 32 < HELDOUT_SHARE


def split(kind, names):
    """(training names, held-out names) of one open list, in the list's order."""
    tr = [n for n in names if not is_heldout(kind, n)]
    ho = [n for n in names if is_heldout(kind, n)]
    assert tr and ho, kind
    return tr, ho


# ----------------------------------------------------------------------------------------------
# Open lists (the value is the name as said; none of them is in tv_de_values' normalized lists)

# apps: real ones tv-mini's list lacks and made-up ones
_APPS = """Pluto TV, Rakuten TV, MUBI, Netzkino, Jellyfin, Emby, SoundCloud, Audible, Amazon Music, Apple Music, Tidal,
Vimeo, Dailymotion, Instagram, Zoom, Skype, AccuWeather, Kicker, ZDFtivi, KiKA Player, Flimmit, Filmfriend, Alleskino,
Pantaflix, Discovery+, HBO Max, Hulu, Peacock, Canal+, Molotov, Tubi, Steam Link, GeForce Now, TuneIn, Podimo,
Radio Garden, Nebula, Curiosity Stream, BritBox, Shudder, Viki, Gaia, Freeletics, Duolingo, Chess Arena, Moovit,
Streamly, FlimmerBox, Kinokiste, SerienFux, Couchio, Glotzify, Zappix, Filmhafen, Bingefox, Screeny, Cinebox Plus,
Wolkenkino, Lumio, Vidora, Streamwerk, Kinomat, Sofaflix, Guckloch, Nordflimmer, TeleBuddy, Flixbeet, Vivaro,
Streamora, PopcornPal, Kinderkino Plus, Heimkino Go, Moviedrome, Tonwerk, Klangkiste, Radiolino, Sportzone Live,
Quizmaster, Fitbox TV, Yogamatte, Kochstudio Plus, Wetterfrosch, Newsdeck, Zeitgeist TV, Mediawolke, Bilderbuch"""
APPS_TRAIN, APPS_HELDOUT = split("app", [a.strip() for a in _APPS.replace("\n", " ").split(",")])

# channels: real ones tv-mini's list lacks (no number in the name, so nothing to normalize) and made-up ones
_CHANNELS = """Welt der Wunder, CNN, BBC World News, Euronews, France 24, Al Jazeera, München TV, TV Berlin,
Franken Fernsehen, Anixe, Health TV, Sky Krimi, Boomerang, Cartoon Network, National Geographic, History Channel,
Animal Planet, Discovery Channel, Spiegel Geschichte, Romance TV, Heimatkanal, Marco Polo TV, Sky Comedy, Sky Crime,
Sky Nature, Sky Documentaries, Warner TV Serie, Universal TV, Syfy, 13th Street, Kinowelt TV, Fix und Foxi, Juwelo,
HSE, Channel21, Gute Laune TV, Folx TV, Schlager Deluxe, Bloomberg, CNBC, Rai Uno, TRT Türk, Hamburg Eins Plus,
Nordlicht TV, Alpenblick TV, Rheinwelle, Sonnenkanal, FilmPlus, Donau TV, Ostsee TV, Heimat Plus, Krimikiste,
Leuchtturm TV, Harzfunk, Spreewelle, Kino Royal, Serienhaus, Lachkanal, Wissen Plus, Naturfenster, Bergblick TV,
Elbe Live, Weserland TV, Moselwelle, Inselkanal, Stadtfernsehen Süd, Klassik Kanal, Retro TV, Planet Abenteuer"""
CHANNELS_TRAIN, CHANNELS_HELDOUT = split("channel", [c.strip() for c in _CHANNELS.replace("\n", " ").split(",")])

# titles: real ones tv-mini's list lacks, in German and English
_TITLES_REAL = """Die Discounter, Der Bulle von Tölz, Tatort Münster, Das Traumschiff, Bares für Rares, Die Sendung mit der
Ente, Der Landarzt, Lindenstraße Revival, Pretty Little Liars, The Last of Us, House of the Dragon, The Mandalorian,
Wednesday, The Bear, Succession, Severance, Ted Lasso, Only Murders in the Building, The White Lotus, Fargo,
True Detective, Better Call Saul, Peaky Blinders, Downton Abbey, Call the Midwife, The Good Place, Parks and
Recreation, Brooklyn Nine-Nine, Schitt's Creek, Derry Girls, Fleabag, Normal People, Dogs of Berlin, 4 Blocks,
Dogs, Tribes of Europa, Kleo, Der Schwarm, Die Kaiserin, Liebes Kind, Der Palast, Blackout, Oderbruch,
Everything Everywhere All at Once, Past Lives, Anatomie eines Falls, Das Lehrerzimmer, Systemsprenger, Toni Erdmann,
Victoria, Der Hauptmann, Die Welle, Good Will Hunting, The Holdovers, Poor Things, Killers of the Flower Moon,
Arrival, Blade Runner, Gladiator, Amélie, Parasite, Spirited Away, Paddington, Wallace und Gussy, Die Olchis,
Der kleine Drache Kokosnuss, Feuerwehrmann Sam, Bluey, Die Sendung mit dem Hasen, Das Erbe der Guldenburgs,
Tierärztin Dr. Lotte, Hallo Heimat, Inas Nacht, Zervakis & Opdenhövel, Wer stiehlt mir die Show, Last One Laughing,
Das große Backen, Die Küchenschlacht, Lecker aufs Land, Kaum zu glauben, Gefragt und Gejagt"""
_TOWNS = ["Sylt", "Rügen", "Husum", "Passau", "Lindau", "Görlitz", "Wismar", "Bamberg", "Cuxhaven", "Konstanz",
          "Tübingen", "Usedom", "Borkum", "Garmisch", "Meißen", "Stralsund", "Lüneburg", "Hiddensee", "Kiel", "Zwiesel",
          "Flensburg", "Quedlinburg", "Eckernförde", "Celle", "Wernigerode", "Norderney", "Bautzen", "Landshut"]
_PLACES_EN = ["Brighton", "Dover", "Oxford", "Cornwall", "Boston", "Memphis", "Santa Fe", "Oslo", "Lisbon", "Havana",
              "Glasgow", "Dublin", "Austin", "Nevada", "Malibu", "Yukon", "Kyoto", "Marseille"]
_NOUNS_DE = ["Geheimnis", "Erbe", "Fluch", "Schatten", "Ruf", "Wächter", "Schwur", "Spur", "Sturm"]
_NOUNS_EN = ["Night", "Signal", "Harbor", "Witness", "Frontier", "Archive", "Orchard", "Lighthouse", "Circuit",
             "Garden", "Verdict", "Horizon", "Tide", "Cipher"]
_ADJ_EN = ["Silent", "Last", "Broken", "Hidden", "Golden", "Crimson", "Quiet", "Endless", "Lost", "Frozen"]
_SURNAMES_T = ["Brandner", "Falkenberg", "Hollmann", "Ostermeier", "Kranich", "Lindqvist", "Moreau", "Petrović",
               "Sandberg", "Wolters", "Hargreaves", "Delgado"]


def _invented_titles():
    out = []
    for t in _TOWNS:
        out += [f"Mord auf {t}", f"Die Kommissarin von {t}", f"Sommer in {t}", f"Hotel {t}", f"Die Bergwacht {t}",
                f"{t} ermittelt", f"Station {t}"]
    for n in _NOUNS_DE:
        for t in _TOWNS[:10]:
            out.append(f"Der {n} von {t}" if n in ("Fluch", "Schatten", "Ruf", "Wächter", "Schwur", "Sturm")
                       else f"Das {n} von {t}" if n in ("Geheimnis", "Erbe") else f"Die {n} von {t}")
    for s in _SURNAMES_T:
        out += [f"Kommissar {s}", f"Dr. {s}", f"Die {s}s", f"Agent {s}", f"The {s} Files"]
    for a in _ADJ_EN:
        for n in _NOUNS_EN:
            out.append(f"The {a} {n}")
    for p in _PLACES_EN:
        out += [f"Midnight in {p}", f"Return to {p}", f"{p} Heat", f"Murder in {p}"]
    return out


TITLES_TRAIN, TITLES_HELDOUT = split("title", [t.strip() for t in _TITLES_REAL.replace("\n", " ").split(",")]
                                     + _invented_titles())

# people: real names tv-mini's list lacks, and new first and last names for made-up people (disjoint from
# tv_de_values' FIRST_NAMES and LAST_NAMES)
_PEOPLE_REAL = """Cate Blanchett, Florence Pugh, Austin Butler, Ana de Armas, Oscar Isaac, Paul Mescal,
Emma Stone, Tilda Swinton, Idris Elba, Viola Davis, Mads Mikkelsen, Penélope Cruz, Javier Bardem, Isabelle Huppert,
Omar Sy, Diane Keaton, Anya Taylor-Joy, Jenna Ortega, Sydney Sweeney, Jacob Elordi, Saoirse Ronan, Greta Gerwig,
Denis Villeneuve, Bong Joon-ho, Hayao Miyazaki, Sönke Wortmann, Doris Dörrie, Tom Tykwer, Edgar Selge, Senta Berger,
Christiane Hörbiger, Armin Rohde, Anna Schudt, Ulrich Noethen, Katharina Thalbach, Bjarne Mädel, Milan Peschel,
Annette Frier, Cordula Stratmann, Kurt Krömer, Luke Mockridge, Enissa Amani, Hazel Brugger, Torsten Sträter,
Mirja Boes, Palina Rojinski, Collien Ulmen-Fernandes, Riccardo Simonetti, Motsi Mabuse, Jorge González,
Johann Lafer, Frank Rosin, Cornelia Poletto, Alfons Schuhbeck, Ranga Yogeshwar, Harald Lesch, Mai Thi Nguyen-Kim,
Dunja Hayali, Ingo Zamperoni, Marietta Slomka, Claus Kleber, Pinar Atalay, Judith Rakers, Linda Zervakis"""
_FIRST_NEW = """Annika, Bettina, Carla, Dörte, Elif, Fenja, Gesa, Helga, Imke, Jette, Kerstin, Linnea, Maren, Nadine,
Ortrud, Pia, Rieke, Silke, Tabea, Ulla, Vanessa, Wiebke, Yasemin, Zoe, Arne, Bastian, Cem, Detlef, Eike, Fynn, Gregor,
Hauke, Ingo, Jannik, Kai, Lasse, Mats, Nils, Onno, Piet, Ragnar, Sönke, Till, Volker, Wilko, Yannick, Arjun, Bogdan,
Dario, Esra, Farid, Goran, Ilka, Jovana, Kemal, Ludmila, Milan, Nadia, Ömer, Priya, Rasmus, Svetlana, Tarek, Vesna"""
_LAST_NEW = """Abeln, Brückner, Dahlke, Ehlers, Feddersen, Gerdes, Harms, Iwersen, Janssen, Kröger, Lüders, Mertens,
Nissen, Oltmanns, Paulsen, Quast, Rademacher, Siebert, Thiessen, Ulrich, Voss, Wendt, Zeller, Brandl, Danner,
Eichinger, Grabowski, Hinrichs, Jankowski, Kowalczyk, Lindemann, Marquardt, Niehaus, Osterkamp, Pietsch, Reimers,
Schwabe, Tietjen, Uhlig, Wegener, Ziemann, Albers, Böttcher, Claassen, Drews, Engelke, Fröhlich, Gottschalk,
Haverkamp, Isenberg, Jessen, Klinger, Lorenzen, Mahnke, Nordmann, Overbeck, Petersen, Rohwer, Stöver, Tamm"""
PEOPLE_TRAIN, PEOPLE_HELDOUT = split("person", [p.strip() for p in _PEOPLE_REAL.replace("\n", " ").split(",")])
FIRST_TRAIN, FIRST_HELDOUT = split("first", [p.strip() for p in _FIRST_NEW.replace("\n", " ").split(",")])
LAST_TRAIN, LAST_HELDOUT = split("last", [p.strip() for p in _LAST_NEW.replace("\n", " ").split(",")])
assert not set(FIRST_TRAIN + FIRST_HELDOUT) & set(V.FIRST_NAMES)
assert not set(LAST_TRAIN + LAST_HELDOUT) & set(V.LAST_NAMES)
assert not set(PEOPLE_TRAIN + PEOPLE_HELDOUT) & set(V.PEOPLE)
assert not set(TITLES_TRAIN + TITLES_HELDOUT) & {t for t, _ in V.TITLES}
assert not {a.lower() for a in APPS_TRAIN + APPS_HELDOUT} & {f.lower() for _, fs in V.APPS for f in fs}
assert not {c.lower() for c in CHANNELS_TRAIN + CHANNELS_HELDOUT} & {n.lower() for c in V.CHANNELS for n in c[1]}

# topics (search queries), German and English
_TOPICS_DE = """Tiefseefische, Bienen, Polarlichter, Wikinger, Pyramiden, Gebirgszüge, Raumfahrt, Klimawandel,
Zugreisen, Leuchttürme, Wölfe, Elefanten, Ritter, Piraten, Dinos, Segeln, Bergsteigen, Radrennen, Basketball, Darts,
Snooker, Eishockey, Kochduelle, Backshows, Gartenträume, Tiny Houses, Oldtimer, Motorräder, Flugzeuge, Schiffe,
Zauberei, Agentenfilme, Gangsterfilme, Katastrophenfilme, Musicals, Opern, Ballett, Jazz, Schlager, Volksmusik,
Kinderlieder, Gruselgeschichten, Mittelalter, Antike, Weltkriege, Kalter Krieg, Kunst, Architektur, Mode,
Psychologie, Ernährung, Fitness, Meditation, Tierbabys, Zoos, Safari, Island, Kanada, Australien, Norwegen, Paris"""
# English genres are said alone ("find crime dramas"; a genre with its kind word, "horror movies", is one phrase like
# "Horrorfilme" and gives no kind); subjects follow "about" ("movies about sharks")
_GENRES_EN = """crime dramas, cooking shows, horror movies, sci-fi, westerns, cartoons, romantic comedies, thrillers,
quiz shows, nature documentaries, true crime, stand-up comedy, anime, jazz concerts, Christmas movies, travel shows,
spy thrillers, sitcoms, reality TV, game shows, musicals, war films, period dramas, fantasy, action films, kids' shows,
talk shows, soap operas, mysteries, disaster movies"""
_SUBJECTS_EN = """sharks, space, dinosaurs, ancient Egypt, the Second World War, football, tennis, history, politics, cars,
baking, yoga, superheroes, vampires, zombies, volcanoes, horses, dogs, the ocean, Japan, Italy, London, New York,
the Moon, penguins, whales, castles, spies, pirates, climbing, surfing, chess, robots, the Titanic, climate change,
the Roman Empire, artificial intelligence, the Arctic, bees, trains"""
TOPICS_DE_TRAIN, TOPICS_DE_HELDOUT = split("topic", [t.strip() for t in _TOPICS_DE.replace("\n", " ").split(",")])
GENRES_EN_TRAIN, GENRES_EN_HELDOUT = split("topic", [t.strip() for t in _GENRES_EN.replace("\n", " ").split(",")])
SUBJECTS_EN_TRAIN, SUBJECTS_EN_HELDOUT = split("topic", [t.strip() for t in _SUBJECTS_EN.replace("\n", " ").split(",")])

# ----------------------------------------------------------------------------------------------
# English surfaces

_EN_ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
            "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
_EN_TENS = {20: "twenty", 30: "thirty", 40: "forty", 50: "fifty", 60: "sixty", 70: "seventy", 80: "eighty", 90: "ninety"}


def en_number_word(n, hyphen=True):
    """0..999 in English words ("twenty-five" or "twenty five", "one hundred and five")."""
    if n < 0 or n > 999:
        raise ValueError(n)
    if n < 20:
        return _EN_ONES[n]
    if n < 100:
        t, o = n - n % 10, n % 10
        return _EN_TENS[t] if o == 0 else _EN_TENS[t] + ("-" if hyphen else " ") + _EN_ONES[o]
    h, r = divmod(n, 100)
    return _EN_ONES[h] + " hundred" + ((" and " + en_number_word(r, hyphen)) if r else "")


def en_number_surface(rng, n, p_word=0.4):
    if n <= 999 and rng.random() < p_word:
        return en_number_word(n, hyphen=rng.random() < 0.6)
    return str(n)


def en_time_surface(rng, hh, mm):
    """A way to say hh:mm (24 h) in English, without "at"; never ambiguous between morning and evening."""
    forms = [f"{hh}:{mm:02d}", f"{hh:02d}:{mm:02d}"]
    h12 = hh % 12 or 12
    ampm = "am" if hh < 12 else "pm"
    word_h = en_number_word(h12)
    day_part = "in the evening" if hh >= 18 else "in the afternoon" if hh >= 12 else "at night" if hh == 0 else "in the morning"
    if mm == 0:
        forms += [f"{h12} {ampm}", f"{h12}{ampm}", f"{word_h} {ampm}"]
        if hh not in (0, 12):
            forms.append(f"{h12} o'clock {day_part}")
        if hh >= 18:
            forms += [f"{word_h} in the evening", f"{word_h} pm", f"{h12} in the evening"]
        if hh == 0:
            forms += ["midnight"] * 2
        if hh == 12:
            forms += ["noon", "midday"]
    else:
        minutes = en_number_word(mm) if mm >= 10 else "oh " + en_number_word(mm)
        forms += [f"{h12}:{mm:02d} {ampm}", f"{h12}:{mm:02d}{ampm}", f"{word_h} {minutes} {ampm}"]
        if mm == 15:
            forms += [f"quarter past {word_h} {day_part}", f"a quarter past {word_h} {ampm}"]
        if mm == 30:
            forms += [f"half past {word_h} {day_part}", f"half past {word_h} {ampm}"]
        if mm == 45:
            nxt = (hh + 1) % 24
            nh12 = nxt % 12 or 12
            forms += [f"quarter to {en_number_word(nh12)} {'am' if nxt < 12 else 'pm'}"]
    return rng.choice(forms)


def en_minutes(rng, minutes):
    """A duration in minutes as said in English, without a preposition ("an hour", "45 minutes")."""
    forms = []
    if minutes == 60:
        forms += ["an hour"] * 3 + ["one hour", "1 hour", "60 minutes", "sixty minutes"]
    elif minutes % 60 == 0:
        h = minutes // 60
        forms += [f"{h} hours", f"{en_number_word(h)} hours", f"{minutes} minutes"]
    if minutes == 30:
        forms += ["half an hour"] * 3 + ["thirty minutes"]
    if minutes == 90:
        forms += ["an hour and a half", "one and a half hours", "90 minutes", "ninety minutes"]
    if minutes == 15:
        forms += ["a quarter of an hour", "a quarter hour"]
    if minutes == 45:
        forms += ["three quarters of an hour"]
    if minutes == 150:
        forms += ["two and a half hours"]
    if minutes == 1:
        forms += ["a minute", "one minute", "1 minute"]
    elif minutes % 60 != 0 or minutes < 120:
        forms += [f"{minutes} minutes", f"{en_number_word(minutes, rng.random() < 0.6)} minutes"] * 2
        if minutes < 60:
            forms += [f"{minutes} mins"]
    return rng.choice(forms)


def en_seconds(rng, seconds):
    forms = []
    if seconds % 60 == 0:
        m = seconds // 60
        forms += ["a minute", "one minute", "1 minute"] if m == 1 else [f"{m} minutes", f"{en_number_word(m)} minutes"]
    if seconds == 30:
        forms += ["half a minute"]
    if seconds == 90:
        forms += ["a minute and a half", "one and a half minutes"]
    if seconds < 60 or seconds % 60 != 0 or seconds <= 120:
        forms += [f"{seconds} seconds", f"{en_number_word(seconds, rng.random() < 0.6)} seconds"] * 2 + [f"{seconds} secs"]
    return rng.choice(forms)


# languages: the value is the English name, which is also what an English speaker says
LANGUAGE_NAMES = [v for v, _, _ in V.LANGUAGES]

_DE_NUMBER_WORD = re.compile(r"\b(eins|zwei|drei|vier|fünf|sechs|sieben|acht|neun|zehn|elf|zwölf|vierundzwanzig)\b")


def en_channel_forms():
    """(value, names an English speaker uses) for tv_de_values' channels: the nominative forms without a
    German article or German number word ("Pro Sieben" stays: it is the brand's name)."""
    out = []
    for value, nom, _, _, _ in V.CHANNELS:
        names = [n for n in nom if not re.match(r"(der|die|das|den) ", n) and "Fernsehen" not in n
                 and not _DE_NUMBER_WORD.search(n)]
        if names:
            out.append((value, names))
    return out


_EN_APP_FORMS = {
    "Browser": ["the browser", "the web browser", "the internet browser"],
    "Play Store": ["the Play Store", "Google Play", "the app store"],
    "Settings": ["settings", "the settings", "the system settings", "the settings menu", "the TV settings"],
    "Media Player": ["the media player"],
    "Photos": ["photos", "my photos", "the photo gallery", "the photos app"],
    "Tagesschau": ["the Tagesschau app"],
    "ARD Mediathek": ["ARD Mediathek", "the ARD Mediathek", "the ARD media library"],
    "ZDF Mediathek": ["ZDF Mediathek", "the ZDF Mediathek", "the ZDF media library"],
    "Arte Mediathek": ["the Arte Mediathek", "Arte Mediathek"],
    "VLC": ["VLC", "the VLC player", "VLC player"],
}


def en_app_forms():
    """(value, names an English speaker uses) for tv_de_values' apps: German article forms dropped,
    "the X app" added for a single-name app."""
    out = []
    for value, forms in V.APPS:
        if value in _EN_APP_FORMS:
            out.append((value, list(_EN_APP_FORMS[value])))
            continue
        names = [f for f in forms if not re.match(r"(der|die|das|den) ", f)]
        if " " not in names[0]:
            names += [f"the {names[0]} app"]
        out.append((value, names))
    return out


# ----------------------------------------------------------------------------------------------
# Generated names (training only): pseudo-words from German- and English-looking syllables, in the forms
# names take (multi-word, "X TV", "X Live", "X 24", "X Plus", digits, hyphens, umlauts, 3-4 words) and, as
# typed, in lower case or ALL CAPS (the value is the name as typed). They teach copying a name whatever it
# looks like. The space is split like the lists: a generated name is held out when the hash of GEN_SALT and
# its lower-cased form falls in the lowest HELDOUT_SHARE; training draws only the other ones (gen_name), so a
# later dev set can draw held-out generated names that training never saw.

GEN_SALT = "tv270m-gen-1"
_SYL_DE = ["ber", "dor", "fal", "gen", "hal", "kan", "lin", "mar", "nor", "ost", "pel", "ran", "sel", "tor", "wal",
           "zin", "bräu", "föh", "grün", "hüt", "kör", "löw", "mü", "schön", "spä", "wö", "stein", "wald", "brück",
           "kel", "lau", "mos", "rin", "sau", "tel", "wen", "zel", "fink", "horn", "bach", "eck", "ling", "hau", "dal"]
_SYL_EN = ["bly", "cor", "dex", "fli", "gro", "jax", "kly", "lum", "mox", "nix", "pix", "quo", "ro", "sky", "tri", "vo",
           "wix", "zo", "zap", "vid", "flo", "stream", "bee", "ora", "lo", "ix", "ly", "ra", "tek", "vy", "za", "bit",
           "max", "go", "hub", "ster", "ton", "ville", "er", "io", "ify", "on", "et"]
_CH_SUFFIX = [" TV", " Live", " 24", " Plus", " HD", " Eins", " Zwei", " One", " Fernsehen", " Kanal", " Welle",
              " Kino", " Sport", " News", " Kids", " Classic", "+", " Gold", " Max", " Nord", " Süd"]
_APP_SUFFIX = [" TV", " Plus", "+", " Go", " Live", " Play", " Now", " Kids", " 24", " Max", " Music", " Fit", " Pro",
               " Box", " Stream", " Player", " Radio", " Cloud"]
_TITLE_WORDS_DE = ["Die", "Der", "Das", "von", "und", "im", "am", "auf", "der", "Kommissar", "Doktor", "Insel", "Haus",
                   "Nacht", "Sommer", "Geheimnis", "Fall", "Jagd", "Liebe", "Stadt", "Fluss", "Berg"]
_TITLE_WORDS_EN = ["The", "of", "and", "in", "the", "Night", "House", "Files", "Road", "Club", "Secret", "Island",
                   "Crew", "Legacy", "Chronicles", "Academy", "Agent", "Doctor", "Summer", "River"]


def _word(rng, lang=None, cap=True):
    lang = lang or rng.choice(["de", "en"])
    syl = _SYL_DE if lang == "de" else _SYL_EN
    n = rng.choice([2, 2, 2, 3, 3, 1]) if lang == "en" else rng.choice([2, 2, 3, 3, 2])
    w = "".join(rng.choice(syl) for _ in range(n))
    if len(w) < 3:
        w += rng.choice(syl)
    return w[0].upper() + w[1:] if cap else w


def _raw_gen_name(rng, kind, lang):
    r = rng.random()
    if kind == "person":
        first = _word(rng, lang)
        last = _word(rng, rng.choice(["de", "en"]))
        if r < 0.15:
            return f"{first} {_word(rng)}-{last}"
        if r < 0.25:
            return f"{first} {rng.choice(['von', 'van', 'de', 'Mc'])}{' ' if rng.random() < 0.7 else ''}{last}"
        return f"{first} {last}"
    if kind == "app":
        if r < 0.3:
            return _word(rng, lang)
        if r < 0.5:
            return _word(rng, lang) + rng.choice(_APP_SUFFIX)
        if r < 0.6:
            return _word(rng, lang) + _word(rng, lang)  # CamelCase: "FlimBox"
        if r < 0.7:
            return f"{_word(rng, lang)}-{_word(rng, lang)}"
        if r < 0.8:
            return f"{_word(rng, lang)} {rng.randint(2, 99)}"
        if r < 0.9:
            return f"{_word(rng, lang)} {_word(rng, lang)}" + (rng.choice(_APP_SUFFIX) if rng.random() < 0.4 else "")
        return _word(rng, lang).lower()  # typed in lower case by its maker: "tubix"
    if kind == "channel":
        if r < 0.2:
            return _word(rng, lang)
        if r < 0.55:
            return _word(rng, lang) + rng.choice(_CH_SUFFIX)
        if r < 0.65:
            return f"{_word(rng, lang)}-{_word(rng, lang)}" + (rng.choice(_CH_SUFFIX) if rng.random() < 0.5 else "")
        if r < 0.75:
            return f"{_word(rng, lang)}{rng.choice(['', ' '])}{rng.randint(1, 24)}"
        if r < 0.9:
            return f"{_word(rng, lang)} {_word(rng, lang)}{rng.choice(_CH_SUFFIX)}"
        return f"{_word(rng, lang)} {_word(rng, lang)} {_word(rng, lang)}" + (rng.choice(_CH_SUFFIX) if rng.random() < 0.5 else "")
    # title, subject, genre: 1-4 words, some with a number ("Kranix 2")
    words = _TITLE_WORDS_DE if lang == "de" else _TITLE_WORDS_EN
    if r < 0.25:
        t = _word(rng, lang)
    elif r < 0.45:
        t = f"{rng.choice(words[9:] if lang == 'de' else words[5:])} {_word(rng, lang)}"
    elif r < 0.7:
        t = f"{_word(rng, lang)} {rng.choice(words)} {_word(rng, lang)}"
    elif r < 0.85:
        t = f"{rng.choice([w for w in words[3:] if w[0].isupper()] if lang == 'de' else words[5:])} {_word(rng, lang)} {rng.choice(words[3:] if lang == 'de' else words[1:5])} {_word(rng, lang)}"
    else:
        t = f"{_word(rng, lang)} {_word(rng, lang)}"
    if rng.random() < 0.12:
        t += f" {rng.randint(2, 5) if rng.random() < 0.7 else rng.choice([2000, 3000, 24, 99])}"
    elif rng.random() < 0.06:
        t = t.replace(" ", "-", 1)
    return t[0].upper() + t[1:]


def gen_is_heldout(name):
    h = hashlib.sha256((GEN_SALT + "\x00" + name.lower()).encode()).digest()
    return int.from_bytes(h[:4], "little") / 2 ** 32 < HELDOUT_SHARE


_KNOWN_LOWER = None
GENERATED = set()  # the generated names drawn so far, lower-cased (make_data's statistics)


def _known():
    global _KNOWN_LOWER
    if _KNOWN_LOWER is None:
        _KNOWN_LOWER = ({n.lower() for c in V.CHANNELS for n in c[1]} | {f.lower() for _, fs in V.APPS for f in fs}
                        | {t.lower() for t, _ in V.TITLES} | {p.lower() for p in V.PEOPLE})
    return _KNOWN_LOWER


# words a generated name must not start with: a cue word or an article the templates put in front of a name
# ("Sender X", "die X App", "den X") would blur where the name starts
_NO_START = re.compile(r"(kanal|sender|channel|station|app|die|der|das|den|dem|the|auf|zu|im|am)\b", re.I)


def gen_name(rng, kind, lang):
    """A generated training name of a kind (app/channel/title/person/subject/genre): never a held-out one,
    never a name tv_de_values lists (whose value would be normalized)."""
    for _ in range(100):
        name = _raw_gen_name(rng, kind, lang)
        if gen_is_heldout(name) or name.lower() in _known():
            continue
        if _NO_START.match(name):  # titles too: "den X" is the article the sentence adds (-> X)
            continue
        GENERATED.add(name.lower())
        return name
    raise RuntimeError("no generated name")


def typed_case(rng, name, p_lower=0.12, p_upper=0.04):
    """The name as typed: mostly as written, sometimes all lower case or (short names) ALL CAPS."""
    r = rng.random()
    if r < p_lower:
        return name.lower()
    if r < p_lower + p_upper and len(name) <= 16:
        return name.upper()
    return name
