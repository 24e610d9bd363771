"""Colloquial and indirect German TV commands for the tv270m set: contractions ("ma", "nen", "kannste",
"gibt's", "nix"), particles ("halt", "eben", "gell"), dialect-ish words ("des", "wat", "heut", "grad",
"bissl"), slang ("Glotze", "Kiste", "Bock auf"), and requests said as statements or questions ("Mir ist
das zu laut", "Ich versteh kein Wort", "Was kommt heut?"). The slots are tv_de_templates.py's (each intent uses the
sampler of the tv_de_templates intent of the same name), so the arguments follow the same conventions.

Decisions (training/README.md, "Conventions"):
  - not hearing or not understanding the words ("Ich versteh kein Wort", "Man hört ja nix") -> set_volume up,
    as tv_de_templates.py's templates say; a language, dialect or accent one does not understand ("Ich versteh den
    Dialekt nicht") -> set_subtitles on.
  - "lautlos" is mute on; "lautlos aus" is mute off.
  - vague guide questions: "Was kommt heut?" -> show_guide{day: today}; "Was läuft heut Abend?" -> day today,
    time evening; "Was läuft so?" (no day, no channel) -> show_guide{}; with a channel and no time ->
    get_program_info{channel}; "grad"/"jetzt" -> get_program_info{when: now}."""
import tv_de_templates
from tv270m_intent import Intent

