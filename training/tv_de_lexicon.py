"""Generated templates for tv_de_templates: a verb and noun lexicon per intent, crossed with German command
frames, so that every intent is taught the same constructions (the handwritten templates in
tv_de_templates.py add the idioms, statements and questions that are particular to one intent).

A verb entry has the imperative (an alternative group "(Mach|Mache)"), the infinitive with "|" at the
separable prefix ("lauter |machen": complement "lauter", written apart; "aus|schalten": prefix "aus",
written together) and an object: "" (none), an optional group "[(den Ton|das)]", a required group
"(die Lautstärke|den Ton)" or a slot "{tacc}" (a slot is never optional: its argument follows the
wording). From these the frames make:

    imp     Mach [mal|bitte|...] den Ton lauter       separable prefix at the end (verb-second)
    inf     Den Ton lauter machen / Bitte ... machen  verb-final infinitive command, object first
    modal   Kannst du / Könntest du / Würdest du (mir) ... machen?
    want    Ich möchte / will / würde gern ... machen
    lass    Lass uns / Wir wollen ... machen
    polite  Wäre es möglich, ... lauter zu machen?
    ellip   Ton lauter (the bare noun and the prefix, no verb; only where the entry gives the noun)

Nouns are elliptic commands ("Pause", "Untertitel", "mehr Ton"), said alone, with "bitte", or after
"Ich hätte gern / Ich brauche" where the entry allows it.

Particles: "mal", "doch", "bitte", "eben" everywhere; "jetzt", "gleich", "sofort", "schnell" only in
intents whose arguments do not depend on time (recordings, reminders, the guide and program info
read "jetzt", "gleich" and "sofort" as arguments)."""

import re

_PART = "(mal|bitte|doch mal|bitte mal|mal eben|doch bitte|einfach|mal kurz)"
_PART_TIME = "(mal|bitte|doch mal|bitte mal|mal eben|doch bitte|jetzt|jetzt mal|gleich|sofort|schnell|einfach|mal kurz)"
_TIMED = ("record_", "remind_", "guide_", "info_")  # intents whose arguments read time words


def E(imp, inf, obj="", ell=None, mir=False, skip=()):
    """A verb entry. ell: the bare noun of the elliptic form ("(Ton|Lautstärke)" -> "Ton lauter");
    mir: the benefactive "mir" fits ("Kannst du mir X zeigen?"); skip: frames that do not fit."""
    return {"imp": imp, "inf": inf, "obj": obj, "ell": ell, "mir": mir, "skip": set(skip)}


def N(text, want=False, alone=False):
    """An elliptic noun command; want: it also fits "Ich hätte gern / Ich brauche ..."; alone: only as written."""
    return {"text": text, "want": want, "alone": alone}


def _forms(inf):
    pre, base = inf.split("|")
    joined = not pre.endswith(" ")
    pre = pre.strip()
    if not pre:
        return "", base, "zu " + base
    if joined:
        return pre, pre + base, pre + "zu" + base
    return pre, pre + " " + base, pre + " zu " + base


# words that lose their capital when a noun phrase no longer starts the sentence ("Bitte die Untertitel")
_FUNCTION_WORDS = set("""Die Den Das Der Dem Ein Eine Einen Einem Jetzt Sofort Etwas Mehr Noch Weniger Lieber Alles Was
Mit Von Nicht Kein Keine Keinen Wieder Auf In Nach Vorwärts Rückwärts Ganz Zurück Überall Aus An Ohne Ab Nochmal Viel
Deutlich Mal Schnell Los Weiter Und Lauter Leiser Stumm Gerade Im Zum Zur Einmal Kurze Kleine Vor Plus Minus Unter""".split())


def _lower_start(t):
    """Lower-cases the first word (of every alternative of a leading group) when it is a function word."""
    def low(seg):
        m = re.match(r"[^\W\d_]+", seg)
        if m and m.group(0) in _FUNCTION_WORDS:
            return seg[0].lower() + seg[1:]
        return seg
    if t.startswith("("):
        depth, i = 0, 0
        for i, ch in enumerate(t):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0:
                break
        inner, rest = t[1:i], t[i + 1:]
        parts, d, cur = [], 0, ""
        for ch in inner:
            if ch == "|" and d == 0:
                parts.append(cur)
                cur = ""
                continue
            d += ch in "(["
            d -= ch in ")]"
            cur += ch
        parts.append(cur)
        return "(" + "|".join(low(p) for p in parts) + ")" + rest
    return low(t)


def _clean(t):
    t = re.sub(r"\s+", " ", t).strip()
    t = re.sub(r"\s+([?,.!])", r"\1", t)
    return t


def expand(name, lex):
    """The generated templates of one intent (deduplicated, in a fixed order)."""
    part = _PART if name.startswith(_TIMED) else _PART_TIME
    out = []
    for v in lex.get("verbs", []):
        p, inf, zu = _forms(v["inf"])
        o, sk = v["obj"], set(v["skip"])
        if inf.endswith("zeigen"):  # "Ich möchte / Lass uns X zeigen" says the user shows it
            sk |= {"want", "lass"}
        m = "[mir] " if v["mir"] else ""
        if v["imp"] and "imp" not in sk:
            out += [f"{v['imp']} {o} {p}", f"{v['imp']} {part} {o} {p}", f"Bitte {v['imp'].lower()} {o} {p}"]
        if "inf" not in sk:
            out += [f"{o} {inf}", f"{o} {part} {inf}", f"Bitte {o} {inf}"]
        if "modal" not in sk:
            out.append(f"(Kannst|Könntest|Würdest) du [(bitte|mal|bitte mal|vielleicht)] {m}{o} {inf}?")
        if "want" not in sk:
            out.append(f"Ich (möchte|will|würde gern|würde gerne|möchte gern) {o} {inf}")
        if "lass" not in sk:
            out.append(f"(Lass uns|Wir wollen|Wir möchten) {o} {inf}")
        if "polite" not in sk:
            out.append(f"(Wäre es möglich|Ist es möglich|Geht es), {o} {zu}?")
        if v["ell"] and p:
            out += [f"{v['ell']} {p}", f"{v['ell']} {p} bitte"]
    for n in lex.get("nouns", []):
        t = n["text"]
        out.append(t)
        if n["alone"]:
            continue
        low = _lower_start(t)
        out += [f"{t} bitte", f"Bitte {low}", f"{t}, (bitte|danke)"]
        if n["want"]:
            out.append(f"Ich (hätte gern|hätte gerne|brauche|will|möchte) {low}")
    seen, res = set(), []
    for t in out:
        t = _clean(t)
        if t not in seen:
            seen.add(t)
            res.append(t)
    return res


# ----------------------------------------------------------------------------------------------
# The lexicon. Objects that carry no argument are optional groups; slot objects are required.

_TV = "(den Fernseher|die Kiste|das Gerät|die Glotze|den TV)"
_MACH = "(Mach|Mache)"
_SCHALT = "(Schalt|Schalte)"
_DREH = "(Dreh|Drehe)"
_STELL = "(Stell|Stelle)"

