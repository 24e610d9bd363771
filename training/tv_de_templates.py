"""Generator of German TV voice commands for the 15-function catalog tests/data/nlu/tv-catalog.json,
with the call each one should produce (conventions: training/README.md).

A template is a phrasing pattern: "(a|b)" picks one alternative, "[x]" is optional, "{slot}" is a
slot value. Every template belongs to an intent (a function and the arguments it sets); the intent's
sampler draws the slot values and the arguments. The handwritten templates below come first in each
intent; tv_de_lexicon.py appends the generated ones (a verb and noun lexicon crossed with command frames).
Train and dev are split by template: a dev template is never used for training.
"""
import hashlib
import random
import re

import tv_de_lexicon
import tv_de_values as V

NO_CALL_REPLY = "Das kann ich leider nicht."


# ----------------------------------------------------------------------------------------------
# Slots

class Slot:
    """A slot's surface: prefix (an article, a preposition; never copied) + core. For a copied slot
    the argument is the core as it appears after noise; otherwise `value` is the argument."""

    def __init__(self, core, key=None, value=None, copy=False, prefix=""):
        self.prefix, self.core, self.key, self.value, self.copy = prefix, core, key, value, copy


def _canon(key, value, surface):
    return Slot(surface, key, value)


def _split_article(form):
    for art in ("der ", "die ", "das ", "den ", "dem "):
        if form.startswith(art):
            return art, form[len(art):]
    return "", form


_ARTICLES = {"m": ("der", "den", "dem"), "f": ("die", "die", "der"), "n": ("das", "das", "dem"),
             "pl": ("die", "die", "den")}


def title_slots(rng):
    """Slots tnom/tacc/tdat (with the article of the title's gender) and t (bare) for one title."""
    title, g = rng.choice(V.TITLES)
    out = {}
    for i, name in enumerate(("tnom", "tacc", "tdat")):
        art = (_ARTICLES[g][i] + " ") if g else ""
        out[name] = Slot(title, "title", copy=True, prefix=art)
    out["t"] = Slot(title, "title", copy=True)
    return out


def person(rng):
    if rng.random() < 0.55:
        return rng.choice(V.PEOPLE)
    return rng.choice(V.FIRST_NAMES) + " " + rng.choice(V.LAST_NAMES)


def channel_slots(rng, key="channel"):
    value, nom, auf, dat, zu = rng.choice(V.CHANNELS)
    pick = lambda forms: rng.choice(forms)
    return {"ch": Slot(pick(nom), key, value), "auf": Slot(pick(auf), key, value),
            "im": Slot(pick(dat), key, value), "zu": Slot(pick(zu), key, value)}


def app_slot(rng):
    value, forms = rng.choice(V.APPS)
    return Slot(rng.choice(forms), "app", value)


def lang_slots(rng, key="language"):
    (value, noun, adj), = rng.choices(V.LANGUAGES, weights=V.LANGUAGE_WEIGHTS)
    return {"lang": Slot(noun, key, value), "ladj": Slot(adj, key, value)}


def minutes_phrase(rng, minutes, case):
    """A duration in minutes as said; case 'dat' ("in einer Stunde"), 'acc' ("auf eine Stunde")."""
    one = {"dat": "einer", "acc": "eine", "nom": "eine"}[case]
    forms = []
    if minutes % 60 == 0:
        h = minutes // 60
        if h == 1:
            forms += [f"{one} Stunde"] * 3 + ["1 Stunde", "60 Minuten", "sechzig Minuten"]
        else:
            forms += [f"{h} Stunden", f"{V.number_word(h)} Stunden", f"{minutes} Minuten"]
    if minutes == 30:
        forms += [f"{one} halben Stunde" if case == "dat" else f"{one} halbe Stunde"] * 3
    if minutes == 90:
        forms += ["anderthalb Stunden", "eineinhalb Stunden", "90 Minuten", "neunzig Minuten"]
    if minutes == 15:
        forms += [f"{one} Viertelstunde"] * 2
    if minutes == 45:
        forms += [f"{one} Dreiviertelstunde"]
    if minutes == 150:
        forms += ["zweieinhalb Stunden"]
    if minutes == 1:
        forms += [f"{one} Minute", "1 Minute"]
    elif minutes % 60 != 0 or minutes < 120:
        forms += [f"{minutes} Minuten", f"{V.number_word(minutes)} Minuten"] * 2
    return rng.choice(forms)


def seconds_phrase(rng, seconds):
    forms = []
    if seconds % 60 == 0:
        m = seconds // 60
        forms += ["eine Minute", "1 Minute"] if m == 1 else [f"{m} Minuten", f"{V.number_word(m)} Minuten"]
    if seconds == 30:
        forms += ["eine halbe Minute"]
    if seconds == 90:
        forms += ["anderthalb Minuten", "eineinhalb Minuten"]
    if seconds < 60 or seconds % 60 != 0 or seconds <= 120:
        forms += [f"{seconds} Sekunden", f"{V.number_word(seconds)} Sekunden"] * 2
    return rng.choice(forms)


# ----------------------------------------------------------------------------------------------
# Intents: each returns (slots, fixed args). Slot arguments are added after rendering.

def rnd_volume(rng):
    return rng.choice(list(range(0, 101, 5)) * 3 + list(range(1, 101)))


def rnd_steps(rng):
    return rng.choice([2] * 6 + [3] * 6 + [4] * 3 + [5] * 5 + [10] * 3 + [1, 6, 7, 8, 15, 20])


def rnd_seconds(rng):
    return rng.choice([10] * 5 + [30] * 6 + [15] * 3 + [5, 20, 45, 60, 60, 60, 90, 120, 120, 180, 300, 600, 40, 25])


def rnd_sleep(rng):
    return rng.choice([60] * 5 + [30] * 5 + [90] * 3 + [120] * 3 + [15, 45, 20, 10, 40, 50, 75, 150, 180, 25, 5])


def rnd_before(rng):
    return rng.choice([5] * 6 + [10] * 5 + [15] * 4 + [2, 3, 1, 20, 30, 30, 60, 45])


def rnd_channel_number(rng):
    return rng.choice(list(range(1, 21)) * 3 + list(range(21, 100)) + [101, 110, 150, 200, 250, 333, 500, 999])


def _nsurf(rng, n, p_word=0.4):
    return V.number_surface(rng, n, p_word)


def _clock(rng):
    hh, mm = V.sample_clock(rng)
    return Slot(V.time_surface(rng, hh, mm), "start", f"{hh:02d}:{mm:02d}")


def _q_slot(rng, what):
    """A search query: a title, a person or a topic (copied as said)."""
    if what == "title":
        return Slot(rng.choice(V.TITLES)[0], "query", copy=True)
    if what == "person":
        return Slot(person(rng), "query", copy=True)
    if what == "topic":
        return Slot(rng.choice(V.TOPICS), "query", copy=True)
    raise ValueError(what)


# Day and time phrases of the guide: (surface, args).
_DAY = {"today": ["heute", "für heute", "von heute"], "tomorrow": ["morgen", "für morgen", "von morgen"],
        "weekend": ["am Wochenende", "fürs Wochenende", "für das Wochenende", "übers Wochenende", "für Samstag und Sonntag"]}
_DAYTIME = [("heute Abend", {"day": "today", "time": "evening"}), ("morgen Abend", {"day": "tomorrow", "time": "evening"}),
            ("für heute Abend", {"day": "today", "time": "evening"}), ("für morgen Abend", {"day": "tomorrow", "time": "evening"}),
            ("am Wochenende abends", {"day": "weekend", "time": "evening"}),
            ("für heute um 20 Uhr", {"day": "today", "time": "20:00"}), ("morgen um 20:15", {"day": "tomorrow", "time": "20:15"}),
            ("heute um 18 Uhr", {"day": "today", "time": "18:00"}),
            ("morgen um 21 Uhr", {"day": "tomorrow", "time": "21:00"}), ("heute um Viertel nach acht abends", {"day": "today", "time": "20:15"})]
_EVENING = ["heute Abend", "am Abend", "abends", "für den Abend", "für heute Abend", "zur Primetime", "für die Primetime"]


class Intent:
    def __init__(self, name, function, sampler, templates):
        self.name, self.function, self.sampler = name, function, sampler
        self.templates = [t.strip() for t in templates.strip().splitlines() if t.strip() and not t.strip().startswith("#")]


INTENTS = []


def intent(name, function, templates):
    def deco(sampler):
        INTENTS.append(Intent(name, function, sampler, templates))
        return sampler
    return deco