COLLOQ = {
    "switch_name": """
Mach ma {ch} an
Mach mal {ch} rein
Schalt ma {auf}
Zapp mal rüber {zu}
Gib mal {ch}
Geh ma {auf}, da kommt Fußball
Kannste mal {auf} umschalten?
Schalt halt {auf}
Mach doch ma {ch}
Ich will {ch} gucken, schalt mal um
Lass ma {ch} laufen
Wechsel ma {zu}
Hau mal {ch} rein
Tu mal {ch} rein
Bitte ma {auf} schalten
{ch} wär jetzt gut
Wie wär's mit {ch}?
Lieber {ch}, das hier is langweilig
Ey, schalt {auf}
Geh mal rüber {auf}
Schalt ma um {auf}, gell
Könn wir {ch} gucken?
Ich hätt gern {ch}
Kannste {ch} reinmachen?
Schalt mal fix {auf}
Komm, mach {ch}
""",
    "switch_number": """
Mach ma Kanal {num}
Schalt ma auf die {num}
Geh ma auf Kanal {num}
Die {num} bitte
Kannste auf Kanal {num} gehen?
Drück mal die {num}
Mach mal Programm {num}
Kanal {num}, aber zackig
Schalt halt auf Programmplatz {num}
""",
    "volume_level": """
Mach ma Lautstärke {level}
Dreh mal auf {level}
Stell den Ton ma auf {level}
Lautstärke {level}, danke
Ton auf {level}, ja
Kannste die Lautstärke auf {level} machen?
Mach die Lautstärke halt auf {level}
Lautstärke auf {level}, des reicht
""",
    "volume_up": """
Mach ma lauter
Dreh ma auf
Kannste lauter machen?
Man hört ja gar nix
Ich hör nix
Lauter, ich hör nix
Bissl lauter
Ein bissel lauter bitte
Des is zu leis
Mach mal lauter, Mensch
Ich versteh kein Wort
Ich versteh ja kein Wort
Hä? Lauter!
Die reden so leise
Mach ma n bisschen lauter
Dreh halt mal auf
Das ist ja voll leise
Hört man ja gar nich
Mir ist das zu leise
Kannste ma aufdrehen?
Lauter, aber ordentlich
Da versteht man ja nix
""",
    "volume_down": """
Mir ist das zu laut
Mach ma leiser
Dreh ma runter
Kannste leiser machen?
Boah, ist das laut
Das dröhnt ja total
Nicht so laut, Mensch
Des is zu laut
Bissl leiser
Ein bissel leiser bitte
Mach mal leiser, die Kleine schläft
Dreh halt mal runter
Zu laut, zu laut
Das ist ja ohrenbetäubend
Leiser, die Nachbarn klopfen schon
Geht's auch leiser?
Da fallen einem ja die Ohren ab
Mir dröhnt der Schädel, mach leiser
Kannste des leiser drehen?
Viel zu laut hier
""",
    "volume_steps_up": """
Mach ma {steps} Stufen lauter
Dreh mal {steps} Striche hoch
{steps} Stufen rauf, bitte
Kannste {steps} lauter machen?
Um {steps} lauter, ja
Gib ma {steps} Stufen mehr
""",
    "volume_steps_down": """
Mach ma {steps} Stufen leiser
Dreh mal {steps} Striche runter
{steps} Stufen runter, bitte
Kannste {steps} leiser machen?
Um {steps} leiser, ja
Nimm ma {steps} Stufen weg
""",
    "mute_on": """
Mach mal lautlos
Lautlos
Lautlos bitte
Ton weg, ich telefonier
Schalt ma stumm
Halt mal die Klappe
Ruhe jetzt!
Ton aus, aber schnell
Mach ma den Ton aus
Psst, Ton weg
Kannste mal stumm machen?
Mach die Kiste mal stumm
Stumm, bitte, Telefon
Ich muss telefonieren, mach ma lautlos
Sei mal still
Stell auf lautlos
Lautlos schalten
Mach ma Ruhe
""",
    "mute_off": """
Lautlos aus
Mach mal den Ton wieder an
Ton wieder rein
Stumm aus
Kannste den Ton wieder anmachen?
Ich hör nix mehr, Ton wieder an
Mach mal wieder Ton
Ton her
Nich mehr stumm
Schalt den Ton wieder ein, ja
Lautlos ausschalten
Lautlos weg
""",
    "playback_pause": """
Pausier mal
Pausier ma kurz
Halt mal kurz an, ich muss aufs Klo
Moment mal, anhalten
Stopp mal eben
Mach ma Pause
Warte mal kurz
Halt an, halt an
Kurz Pause, ja?
Anhalten bitte, ich hol mir was
Mach mal Standbild
Pausier des mal
Kannste mal pausieren?
Halt ma den Film an
Film anhalten, es klingelt
Pausieren, schnell
""",
    "playback_play": """
Weiter geht's
Lass weiterlaufen
Kann weitergehen
Weiter im Text
Los, weiter
Mach ma weiter
Spiel ma weiter
So, weiter
Bin wieder da, weiter
Kannste weitermachen?
Weiterspielen bitte
Pause vorbei
Lass ma weiterlaufen
""",
    "playback_stop": """
Schluss jetzt
Aus mit dem Film
Beend das mal
Das reicht, stopp
Hör auf damit
Stopp, stopp, stopp
Kannste das stoppen?
Brich ab
Film stoppen, is langweilig
Mach Schluss mit dem Film
""",
    "playback_forward": """
Spul mal vor
Spul ma vor, das ist langweilig
Überspring das mal
Werbung überspringen
Spring mal nach vorne
Vorspulen, aber flott
Kannste vorspulen?
Weiter vor, bitte
""",
    "playback_rewind": """
Spul ma zurück, hab nix mitgekriegt
Spul mal zurück
Nochmal zurück, was hat der gesagt?
Geh mal n Stück zurück
Zurückspulen, bitte
Kannste zurückspulen?
Das hab ich nich mitgekriegt, zurück
""",
    "playback_restart": """
Nochmal von vorn das Ganze
Fang nochmal von vorne an
Von vorn, bitte
Mach mal von vorne
Nochmal ganz von vorne
Kannste das von vorne starten?
Zurück auf Anfang
""",
    "playback_forward_sec": """
Spul mal {sec} vor
Spring ma {sec} nach vorn
{sec} vor, bitte
Kannste {sec} vorspulen?
Überspring ma {sec}
""",
    "playback_rewind_sec": """
Spul ma {sec} zurück
Geh mal {sec} zurück
{sec} zurück, hab was verpasst
Kannste {sec} zurückspulen?
Nochmal die letzten {sec}, bitte
""",
    "search_title": """
Such ma {q}
Such mal nach {q}
Haste was mit {q}?
Gibt's was mit {q}?
Gibt's was über {q}?
Zeig mal was von {q}
Ich hätt Bock auf {q}
Hast du irgendwas zu {q}?
Find mal {q}
Kannste {q} suchen?
Schau mal nach {q}
Wo gibt's {q}?
Läuft irgendwo {q}?
Such ma was zu {q}
""",
    "search_movie": """
Such ma Filme mit {q}
Haste Filme mit {q}?
Gibt's Filme mit {q}?
Ich hätt Bock auf nen Film mit {q}
Zeig mal Filme mit {q}
Irgendwelche Filme mit {q}?
""",
    "search_movie_title": """
Such ma den Film {q}
Gibt's den Film {q}?
Haste den Film {q}?
Ich will den Film {q} gucken
Wo läuft'n der Film {q}?
""",
    "search_movie_topic": """
Such ma Filme über {q}
Gibt's Filme über {q}?
Haste nen Film über {q}?
""",
    "search_series": """
Such ma die Serie {q}
Haste die Serie {q}?
Gibt's die Serie {q}?
Ich will die Serie {q} weitergucken
Serien mit {p}, bitte
Gibt's Serien über {topic}?
Haste Serien mit {p}?
""",
    "search_show": """
Such ma die Sendung {q}
Wann kommt die Show {q}?
Gibt's Sendungen mit {p}?
Haste Shows über {topic}?
Such mal die Show {q}
""",
    "search_person": """
Wer is'n {q}?
Wer ist eigentlich {q}?
Zeig ma was über die Schauspielerin {q}
Such ma den Schauspieler {q}
Wer war nochmal {q}?
""",
    "search_anykind": """
Such ma überall nach {q}
Alles über {q}, bitte
Zeig ma alles zu {q}
""",
    "open_app": """
Wirf mal {app} an
Wirf {app} an
Schmeiß mal {app} an
Mach ma {app} auf
Mach ma {app} an
Ich hab Bock auf {app}
Bock auf {app}
Ich will {app} gucken
Starte mal eben {app}
Hol mir mal {app}
Kannste {app} aufmachen?
Öffne ma {app}
Los, {app} auf
Geh mal in {app}
Mach mir mal {app} auf
Start ma {app}
Schmeiß {app} an, ja
Wirf ma schnell {app} an
Mach halt {app} auf
""",
    "record_title": """
Nimm mir mal {tacc} auf
Schneid {tacc} mit
Kannste {tacc} aufnehmen?
Nimm ma {tacc} auf
Zeichne {tacc} auf, ich bin nich da
Ich will {tacc} nich verpassen, nimm's auf
Bitte {tacc} aufnehmen, ja?
""",
    "record_title_channel": """
Nimm ma {tacc} {im} auf
Schneid {tacc} {im} mit
Kannste {tacc} {im} aufnehmen?
""",
    "record_title_time": """
Nimm ma {tacc} um {time} auf
Kannste {tacc} um {time} aufnehmen?
Um {time} {tacc} aufnehmen, gell
""",
    "record_full": """
Nimm ma {tacc} um {time} {im} auf
Kannste {tacc} {im} um {time} mitschneiden?
""",
    "record_channel_time": """
Nimm ma {ch} um {time} auf
Schneid {im} ab {time} mit
""",
    "record_now": """
Nimm das jetzt auf
Sofort aufnehmen, schnell
Schneid das jetzt mit
Jetzt aufnehmen, aber zackig
Nimm {ch} jetzt auf
Kannste das sofort aufnehmen?
Nimm des grad auf
""",
    "record_plain": """
Nimm das mal auf
Nimm des auf
Schneid das mit
Kannste das aufnehmen?
Nimm {ch} auf, ja
Aufnehmen, bitte
""",
    "remind_title": """
Sag Bescheid, wenn {tnom} kommt
Gib mir nen Schubs, bevor {tnom} anfängt
Erinner mich mal an {tacc}
Nicht vergessen: {t}
Denk an {tacc}, ja?
Sag ma Bescheid, wenn {tnom} losgeht
Ich darf {tacc} nich verpassen
Kannste mich an {tacc} erinnern?
""",
    "remind_title_minutes": """
Erinner mich {mins} vor {tdat}
Sag {mins} vor {tdat} Bescheid, ja?
Kannste mich {mins} vor {tdat} erinnern?
""",
    "remind_title_channel": """
Erinner mich an {tacc} {im}
Sag Bescheid, wenn {tnom} {im} kommt
""",
    "guide_plain": """
Was läuft'n so?
Was kommt'n so?
Was läuft denn so in der Glotze?
Zeig ma das Programm
Mach ma den Programmführer auf
Was kann man so gucken?
Kommt was Gutes?
Läuft was Gescheites?
Programm, bitte
Wat läuft'n so?
""",
    "guide_day": """
Was läuft'n {day}?
Was gibt's {day} so?
Zeig ma das Programm {fday}
Kommt {day} was Gutes?
""",
    "guide_daytime": """
Was läuft'n {dt}?
Was gibt's {dt} so?
Zeig ma das Programm {dt}
""",
    "guide_evening": """
Was läuft'n {ev}?
Was gibt's {ev} so?
""",
    "guide_channel": """
Zeig ma das Programm {vonch}
Was kommt'n heute {im}?
""",
    "guide_time": """
Was läuft'n um {clock}?
Was kommt'n um {clock} {im}?
""",
    "subs_on": """
Mach mal die Untertitel rein
Untertitel rein
Mach ma Untertitel an
Ich versteh den Dialekt nicht
Die nuscheln so, mach Untertitel an
Kannste Untertitel anmachen?
Untertitel wär gut
Ich bräuchte Untertitel
Ich versteh den Akzent nicht
""",
    "subs_off": """
Untertitel weg, die nerven
Mach die Untertitel weg
Untertitel raus
Die Untertitel stören, aus damit
Kannste die Untertitel ausmachen?
Brauch keine Untertitel
""",
    "subs_lang": """
Mach ma {ladj}e Untertitel an
Untertitel auf {lang}, bitte
Kannste die Untertitel auf {lang} stellen?
Ich brauch {ladj}e Untertitel
""",
    "audio_lang": """
Mach mal auf {lang}
Kann man das auf {lang} hören?
Stell ma auf {lang} um
Ton auf {lang}, bitte
Lieber auf {lang}
Kannste das auf {lang} umstellen?
""",
    "audio_original": """
Lieber im Original
Mach ma Originalton
Im Original, bitte
Kannste auf OV umstellen?
Original, nich synchronisiert
""",
    "sleep": """
Mach ma in {durD} aus
Schalt in {durD} ab, ich penn gleich ein
Kannste in {durD} ausgehen?
Ich geh gleich pennen, mach in {durD} aus
In {durD} aus, ja?
Stell ma den Sleeptimer auf {durA}
""",
    "power_off": """
Mach mal die Glotze aus
Glotze aus
Kiste aus
Mach die Kiste aus
Schluss für heute, mach aus
Feierabend, Fernseher aus
Schalt das Ding ab
Mach ma aus
Aus damit
Fernseher aus, ich geh pennen
Kannste die Glotze ausmachen?
Mach des Ding aus
Flimmerkiste aus
Ich hab genug, mach aus
""",
    "power_on": """
Mach mal die Glotze an
Wirf mal den Fernseher an
Glotze an
Kiste an
Mach ma an
Mach die Flimmerkiste an
Kannste mal den Fernseher anmachen?
Schmeiß die Glotze an
""",
    "power_standby": """
Ab in den Standby
Mach ma Standby
Geh ma in Standby
Schick die Kiste in den Standby
""",
    "info_now": """
Was läuft da grad?
Was is'n das grad für ne Sendung?
Was kommt grad {im}?
Was läuft'n gerade {im}?
Wat läuft'n da jetzt?
Was gucken wir da grad?
Was is das grad?
Was läuft im Moment so {im}?
""",
    "info_next": """
Was kommt'n danach?
Und danach?
Was läuft danach {im}?
Was kommt nachher {im}?
Was kommt als nächstes, weißt du das?
Was kommt'n gleich {im}?
""",
    "info_plain": """
Was läuft'n {im}?
Was kommt'n {im}?
Was is'n das für ne Sendung?
Worum geht's hier eigentlich?
Was is das für'n Film?
Um was geht's da?
""",
    "picture_mode": """
Mach ma das Bild auf {mode}
Bild auf {mode}, bitte
Kannste das Bild auf {mode} stellen?
Bildmodus {mode}, aber zackig
""",
    "picture_mode_words": """
Mach ma den {modus} an
Schalt ma in den {modus}
Kannste den {modus} anmachen?
""",
    "picture_mode_desc": """
Mach das Bild mal {adj}er
""",
    "no_call": """
Mach ma das Licht aus
Wie wird's Wetter morgen?
Erzähl ma nen Witz
Was gibt's zu essen?
Bestell ma ne Pizza
Ruf mal {name} an
Wie spät is'n?
Mir is langweilig
Ich hab Hunger
Wer hat gestern gewonnen?
Mach ma die Heizung an
Kauf ma {item}
Wie geht's dir so?
Servus
Moin
Tschö
Mach die Rollläden runter
Wann kommt der Bus?
Schreib {name} ne Nachricht
Stell nen Wecker auf sieben
Wirf mal die Waschmaschine an
Mach ma den Staubsauger an
Schmeiß die Kaffeemaschine an
Wie is das Wetter in {city}?
Mach ma Musik an
Wer bist'n du?
""",
}