LEX = {
    # ---- switch_channel
    "switch_name": {"verbs": [
        E(_SCHALT, "um|schalten", "{auf}"),
        E(_SCHALT, "|schalten", "{auf}"),
        E("(Wechsel|Wechsle)", "|wechseln", "{auf}"),
        E("(Wechsel|Wechsle)", "|wechseln", "{zu}"),
        E("(Geh|Gehe)", "|gehen", "{auf}", skip=("polite",)),
        E(_MACH, "an|machen", "{ch}"),
        E(_STELL, "ein|stellen", "{ch}"),
        E("(Zeig|Zeige)", "|zeigen", "{ch}", mir=True),
        E("(Spring|Springe)", "|springen", "{zu}", skip=("polite", "want")),
        E(_MACH, "rein|machen", "{ch}"),
        E(None, "|sehen", "{ch}", skip=("inf", "modal", "polite")),
        E(None, "|gucken", "{ch}", skip=("inf", "modal", "polite")),
        E(None, "|schauen", "{ch}", skip=("inf", "modal", "polite")),
    ], "nouns": [N("{ch}", want=True), N("{ch} jetzt"), N("Lieber {ch}"), N("Sender {ch}"), N("Den Sender {ch}", want=True)]},
    "switch_number": {"verbs": [
        E(_SCHALT, "um|schalten", "auf (Kanal|Programmplatz|Sender|Platz) {num}"),
        E(_SCHALT, "|schalten", "auf (Kanal|Programmplatz|Sender) {num}"),
        E("(Wechsel|Wechsle)", "|wechseln", "(auf|zu) (Kanal|Programmplatz) {num}"),
        E("(Geh|Gehe)", "|gehen", "auf (Kanal|Programm|Programmplatz) {num}", skip=("polite",)),
        E(_MACH, "an|machen", "(Kanal|Programm) {num}"),
        E(_STELL, "ein|stellen", "(Kanal|Programmplatz) {num}"),
        E("(Zeig|Zeige)", "|zeigen", "(Kanal|Programm) {num}", mir=True),
        E("(Spring|Springe)", "|springen", "(auf|zu) (Kanal|Programm) {num}", skip=("polite", "want")),
        E("(Tipp|Tippe)", "ein|tippen", "(Kanal|die) {num}", skip=("lass",)),
    ], "nouns": [N("(Kanal|Programm|Programmplatz|Sender) (Nummer|Nr.) {num}", want=True), N("Die {num}"),
                 N("(Kanal|Programm) {num} jetzt")]},

    # ---- set_volume
    "volume_level": {"verbs": [
        E(_STELL, "|stellen", "die Lautstärke auf {level}"),
        E(_STELL, "|stellen", "den Ton auf {level}"),
        E(_MACH, "|machen", "(die Lautstärke|den Ton) auf {level}"),
        E("(Setz|Setze)", "|setzen", "die Lautstärke auf {level}"),
        E("(Regel|Regle)", "|regeln", "die Lautstärke auf {level}"),
        E(_DREH, "|drehen", "(die Lautstärke|den Ton) auf {level}"),
        E("(Änder|Ändere)", "|ändern", "die Lautstärke auf {level}"),
        E(_STELL, "ein|stellen", "(Lautstärke|die Lautstärke) {level}"),
    ], "nouns": [N("Lautstärke auf {level}"), N("(Lautstärke|Ton|Volume) {level} bitte"),
                 N("(Lautstärke|Ton) auf {level}, bitte"), N("Lautstärke (Stufe|Level|Wert) {level}", want=True),
                 N("Auf {level} (bitte|stellen)")]},
    "volume_up": {"verbs": [
        E(_MACH, "lauter |machen", "[(den Ton|den Fernseher|es|das|den Sound)]"),
        E(_DREH, "lauter |drehen", "[(den Ton|den Fernseher|das)]"),
        E(_DREH, "hoch|drehen", "[(den Ton|die Lautstärke)]", ell="(Ton|Lautstärke|Sound)"),
        E(_DREH, "auf|drehen", "[(den Ton|die Lautstärke)]"),
        E(_STELL, "lauter |stellen", "[(den Ton|den Fernseher|das)]"),
        E("(Erhöhe|Erhöh)", "|erhöhen", "(die Lautstärke|den Ton|den Pegel)"),
        E("(Heb|Hebe)", "an|heben", "(die Lautstärke|den Ton)"),
        E(_MACH, "rauf|machen", "(die Lautstärke|den Ton)", ell="(Ton|Lautstärke)"),
        E("(Regel|Regle)", "hoch|regeln", "(die Lautstärke|den Ton)"),
        E("(Zieh|Ziehe)", "hoch|ziehen", "(die Lautstärke|den Ton)"),
    ], "nouns": [N("(Mehr|Noch mehr|Etwas mehr) (Ton|Lautstärke)", want=True),
                 N("(Etwas|Ein bisschen|Ein wenig|Ein Stück|Deutlich|Viel|Einen Tick) lauter"),
                 N("Lauter, (ich versteh nichts|man hört nichts)", alone=True)],
        "extra": """
Ich (verstehe|versteh|höre|hör) (kaum was|fast nichts|gar nichts|kein Wort)
Man (versteht|hört) (ja|hier) (nichts|kaum was|gar nichts|kein Wort)
(Der Ton|Das|Der Fernseher) ist (viel zu|echt zu|etwas zu|total zu|einfach zu|wirklich zu) leise
Ich kann (nichts|kaum was|das nicht) (hören|verstehen)
Die Lautstärke ist zu (niedrig|gering)
(Das|Der Ton) könnte (lauter|etwas lauter) sein
Das hört man ja kaum
(Geht|Ginge) das (noch|etwas) lauter?
Lauter wäre (gut|besser|schön)
"""},
    "volume_down": {"verbs": [
        E(_MACH, "leiser |machen", "[(den Ton|den Fernseher|es|das|den Sound)]"),
        E(_DREH, "leiser |drehen", "[(den Ton|den Fernseher|das)]"),
        E(_DREH, "runter|drehen", "[(den Ton|die Lautstärke)]", ell="(Ton|Lautstärke|Sound)"),
        E(_DREH, "zurück|drehen", "(den Ton|die Lautstärke)"),
        E(_STELL, "leiser |stellen", "[(den Ton|den Fernseher|das)]"),
        E("(Senke|Senk)", "|senken", "(die Lautstärke|den Ton|den Pegel)"),
        E("(Verringere|Verringer)", "|verringern", "(die Lautstärke|den Ton)"),
        E("(Reduziere|Reduzier)", "|reduzieren", "(die Lautstärke|den Ton)"),
        E(_MACH, "runter|machen", "(die Lautstärke|den Ton)", ell="(Ton|Lautstärke)"),
        E("(Regel|Regle)", "runter|regeln", "(die Lautstärke|den Ton)"),
    ], "nouns": [N("(Weniger|Etwas weniger) (Ton|Lautstärke)", want=True),
                 N("(Etwas|Ein bisschen|Ein wenig|Ein Stück|Deutlich|Viel|Einen Tick) leiser"),
                 N("Leiser, (das ist zu laut|die Kinder schlafen)", alone=True)],
        "extra": """
(Der Ton|Das|Der Fernseher) ist (viel zu|echt zu|etwas zu|total zu|einfach zu|wirklich zu) laut
Die Lautstärke ist zu hoch
(Das|Der Ton) könnte (leiser|etwas leiser) sein
Das ist mir zu laut
Mir (dröhnen|klingeln) die Ohren
(Geht|Ginge) das (noch|etwas) leiser?
Leiser wäre (gut|besser|schön)
Nicht so laut, (bitte|die Kinder schlafen)
Das Baby schläft, (leiser bitte|mach leiser)
"""},
    "volume_steps_up": {"verbs": [
        E(_MACH, "lauter |machen", "[(den Ton|es|das)] um {steps} (Stufen|Schritte|Punkte)"),
        E(_MACH, "lauter |machen", "[(den Ton|es|das)] {steps} (Stufen|Schritte|Punkte)"),
        E("(Erhöhe|Erhöh)", "|erhöhen", "(die Lautstärke|den Ton) um {steps} [(Stufen|Schritte|Punkte)]"),
        E(_DREH, "hoch|drehen", "(den Ton|die Lautstärke) um {steps} (Stufen|Schritte)"),
        E(_STELL, "lauter |stellen", "[(den Ton|das)] um {steps} (Stufen|Schritte)"),
        E(_DREH, "lauter |drehen", "[(den Ton|das)] {steps} (Stufen|Schritte)"),
    ], "nouns": [N("{steps} (Stufen|Schritte|Punkte) lauter"), N("(Lautstärke|Ton|Volume) plus {steps}"),
                 N("{steps} (Stufen|Schritte) (rauf|hoch)"), N("Lautstärke {steps} (Stufen|Schritte) (rauf|hoch)")]},
    "volume_steps_down": {"verbs": [
        E(_MACH, "leiser |machen", "[(den Ton|es|das)] um {steps} (Stufen|Schritte|Punkte)"),
        E(_MACH, "leiser |machen", "[(den Ton|es|das)] {steps} (Stufen|Schritte|Punkte)"),
        E("(Senke|Senk)", "|senken", "(die Lautstärke|den Ton) um {steps} [(Stufen|Schritte|Punkte)]"),
        E("(Verringere|Verringer)", "|verringern", "(die Lautstärke|den Ton) um {steps} [(Stufen|Schritte)]"),
        E(_DREH, "runter|drehen", "(den Ton|die Lautstärke) um {steps} (Stufen|Schritte)"),
        E(_STELL, "leiser |stellen", "[(den Ton|das)] um {steps} (Stufen|Schritte)"),
        E(_DREH, "leiser |drehen", "[(den Ton|das)] {steps} (Stufen|Schritte)"),
    ], "nouns": [N("{steps} (Stufen|Schritte|Punkte) leiser"), N("(Lautstärke|Ton|Volume) minus {steps}"),
                 N("{steps} (Stufen|Schritte) runter"), N("Lautstärke {steps} (Stufen|Schritte) (runter|zurück)")]},

    # ---- mute
    "mute_on": {"verbs": [
        E(_MACH, "aus|machen", "(den Ton|den Sound|die Lautsprecher)", ell="(Ton|Sound|Lautsprecher)"),
        E(_SCHALT, "aus|schalten", "(den Ton|den Sound|die Lautsprecher)"),
        E(_SCHALT, "ab|schalten", "(den Ton|den Sound)", ell="(Ton|Sound)"),
        E(_SCHALT, "stumm|schalten", "[(den Ton|den Fernseher|das|die Kiste|alles)]", ell="(Ton|Fernseher|Alles)"),
        E(_STELL, "stumm |stellen", "[(den Ton|den Fernseher|das)]"),
        E(_STELL, "ab|stellen", "(den Ton|den Sound)"),
        E(_MACH, "stumm |machen", "[(den Ton|den Fernseher|das)]"),
        E(_STELL, "auf stumm |stellen", "[(den Ton|den Fernseher|das)]"),
        E("(Aktiviere|Aktivier)", "|aktivieren", "(die Stummschaltung|den Stummmodus)"),
    ], "nouns": [N("(Stumm|Stummschaltung|Stummmodus) bitte"), N("(Kein|Keinen) (Ton|Sound) (mehr|jetzt)"),
                 N("(Stille|Ruhe) bitte", want=True), N("(Sofort|Jetzt|Mal kurz) Ruhe")],
        "extra": """
Ich will (nichts mehr|gerade nichts) hören
Ich muss telefonieren, (Ton aus|mach stumm|stumm bitte)
Das Telefon klingelt, (Ton aus|stumm bitte)
(Ruhe|Stille), (bitte|ich telefoniere)
Den Ton brauche ich gerade nicht
Ohne Ton bitte
"""},
    "mute_off": {"verbs": [
        E(_MACH, "wieder an|machen", "(den Ton|den Sound)", ell="(Ton|Sound)"),
        E(_MACH, "an|machen", "(den Ton|den Sound|die Lautsprecher)", ell="(Ton|Sound|Lautsprecher)"),
        E(_SCHALT, "wieder ein|schalten", "(den Ton|den Sound)", ell="(Ton|Sound)"),
        E(_SCHALT, "ein|schalten", "(den Ton|den Sound)"),
        E("(Heb|Hebe)", "auf|heben", "(die Stummschaltung|das Stummschalten)", ell="(Stummschaltung|Stumm)"),
        E("(Beende|Beend)", "|beenden", "(die Stummschaltung|den Stummmodus)"),
        E("(Deaktiviere|Deaktivier)", "|deaktivieren", "(die Stummschaltung|den Stummmodus)"),
        E(_SCHALT, "aus|schalten", "(die Stummschaltung|den Stummmodus)", ell="(Stummschaltung|Stummmodus)"),
        E("(Hol|Hole)", "zurück|holen", "(den Ton|den Sound)", ell="(Ton|Sound)"),
        E(_MACH, "laut |machen", "[(den Ton|den Fernseher|das)] wieder"),
    ], "nouns": [N("(Ton|Sound) wieder (bitte|her)"), N("Wieder (Ton|Sound)", want=True),
                 N("(Nicht mehr|Kein) (stumm|Stummmodus)"), N("Mit Ton bitte")],
        "extra": """
Ich (höre|hör) (nichts|gar nichts) mehr, (der Ton ist aus|es ist stumm)
Warum ist (der Ton weg|es stumm)? Ton an
Ich will den Ton wieder
(Ton|Sound) (zurück|wieder da) bitte
"""},

    # ---- playback_control
    "playback_pause": {"verbs": [
        E("(Pausier|Pausiere)", "|pausieren", "[(das|den Film|die Folge|die Sendung|die Wiedergabe|das Video)]"),
        E("(Halt|Halte)", "an|halten", "[(das|den Film|die Folge|die Sendung|die Wiedergabe|das Video|das Bild)]",
          ell="(Film|Folge|Video)"),
        E(_MACH, "Pause |machen", ""),
        E("(Unterbrich|Unterbreche)", "|unterbrechen", "(den Film|die Folge|die Wiedergabe|das)"),
        E("(Stopp|Stoppe)", "kurz |stoppen", "[(den Film|die Folge|das|die Wiedergabe)]"),
        E("(Drück|Drücke)", "auf Pause |drücken", "", skip=("ellip",)),
        E("(Frier|Friere)", "ein|frieren", "(das Bild|den Film)"),
    ], "nouns": [N("(Pause|Kurze Pause|Kleine Pause)", want=True), N("Pause, (ich komme gleich|bin gleich zurück|ich muss kurz weg)", alone=True),
                 N("(Moment|Einen Moment|Sekunde), Pause", alone=True)],
        "extra": """
Ich (muss|geh) mal kurz (weg|aufs Klo|an die Tür), (Pause|halt an|anhalten)
Es klingelt, (Pause|halt mal an)
Warte (mal|kurz), ich (komme gleich|hole was zu trinken)
Nicht weiterlaufen lassen
Stopp, (Pause|nicht weiter)
"""},
    "playback_play": {"verbs": [
        E("(Spiel|Spiele)", "weiter|spielen", "[(den Film|die Folge|das|das Video)]"),
        E("(Spiel|Spiele)", "ab|spielen", "[(den Film|die Folge|das|das Video)]"),
        E("(Setz|Setze)", "fort|setzen", "(den Film|die Wiedergabe|die Folge|das)"),
        E(_MACH, "weiter|machen", "[(mit dem Film|mit der Folge)]"),
        E("(Lass|Lasse)", "weiterlaufen |lassen", "[(den Film|die Folge|das)]"),
        E("(Starte|Start)", "|starten", "(die Wiedergabe|den Film wieder|das Video)"),
        E("(Fahr|Fahre)", "fort|fahren", "", skip=("ellip",)),
        E("(Schau|Schaue)", "weiter|schauen", "", skip=("imp", "modal", "polite", "inf")),
        E("(Heb|Hebe)", "auf|heben", "(die Pause|das Pausieren)"),
    ], "nouns": [N("(Play|Weiter|Weiter so|Und weiter)"), N("(Los|Weiter), (gehts|es geht weiter)", alone=True),
                 N("Wiedergabe fortsetzen")],
        "extra": """
Ich bin (wieder da|zurück), (weiter|mach weiter|weiterspielen)
(Pause|Die Pause) ist vorbei
(Pause|Die Pause) (beenden|aufheben)
Kann weitergehen
Lass (uns|mal) weitergucken
"""},
    "playback_stop": {"verbs": [
        E("(Stopp|Stoppe)", "|stoppen", "[(den Film|die Wiedergabe|die Folge|das Video|das)]"),
        E("(Beende|Beend)", "|beenden", "(den Film|die Wiedergabe|die Folge|das Video|das)"),
        E("(Brich|Breche)", "ab|brechen", "(den Film|die Wiedergabe|die Folge|das)"),
        E("(Hör|Höre)", "auf|hören", "[(mit dem Film|mit der Wiedergabe|damit)]"),
        E(_MACH, "Schluss |machen", "[(mit dem Film|mit der Wiedergabe)]"),
    ], "nouns": [N("(Stopp|Stop|Ende|Schluss)"), N("Schluss (jetzt|damit|mit dem Film)"),
                 N("(Das reicht|Genug), (stopp|beenden)", alone=True)],
        "extra": """
Ich will (das|den Film) nicht mehr sehen, (stopp|beenden)
(Der Film|Das) ist langweilig, (stopp|beenden|abbrechen)
Wiedergabe (stoppen|abbrechen|beenden), bitte
"""},
    "playback_forward": {"verbs": [
        E("(Spul|Spule)", "vor|spulen", "[(ein Stück|etwas|ein bisschen|den Film|die Folge)]"),
        E("(Spring|Springe)", "vor|springen", "[(ein Stück|etwas|ein bisschen)]"),
        E("(Spul|Spule)", "weiter|spulen", "[(ein Stück|etwas)]"),
        E("(Überspring|Überspringe)", "|überspringen", "(das|die Werbung|den Teil|diese Stelle|den Vorspann|das Intro)"),
        E("(Geh|Gehe)", "vor|gehen", "[(ein Stück|etwas)]", skip=("polite", "lass")),
    ], "nouns": [N("(Vorlauf|Schneller Vorlauf|Vorspulen)"), N("(Vorwärts|Nach vorne|Ein Stück vor)")],
        "extra": """
Das ist langweilig, (spul vor|vorspulen|überspringen)
Die Werbung (überspringen|will ich nicht sehen)
"""},
    "playback_rewind": {"verbs": [
        E("(Spul|Spule)", "zurück|spulen", "[(ein Stück|etwas|ein bisschen|den Film|die Folge)]"),
        E("(Spring|Springe)", "zurück|springen", "[(ein Stück|etwas|ein bisschen)]"),
        E("(Geh|Gehe)", "zurück|gehen", "[(ein Stück|etwas)]", skip=("polite", "lass")),
        E("(Zeig|Zeige)", "nochmal |zeigen", "(das|die Stelle|die letzte Szene)", mir=True),
    ], "nouns": [N("(Rücklauf|Zurückspulen|Rückwärts)"), N("(Ein Stück|Etwas) zurück")],
        "extra": """
Das (habe|hab) ich (nicht verstanden|verpasst|nicht mitbekommen), (zurück|spul zurück|nochmal)
Was hat (er|sie) gesagt? (Spul zurück|Nochmal zurück)
Die Stelle (nochmal|will ich nochmal sehen), spul zurück
"""},
    "playback_restart": {"verbs": [
        E("(Starte|Start)", "neu |starten", "[(den Film|die Folge|die Sendung|das Video|das)]"),
        E("(Spiel|Spiele)", "von vorne ab|spielen", "[(den Film|die Folge|das)]"),
        E("(Fang|Fange)", "von vorne an|fangen", "", skip=("ellip",)),
        E("(Beginn|Beginne)", "von vorne |beginnen", "[(den Film|die Folge)]"),
        E("(Zeig|Zeige)", "von Anfang an |zeigen", "(den Film|die Folge|das)", mir=True),
    ], "nouns": [N("(Von vorne|Von vorn|Von Anfang an|Zurück zum Anfang|Ganz von vorne)"),
                 N("(Nochmal|Noch einmal) von (vorne|Anfang an)")],
        "extra": """
Ich will (den Film|die Folge|das) nochmal von (vorne|Anfang an) sehen
Ich habe den Anfang verpasst, (von vorne|nochmal von vorne)
(Den Film|Die Folge) (nochmal|neu) starten
"""},
    "playback_forward_sec": {"verbs": [
        E("(Spul|Spule)", "vor|spulen", "[um] {sec}"),
        E("(Spring|Springe)", "vor|springen", "[um] {sec}"),
        E("(Spul|Spule)", "vorwärts |spulen", "{sec}"),
        E("(Geh|Gehe)", "vor|gehen", "{sec}", skip=("polite", "lass")),
        E("(Überspring|Überspringe)", "|überspringen", "{sec}"),
        E("(Überspring|Überspringe)", "|überspringen", "die nächsten {sec}"),
    ], "nouns": [N("{sec} (vor|vorwärts|nach vorne)"), N("Plus {sec}"), N("(Vorspulen|Vor) um {sec}")]},
    "playback_rewind_sec": {"verbs": [
        E("(Spul|Spule)", "zurück|spulen", "[um] {sec}"),
        E("(Spring|Springe)", "zurück|springen", "[um] {sec}"),
        E("(Spul|Spule)", "rückwärts |spulen", "{sec}"),
        E("(Geh|Gehe)", "zurück|gehen", "{sec}", skip=("polite", "lass")),
        E("(Zeig|Zeige)", "nochmal |zeigen", "die letzten {sec}", mir=True),
    ], "nouns": [N("{sec} (zurück|rückwärts|nach hinten)"), N("Minus {sec}"), N("(Zurückspulen|Zurück) um {sec}")]},

    # ---- search_content
    "search_title": {"verbs": [
        E("(Such|Suche)", "|suchen", "{q}", mir=True),
        E("(Such|Suche)", "|suchen", "nach {q}"),
        E("(Such|Suche)", "raus|suchen", "{q}", mir=True),
        E("(Find|Finde)", "|finden", "{q}", mir=True),
        E("(Zeig|Zeige)", "|zeigen", "(was zu|etwas zu|etwas über|Sachen zu|Inhalte zu) {q}", mir=True),
        E("(Durchsuch|Durchsuche)", "|durchsuchen", "(die Mediathek|alles|das Angebot) nach {q}"),
    ], "nouns": [N("(Suche|Suche nach|Suchen nach|Suchbegriff|Ergebnisse für) {q}"), N("Was mit {q}", want=True),
                 N("Etwas (mit|über) {q}", want=True)],
        "extra": """
Gibt es (was|etwas|irgendwas) (mit|über|zu) {q}?
Habt ihr (was|etwas) (mit|über|zu) {q}?
Läuft irgendwo (was|etwas) (mit|über|zu) {q}?
Ich (hätte Lust auf|suche was mit|will was mit) {q}
Wo kann ich {q} (sehen|finden|gucken)?
"""},
    "search_movie": {"verbs": [
        E("(Such|Suche)", "|suchen", "(Filme|einen Film) mit {q}", mir=True),
        E("(Such|Suche)", "|suchen", "nach (Filmen|einem Film) mit {q}"),
        E("(Find|Finde)", "|finden", "(Filme|einen Film) (mit|von) {q}", mir=True),
        E("(Zeig|Zeige)", "|zeigen", "(Filme|alle Filme) mit {q}", mir=True),
        E("(Such|Suche)", "raus|suchen", "(Filme|einen Film) mit {q}", mir=True),
    ], "nouns": [N("(Filme|Kinofilme|Spielfilme) mit {q}", want=True), N("(Ein Film|Einen Film) mit {q}")],
        "extra": """
(Gibt es|Habt ihr|Hast du) (Filme|einen Film|Kinofilme) mit {q}?
In welchen Filmen (spielt|spielte) {q} mit?
Welche Filme (kennst du|gibt es|hast du) mit {q}?
Ich (hätte Lust auf|will) einen Film mit {q}
"""},
    "search_movie_title": {"verbs": [
        E("(Such|Suche)", "|suchen", "den Film {q}", mir=True),
        E("(Such|Suche)", "|suchen", "nach dem Film {q}"),
        E("(Find|Finde)", "|finden", "den Film {q}", mir=True),
        E("(Zeig|Zeige)", "|zeigen", "den Film {q}", mir=True),
        E("(Such|Suche)", "raus|suchen", "den Film {q}", mir=True),
        E(None, "|sehen", "den Film {q}", skip=("inf", "modal", "polite")),
    ], "nouns": [N("Den Film {q}", want=True), N("(Kinofilm|Spielfilm) {q}")],
        "extra": """
(Gibt es|Habt ihr|Hast du) den Film {q}?
Wo (läuft|gibt es|finde ich) den Film {q}?
Ist der Film {q} (verfügbar|irgendwo zu sehen|da)?
Ich (will|möchte) den Film {q} (gucken|schauen)
"""},
    "search_movie_topic": {"verbs": [
        E("(Such|Suche)", "|suchen", "Filme (über|zu|zum Thema) {q}", mir=True),
        E("(Find|Finde)", "|finden", "Filme (über|zu|zum Thema) {q}", mir=True),
        E("(Zeig|Zeige)", "|zeigen", "Filme (über|zu|zum Thema) {q}", mir=True),
    ], "nouns": [N("(Filme|Spielfilme) (über|zu|zum Thema) {q}", want=True), N("Einen Film über {q}", want=True)],
        "extra": """
(Gibt es|Habt ihr) Filme (über|zu|zum Thema) {q}?
Welche Filme gibt es (über|zu) {q}?
"""},
    "search_series": {"verbs": [
        E("(Such|Suche)", "|suchen", "die Serie {q}", mir=True),
        E("(Such|Suche)", "|suchen", "nach der Serie {q}"),
        E("(Find|Finde)", "|finden", "die Serie {q}", mir=True),
        E("(Zeig|Zeige)", "|zeigen", "die Serie {q}", mir=True),
        E("(Such|Suche)", "|suchen", "Serien mit {p}", mir=True),
        E("(Find|Finde)", "|finden", "Serien (über|zu|zum Thema) {topic}", mir=True),
        E(None, "weiter|schauen", "die Serie {q}", skip=("inf", "modal", "polite")),
    ], "nouns": [N("Die Serie {q}", want=True), N("Serien mit {p}", want=True), N("Serien (über|zum Thema) {topic}")],
        "extra": """
(Gibt es|Habt ihr|Hast du) die Serie {q}?
Wo (läuft|gibt es|finde ich) die Serie {q}?
Welche Serien gibt es mit {p}?
(Gibt es|Habt ihr) Serien (über|zu) {topic}?
"""},
    "search_show": {"verbs": [
        E("(Such|Suche)", "|suchen", "die (Sendung|Show) {q}", mir=True),
        E("(Such|Suche)", "|suchen", "nach der (Sendung|Show) {q}"),
        E("(Find|Finde)", "|finden", "die (Sendung|Show) {q}", mir=True),
        E("(Zeig|Zeige)", "|zeigen", "die (Sendung|Show) {q}", mir=True),
        E("(Such|Suche)", "|suchen", "(Sendungen|Shows) mit {p}", mir=True),
        E("(Find|Finde)", "|finden", "(Sendungen|Shows) (über|zu) {topic}", mir=True),
    ], "nouns": [N("Die (Sendung|Show) {q}", want=True), N("(Sendungen|Shows) mit {p}", want=True)],
        "extra": """
(Gibt es|Habt ihr) die (Sendung|Show) {q}?
Wann läuft die (Sendung|Show) {q}?
Welche (Sendungen|Shows) gibt es mit {p}?
(Gibt es|Habt ihr) (Sendungen|Shows) (über|zu) {topic}?
"""},
    "search_person": {"verbs": [
        E("(Such|Suche)", "|suchen", "(den Schauspieler|die Schauspielerin|die Person) {q}", mir=True),
        E("(Find|Finde)", "|finden", "(den Schauspieler|die Schauspielerin) {q}", mir=True),
        E("(Zeig|Zeige)", "|zeigen", "(Infos|alles|das Profil) (zum Schauspieler|zur Schauspielerin|über den Schauspieler|über die Schauspielerin) {q}",
          mir=True),
    ], "nouns": [N("(Schauspieler|Schauspielerin|Person) {q}"), N("Infos (zum Schauspieler|zur Schauspielerin|zur Person) {q}", want=True)],
        "extra": """
Was weißt du über (den Schauspieler|die Schauspielerin) {q}?
Wer ist (der Schauspieler|die Schauspielerin) {q}?
Erzähl mir was über (den Schauspieler|die Schauspielerin) {q}
"""},
    "search_anykind": {"verbs": [
        E("(Such|Suche)", "|suchen", "überall (nach|) {q}", mir=True),
        E("(Durchsuch|Durchsuche)", "|durchsuchen", "(alles|alle Kategorien|alle Bereiche) nach {q}"),
        E("(Find|Finde)", "|finden", "(alles|überall alles) (mit|zu|über) {q}", mir=True),
        E("(Zeig|Zeige)", "|zeigen", "alles (mit|zu|über) {q}", mir=True),
    ], "nouns": [N("Alles (mit|zu|über) {q}", want=True), N("Überall nach {q} suchen")]},

    # ---- open_app
    "open_app": {"verbs": [
        E("Öffne", "|öffnen", "{app}", mir=True),
        E("(Starte|Start)", "|starten", "{app}", mir=True),
        E(_MACH, "auf|machen", "{app}", mir=True),
        E(_MACH, "an|machen", "{app}", mir=True),
        E("(Ruf|Rufe)", "auf|rufen", "{app}"),
        E("(Lad|Lade)", "|laden", "{app}"),
                        E(_SCHALT, "um|schalten", "auf {app}"),
        E(None, "|gucken", "{app}", skip=("inf", "modal", "polite")),
            ], "nouns": [N("{app}", want=True), N("{app}, los", alone=True), N("Ab (zu|in) {app}")],
        "extra": """
Ich (hätte Lust auf|will was auf|will auf) {app}
(Was läuft|Was gibt es neues) auf {app}? Mach das auf
"""},

    # ---- record_program
    "record_title": {"verbs": [
        E("(Nimm|Nehme)", "auf|nehmen", "{tacc}", mir=True),
        E("Zeichne", "auf|zeichnen", "{tacc}", mir=True),
        E("(Speicher|Speichere)", "|speichern", "{tacc}", mir=True),
        E("(Schneid|Schneide)", "mit|schneiden", "{tacc}", mir=True),
        E("(Programmier|Programmiere)", "|programmieren", "die Aufnahme von {tdat}"),
        E("(Plan|Plane)", "|planen", "eine Aufnahme von {tdat}"),
        E("(Plan|Plane)", "|planen", "eine Aufnahme für {tacc}"),
        E("(Starte|Start)", "|starten", "(die|eine) Aufnahme von {tdat}"),
    ], "nouns": [N("Aufnahme von {tdat}", want=True), N("Eine Aufnahme für {tacc}", want=True), N("{tnom} (aufnehmen|bitte aufnehmen)")],
        "extra": """
Vergiss nicht, {tacc} aufzunehmen
(Denk dran|Denk daran), {tacc} aufzuzeichnen
{tnom} (darf ich nicht verpassen|will ich aufnehmen), nimm (das|es) auf
Ich bin heute Abend nicht da, nimm {tacc} auf
"""},
    "record_title_channel": {"verbs": [
        E("(Nimm|Nehme)", "auf|nehmen", "{tacc} {im}", mir=True),
        E("Zeichne", "auf|zeichnen", "{tacc} {im}", mir=True),
        E("(Nimm|Nehme)", "auf|nehmen", "{im} {tacc}", mir=True),
        E("(Schneid|Schneide)", "mit|schneiden", "{tacc} {im}", mir=True),
    ], "nouns": [N("Aufnahme von {tdat} {im}", want=True)]},
    "record_title_time": {"verbs": [
        E("(Nimm|Nehme)", "auf|nehmen", "{tacc} um {time}", mir=True),
        E("(Nimm|Nehme)", "auf|nehmen", "um {time} {tacc}", mir=True),
        E("Zeichne", "auf|zeichnen", "{tacc} um {time}", mir=True),
        E("(Schneid|Schneide)", "mit|schneiden", "{tacc} ab {time}", mir=True),
    ], "nouns": [N("Aufnahme von {tdat} um {time}", want=True), N("{tnom} um {time} aufnehmen")]},
    "record_full": {"verbs": [
        E("(Nimm|Nehme)", "auf|nehmen", "{tacc} {im} um {time}", mir=True),
        E("Zeichne", "auf|zeichnen", "um {time} {tacc} {im}", mir=True),
        E("(Nimm|Nehme)", "auf|nehmen", "{im} um {time} {tacc}", mir=True),
    ], "nouns": [N("Aufnahme von {tdat} um {time} {im}", want=True)]},
    "record_channel_time": {"verbs": [
        E("(Nimm|Nehme)", "auf|nehmen", "{ch} (um|ab) {time}", mir=True),
        E("(Nimm|Nehme)", "auf|nehmen", "(um|ab) {time} {ch}", mir=True),
        E("Zeichne", "auf|zeichnen", "{ch} (um|ab) {time}", mir=True),
        E("(Starte|Start)", "|starten", "(um|ab) {time} eine Aufnahme {im}"),
    ], "nouns": [N("Aufnahme {im} (um|ab) {time}", want=True)]},
    "record_now": {"verbs": [
        E("(Nimm|Nehme)", "auf|nehmen", "(jetzt|sofort|ab jetzt|ab sofort|gleich jetzt) [(das|die Sendung|den Film|das hier)]", mir=True),
        E("(Nimm|Nehme)", "auf|nehmen", "(das|die Sendung|den Film|das hier) (jetzt|sofort|ab jetzt)", mir=True),
        E("Zeichne", "auf|zeichnen", "(jetzt|sofort|ab jetzt|ab sofort) [(das|die Sendung|den Film)]", mir=True),
        E("(Starte|Start)", "|starten", "(jetzt|sofort) (eine|die) Aufnahme"),
        E("(Nimm|Nehme)", "auf|nehmen", "(jetzt|sofort) {ch}", mir=True),
        E("(Nimm|Nehme)", "auf|nehmen", "(jetzt|sofort) {tacc}", mir=True),
        E("(Schneid|Schneide)", "mit|schneiden", "(jetzt|ab jetzt|sofort) [das]", mir=True),
    ], "nouns": [N("Aufnahme (jetzt|sofort|ab sofort)"), N("(Jetzt|Sofort) Aufnahme (starten|bitte)"),
                 N("(Jetzt|Sofort) {im} aufnehmen")],
        "extra": """
Das (ist gut|will ich behalten), nimm (das|es) (jetzt|sofort) auf
(Schnell|Los), (jetzt|sofort) aufnehmen
(Jetzt|Sofort) (mitschneiden|aufzeichnen)
"""},
    "record_plain": {"verbs": [
        E("(Nimm|Nehme)", "auf|nehmen", "(das|die Sendung|den Film|das hier|die Folge)", mir=True),
        E("Zeichne", "auf|zeichnen", "(das|die Sendung|den Film|das hier)", mir=True),
        E("(Nimm|Nehme)", "auf|nehmen", "{ch}", mir=True),
        E("(Speicher|Speichere)", "|speichern", "(die Sendung|das|den Film)", mir=True),
        E("(Starte|Start)", "|starten", "(eine|die) Aufnahme"),
        E("(Schneid|Schneide)", "mit|schneiden", "(das|die Sendung|den Film)", mir=True),
    ], "nouns": [N("(Aufnahme|Eine Aufnahme) bitte"), N("Aufnahme {im}", want=True), N("Aufnahme starten")]},

    # ---- set_reminder
    "remind_title": {"verbs": [
        E("(Erinner|Erinnere)", "|erinnern", "mich an {tacc}", skip=("want", "lass")),
        E("(Stell|Stelle)", "|stellen", "eine Erinnerung für {tacc}", mir=True),
        E("(Setz|Setze)", "|setzen", "eine Erinnerung (für|an) {tacc}", mir=True),
        E("(Merk|Merke)", "vor|merken", "{tacc}", mir=True),
            ], "nouns": [N("Erinnerung (für|an) {tacc}", want=True), N("Reminder für {tacc}")],
        "extra": """
Ich (will|möchte|darf) {tacc} nicht verpassen
Ich darf {tacc} nicht vergessen
Sag (mir|mal) Bescheid, (wenn|sobald) {tnom} (anfängt|beginnt|kommt|losgeht)
(Benachrichtige|Informiere) mich, wenn {tnom} (anfängt|beginnt|kommt)
Lass mich wissen, wenn {tnom} (anfängt|beginnt|kommt)
"""},
    "remind_title_minutes": {"verbs": [
        E("(Erinner|Erinnere)", "|erinnern", "mich {mins} vor {tdat}", skip=("want", "lass")),
        E("(Erinner|Erinnere)", "|erinnern", "mich {mins} vorher an {tacc}", skip=("want", "lass")),
        E("(Stell|Stelle)", "|stellen", "eine Erinnerung {mins} vor {tdat}", mir=True),
        E("(Setz|Setze)", "|setzen", "eine Erinnerung für {tacc}, {mins} vorher", mir=True),
    ], "nouns": [N("Erinnerung {mins} vor {tdat}", want=True), N("{mins} vor {tdat} erinnern")],
        "extra": """
Sag mir {mins} (bevor|vor Beginn von) {tnom} Bescheid
(Benachrichtige|Informiere) mich {mins} vor {tdat}
"""},
    "remind_title_channel": {"verbs": [
        E("(Erinner|Erinnere)", "|erinnern", "mich an {tacc} {im}", skip=("want", "lass")),
        E("(Erinner|Erinnere)", "|erinnern", "mich {mins} vor {tdat} {im}", skip=("want", "lass")),
        E("(Stell|Stelle)", "|stellen", "eine Erinnerung für {tacc} {im}, {mins} vorher", mir=True),
    ], "nouns": [N("Erinnerung für {tacc} {im}, {mins} vorher", want=True)]},

    # ---- show_guide
    "guide_plain": {"verbs": [
        E("(Zeig|Zeige)", "|zeigen", "(das Programm|den Programmführer|die Programmübersicht|das Fernsehprogramm|den TV-Guide|den EPG)",
          mir=True),
        E("Öffne", "|öffnen", "(das Programm|den Programmführer|die Programmübersicht|den TV-Guide|den EPG)", mir=True),
        E("(Ruf|Rufe)", "auf|rufen", "(das Programm|den Programmführer|den TV-Guide|die Programmübersicht)"),
        E(_MACH, "auf|machen", "(das Programm|den Programmführer|den TV-Guide)", mir=True),
        E("(Blend|Blende)", "ein|blenden", "(das Programm|den Programmführer|die Programmübersicht)"),
    ], "nouns": [N("(Programmführer|Programmübersicht|TV-Guide|Das Programm|Fernsehprogramm)", want=True),
                 N("Die (Programmzeitschrift|Fernsehzeitung|Programmvorschau)", want=True)],
        "extra": """
Was (läuft|kommt|gibt es) (so|denn so|alles) im (Fernsehen|TV)?
Was kann man (so|denn) gucken?
Ich will (wissen|sehen), was (so|alles) läuft
Gibt es (was|etwas) Gutes im Fernsehen?
"""},
    "guide_day": {"verbs": [
        E("(Zeig|Zeige)", "|zeigen", "(das Programm|den Programmführer|das Fernsehprogramm) {fday}", mir=True),
        E("Öffne", "|öffnen", "(das Programm|den Programmführer|den TV-Guide) {fday}", mir=True),
        E("(Zeig|Zeige)", "|zeigen", "{fday} das Programm", mir=True),
    ], "nouns": [N("(Programm|Fernsehprogramm|Programmübersicht|TV-Guide) {fday}", want=True)],
        "extra": """
Was (läuft|kommt|gibt es) {day} (so|alles|im Fernsehen|im TV)?
Was kann man {day} (gucken|schauen|sehen)?
Gibt es {day} (was|etwas) Gutes im Fernsehen?
"""},
    "guide_daytime": {"verbs": [
        E("(Zeig|Zeige)", "|zeigen", "(das Programm|den Programmführer|das Fernsehprogramm) {dt}", mir=True),
        E("Öffne", "|öffnen", "(das Programm|den TV-Guide) {dt}", mir=True),
    ], "nouns": [N("(Programm|Fernsehprogramm|Programmübersicht) {dt}", want=True)],
        "extra": """
Was (läuft|kommt|gibt es) {dt} (so|alles|im Fernsehen)?
Gibt es {dt} (was|etwas) Gutes im Fernsehen?
"""},
    "guide_evening": {"verbs": [
        E("(Zeig|Zeige)", "|zeigen", "(das Programm|das Abendprogramm|den Programmführer) {ev}", mir=True),
    ], "nouns": [N("(Programm|Fernsehprogramm) {ev}", want=True)],
        "extra": """
Was (läuft|kommt|gibt es) {ev} (so|im Fernsehen)?
"""},
    "guide_channel": {"verbs": [
        E("(Zeig|Zeige)", "|zeigen", "(das Programm|den Programmführer|die Programmübersicht|den EPG) {vonch}", mir=True),
        E("Öffne", "|öffnen", "(das Programm|den Programmführer|den TV-Guide) {vonch}", mir=True),
    ], "nouns": [N("(Programm|Programmübersicht|Sendeplan|Programmplan) {vonch}", want=True)]},
    "guide_time": {"verbs": [
        E("(Zeig|Zeige)", "|zeigen", "(das Programm|den Programmführer) ab {clock}", mir=True),
        E("(Zeig|Zeige)", "|zeigen", "(das Programm|den Programmführer) für {clock}", mir=True),
    ], "nouns": [N("(Programm|Fernsehprogramm) ab {clock}", want=True)]},

    # ---- set_subtitles
    "subs_on": {"verbs": [
        E(_MACH, "an|machen", "[die] Untertitel", ell="Untertitel"),
        E(_SCHALT, "ein|schalten", "[die] Untertitel", ell="Untertitel"),
        E(_SCHALT, "an|schalten", "[die] Untertitel"),
        E("(Blend|Blende)", "ein|blenden", "[die] Untertitel", ell="Untertitel"),
        E("(Zeig|Zeige)", "an|zeigen", "[die] Untertitel", mir=True),
        E("(Aktivier|Aktiviere)", "|aktivieren", "[die] Untertitel"),
        E(_STELL, "an|stellen", "[die] Untertitel"),
    ], "nouns": [N("(Untertitel|Die Untertitel|Untertitelung)", want=True), N("(Untertitel|Die Untertitel) (rein|dazu)")],
        "extra": """
Ich (verstehe|versteh) (die nicht|das nicht|den Dialekt nicht), (Untertitel|mach Untertitel an)
Ich bin schwerhörig, Untertitel (bitte|an)
(Gibt es|Hat der Film) Untertitel? (Dann an|Mach die an)
"""},
    "subs_off": {"verbs": [
        E(_MACH, "aus|machen", "[die] Untertitel", ell="Untertitel"),
        E(_SCHALT, "aus|schalten", "[die] Untertitel", ell="Untertitel"),
        E(_SCHALT, "ab|schalten", "[die] Untertitel", ell="Untertitel"),
        E("(Blend|Blende)", "aus|blenden", "[die] Untertitel", ell="Untertitel"),
        E(_MACH, "weg|machen", "[die] Untertitel", ell="Untertitel"),
        E("(Deaktivier|Deaktiviere)", "|deaktivieren", "[die] Untertitel"),
        E("(Versteck|Verstecke)", "|verstecken", "[die] Untertitel"),
    ], "nouns": [N("(Keine Untertitel|Ohne Untertitel|Untertitel nicht mehr)")],
        "extra": """
(Die Untertitel|Die) (stören|nerven) (mich|total)
Ich (brauche|will) keine Untertitel (mehr|jetzt)
Weg mit den Untertiteln
"""},
    "subs_lang": {"verbs": [
        E(_MACH, "an|machen", "[die] Untertitel auf {lang}"),
        E(_MACH, "an|machen", "{ladj}e Untertitel"),
        E(_SCHALT, "ein|schalten", "die Untertitel auf {lang}"),
        E(_SCHALT, "ein|schalten", "{ladj}e Untertitel"),
        E(_STELL, "|stellen", "die Untertitel auf {lang}"),
        E("(Wechsel|Wechsle)", "|wechseln", "die Untertitel (auf|zu) {lang}"),
        E("(Zeig|Zeige)", "an|zeigen", "[die] Untertitel (auf|in) {lang}", mir=True),
        E("(Änder|Ändere)", "|ändern", "die Untertitelsprache (auf|in) {lang}"),
    ], "nouns": [N("{ladj}e Untertitel", want=True), N("Untertitel (auf|in) {lang}", want=True),
                 N("Untertitelsprache auf {lang}")]},

    # ---- set_audio_language
    "audio_lang": {"verbs": [
        E(_STELL, "|stellen", "(die Sprache|den Ton|die Tonspur|das Audio) auf {lang}"),
        E(_STELL, "um|stellen", "(die Sprache|den Ton|die Tonspur) auf {lang}"),
        E(_SCHALT, "um|schalten", "(die Sprache|die Tonspur|den Ton) auf {lang}"),
        E("(Wechsel|Wechsle)", "|wechseln", "(die Sprache|die Tonspur|den Ton) (auf|zu) {lang}"),
        E("(Änder|Ändere)", "|ändern", "(die Sprache|die Audiosprache|die Tonspur) (auf|in) {lang}"),
        E(None, "|hören", "(das|den Film|die Serie) auf {lang}", skip=("inf", "modal", "polite")),
        E(_MACH, "an|machen", "die {ladj}e Tonspur"),
    ], "nouns": [N("Die {ladj}e Tonspur", want=True), N("Den {ladj}en Ton", want=True), N("Die {ladj}e Fassung", want=True),
                 N("(Sprache|Audio|Ton|Tonspur) auf {lang}"), N("Auf {lang} (hören|umstellen)")],
        "extra": """
Gibt es das (auch|) auf {lang}?
"""},
    "audio_original": {"verbs": [
        E(_STELL, "|stellen", "(die Sprache|den Ton|die Tonspur) auf (Original|Originalton|Originalsprache)"),
        E(_SCHALT, "um|schalten", "(auf den Originalton|auf Originalsprache|auf die Originalfassung|auf OV)"),
        E("(Wechsel|Wechsle)", "|wechseln", "(in die Originalfassung|zum Originalton|in die Originalsprache|auf OV)"),
        E(_MACH, "an|machen", "(den Originalton|die Originalfassung|die Originalversion)"),
        E(None, "|hören", "(das|den Film) im Original", skip=("inf", "modal", "polite")),
        E(None, "|sehen", "(das|den Film|die Serie) im Original", skip=("inf", "modal", "polite")),
    ], "nouns": [N("(Den Originalton|Die Originalfassung|Die Originalversion|Die OV|Die Originalsprache)", want=True),
                 N("(OV|OmU|Original|Originalton)")]},

    # ---- set_sleep_timer
    "sleep": {"verbs": [
        E(_SCHALT, "aus|schalten", "[(den Fernseher|das Gerät)] in {durD}"),
        E(_MACH, "aus|machen", "[(den Fernseher|das Gerät)] in {durD}"),
        E(_SCHALT, "ab|schalten", "[(den Fernseher|das Gerät)] nach {durD}"),
        E(_STELL, "|stellen", "(den Sleeptimer|den Schlaftimer|den Timer|den Ausschalttimer) auf {durA}", mir=True),
        E("(Setz|Setze)", "|setzen", "(einen Sleeptimer|einen Schlaftimer|den Timer) (auf|für) {durA}", mir=True),
        E("(Aktiviere|Aktivier)", "|aktivieren", "(den Sleeptimer|den Schlaftimer) (mit|für) {durD}"),
        E(_MACH, "aus|machen", "[(den Fernseher|das Gerät)] (nach|in) {durD} automatisch"),
    ], "nouns": [N("(Sleeptimer|Schlaftimer|Sleep-Timer|Ausschalttimer|Timer) (auf|für|) {durA}", want=True),
                 N("(In|Nach) {durD} (aus|ausschalten|ausmachen)")],
        "extra": """
Ich (gehe|geh) (gleich|bald) ins Bett, (schalte|schalt|mach) (in|nach) {durD} aus
(Der Fernseher|Das Gerät) soll (in|nach) {durD} (ausgehen|abschalten|aus sein)
Ich schlafe (sicher|bestimmt) ein, (aus|ausschalten) in {durD}
"""},

    # ---- power
    "power_off": {"verbs": [
        E(_SCHALT, "aus|schalten", f"[{_TV}]", ell="(Fernseher|TV|Gerät|Kiste|Glotze)"),
        E(_MACH, "aus|machen", f"[{_TV}]", ell="(Fernseher|TV|Gerät|Glotze)"),
        E(_SCHALT, "ab|schalten", f"[{_TV}]"),
        E("(Fahr|Fahre)", "herunter|fahren", "[(den Fernseher|das Gerät|den TV|das System)]"),
        E(_STELL, "ab|stellen", "[(den Fernseher|das Gerät|die Kiste)]"),
    ], "nouns": [N("(Aus|Ganz aus|Feierabend)"), N("(Fernseher|TV|Glotze) (ganz aus|komplett aus)")],
        "extra": """
Ich (gehe|geh) (schlafen|ins Bett), (schalt aus|mach aus|ausschalten|aus)
(Genug|Das reicht) (Fernsehen|ferngesehen) für heute, (aus|ausmachen)
Wir sind fertig, (Fernseher aus|aus|ausschalten)
Ich brauche den Fernseher nicht mehr
"""},
    "power_on": {"verbs": [
        E(_SCHALT, "ein|schalten", f"[{_TV}]", ell="(Fernseher|TV|Gerät|Kiste|Glotze)"),
        E(_MACH, "an|machen", f"[{_TV}]", ell="(Fernseher|TV|Gerät|Glotze)"),
        E(_SCHALT, "an|schalten", f"[{_TV}]"),
        E("(Fahr|Fahre)", "hoch|fahren", "[(den Fernseher|das Gerät|den TV|das System)]"),
        E("(Starte|Start)", "|starten", "(den Fernseher|das Gerät|den TV)"),
        E("(Weck|Wecke)", "auf|wecken", "(den Fernseher|das Gerät)"),
    ], "nouns": [N("An"), N("(Fernseher|TV|Glotze) wieder an")],
        "extra": """
Ich will fernsehen, (mach an|schalt ein|Fernseher an)
Lass uns fernsehen
(Zeit zum Fernsehen|Fernsehzeit), (an|einschalten)
"""},
    "power_standby": {"verbs": [
        E(_SCHALT, "|schalten", f"[{_TV}] (auf|in den) Standby"),
        E("(Versetz|Versetze)", "|versetzen", f"{_TV} in den (Standby|Ruhemodus|Ruhezustand|Bereitschaftsmodus)"),
        E("(Geh|Gehe)", "|gehen", "in den (Standby|Ruhemodus|Ruhezustand|Schlafmodus)", skip=("polite", "want", "lass", "inf")),
        E(_MACH, "|machen", "(Standby|auf Standby)"),
        E(_STELL, "|stellen", f"{_TV} auf Standby"),
    ], "nouns": [N("(Standby|Stand-by|Ruhemodus|Standby-Modus|Bereitschaftsmodus)", want=True),
                 N("(Fernseher|TV|Gerät) (in den Standby|auf Standby)")]},

    # ---- get_program_info (when: gerade/jetzt/aktuell -> now, danach/als nächstes/gleich -> next)
    "info_now": {"verbs": [
        E("(Zeig|Zeige)", "|zeigen", "(Infos|Informationen|Details) zur (aktuellen|laufenden) Sendung", mir=True),
        E("(Sag|Sage)", "|sagen", "was gerade {im} läuft", skip=("inf", "lass", "polite", "want", "modal")),
    ], "nouns": [N("(Infos|Informationen|Details) zu dem, was gerade läuft", want=True), N("Was (gerade|jetzt|im Moment) {im} läuft", alone=True)],
        "extra": """
Was (läuft|kommt) (gerade|jetzt|im Moment|aktuell|grad|grade) {im}?
(Welche Sendung|Welcher Film|Was für eine Sendung|Was für ein Film) (läuft|kommt) (gerade|jetzt|im Moment) {im}?
Was (ist|wird) (gerade|jetzt|im Moment) {im} (dran|gezeigt|gesendet)?
Was (läuft|kommt) da (gerade|jetzt|im Moment)?
Weißt du, was (gerade|jetzt|im Moment) {im} läuft?
(Gerade|Jetzt|Im Moment) {im}, was läuft da?
Was (schaue|gucke|sehe) ich (gerade|hier gerade)?
Was ist das (gerade|hier gerade) für ein Film?
"""},
    "info_next": {"verbs": [
        E("(Zeig|Zeige)", "|zeigen", "(was danach kommt|was als nächstes kommt)", mir=True, skip=("inf", "lass", "polite", "modal")),
        E("(Zeig|Zeige)", "|zeigen", "die nächste Sendung {im}", mir=True),
        E("(Sag|Sage)", "|sagen", "was danach {im} kommt", skip=("inf", "lass", "polite", "want", "modal")),
    ], "nouns": [N("(Die nächste Sendung|Das nächste Programm) {im}"), N("Was (danach|als nächstes|im Anschluss) {im} kommt", alone=True)],
        "extra": """
Was (läuft|kommt) (danach|als nächstes|im Anschluss|hinterher|nachher|gleich) {im}?
(Welche Sendung|Welcher Film|Was) (läuft|kommt) (danach|als nächstes|im Anschluss) {im}?
Und (danach|dann|im Anschluss)? Was kommt {im}?
Weißt du, was (danach|als nächstes) {im} kommt?
Was kommt nach (dem Film|der Sendung|den Nachrichten) {im}?
"""},
    "info_plain": {"verbs": [
        E("(Zeig|Zeige)", "|zeigen", "(Infos|Informationen|Details|die Beschreibung) zur Sendung", mir=True),
        E("Gib", "|geben", "(Infos|Informationen|Details) zur Sendung {im}", mir=True, skip=("inf", "lass", "polite", "want")),
    ], "nouns": [N("(Infos|Informationen|Details|Beschreibung) zur Sendung", want=True), N("Sendungsinfo {im}")],
        "extra": """
Was (läuft|kommt|zeigen die) (eigentlich|denn|so) {im}?
Worum geht es (hier|in der Sendung|in dem Film|bei dem Film)?
(Was ist das|Was sehe ich da) für (eine Sendung|ein Film)?
Um was geht es (hier|in dem Film)?
"""},

    # ---- set_picture_mode
    "picture_mode": {"verbs": [
        E(_STELL, "|stellen", "(das Bild|den Bildmodus) auf {mode}"),
        E(_STELL, "um|stellen", "(das Bild|den Bildmodus) auf {mode}"),
        E(_SCHALT, "um|schalten", "(das Bild|den Bildmodus) auf {mode}"),
        E("(Wechsel|Wechsle)", "|wechseln", "(den Bildmodus|das Bild) (auf|zu) {mode}"),
        E("(Änder|Ändere)", "|ändern", "(den Bildmodus|das Bild|die Bildeinstellung) (auf|in|zu) {mode}"),
        E("(Setz|Setze)", "|setzen", "(den Bildmodus|das Bild) auf {mode}"),
    ], "nouns": [N("(Bildmodus|Bild|Bildeinstellung|Modus) {mode}"), N("(Bildmodus|Bild) auf {mode}")]},
    "picture_mode_words": {"verbs": [
        E(_MACH, "an|machen", "den {modus}"),
        E(_SCHALT, "ein|schalten", "den {modus}"),
        E("(Aktivier|Aktiviere)", "|aktivieren", "den {modus}"),
        E("(Wechsel|Wechsle)", "|wechseln", "in den {modus}"),
        E(_STELL, "|stellen", "(das Bild|den Fernseher) auf {modus}"),
    ], "nouns": [N("Den {modus}", want=True), N("{modus} (an|ein|bitte)")]},
    "picture_mode_desc": {"verbs": [
        E(_MACH, "|machen", "das Bild {adj}[er]"),
        E(_STELL, "ein|stellen", "ein {adj}es Bild"),
    ], "nouns": [N("Ein {adj}es Bild", want=True), N("(Bild|Das Bild) {adj}er")]},
}