# ---- switch_channel ---------------------------------------------------------------------------

@intent("switch_name", "switch_channel", """
Schalte {auf} um
Schalt mal {auf}
Schalte bitte {auf}
Geh {auf}
Wechsel {auf}
Wechsle {zu}
Wechsel mal {zu}
Kannst du {auf} schalten?
Kannst du mal {auf} umschalten
Schalt um {auf}
Umschalten {auf}
{ch} bitte
{ch}
Bitte {ch}
Mach {ch} an
Mach mal {ch} rein
Ich will {ch} sehen
Ich möchte {ch} schauen
Ich will {ch} gucken
Zeig mir {ch}
Lass uns {ch} gucken
(Sender|Kanal) {ch}
Auf {ch} bitte
Schalte den Fernseher {auf}
Stell {auf} um
Bitte {auf} schalten
Kannst du {ch} anmachen?
Mach den Sender {ch} an
Wechsle den Sender {auf}
Geh mal rüber {zu}
Ich hätte gern {ch}
Schalt doch mal {auf}
Würdest du bitte {auf} umschalten
{ch} einschalten
Jetzt {ch}
Umschalten auf den Sender {ch}
Mach mal {auf}
Schnell {auf}
Kannst du bitte {zu} wechseln
Zappe {zu}
Lass mal {ch} laufen
Gib mir {ch}
Ich würde gerne {ch} sehen
Bring mich {zu}
Wir wollen {ch} gucken
Sender wechseln {auf}
Kannst du {auf} wechseln?
Stell mal {ch} ein
Mach mal {ch}
Schalt mal rüber {auf}
{zu} bitte
{auf} umschalten
Ich möchte gern {ch} sehen
""")
def _switch_name(rng):
    return channel_slots(rng), {}


@intent("switch_number", "switch_channel", """
Schalte auf Kanal {num}
Kanal {num}
Kanal {num} bitte
Geh auf Kanal {num}
Programmplatz {num}
Schalt auf Programmplatz {num}
Wechsel zu Kanal {num}
Ich will Kanal {num} sehen
Sender Nummer {num}
Schalte auf Sender {num}
Mach Kanal {num} an
Auf Kanal {num} umschalten
Kannst du auf Kanal {num} gehen?
Nummer {num} bitte
Sendeplatz {num}
Spring auf Kanal {num}
Zeig mir Kanal {num}
Wechsle auf Programmplatz {num}
Stell den Fernseher auf Kanal {num}
Bitte Kanal Nummer {num}
""")
def _switch_number(rng):
    n = rnd_channel_number(rng)
    return {"num": Slot(_nsurf(rng, n, 0.35), "number", n)}, {}


# ---- set_volume -------------------------------------------------------------------------------

@intent("volume_level", "set_volume", """
Lautstärke auf {level}
Stell die Lautstärke auf {level}
Mach die Lautstärke auf {level}
Setz die Lautstärke auf {level}
Lautstärke {level}
Volume {level}
Ton auf {level}
Stell den Ton auf {level}
Mach den Ton auf {level}
Die Lautstärke bitte auf {level}
Kannst du die Lautstärke auf {level} stellen?
Lautstärke auf {level} Prozent
Stell lauter auf {level}
Dreh die Lautstärke auf {level}
Ich will Lautstärke {level}
Lautstärke bitte {level}
Regle die Lautstärke auf {level}
Bitte auf Lautstärke {level}
Lautstärke auf Stufe {level}
Mach mal Lautstärke {level}
Lautstärke runter auf {level}
Lautstärke hoch auf {level}
Stelle die Lautstärke auf den Wert {level}
Lautstärke auf {level} stellen
Kannst du den Ton auf {level} stellen?
""")
def _volume_level(rng):
    n = rnd_volume(rng)
    return {"level": Slot(_nsurf(rng, n, 0.4), "level", n)}, {}


@intent("volume_up", "set_volume", """
Lauter
Mach lauter
Mach bitte etwas lauter
Etwas lauter bitte
Ton lauter
Mach den Ton lauter
Dreh auf
Dreh mal lauter
Lautstärke hoch
Lautstärke erhöhen
Kannst du lauter machen?
Ein bisschen lauter
Noch lauter
Ich verstehe nichts
Ich hör nichts
Das ist zu leise
Zu leise
Lauter bitte
Mach mal ein bisschen lauter
Kannst du den Fernseher lauter stellen
Erhöhe die Lautstärke
Mehr Lautstärke
Dreh den Ton hoch
Volume up
Bisschen lauter
Mach den Fernseher lauter
Geht das lauter?
Lautstärke rauf
Es ist so leise
Stell lauter
Lauter machen
Dreh die Lautstärke hoch
Kannst du das lauter machen?
Ton hoch
Volume hoch
""")
def _volume_up(rng):
    return {}, {"direction": "up"}


@intent("volume_down", "set_volume", """
Leiser
Mach leiser
Mach bitte etwas leiser
Etwas leiser bitte
Ton leiser
Mach den Ton leiser
Dreh runter
Dreh mal leiser
Lautstärke runter
Lautstärke verringern
Kannst du leiser machen?
Ein bisschen leiser
Noch leiser
Das ist zu laut
Zu laut
Leiser bitte
Mach mal ein bisschen leiser
Kannst du den Fernseher leiser stellen
Senke die Lautstärke
Weniger Lautstärke
Dreh den Ton runter
Volume down
Bisschen leiser
Mach den Fernseher leiser
Geht das leiser?
Lautstärke reduzieren
Es ist viel zu laut
Stell leiser
Nicht so laut bitte
Die Nachbarn schlafen, mach leiser
Leiser machen
Dreh die Lautstärke runter
Kannst du das leiser machen?
Ton runter
Volume runter
""")
def _volume_down(rng):
    return {}, {"direction": "down"}


@intent("volume_steps_up", "set_volume", """
{steps} Stufen lauter
Mach {steps} Stufen lauter
Lautstärke um {steps} erhöhen
Um {steps} lauter
Mach den Ton {steps} Stufen lauter
Dreh {steps} Stufen hoch
Lautstärke {steps} Schritte hoch
{steps} Schritte lauter bitte
Erhöhe die Lautstärke um {steps}
Mach es um {steps} Stufen lauter
Kannst du {steps} Stufen lauter machen?
Lautstärke plus {steps}
Ton {steps} Stufen rauf
Bitte um {steps} Punkte lauter
Stell {steps} Stufen lauter
Mach mal {steps} lauter
Lautstärke um {steps} Stufen erhöhen
""")
def _volume_steps_up(rng):
    n = rnd_steps(rng)
    return {"steps": Slot(_nsurf(rng, n, 0.5), "steps", n)}, {"direction": "up"}


@intent("volume_steps_down", "set_volume", """
{steps} Stufen leiser
Mach {steps} Stufen leiser
Lautstärke um {steps} verringern
Um {steps} leiser
Mach den Ton {steps} Stufen leiser
Dreh {steps} Stufen runter
Lautstärke {steps} Schritte runter
{steps} Schritte leiser bitte
Senke die Lautstärke um {steps}
Mach es um {steps} Stufen leiser
Kannst du {steps} Stufen leiser machen?
Lautstärke minus {steps}
Ton {steps} Stufen runter
Bitte um {steps} Punkte leiser
Stell {steps} Stufen leiser
Mach mal {steps} leiser
Lautstärke um {steps} Stufen senken
""")
def _volume_steps_down(rng):
    n = rnd_steps(rng)
    return {"steps": Slot(_nsurf(rng, n, 0.5), "steps", n)}, {"direction": "down"}


# ---- mute -------------------------------------------------------------------------------------

@intent("mute_on", "mute", """
Ton aus
Stumm
Stummschalten
Schalte den Ton aus
Mach den Ton aus
Mute
Ruhe
Ton weg
Schalte stumm
Kannst du den Ton ausmachen?
Ich will nichts hören
Stummschaltung an
Ton ab
Mach mal stumm
Sound aus
Bitte stumm schalten
Schalt den Ton ab
Kein Ton bitte
Mach den Fernseher stumm
Ton stumm
Stell auf stumm
Psst, Ton aus
Stummschaltung einschalten
Ton mal kurz aus
Ton ausschalten
Schalte den Ton stumm
Mach mal stumm bitte
Lautlos
Mach lautlos
Ton stummschalten
Stummschalten bitte
""")
def _mute_on(rng):
    return {}, {"state": "on"}