# new intents: vague guide questions with "heut" (tv_de_templates.py's guide_day reads its day from a "heute" slot)
NEW = {
    "guide_today": ("show_guide", {"day": "today"}, """
Was kommt heut?
Was läuft heut so?
Was gibt's heut im Fernsehen?
Programm für heut, bitte
Was kommt'n heut so?
"""),
    "guide_tonight": ("show_guide", {"day": "today", "time": "evening"}, """
Was läuft heut Abend?
Was gibt's heut Abend?
Was kommt heut Abend so?
Heut Abend, was läuft da?
Was kommt'n heut Abend?
"""),
}


def intents():
    """The colloquial German intents as tv270m_intent.Intent objects."""
    by_name = {it.name: it for it in tv_de_templates.INTENTS}
    out = []
    for name, text in COLLOQ.items():
        base = by_name[name]
        tpls = [t.strip() for t in text.strip().splitlines() if t.strip()]
        out.append(Intent(name, base.function, base.sampler, tpls, "de", "colloq", fix=tv_de_templates.FIXUPS.get(name)))
    for name, (function, args, text) in NEW.items():
        tpls = [t.strip() for t in text.strip().splitlines() if t.strip()]
        out.append(Intent(name, function, lambda rng, a=args: ({}, dict(a)), tpls, "de", "colloq"))
    return out