# utterances no function fits: statements and requests for devices and services the catalog lacks
NO_CALL_EXTRA = """
(Mach|Schalte|Schalt) das Licht (an|aus|ein)
(Mach|Dreh) die Heizung (höher|runter|aus|an)
(Kannst|Könntest) du (mir|) (das Wetter|die Nachrichten|einen Witz) (sagen|erzählen)?
Ich (möchte|will|hätte gern) (eine Pizza|einen Kaffee|ein Taxi) (bestellen|)
(Ruf|Rufe) (meine Mutter|den Arzt|die Polizei|{name}) an
(Stell|Stelle) (einen Wecker|den Wecker) auf (sechs|sieben|acht) Uhr
(Wie|Was) ist (das Wetter|die Temperatur) (morgen|heute|in {city})?
Wie (spät|viel Uhr) ist es (jetzt|gerade|)?
(Öffne das Fenster|Mach die Tür auf|Mach die Garage auf|Öffne die Rollläden)
(Lies|Lese) mir (die Nachrichten|eine Geschichte|meine Mails) vor
(Schreib|Schreibe) {name} (eine Nachricht|eine SMS|eine E-Mail)
(Setz|Setze) {item} auf (die Einkaufsliste|meine Liste)
(Wer ist der Bundeskanzler|Wer war Goethe|Wann fiel die Mauer|Wo steht der Eiffelturm)?
(Spiel|Spiele) (Musik|ein Lied|etwas von Mozart) (ab|vor|)
(Mir ist|Es ist) (kalt|warm|langweilig)
(Ich habe|Hab) Hunger
(Danke|Vielen Dank|Dankeschön) (schön|dir|)
(Wie geht es dir|Was machst du|Wer hat dich gebaut)?
(Saug|Sauge|Putz|Putze) (die Küche|das Wohnzimmer|den Flur)
(Buch|Buche) (einen Tisch|ein Hotel|einen Flug) (für morgen|in {city}|)
"""