@intent("mute_off", "mute", """
Ton an
Ton wieder an
Stummschaltung aus
Stummschaltung aufheben
Unmute
Mach den Ton wieder an
Schalte den Ton ein
Ich will wieder was hören
Ton einschalten
Sound an
Mach den Ton an
Kannst du den Ton wieder anmachen?
Stummschaltung beenden
Nicht mehr stumm
Ton zurück
Schalt den Ton wieder ein
Mach wieder Ton
Bitte Ton an
Hebe die Stummschaltung auf
Ton wieder einschalten
Stummschaltung ausschalten
Mach den Ton wieder rein
Lautlos aus
Ton wieder hoch, Stummschaltung weg
""")
def _mute_off(rng):
    return {}, {"state": "off"}


# ---- playback_control -------------------------------------------------------------------------

_PLAYBACK = {
    "pause": """
Pause
Pausieren
Halt mal an
Anhalten
Mach mal Pause
Pause bitte
Kurz anhalten
Pausiere das
Halte den Film an
Kannst du pausieren?
Mach Pause
Stopp mal kurz
Warte mal kurz, Pause
Halt an
Film anhalten
Bitte pausieren
Unterbrechen
Kurz Pause machen
Die Wiedergabe pausieren
Pausier mal
Film pausieren
Halt mal kurz an
Pause machen
Pause drücken
""",
    "play": """
Weiter
Weiterspielen
Fortsetzen
Play
Abspielen
Mach weiter
Weiter abspielen
Spiel weiter
Wiedergabe fortsetzen
Lass weiterlaufen
Kannst du weitermachen?
Weiter gehts
Los gehts, weiter
Fortfahren
Setz die Wiedergabe fort
Wiedergabe starten
Abspielen bitte
Und weiter
Film weiter
Lass laufen
Weitermachen
Wiedergabe fortsetzen bitte
Weiterlaufen lassen
Play drücken
""",
    "stop": """
Stopp
Stop
Beenden
Wiedergabe beenden
Hör auf
Stopp die Wiedergabe
Film beenden
Wiedergabe stoppen
Mach aus, den Film
Beende die Wiedergabe
Abbrechen
Stoppen bitte
Schluss mit dem Film
Brich die Wiedergabe ab
Kannst du das stoppen?
Halt, stopp
""",
    "forward": """
Vorspulen
Spul vor
Spring vor
Schneller Vorlauf
Vorwärts spulen
Spul mal vor
Ein Stück vorspulen
Weiter vorspulen
Kannst du vorspulen?
Überspringen
Vorlauf
Spul ein bisschen vor
""",
    "rewind": """
Zurückspulen
Spul zurück
Spring zurück
Rücklauf
Rückwärts spulen
Spul mal zurück
Ein Stück zurückspulen
Kannst du zurückspulen?
Nochmal zurück
Geh ein Stück zurück
Spul ein bisschen zurück
Das hab ich verpasst, spul zurück
""",
    "restart": """
Von vorne
Nochmal von vorne
Neu starten
Starte die Folge neu
Von Anfang an
Nochmal von Anfang an
Fang von vorne an
Film neu starten
Spiel es von vorne ab
Kannst du das neu starten?
Zurück zum Anfang
Die Sendung von Beginn an
Starte den Film nochmal von vorne
Beginne von vorne
Nochmal von vorn
Fang nochmal an
""",
}
for _action, _tpl in _PLAYBACK.items():
    intent(f"playback_{_action}", "playback_control", _tpl)(lambda rng, a=_action: ({}, {"action": a}))


@intent("playback_forward_sec", "playback_control", """
Spul {sec} vor
{sec} vorspulen
Spring {sec} vor
{sec} vor
Spul um {sec} vor
Geh {sec} nach vorne
Überspring {sec}
Kannst du {sec} vorspulen?
{sec} weiter
Bitte {sec} vorspulen
Spule {sec} vorwärts
Mach {sec} vor
Spring um {sec} nach vorn
Skip {sec}
""")
def _pb_fwd(rng):
    s = rnd_seconds(rng)
    return {"sec": Slot(seconds_phrase(rng, s), "seconds", s)}, {"action": "forward"}


@intent("playback_rewind_sec", "playback_control", """
Spul {sec} zurück
{sec} zurückspulen
Spring {sec} zurück
{sec} zurück
Spul um {sec} zurück
Geh {sec} zurück
Nochmal die letzten {sec}
Kannst du {sec} zurückspulen?
Bitte {sec} zurück
Spule {sec} rückwärts
Mach {sec} zurück
Spring um {sec} nach hinten
Zeig die letzten {sec} nochmal
Zurück um {sec}
""")
def _pb_rew(rng):
    s = rnd_seconds(rng)
    return {"sec": Slot(seconds_phrase(rng, s), "seconds", s)}, {"action": "rewind"}


# ---- search_content ---------------------------------------------------------------------------

_SEARCH_ANY_TPL = """
Suche nach {q}
Such mal nach {q}
Suche {q}
Finde {q}
Ich suche {q}
Such {q}
Gibt es was mit {q}?
Hast du was über {q}?
Kannst du nach {q} suchen?
Zeig mir was zu {q}
Durchsuche die Mediathek nach {q}
Suchen: {q}
Ich möchte etwas über {q} sehen
Finde alles zu {q}
Such mir {q} raus
Wo finde ich {q}?
Suchergebnisse für {q}
Gibt es {q} irgendwo?
Bitte nach {q} suchen
Schau mal, ob es {q} gibt
Such in der Mediathek nach {q}
"""


@intent("search_title", "search_content", _SEARCH_ANY_TPL)
def _search_title(rng):
    return {"q": _q_slot(rng, rng.choice(["title", "title", "person", "topic"]))}, {}


@intent("search_movie", "search_content", """
Suche nach Filmen mit {q}
Such Filme mit {q}
Finde Filme von {q}
Zeig mir Filme mit {q}
Ich suche einen Film mit {q}
Gibt es Filme mit {q}?
Welche Filme gibt es mit {q}?
Filme mit {q}
Such mal nach Filmen mit {q}
Ich will einen Film mit {q} sehen
Hast du Filme mit {q}?
Liste Filme mit {q} auf
Welche Filme hat {q} gemacht?
Kannst du Filme mit {q} finden?
""")
def _search_movie_person(rng):
    return {"q": _q_slot(rng, "person")}, {"kind": "movie"}


@intent("search_movie_title", "search_content", """
Suche den Film {q}
Such den Film {q}
Finde den Film {q}
Ich suche den Film {q}
Gibt es den Film {q}?
Film {q} suchen
Zeig mir den Film {q}
Wo ist der Film {q}?
Such mal nach dem Film {q}
Kannst du den Film {q} finden?
Ich will den Film {q} sehen
Haben wir den Film {q}?
""")
def _search_movie_title(rng):
    return {"q": _q_slot(rng, "title")}, {"kind": "movie"}


@intent("search_movie_topic", "search_content", """
Suche Filme über {q}
Zeig mir Filme über {q}
Ich suche Filme zum Thema {q}
Gibt es Filme über {q}?
Finde Filme über {q}
Such mal Filme zu {q}
Filme über {q} bitte
""")
def _search_movie_topic(rng):
    return {"q": _q_slot(rng, "topic")}, {"kind": "movie"}


@intent("search_series", "search_content", """
Suche die Serie {q}
Such die Serie {q}
Finde die Serie {q}
Ich suche die Serie {q}
Gibt es die Serie {q}?
Serie {q} suchen
Zeig mir die Serie {q}
Wo finde ich die Serie {q}?
Such mal nach der Serie {q}
Kannst du die Serie {q} finden?
Ich will die Serie {q} weiterschauen
Haben wir die Serie {q}?
Suche Serien mit {p}
Gibt es Serien mit {p}?
Zeig mir Serien mit {p}
Finde Serien über {topic}
Ich suche Serien zum Thema {topic}
""")
def _search_series(rng):
    which = rng.random()
    return {"q": _q_slot(rng, "title"), "p": _q_slot(rng, "person"), "topic": _q_slot(rng, "topic")}, {"kind": "series"}


@intent("search_show", "search_content", """
Suche die Sendung {q}
Such die Show {q}
Finde die Sendung {q}
Ich suche die Sendung {q}
Gibt es die Show {q}?
Sendung {q} suchen
Zeig mir die Sendung {q}
Wo läuft die Sendung {q}?
Such mal nach der Show {q}
Kannst du die Sendung {q} finden?
Suche Shows mit {p}
Gibt es Sendungen mit {p}?
Zeig mir Sendungen mit {p}
Finde Shows über {topic}
Sendungen über {topic} bitte
""")
def _search_show(rng):
    return {"q": _q_slot(rng, "title"), "p": _q_slot(rng, "person"), "topic": _q_slot(rng, "topic")}, {"kind": "show"}


@intent("search_person", "search_content", """
Suche den Schauspieler {q}
Suche die Schauspielerin {q}
Infos über den Schauspieler {q}
Finde die Person {q}
Wer ist {q}?
Zeig mir alles über den Schauspieler {q}
Such nach der Schauspielerin {q}
Ich suche Infos zu {q}
Was weißt du über die Schauspielerin {q}?
Suche die Person {q}
Zeig mir das Profil von {q}
Wer ist eigentlich {q}?
""")
def _search_person(rng):
    return {"q": _q_slot(rng, "person")}, {"kind": "person"}


@intent("search_anykind", "search_content", """
Durchsuche alles nach {q}
Suche überall nach {q}
Such in allen Kategorien nach {q}
Finde alles mit {q}
Suche nach {q} in allen Bereichen
Alles zu {q} suchen
Such überall {q}
""")
def _search_anykind(rng):
    return {"q": _q_slot(rng, rng.choice(["title", "person", "topic"]))}, {"kind": "any"}


# ---- open_app ---------------------------------------------------------------------------------

@intent("open_app", "open_app", """
Öffne {app}
Öffne bitte {app}
Starte {app}
Starte mal {app}
Mach {app} auf
Mach mal {app} an
{app} öffnen
{app} starten
{app} bitte
{app}
Geh zu {app}
Geh in {app}
Wechsel zu {app}
Ich will {app} schauen
Ich möchte {app} öffnen
Zeig mir {app}
Lade {app}
Öffne die App {app}
Starte die App {app}
App {app} öffnen
Kannst du {app} aufmachen?
Kannst du mal {app} starten?
Bitte {app} öffnen
Ich will in {app}
Los, {app}
Mach {app} auf, bitte
Ruf {app} auf
Öffne mir mal {app}
Ich hätte gern {app}
Wir wollen {app} gucken
Schalte auf {app} um
Jetzt {app}
Bring mich zu {app}
Aufmachen: {app}
Öffne mal die App {app}
Starte bitte die {app} App
""")
def _open_app(rng):
    return {"app": app_slot(rng)}, {}


# ---- record_program ---------------------------------------------------------------------------

@intent("record_title", "record_program", """
Nimm {tacc} auf
Nimm bitte {tacc} auf
Zeichne {tacc} auf
{tacc} aufnehmen
Bitte {tacc} aufnehmen
Kannst du {tacc} aufnehmen?
Ich will {tacc} aufnehmen
Aufnahme von {tdat}
Nimm heute Abend {tacc} auf
Nimm morgen {tacc} auf
Programmiere eine Aufnahme für {tacc}
Speicher {tacc}
Mach eine Aufnahme von {tdat}
Starte die Aufnahme von {tdat}
Nimm mir {tacc} auf
Vergiss nicht, {tacc} aufzunehmen
Bitte zeichne {tacc} auf
Kannst du mir {tacc} aufzeichnen
Ich möchte {tacc} aufnehmen lassen
Plane eine Aufnahme von {tdat}
""")
def _record_title(rng):
    return title_slots(rng), {}


@intent("record_title_channel", "record_program", """
Nimm {tacc} {im} auf
Zeichne {tacc} {im} auf
{tacc} {im} aufnehmen
Bitte {tacc} {im} aufnehmen
Kannst du {tacc} {im} aufnehmen?
Nimm heute Abend {tacc} {im} auf
Ich will {tacc} {im} aufnehmen
Aufnahme von {tdat} {im}
Nimm mir {tacc} {im} auf
Programmiere eine Aufnahme für {tacc} {im}
Nimm {im} {tacc} auf
Zeichne {im} {tacc} auf
""")
def _record_title_channel(rng):
    s = title_slots(rng)
    s.update(channel_slots(rng))
    return s, {}


@intent("record_title_time", "record_program", """
Nimm {tacc} um {time} auf
Zeichne {tacc} um {time} auf
{tacc} um {time} aufnehmen
Nimm um {time} {tacc} auf
Bitte um {time} {tacc} aufnehmen
Kannst du {tacc} um {time} aufnehmen?
Nimm heute Abend um {time} {tacc} auf
Ich will {tacc} um {time} aufnehmen
Aufnahme von {tdat} um {time}
Nimm morgen {tacc} um {time} auf
Programmiere eine Aufnahme für {tacc} ab {time}
Starte um {time} die Aufnahme von {tdat}
""")
def _record_title_time(rng):
    s = title_slots(rng)
    s["time"] = _clock(rng)
    return s, {}


@intent("record_full", "record_program", """
Nimm {tacc} um {time} {im} auf
Nimm heute Abend {tacc} um {time} {im} auf
Zeichne {tacc} um {time} {im} auf
Nimm um {time} {tacc} {im} auf
{tacc} um {time} {im} aufnehmen
Bitte {tacc} {im} um {time} aufnehmen
Kannst du {tacc} um {time} {im} aufnehmen?
Ich will {tacc} {im} um {time} aufnehmen
Nimm {im} um {time} {tacc} auf
Aufnahme von {tdat} {im} um {time}
Zeichne morgen um {time} {tacc} {im} auf
Programmiere eine Aufnahme: {tnom}, {im}, {time}
Aufnahme: {tnom} {im} um {time}
Bitte {tacc} um {time} {im} aufzeichnen
Nimm mir {tacc} auf, {im} um {time}
Starte um {time} {im} die Aufnahme von {tdat}
""")
def _record_full(rng):
    s = title_slots(rng)
    s.update(channel_slots(rng))
    s["time"] = _clock(rng)
    return s, {}


@intent("record_channel_time", "record_program", """
Nimm um {time} {ch} auf
Nimm {ch} um {time} auf
Zeichne {ch} ab {time} auf
Aufnahme {im} um {time}
Starte um {time} eine Aufnahme {im}
Nimm ab {time} {im} auf
Bitte um {time} {ch} aufnehmen
Programmiere eine Aufnahme {im} um {time}
Ich will {ch} um {time} aufnehmen
""")
def _record_channel_time(rng):
    s = channel_slots(rng)
    s["time"] = _clock(rng)
    return s, {}


@intent("record_now", "record_program", """
Nimm jetzt auf
Sofort aufnehmen
Jetzt aufnehmen
Starte jetzt eine Aufnahme
Nimm das jetzt auf
Aufnahme jetzt starten
Bitte sofort aufnehmen
Nimm ab sofort auf
Zeichne ab jetzt auf
Nimm die laufende Sendung jetzt auf
Kannst du das sofort aufnehmen?
Nimm jetzt {ch} auf
Nimm {ch} ab sofort auf
Jetzt {im} aufnehmen
Sofort {tacc} aufnehmen
Nimm das gerade auf
Nimm jetzt {tacc} auf
Starte sofort die Aufnahme {im}
""")
def _record_now(rng):
    s = title_slots(rng)
    s.update(channel_slots(rng))
    s["_start"] = Slot("", "start", "now")  # an argument without a surface (set by the wording)
    return s, {}


@intent("record_plain", "record_program", """
Nimm das auf
Aufnehmen
Aufnahme starten
Starte eine Aufnahme
Das aufnehmen bitte
Kannst du das aufnehmen?
Nimm die Sendung auf
Zeichne das auf
Bitte aufnehmen
Nimm das hier auf
Nimm {ch} auf
Aufnahme {im}
Zeichne {ch} auf
""")
def _record_plain(rng):
    return channel_slots(rng), {}


# ---- set_reminder -----------------------------------------------------------------------------

@intent("remind_title", "set_reminder", """
Erinnere mich an {tacc}
Erinnere mich bitte an {tacc}
Erinnerung für {tacc}
Sag mir Bescheid, wenn {tnom} anfängt
Sag Bescheid, wenn {tnom} beginnt
Gib mir Bescheid, bevor {tnom} anfängt
Kannst du mich an {tacc} erinnern?
Ich will {tacc} nicht verpassen
Stell eine Erinnerung für {tacc}
Erinnerung an {tacc} setzen
Merk dir {tacc}
Lass mich {tacc} nicht verpassen
Bitte erinnere mich an {tacc}
Weck mich, wenn {tnom} kommt
Erinnere mich rechtzeitig an {tacc}
Erinnerung: {t}
""")
def _remind_title(rng):
    return title_slots(rng), {}


@intent("remind_title_minutes", "set_reminder", """
Erinnere mich {mins} vor {tdat}
Erinnere mich bitte {mins} vor {tdat}
Erinnere mich {mins} vorher an {tacc}
Sag mir {mins} vor {tdat} Bescheid
Gib mir {mins} bevor {tnom} anfängt Bescheid
Erinnerung {mins} vor {tdat}
Stell eine Erinnerung {mins} vor {tdat}
Kannst du mich {mins} vor {tdat} erinnern?
Ich will {mins} vor {tdat} erinnert werden
Erinnere mich an {tacc}, {mins} vorher
Bitte {mins} vor Beginn von {tdat} erinnern
Sag {mins} vor {tdat} Bescheid
""")
def _remind_title_minutes(rng):
    s = title_slots(rng)
    m = rnd_before(rng)
    s["mins"] = Slot(minutes_phrase(rng, m, "acc"), "minutes_before", m)
    return s, {}


@intent("remind_title_channel", "set_reminder", """
Erinnere mich an {tacc} {im}
Erinnerung für {tacc} {im}
Sag mir Bescheid, wenn {tnom} {im} anfängt
Kannst du mich an {tacc} {im} erinnern?
Erinnere mich {mins} vor {tdat} {im}
Sag mir {mins} vor {tdat} {im} Bescheid
Stell eine Erinnerung für {tacc} {im}, {mins} vorher
Ich will {tacc} {im} nicht verpassen
""")
def _remind_title_channel(rng):
    s = title_slots(rng)
    s.update(channel_slots(rng))
    m = rnd_before(rng)
    s["mins"] = Slot(minutes_phrase(rng, m, "acc"), "minutes_before", m)
    return s, {}


# ---- show_guide -------------------------------------------------------------------------------

_GUIDE_NOUN = "(das Programm|den Programmführer|die Programmübersicht|das Fernsehprogramm|den TV-Guide|den EPG|die Programmvorschau)"


@intent("guide_plain", "show_guide", f"""
Zeig mir {_GUIDE_NOUN}
Programm anzeigen
Öffne {_GUIDE_NOUN}
Fernsehprogramm
Programmübersicht bitte
Was läuft so?
Was kommt im Fernsehen?
Zeig mal, was im Fernsehen kommt
TV-Programm
Ich will {_GUIDE_NOUN} sehen
Programmführer öffnen
EPG
Kannst du mir {_GUIDE_NOUN} zeigen?
Was gibt es im Fernsehen?
""")
def _guide_plain(rng):
    return {}, {}


@intent("guide_day", "show_guide", f"""
Zeig mir {_GUIDE_NOUN} {{fday}}
Was läuft {{day}} im Fernsehen?
Was kommt {{day}}?
Programm {{fday}}
Fernsehprogramm {{fday}}
Was läuft {{day}}?
Was gibt es {{day}} im Fernsehen?
Öffne {_GUIDE_NOUN} {{fday}}
Ich will sehen, was {{day}} läuft
Kannst du mir das Programm {{fday}} zeigen?
Zeig {{fday}} das Programm
""")
def _guide_day(rng):
    d = rng.choice(list(_DAY))
    s = {"fday": Slot(rng.choice(_DAY[d]), "day", d),
         "day": Slot(rng.choice([f for f in _DAY[d] if not f.startswith(("für", "von", "fürs", "übers"))] or _DAY[d]), "day", d)}
    return s, {}


@intent("guide_daytime", "show_guide", f"""
Zeig mir {_GUIDE_NOUN} {{dt}}
Was läuft {{dt}}?
Was kommt {{dt}} im Fernsehen?
Programm {{dt}}
Was gibt es {{dt}} im Fernsehen?
Ich will wissen, was {{dt}} läuft
Kannst du mir {_GUIDE_NOUN} {{dt}} zeigen?
Was kann man {{dt}} gucken?
Öffne {_GUIDE_NOUN} {{dt}}
""")
def _guide_daytime(rng):
    while True:
        surf, args = rng.choice(_DAYTIME)
        if args:
            break
    return {"dt": Slot(surf, None, None), "_day": Slot("", "day", args["day"]), "_time": Slot("", "time", args["time"])}, {}


@intent("guide_evening", "show_guide", f"""
Was läuft {{ev}}?
Zeig mir {_GUIDE_NOUN} {{ev}}
Was kommt {{ev}}?
Programm {{ev}}
""")
def _guide_evening(rng):
    surf = rng.choice(_EVENING)
    s = {"ev": Slot(surf, None, None), "_time": Slot("", "time", "evening")}
    if surf.startswith(("heute", "für heute")):
        s["_day"] = Slot("", "day", "today")
    return s, {}


@intent("guide_channel", "show_guide", f"""
Zeig mir {_GUIDE_NOUN} {{vonch}}
Programm {{vonch}}
Was läuft heute {{im}}?
Was kommt heute {{im}}?
Zeig mir, was heute {{im}} läuft
Fernsehprogramm {{vonch}}
Öffne {_GUIDE_NOUN} {{vonch}}
Was läuft morgen {{im}}?
Was kommt heute Abend {{im}}?
Was läuft am Wochenende {{im}}?
""")
def _guide_channel(rng):
    s = channel_slots(rng)
    value = s["ch"].value
    nom = [c for c in V.CHANNELS if c[0] == value][0][1]
    forms = []
    for n in nom:
        if n.startswith("das Erste") or n.startswith("Das Erste"):
            forms += ["vom Ersten", "für das Erste"]
        elif n.startswith("das "):
            forms += ["vom " + n[4:], "für das " + n[4:]]
        elif n.startswith("die "):
            forms += ["von der " + n[4:], "für die " + n[4:]]
        elif n.startswith("den "):
            forms += ["vom " + n[4:], "für den " + n[4:]]
        else:
            forms += ["von " + n, "für " + n]
    s["vonch"] = Slot(rng.choice(forms), "channel", value)
    return s, {}


def _guide_channel_fix(tpl, args):
    """guide_channel: the day/time words are part of some of its templates."""
    if "heute Abend" in tpl:
        args.update(day="today", time="evening")
    elif "heute" in tpl:
        args["day"] = "today"
    elif "morgen" in tpl:
        args["day"] = "tomorrow"
    elif "Wochenende" in tpl:
        args["day"] = "weekend"


@intent("guide_time", "show_guide", f"""
Was läuft um {{clock}}?
Was kommt heute um {{clock}}?
Zeig mir {_GUIDE_NOUN} ab {{clock}}
Programm ab {{clock}}
Was läuft um {{clock}} im Fernsehen?
Was kommt um {{clock}} {{im}}?
Was läuft um {{clock}} {{im}}?
Zeig mir {_GUIDE_NOUN} jetzt
Was läuft jetzt überall?
Programm für jetzt
""")
def _guide_time(rng):
    hh, mm = V.sample_clock(rng)
    s = {"clock": Slot(V.time_surface(rng, hh, mm), "time", f"{hh:02d}:{mm:02d}")}
    s.update(channel_slots(rng))
    return s, {}


def _guide_time_fix(tpl, args):
    if "heute um" in tpl:
        args["day"] = "today"
    if "jetzt" in tpl:
        args["time"] = "now"


# ---- set_subtitles ----------------------------------------------------------------------------

@intent("subs_on", "set_subtitles", """
Untertitel an
Mach die Untertitel an
Untertitel einschalten
Ich brauche Untertitel
Schalte die Untertitel ein
Untertitel bitte
Kannst du Untertitel anmachen?
Blende Untertitel ein
Mit Untertiteln bitte
Untertitel aktivieren
Zeig Untertitel an
Ich will Untertitel sehen
Untertitel anzeigen
Schalt mal Untertitel an
""")
def _subs_on(rng):
    return {}, {"state": "on"}


@intent("subs_off", "set_subtitles", """
Untertitel aus
Mach die Untertitel aus
Untertitel ausschalten
Keine Untertitel
Schalte die Untertitel ab
Untertitel weg
Kannst du die Untertitel ausmachen?
Blende die Untertitel aus
Ohne Untertitel bitte
Untertitel deaktivieren
Die Untertitel stören, mach sie weg
Ich will keine Untertitel
Untertitel verbergen
""")
def _subs_off(rng):
    return {}, {"state": "off"}


@intent("subs_lang", "set_subtitles", """
Untertitel auf {lang}
Untertitel auf {lang} bitte
{ladj}e Untertitel
{ladj}e Untertitel bitte
Mach {ladj}e Untertitel an
Stell die Untertitel auf {lang}
Schalte {ladj}e Untertitel ein
Ich will Untertitel auf {lang}
Kannst du die Untertitel auf {lang} stellen?
Untertitel in {lang}
Zeig die Untertitel auf {lang}
Mit {ladj}en Untertiteln bitte
Untertitelsprache {lang}
Wechsel die Untertitel auf {lang}
Untertitel {lang}
Gibt es {ladj}e Untertitel? Mach die an
""")
def _subs_lang(rng):
    return lang_slots(rng), {"state": "on"}


# ---- set_audio_language -----------------------------------------------------------------------

@intent("audio_lang", "set_audio_language", """
Ton auf {lang}
Stell die Sprache auf {lang}
Audio auf {lang}
Tonspur {lang}
Auf {lang} bitte
Sprache {lang}
Ich will das auf {lang} hören
{ladj}e Tonspur bitte
Wechsel die Tonspur auf {lang}
Schalte die Sprache auf {lang} um
Kannst du auf {lang} umstellen?
Mach den Ton auf {lang}
Die {ladj}e Fassung bitte
Audiosprache {lang}
Stell den Film auf {lang}
Auf {lang} umschalten, die Sprache
Gibt es das auf {lang}? Dann bitte umstellen
Synchronisation auf {lang}
{ladj}er Ton bitte
Wechsle die Sprache zu {lang}
""")
def _audio_lang(rng):
    return lang_slots(rng), {}


@intent("audio_original", "set_audio_language", """
Originalton bitte
Im Original
Originalsprache
Ich will es im Original hören
OV bitte
Stell auf Originalton um
Tonspur Original
Wechsel in die Originalfassung
Original-Ton
Schalte auf Originalsprache
Kannst du den Originalton anmachen?
Sprache auf Original
Die Originalversion bitte
Audio im Original
Original bitte
In Originalsprache bitte
""")
def _audio_original(rng):
    return {}, {"language": "original"}


# ---- set_sleep_timer --------------------------------------------------------------------------

@intent("sleep", "set_sleep_timer", """
Schalte den Fernseher in {durD} aus
Schalt in {durD} ab
Mach in {durD} aus
Geh in {durD} aus
Ausschalten in {durD}
Nach {durD} ausschalten
In {durD} bitte ausmachen
Schlaftimer auf {durA}
Sleep Timer {durN}
Stell den Sleeptimer auf {durA}
Schlaftimer {durN}
Stell einen Timer, dass der Fernseher sich in {durD} ausschaltet
Der Fernseher soll in {durD} ausgehen
Kannst du den Fernseher in {durD} ausschalten?
Mach den Fernseher in {durD} aus
Ich schlafe gleich ein, mach in {durD} aus
Ausschalttimer {durN}
In {durD} ausschalten
Fernseher nach {durD} aus
Automatisch ausschalten in {durD}
Schalte dich in {durD} ab
Timer zum Ausschalten auf {durA}
Einschlaftimer auf {durA} stellen
Nach {durD} bitte abschalten
""")
def _sleep(rng):
    m = rnd_sleep(rng)
    return {"durD": Slot(minutes_phrase(rng, m, "dat"), "minutes", m), "durA": Slot(minutes_phrase(rng, m, "acc"), "minutes", m),
            "durN": Slot(minutes_phrase(rng, m, "nom"), "minutes", m)}, {}


# ---- power ------------------------------------------------------------------------------------

@intent("power_off", "power", """
Fernseher aus
Schalte den Fernseher aus
Mach den Fernseher aus
Ausschalten
TV aus
Mach aus
Schalt die Kiste aus
Fernseher ausschalten
Kannst du den Fernseher ausmachen?
Aus
Gerät ausschalten
Mach das Ding aus
Ich geh schlafen, mach aus
Bitte ausschalten
Schalte die Box aus
Herunterfahren
Ganz ausschalten
Schalt dich aus
Mach den Fernseher komplett aus
Glotze aus
Schalt den Fernseher ab
Fernseher abschalten
Mach die Box aus
Ausmachen
Abschalten
TV ausschalten
Gerät aus
""")
def _power_off(rng):
    return {}, {"state": "off"}


@intent("power_on", "power", """
Fernseher an
Schalte den Fernseher ein
Mach den Fernseher an
Einschalten
TV an
Mach an
Fernseher einschalten
Kannst du den Fernseher anmachen?
Gerät einschalten
Schalt dich ein
Aufwachen
Bitte einschalten
Schalte die Box ein
Fernseher anschalten
Glotze an
Wach auf
TV einschalten
Fernseher starten
Anmachen
Gerät an
""")
def _power_on(rng):
    return {}, {"state": "on"}


@intent("power_standby", "power", """
Standby
In den Standby
Geh in den Standby
Schalte auf Standby
Standby-Modus
Ruhemodus
Geh in den Ruhemodus
Bereitschaft
Mach Standby
Fernseher in den Standby
Kannst du in den Standby gehen?
Standby bitte
Versetze das Gerät in den Standby
Schlafmodus
Ruhezustand
Stand-by bitte
In den Ruhezustand
""")
def _power_standby(rng):
    return {}, {"state": "standby"}


# ---- get_program_info -------------------------------------------------------------------------

@intent("info_now", "get_program_info", """
Was läuft gerade?
Was läuft gerade {im}?
Was läuft jetzt {im}?
Was kommt gerade {im}?
Was läuft im Moment {im}?
Was läuft aktuell {im}?
Was ist gerade {im} dran?
Welche Sendung läuft gerade {im}?
Was zeigen die gerade {im}?
Was läuft jetzt?
Was ist das gerade für eine Sendung?
Worum geht es gerade?
Was kommt jetzt {im}?
Was wird gerade {im} gezeigt?
Sag mir, was gerade {im} läuft
Welcher Film läuft gerade {im}?
Was gucken wir gerade?
Was läuft hier gerade?
Info zur aktuellen Sendung
Was läuft gerade im Fernsehen?
""")
def _info_now(rng):
    return channel_slots(rng), {"when": "now"}


@intent("info_next", "get_program_info", """
Was kommt danach?
Was kommt danach {im}?
Was läuft als nächstes {im}?
Was kommt als nächstes?
Was kommt als Nächstes {im}?
Was läuft danach {im}?
Was kommt nachher {im}?
Was läuft im Anschluss {im}?
Welche Sendung kommt danach {im}?
Was kommt nach dieser Sendung?
Und was kommt danach?
Was kommt gleich {im}?
Was läuft nach dem Film {im}?
Was folgt danach?
Was ist die nächste Sendung {im}?
""")
def _info_next(rng):
    return channel_slots(rng), {"when": "next"}


@intent("info_plain", "get_program_info", """
Was läuft {im}?
Was kommt {im}?
Was ist das für eine Sendung?
Worum geht es in dieser Sendung?
Infos zur Sendung
Erzähl mir was über die Sendung
Was läuft eigentlich {im}?
Was zeigen die {im}?
Was gibt es {im}?
Gib mir Infos zur Sendung {im}
Beschreibung der Sendung
Worum geht es in dem Film?
""")
def _info_plain(rng):
    return channel_slots(rng), {}


# ---- set_picture_mode -------------------------------------------------------------------------

_MODES = {
    "cinema": ["Kino", "Film", "Cinema", "Kinomodus", "Filmmodus"],
    "sport": ["Sport", "Sportmodus", "Sports"],
    "game": ["Spiel", "Spiele", "Game", "Gaming", "Spielmodus", "Spielemodus", "Gamemodus"],
    "vivid": ["Lebendig", "Dynamisch", "Vivid", "Kräftig", "Brillant"],
    "standard": ["Standard", "Normal", "Standardmodus", "Normalmodus"],
}


@intent("picture_mode", "set_picture_mode", """
Bildmodus {mode}
Bildmodus auf {mode}
Stell das Bild auf {mode}
Stell den Bildmodus auf {mode}
Wechsel den Bildmodus zu {mode}
Mach den Bildmodus {mode}
Bild auf {mode}
Schalte das Bild auf {mode} um
Ich will den Bildmodus {mode}
Kannst du den Bildmodus auf {mode} stellen?
Bildeinstellung {mode}
Ändere den Bildmodus auf {mode}
Bitte Bildmodus {mode}
Bildmodus: {mode}
Setz das Bild auf {mode}
""")
def _picture_mode(rng):
    m = rng.choice(list(_MODES))
    word = rng.choice([w for w in _MODES[m] if not w.endswith("modus")])
    return {"mode": Slot(word, "mode", m)}, {}


@intent("picture_mode_words", "set_picture_mode", """
{modus} an
{modus} bitte
Wechsel in den {modus}
Schalte in den {modus}
Aktiviere den {modus}
Mach den {modus} an
Ich will den {modus}
Stell auf {modus}
Kannst du den {modus} einschalten?
Bitte in den {modus} wechseln
""")
def _picture_mode_words(rng):
    m = rng.choice(list(_MODES))
    modus = {"cinema": ["Kinomodus", "Filmmodus", "Cinema-Modus"], "sport": ["Sportmodus", "Sport-Modus"],
             "game": ["Spielmodus", "Spielemodus", "Gaming-Modus", "Game-Modus"],
             "vivid": ["Lebendig-Modus", "Vivid-Modus", "Dynamikmodus"],
             "standard": ["Standardmodus", "Normalmodus", "Standard-Modus"]}[m]
    return {"modus": Slot(rng.choice(modus), "mode", m)}, {}


@intent("picture_mode_desc", "set_picture_mode", """
Mach das Bild {adj}
Das Bild soll {adj} sein
Stell ein {adj}es Bild ein
Bild {adj}er bitte
Ich will ein {adj}es Bild
""")
def _picture_mode_desc(rng):
    m, adj = rng.choice([("vivid", "lebendig"), ("vivid", "kräftig"), ("vivid", "bunt"), ("cinema", "kinoreif"),
                         ("standard", "normal")])
    return {"adj": Slot(adj, "mode", m)}, {}


# ---- no function: answered with text ---------------------------------------------------------

_CITIES = ["Berlin", "Hamburg", "München", "Köln", "Frankfurt", "Stuttgart", "Leipzig", "Dresden", "Bremen", "Wien",
           "Zürich", "Paris", "Rom", "Mallorca", "Düsseldorf", "Hannover", "Nürnberg"]
_ITEMS = ["Milch", "Brot", "Eier", "Butter", "Käse", "Äpfel", "Kaffee", "Nudeln", "Tomaten", "Bier", "Wasser", "Zucker"]


@intent("no_call", None, """
Wie wird das Wetter morgen?
Wie ist das Wetter in {city}?
Erzähl mir einen Witz
Wie spät ist es?
Mach das Licht an
Mach das Licht im Wohnzimmer aus
Bestell mir eine Pizza
Ruf {name} an
Wer hat die WM 2014 gewonnen?
Stell einen Wecker auf 7 Uhr
Wie geht es dir?
Hallo
Danke
Was kannst du?
Schreib eine Nachricht an {name}
Wie viel ist fünf mal sieben?
Übersetze Hallo ins Englische
Setz {item} auf die Einkaufsliste
Wie hoch ist die Zugspitze?
Mach die Heizung wärmer
Schließ die Rollläden
Wie lange fährt man nach {city}?
Guten Morgen
Ich bin müde
Wie alt ist {name}?
Wann fährt der nächste Bus?
Kauf {item}
Was ist die Hauptstadt von Frankreich?
Öffne das Garagentor
Wie viele Kalorien hat ein Apfel?
Spiel mir ein Lied vor
Koch mir einen Kaffee
Wer bist du?
Schalte die Waschmaschine ein
Buche mir einen Flug nach {city}
Wie ist der Verkehr?
Was gibt es zum Abendessen?
Wann hat {name} Geburtstag?
Erinnere mich ans Müll rausbringen
Saug das Wohnzimmer
Lies mir die Nachrichten vor
Wie steht der DAX?
Gute Nacht
Tschüss
Ich liebe dich
Kannst du mir bei den Hausaufgaben helfen?
Wie buchstabiert man Rhythmus?
Mach die Tür auf
Wie warm ist es draußen?
Such ein Rezept für Lasagne
Schick {name} eine E-Mail
Wie viel Uhr ist es in New York?
Stell die Heizung auf 21 Grad
Was ist ein schwarzes Loch?
Bestell ein Taxi
Wer war der erste Mensch auf dem Mond?
Hilfe
Sing ein Lied
Wie weit ist es bis {city}?
Wie heißt du?
""")
def _no_call(rng):
    return {"city": Slot(rng.choice(_CITIES)), "name": Slot(rng.choice(V.FIRST_NAMES)), "item": Slot(rng.choice(_ITEMS))}, {}


FIXUPS = {"guide_channel": _guide_channel_fix, "guide_time": _guide_time_fix}


def _add_generated():
    """Appends the templates of the lexicon x frames (tv_de_lexicon.py) to each intent; a generated template
    that repeats a handwritten one is left out. Intent.n_hand counts the handwritten ones (first)."""
    for it in INTENTS:
        it.n_hand = len(it.templates)
        lex = tv_de_lexicon.LEX.get(it.name, {})
        gen = tv_de_lexicon.expand(it.name, lex)
        extra = [t.strip() for t in lex.get("extra", "").splitlines() if t.strip()]
        if it.function is None:
            extra += [t.strip() for t in tv_de_lexicon.NO_CALL_EXTRA.splitlines() if t.strip()]
        have = set(it.templates)
        for t in extra + gen:
            if t not in have:
                have.add(t)
                it.templates.append(t)


_add_generated()


# ----------------------------------------------------------------------------------------------
# Template rendering

_TOKEN = re.compile(r"\(|\)|\||\[|\]|\{[A-Za-z_]+\}|[^()|\[\]{]+|\{")


def _parse(tpl):
    """Template -> nested list: ("seq", items) | ("alt", seqs) | ("opt", seq) | ("slot", name) | ("text", s)."""
    toks = _TOKEN.findall(tpl)
    pos = 0

    def seq(stop):
        nonlocal pos
        items = []
        while pos < len(toks) and toks[pos] not in stop:
            t = toks[pos]
            pos += 1
            if t == "(":
                alts = [seq({"|", ")"})]
                while toks[pos] == "|":
                    pos += 1
                    alts.append(seq({"|", ")"}))
                assert toks[pos] == ")", tpl
                pos += 1
                items.append(("alt", alts))
            elif t == "[":
                s = seq({"]"})
                assert toks[pos] == "]", tpl
                pos += 1
                items.append(("opt", s))
            elif t.startswith("{") and t.endswith("}"):
                items.append(("slot", t[1:-1]))
            else:
                items.append(("text", t))
        return ("seq", items)

    tree = seq(set())
    assert pos == len(toks), tpl
    return tree


def _render(node, rng, out):
    kind = node[0]
    if kind == "seq":
        for it in node[1]:
            _render(it, rng, out)
    elif kind == "alt":
        _render(rng.choice(node[1]), rng, out)
    elif kind == "opt":
        if rng.random() < 0.5:
            _render(node[1], rng, out)
    elif kind == "slot":
        out.append(("slot", node[1]))
    else:
        out.append(("text", node[1]))


def _slots_in(node):
    kind = node[0]
    if kind == "seq":
        return set().union(*[_slots_in(i) for i in node[1]]) if node[1] else set()
    if kind == "alt":
        return set().union(*[_slots_in(s) for s in node[1]])
    if kind == "opt":
        return _slots_in(node[1])
    return {node[1]} if kind == "slot" else set()


# ----------------------------------------------------------------------------------------------
# Noise: case, punctuation, fillers, typos, ASCII umlauts

_UMLAUT = {"ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss", "Ä": "Ae", "Ö": "Oe", "Ü": "Ue"}


def _typo(rng, word):
    if len(word) < 4 or not word.isalpha():
        return word
    i = rng.randrange(1, len(word) - 1)
    op = rng.choice(["swap", "drop", "double", "swap"])
    if op == "swap":
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    if op == "drop":
        return word[:i] + word[i + 1:]
    return word[:i] + word[i] + word[i:]


_PREFIXES = ["Hey, ", "Okay, ", "Äh, ", "Bitte ", "Du, ", "Hallo, ", "Fernseher, ", "Also, ", "Sag mal, ", "Ok ", "Hm, ",
             "Ähm, ", "Na, ", "So, ", "Gut, ", "Also gut, ", "Na los, ", "Hör mal, ", "Ach, ", "Ja, ", "Bitte mal ",
             "Hey Fernseher, ", "Computer, ", "Moment, ", "Ach ja, "]
_SUFFIXES = [" bitte", ", bitte", " danke", ", danke", " mal", " schnell", " bitte schön", ", bitte schön", ", danke dir",
             " bitte mal", ", okay?", ", ja?", " dann", ", wenn du magst", " bitte danke"]
# particles that name a time: arguments of recordings, reminders, the guide and program info, so never noise there
_PREFIXES_TIME = ["Jetzt ", "Jetzt mal ", "Und jetzt ", "Sofort ", "Gleich mal "]
_SUFFIXES_TIME = [" jetzt", ", sofort", ", gleich", ", aber schnell", " jetzt mal", ", jetzt"]
_TIMED = ("record_", "remind_", "guide_", "info_")


class Noise:
    def __init__(self, rng, clean=False, timed=True):
        r = rng.random
        self.lower = not clean and r() < 0.25
        self.ascii = not clean and r() < 0.06
        self.typo = not clean and r() < 0.08
        self.punct = "keep" if clean else rng.choice(["keep"] * 5 + ["strip"] * 4 + ["bang", "dot", "dot"])
        pre, suf = _PREFIXES, _SUFFIXES
        if not timed:
            pre, suf = pre + _PREFIXES_TIME, suf + _SUFFIXES_TIME
        self.prefix = "" if clean or r() > 0.14 else rng.choice(pre)
        self.suffix = "" if clean or r() > 0.10 else rng.choice(suf)

    def text(self, rng, s, literal):
        if self.typo and literal and rng.random() < 0.3:
            words = s.split(" ")
            cand = [i for i, w in enumerate(words) if len(w) >= 4 and w.isalpha()]
            if cand:
                i = rng.choice(cand)
                words[i] = _typo(rng, words[i])
                s = " ".join(words)
                self.typo = False
        if self.ascii:
            s = "".join(_UMLAUT.get(c, c) for c in s)
        if self.lower:
            s = s.lower()
        return s


def realize(intent_obj, tpl_index, rng, clean=False):
    """One utterance of a template -> (text, expected) with expected {"calls":[...]} or {"text": ...}."""
    tpl = intent_obj.templates[tpl_index]
    slots, args = intent_obj.sampler(rng)
    args = dict(args)
    tree = _parse(tpl)
    parts = []
    _render(tree, rng, parts)
    noise = Noise(rng, clean, timed=intent_obj.function is None or intent_obj.name.startswith(_TIMED))
    pieces, used = [], set()
    starts_copied = None  # whether the utterance starts with a copied value (never re-cased)
    for kind, s in parts:
        if kind == "text":
            if starts_copied is None and s.strip():
                starts_copied = False
            pieces.append(noise.text(rng, s, True))
            continue
        sl = slots[s]
        used.add(s)
        pre = noise.text(rng, sl.prefix, True) if sl.prefix else ""
        core = noise.text(rng, sl.core, False)
        if starts_copied is None and (pre + core).strip():
            starts_copied = sl.copy and not pre
        pieces.append(pre + core)
        if sl.key:
            args[sl.key] = core if sl.copy else sl.value
    for name, sl in slots.items():  # arguments set by the wording, not by a surface
        if name.startswith("_") and sl.key:
            args[sl.key] = sl.value
    fix = FIXUPS.get(intent_obj.name)
    if fix:
        fix(tpl, args)
    text = "".join(pieces)
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"\s+([?,.!:])", r"\1", text)
    if text and not noise.lower and not starts_copied:  # a sentence starts with a capital
        text = text[0].upper() + text[1:]
    if noise.suffix and not text.endswith("?"):
        text = text.rstrip(".!") + noise.suffix
    if noise.prefix:
        text = (noise.prefix.lower() if noise.lower else noise.prefix) + text
    if noise.punct == "strip":
        text = text.rstrip("?.!")
    elif noise.punct == "bang" and not text.endswith("?"):
        text = text.rstrip(".!") + "!"
    elif noise.punct == "dot" and not text.endswith(("?", "!", ".")):
        text = text + "."
    if not text:
        raise ValueError(f"empty utterance from {tpl!r}")
    if intent_obj.function is None:
        return text, {"text": NO_CALL_REPLY}
    return text, {"calls": [{"name": intent_obj.function, "args": args}]}


# ----------------------------------------------------------------------------------------------
# The call in FunctionGemma's format (the model turn's target)

def _value_text(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    return "<escape>" + v + "<escape>"


def answer_text(expected, order):
    """The model turn: one call with its keys in catalog order (sorted by name), or text + end of turn.
    order: function name -> [keys in the catalog's rendered order]."""
    if "text" in expected:
        return expected["text"] + "<end_of_turn>"
    c = expected["calls"][0]
    keys = [k for k in order[c["name"]] if k in c["args"]]
    assert len(keys) == len(c["args"]), (c, order[c["name"]])
    body = ",".join(f"{k}:{_value_text(c['args'][k])}" for k in keys)
    return "<start_function_call>call:" + c["name"] + "{" + body + "}<end_function_call>"


# ----------------------------------------------------------------------------------------------
# Split and sampling

# The split salt: changing it draws a new dev set (run 1 and 2 used the unsalted hash; "tv-split-2" since
# the generator was broadened with tv_de_lexicon.py).
SPLIT_SALT = "tv-split-2"


def _split_hash(intent_name, tpl):
    return hashlib.sha256((SPLIT_SALT + "\x00" + intent_name + "\x00" + tpl).encode()).digest()


def template_is_dev(intent_name, tpl, dev_share):
    h = _split_hash(intent_name, tpl)
    return int.from_bytes(h[:4], "little") / 2 ** 32 < dev_share


_WORD = re.compile(r"[^\W\d_]+")


def template_words(tpl):
    """The lower-cased words of a template's literal text (every alternative, no slots)."""
    return {w.lower() for w in _WORD.findall(re.sub(r"\{[A-Za-z_]+\}", " ", tpl))}


def split_templates(dev_share=0.25):
    """(intent, template index, is_dev) for every template. A template goes to dev when the hash of its
    salt, intent and text falls below dev_share; every intent keeps at least one training template and, with
    three or more, one dev template. Then vocabulary coverage: every word of a dev template must occur
    in the training templates of the same function (a word no training example contains has a zero
    embedding, so no model could learn it from this data); dev templates that would bring a new word
    are moved to training, in hash order, until every dev template is covered."""
    hsh = lambda it, t: _split_hash(it.name, t)
    flags = {}
    for it in INTENTS:
        f = [template_is_dev(it.name, t, dev_share) for t in it.templates]
        if all(f):
            f[0] = False
        if len(f) >= 3 and not any(f):
            hs = [hsh(it, t) for t in it.templates]
            f[min(range(len(hs)), key=lambda i: hs[i])] = True
        flags[it.name] = f
    known = {}
    for it in INTENTS:
        w = known.setdefault(it.function, set())
        for t, d in zip(it.templates, flags[it.name]):
            if not d:
                w |= template_words(t)
    dev = sorted(((hsh(it, t), it, i) for it in INTENTS for i, t in enumerate(it.templates) if flags[it.name][i]),
                 key=lambda x: x[0])
    for _, it, i in dev:
        words = template_words(it.templates[i])
        if not words <= known[it.function]:
            flags[it.name][i] = False
            known[it.function] |= words
    return [(it, i, f) for it in INTENTS for i, f in enumerate(flags[it.name])]


def check_templates():
    """Every slot a template names exists in its intent's sampler output, and every argument-bearing
    slot of an intent that the template could drop is flagged (arguments must follow the wording)."""
    rng = random.Random(0)
    problems = []
    for it in INTENTS:
        slots, _ = it.sampler(rng)
        for t in it.templates:
            try:
                tree = _parse(t)
            except AssertionError:
                problems.append(f"{it.name}: cannot parse {t!r}")
                continue
            names = _slots_in(tree)
            for n in names:
                if n not in slots:
                    problems.append(f"{it.name}: unknown slot {{{n}}} in {t!r}")
            # slots inside optional/alternative groups must not carry arguments
            def walk(node, inside):
                k = node[0]
                if k == "slot" and inside and slots.get(node[1]) and slots[node[1]].key:
                    problems.append(f"{it.name}: argument slot {{{node[1]}}} inside an optional part of {t!r}")
                if k == "seq":
                    for i in node[1]:
                        walk(i, inside)
                elif k == "alt":
                    for s in node[1]:
                        walk(s, True)
                elif k == "opt":
                    walk(node[1], True)
            walk(tree, False)
    return problems
