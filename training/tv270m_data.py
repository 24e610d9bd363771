"""The tv270m set (make_data.py --set tv270m): data for a LoRA fine-tune of the pretrained Gemma 3 270M on the
15-function TV catalog, in German and English. tv-mini's generator (tv_de_templates.py, tv_de_lexicon.py, tv_de_values.py) is
read, never changed, so its data stays reproducible.

Four styles of utterance:
  de      tv_de_templates.py's German templates (its own train/dev split), names partly from the open lists
  colloq  colloquial and indirect German (tv270m_colloq.py): particles, contractions, dialect-ish words,
          statements ("Mir ist das zu laut"), speech-recognizer text (no capitals, no punctuation)
  en      English (tv270m_en.py): commands, polite questions, wishes, statements, elliptic forms
  heldout (dev only) any of the three with names from the held-out half of the open lists

Free-text values (titles, people, topics, queries; apps and channels that tv_de_values does not list) are
copied from the utterance; names that tv_de_values lists keep their normalized value. Training replaces the
name of a copyable slot by a name of an open list (tv_open_names.py) with some probability, so the model learns
to copy names it has never seen; the dev set's held-out lines use names that training never draws.
"""
import collections
import hashlib
import re
import unicodedata

import tv_de_templates
import tv_open_names as O
import tv_de_values as V
from tv_de_templates import Slot
from tv270m_intent import Intent, XSlot

NO_CALL_REPLY = {"de": tv_de_templates.NO_CALL_REPLY, "en": "I can't do that."}
SPLIT_SALT = "tv270m-split-1"


class WSlot(Slot):
    """A copied slot with words around it that are not copied: "die " + X + "-App" -> X."""

    def __init__(self, core, key, prefix, suffix):
        super().__init__(core, key, copy=True, prefix=prefix)
        self.suffix = suffix


# ----------------------------------------------------------------------------------------------
# Noise

_DE_PRE = ["Hey, ", "Okay, ", "Äh, ", "Du, ", "Hallo, ", "Also, ", "Sag mal, ", "Ok ", "Hm, ", "Ähm, ", "Na, ", "So, ",
           "Gut, ", "Na los, ", "Hör mal, ", "Ach, ", "Ja, ", "Hey Fernseher, ", "Moment, "]
_DE_SUF = [" bitte", ", bitte", " danke", ", danke", " bitte schön", ", danke dir", ", okay?", ", ja?", " dann"]
_DE_PRE_COLLOQ = ["Ey, ", "Ähm, ", "Sach ma, ", "Du, sag mal, ", "Boah, ", "Also, ", "Hömma, ", "Na, ", "Äh ", "Mensch, ",
                  "Komm, ", "Jo, ", "Hey, ", "Okay, ", "Ach komm, ", "Weißt was, "]
_DE_SUF_COLLOQ = [", gell?", ", ne?", ", oder?", ", bitte", ", danke", ", ja?", ", okay?", ", wa?", ", gelle?", " halt",
                  ", bitte schön", ", danke dir", " mal", ", Alter"]
_EN_PRE = ["Hey, ", "Okay, ", "OK ", "Um, ", "Uh, ", "So, ", "Alright, ", "Hey TV, ", "TV, ", "Hmm, ", "Well, ", "Oh, ",
           "Right, ", "Yo, ", "Hi, ", "Erm, "]
_EN_SUF = [" please", ", please", " thanks", ", thanks", ", thank you", ", okay?", ", will you?", ", would you?",
           " for me", ", mate", " please, thanks"]
_PRE_UNTIMED = {"de": ["Jetzt ", "Jetzt mal ", "Sofort "], "en": ["Now ", "Quick, ", "Right now, "]}
_SUF_UNTIMED = {"de": [" jetzt", ", sofort", ", aber schnell", ", aber zackig"],
                "en": [" now", " right now", " real quick", ", quickly"]}
_TIMED = ("record_", "remind_", "guide_", "info_")
_UMLAUT = {"ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss", "Ä": "Ae", "Ö": "Oe", "Ü": "Ue"}
_ASR_PUNCT = re.compile(r"[?!.,:;]")


class Noise:
    """Per utterance: lower case, ASCII umlauts, one typo, punctuation, a filler before or after, or the
    speech-recognizer form (all lower case, no punctuation in the words around the values)."""

    def __init__(self, rng, lang, style, clean, timed):
        r = rng.random
        asr_p = {"de": 0.12, "colloq": 0.35, "en": 0.15}[style]
        self.asr = not clean and r() < asr_p
        self.lower = self.asr or (not clean and r() < 0.2)
        self.ascii = lang == "de" and not clean and r() < 0.05
        self.typo = not clean and r() < (0.06 if lang == "de" else 0.05)
        self.punct = "keep" if clean else rng.choice(["keep"] * 5 + ["strip"] * 4 + ["bang", "dot", "dot"])
        if lang == "en":
            pre, suf = _EN_PRE, _EN_SUF
        elif style == "colloq":
            pre, suf = _DE_PRE_COLLOQ, _DE_SUF_COLLOQ
        else:
            pre, suf = _DE_PRE, _DE_SUF
        if not timed:
            pre, suf = pre + _PRE_UNTIMED[lang], suf + _SUF_UNTIMED[lang]
        p_fill = 0.22 if style == "colloq" else 0.14
        self.prefix = "" if clean or r() > p_fill else rng.choice(pre)
        self.suffix = "" if clean or r() > p_fill * 0.8 else rng.choice(suf)

    def text(self, rng, s, literal):
        if self.typo and literal and rng.random() < 0.3:
            words = s.split(" ")
            cand = [i for i, w in enumerate(words) if len(w) >= 4 and w.isalpha()]
            if cand:
                i = rng.choice(cand)
                words[i] = tv_de_templates._typo(rng, words[i])
                s = " ".join(words)
                self.typo = False
        if self.ascii:
            s = "".join(_UMLAUT.get(c, c) for c in s)
        if self.asr and literal:
            s = _ASR_PUNCT.sub(" ", s)
        if self.lower:
            s = s.lower()
        return s


# ----------------------------------------------------------------------------------------------
# Names: the copyable slot groups of a sampler's slots, and their replacement by open names

_TITLE_SLOTS = ("tnom", "tacc", "tdat", "t")
_CHANNEL_SLOTS = ("ch", "auf", "im", "zu", "vonch")
# the kind of name each query slot holds, per intent (search_title and search_anykind: any of them)
_QUERY_KIND = {"search_movie": "person", "search_movie_title": "title", "search_movie_topic": "subject",
               "search_person": "person"}
_QUERY_SLOT_KIND = {"p": "person", "topic": "subject", "genre": "genre"}
# an open app or channel name is only put where the wording says what it is ("Öffne X", "Schalte auf X um"):
# "Mach X an" with a name nobody knows could be either
_APP_CUE = re.compile(r"öffn|App|app\b|start|Start|open|Open|launch|Launch|[Ww]irf|[Ss]chmeiß|fire up|[Ll]ad|auf\b|"
                      r"[Rr]uf|Bock|run\b|pull up|bring up|[Gg]o on|use\b|[Gg]eh (in|zu)")
# the cue words on the rendered text (training/README.md, "app or channel"): a name no list holds is an app only
# with an app cue and no channel cue, a channel (switch_channel) only with a channel cue and no app cue
_APP_CUE_TEXT = re.compile(r"\bapps?\b|-app\b|öffn|aufmach|aufzumach|\bstart|wirf|werf|schmeiß|\blad|\bopen|launch|"
                           r"fire up|\bload|\brun\b|qqnameqq (mal |ma |bitte )?auf\b")
_CHANNEL_CUE_TEXT = re.compile(r"kanal|sender|programmplatz|channel|station|schalt|wechs|zapp|switch|change|flip|tune|"
                               r"turn to")


def name_cue_ok(function, text, name):
    """Whether the wording of an utterance says that the unlisted name in it is an app (open_app) or a
    channel (switch_channel); other functions need no cue."""
    if function not in ("open_app", "switch_channel"):
        return True
    t = text.lower().replace(name.lower(), " qqnameqq ")
    app, ch = bool(_APP_CUE_TEXT.search(t)), bool(_CHANNEL_CUE_TEXT.search(t))
    return (app and not ch) if function == "open_app" else (ch and not app)


_CHANNEL_CUE = re.compile(r"[Ss]chalt|Sender|[Kk]anal|[Ww]echs|[Zz]app|[Uu]mschalt|switch|Switch|channel|[Cc]hange|"
                          r"[Ff]lip|[Tt]une|station|turn to|Turn to|{auf}|{zu}")


def _open_person(rng, pool):
    if pool == "heldout":
        if rng.random() < 0.4:
            return rng.choice(O.PEOPLE_HELDOUT)
        return rng.choice(O.FIRST_HELDOUT) + " " + rng.choice(O.LAST_HELDOUT)
    if rng.random() < 0.4:
        return rng.choice(O.PEOPLE_TRAIN)
    first = rng.choice(O.FIRST_TRAIN if rng.random() < 0.6 else V.FIRST_NAMES)
    last = rng.choice(O.LAST_TRAIN if rng.random() < 0.6 else V.LAST_NAMES)
    return first + " " + last


def open_name(rng, kind, lang, pool):
    """A name of an open list: kind title/person/subject/genre/app/channel, pool train or heldout."""
    ho = pool == "heldout"
    if kind == "person":
        return _open_person(rng, pool)
    if kind == "title":
        return rng.choice(O.TITLES_HELDOUT if ho else O.TITLES_TRAIN)
    if kind == "app":
        return rng.choice(O.APPS_HELDOUT if ho else O.APPS_TRAIN)
    if kind == "channel":
        return rng.choice(O.CHANNELS_HELDOUT if ho else O.CHANNELS_TRAIN)
    if kind in ("subject", "genre"):
        if lang == "de":
            return rng.choice(O.TOPICS_DE_HELDOUT if ho else O.TOPICS_DE_TRAIN)
        if kind == "genre":
            return rng.choice(O.GENRES_EN_HELDOUT if ho else O.GENRES_EN_TRAIN)
        return rng.choice(O.SUBJECTS_EN_HELDOUT if ho else O.SUBJECTS_EN_TRAIN)
    raise ValueError(kind)


def copy_groups(it, tpl, slots):
    """The copyable slot groups a template uses: [(group, kind, slot names)] with group title / query /
    app / channel; a channel or app group only where the wording names the kind of name."""
    used = tv_de_templates._slots_in(tv_de_templates._parse(tpl))
    out = []
    t = [s for s in _TITLE_SLOTS if s in used and s in slots and slots[s].key == "title"]
    if t:
        out.append(("title", "title", t))
    c = [s for s in _CHANNEL_SLOTS if s in used and s in slots and slots[s].key == "channel"]
    if c and (it.function != "switch_channel" or _CHANNEL_CUE.search(tpl)):
        out.append(("channel", "channel", c))
    if "app" in used and "app" in slots and _APP_CUE.search(tpl):
        out.append(("app", "app", ["app"]))
    for s in ("q", "p", "topic", "genre"):
        if s in used and s in slots and slots[s].key == "query":
            kind = _QUERY_SLOT_KIND.get(s) or _QUERY_KIND.get(it.name) or getattr(slots[s], "kind", None)
            out.append(("query", kind or "any", [s]))
    return out


def _channel_prefix(rng, slot_name, lang):
    if lang == "en" or slot_name == "ch":
        return ""
    return {"auf": "auf ", "im": rng.choice(["auf ", "bei "]), "zu": "zu ", "vonch": rng.choice(["von ", "für "])}[slot_name]


def put_open_names(rng, it, tpl, slots, pool, p, vary=False):
    """Replaces each copyable group of the template by an open name (with probability p; p=1 for the
    held-out dev lines). With vary (training only) the name is a generated one (tv_open_names.gen_name) with
    probability P_GEN, and typed in lower case or ALL CAPS now and then (tv_open_names.typed_case). Returns the names
    put in."""
    put = []
    for group, kind, names in copy_groups(it, tpl, slots):
        if rng.random() >= p:
            continue
        if kind == "any":
            kind = rng.choice(["title", "person", "subject", "genre"] if it.lang == "en" else ["title", "person", "subject"])
        if vary and rng.random() < P_GEN:
            name = O.gen_name(rng, kind, it.lang)
        else:
            name = open_name(rng, kind, it.lang, pool)
        if vary:
            name = O.typed_case(rng, name)
        key = {"title": "title", "query": "query", "app": "app", "channel": "channel"}[group]
        for s in names:
            pre = _channel_prefix(rng, s, it.lang) if group == "channel" else ""
            slots[s] = Slot(name, key, copy=True, prefix=pre)
        if group == "app" and not re.search(r"\b[Aa]pp\b", tpl) and rng.random() < 0.25:
            # "die X App", "die X-App", "the X app" -> X (training/README.md: app spellings)
            if it.lang == "de":
                slots["app"] = WSlot(name, key, "die ", rng.choice([" App", "-App"]))
            else:
                slots["app"] = WSlot(name, key, "the ", " app")
        put.append(name)
    return put


# ----------------------------------------------------------------------------------------------
# Rendering

def realize(it, tpl, rng, clean=False, pool="train", p_open=0.0, vary=False):
    """One utterance of a template -> (text, expected, open names put in). vary (training only): generated
    names, names typed in lower case or ALL CAPS, and listed channel and app names typed in lower case
    (P_LISTED_LOWER; their value stays the normalized one)."""
    slots, args = it.sampler(rng)
    slots, args = dict(slots), dict(args)
    opened = put_open_names(rng, it, tpl, slots, pool, p_open, vary) if it.function else []
    if vary:
        for name, sl in list(slots.items()):
            if sl.key in ("channel", "app") and not sl.copy and rng.random() < P_LISTED_LOWER:
                slots[name] = Slot(sl.core.lower(), sl.key, sl.value, False, sl.prefix)
    parts = []
    tv_de_templates._render(tv_de_templates._parse(tpl), rng, parts)
    noise = Noise(rng, it.lang, it.style, clean, timed=it.function is None or it.name.startswith(_TIMED))
    pieces = []
    starts_copied = None
    for kind, s in parts:
        if kind == "text":
            if starts_copied is None and s.strip():
                starts_copied = False
            t = noise.text(rng, s, True)
            pieces.append(t)
            continue
        sl = slots[s]
        pre = noise.text(rng, sl.prefix, True) if sl.prefix else ""
        core = noise.text(rng, sl.core, False)
        suf = noise.text(rng, sl.suffix, True) if isinstance(sl, WSlot) else ""
        if starts_copied is None and (pre + core).strip():
            starts_copied = sl.copy and not pre
        pieces.append(pre + core + suf)
        if sl.key:
            args[sl.key] = core if sl.copy else sl.value
        if isinstance(sl, XSlot):
            args.update(sl.args)
    for name, sl in slots.items():  # tv_de_templates.py's arguments set by the wording of every template of the intent
        if name.startswith("_") and sl.key:
            args[sl.key] = sl.value
    if it.fix:
        it.fix(tpl, args)
    text = re.sub(r"\s+", " ", "".join(pieces)).strip()
    text = re.sub(r"\s+([?,.!:])", r"\1", text)
    # a copied value that ends the utterance keeps its own punctuation ("logo!", "Wetten, dass..?")
    last = [p for p in parts if p[0] == "slot" or re.sub(r"[?!.,\s]", "", p[1])]
    end_sl = slots[last[-1][1]] if last and last[-1][0] == "slot" else None
    keep_end = end_sl is not None and end_sl.copy and end_sl.core[-1:] in ("?", "!", ".")
    if text and not noise.lower and not starts_copied:
        text = text[0].upper() + text[1:]
    pre, suf = noise.prefix, noise.suffix
    if noise.asr:
        pre = " ".join(_ASR_PUNCT.sub(" ", pre).split()) + " " if pre else ""
        suf = " " + " ".join(_ASR_PUNCT.sub(" ", suf).split()) if suf else ""
    if suf and not text.endswith("?") and not keep_end:
        text = text.rstrip(".!") + suf
    if pre:
        m = re.match(r"[^\W\d_]+", text)
        if m and m.group(0)[0].isupper() and m.group(0).lower() in _MID_WORDS and not starts_copied:
            text = text[0].lower() + text[1:]  # "Hey, mach lauter"; a noun keeps its capital ("Hey, Ton aus")
        text = (pre.lower() if noise.lower else pre) + text
    if noise.asr:
        if not keep_end:
            text = text.rstrip("?.! ")
    elif noise.punct == "strip" and not keep_end:
        text = text.rstrip("?.!")
    elif noise.punct == "bang" and not text.endswith("?") and not keep_end:
        text = text.rstrip(".!") + "!"
    elif noise.punct == "dot" and not text.endswith(("?", "!", ".")):
        text = text + "."
    if keep_end:  # the value's own final punctuation survives any stripping ("logo!", "Wetten, dass..?")
        v = args.get(end_sl.key, "")
        bare = v.rstrip("?!.")
        if v not in text and text.rstrip("?!. ").endswith(bare):
            text = text.rstrip("?!. ") + v[len(bare):]
    if not text:
        raise ValueError(f"empty utterance from {tpl!r}")
    if it.function is None:
        return text, {"text": NO_CALL_REPLY[it.lang]}, opened
    return text, {"calls": [{"name": it.function, "args": args}]}, opened


def norm(text):
    t = unicodedata.normalize("NFC", text).lower()
    t = "".join(c if c.isalnum() else " " for c in t)
    return " ".join(t.split())


# ----------------------------------------------------------------------------------------------
# Intents and the train/dev split of the templates

STYLES = ("de", "colloq", "en")


_MID_WORDS = set()  # words that the templates write in lower case inside a sentence (not nouns, not "I")


def _learn_mid_words(templates):
    _MID_WORDS.update("how what who where when why which is are do does did wie wer wo wann warum welche welcher "
                      "welches wat".split())
    for t in templates:
        words = re.findall(r"[^\W\d_]+", re.sub(r"\{[A-Za-z_]+\}", " ", t))
        _MID_WORDS.update(w for w in words[1:] if w.islower())


def all_intents():
    """(intent, template index, is_dev, is_handwritten) for every template of the three styles. tv_de_templates.py's
    templates keep tv-mini's split (tv_de_templates.split_templates); the new ones are split by the hash of
    SPLIT_SALT, style, intent and text (DEV_SHARE), every intent keeping one training template and, with
    three or more, one dev template."""
    import tv270m_colloq
    import tv270m_en
    out = []
    de = {it.name: Intent(it.name, it.function, it.sampler, list(it.templates), "de", "de", fix=tv_de_templates.FIXUPS.get(it.name))
          for it in tv_de_templates.INTENTS}
    n_hand = {it.name: it.n_hand for it in tv_de_templates.INTENTS}
    for it0, i, is_dev in tv_de_templates.split_templates(0.25):
        out.append((de[it0.name], i, is_dev, i < n_hand[it0.name]))
    for it in tv270m_colloq.intents() + tv270m_en.intents():
        share = DEV_SHARE[it.style]
        hs = [hashlib.sha256("\x00".join((SPLIT_SALT, it.style, it.name, t)).encode()).digest() for t in it.templates]
        f = [int.from_bytes(h[:4], "little") / 2 ** 32 < share for h in hs]
        if all(f):
            f[min(range(len(hs)), key=lambda i: hs[i])] = False
        if len(f) >= 3 and not any(f):
            f[min(range(len(hs)), key=lambda i: hs[i])] = True
        out += [(it, i, d, True) for i, d in enumerate(f)]
    _learn_mid_words(t for it, i, _, _ in out for t in [it.templates[i]])
    return out


DEV_SHARE = {"colloq": 0.25, "en": 0.2}

# ----------------------------------------------------------------------------------------------
# Checks of the templates: argument slots, and the words that an argument set by the wording needs

CUES = {
    ("when", "now"): r"gerade|grad|jetzt|aktuell|moment|laufend|now|current",
    ("when", "next"): r"danach|nächst|anschluss|gleich|nachher|hinterher|folgt|dann|nach (dem|der|den|dieser)|next|after|"
                      r"coming up|follow",
    ("start", "now"): r"jetzt|sofort|gerade|grad|now|right away|immediately",
    ("day", "today"): r"heute|heut\b|today|tonight|this evening",
    ("day", "tomorrow"): r"morgen|tomorrow",
    ("day", "weekend"): r"wochenende|samstag|weekend|saturday",
    ("time", "evening"): r"abend|primetime|evening|tonight|prime time|night",
    ("time", "now"): r"jetzt|now",
    ("kind", "movie"): r"film|kino|movie",
    ("kind", "series"): r"serie",
    ("kind", "show"): r"sendung|show|programme",
    ("kind", "person"): r"schauspiel|person|wer |profil|info|actor|actress|who|profile",
    ("kind", "any"): r"überall|alle|everywhere|everything|all categories",
    ("language", "original"): r"original|\bov\b|\bomu\b",
}


def check(items, rng, renders=3):
    """Problems of the templates: an argument slot inside an optional part or an alternative, a slot the
    sampler lacks, an argument set by the wording that a clean utterance gives no word for (CUES: e.g.
    when=next needs "danach"/"next"), an integer argument without a slot, a copied value not in the text."""
    problems = []
    for it, i, _, _ in items:
        tpl = it.templates[i]
        slots, _ = it.sampler(rng)
        try:
            tree = tv_de_templates._parse(tpl)
        except AssertionError:
            problems.append(f"{it.style}/{it.name}: cannot parse {tpl!r}")
            continue
        used = tv_de_templates._slots_in(tree)
        for n in used:
            if n not in slots:
                problems.append(f"{it.style}/{it.name}: unknown slot {{{n}}} in {tpl!r}")

        def walk(node, inside):
            k = node[0]
            sl = slots.get(node[1]) if k == "slot" else None
            if inside and sl is not None and (sl.key or isinstance(sl, XSlot)):
                problems.append(f"{it.style}/{it.name}: argument slot {{{node[1]}}} inside an optional part of {tpl!r}")
            elif k == "seq":
                for x in node[1]:
                    walk(x, inside)
            elif k == "alt":
                for x in node[1]:
                    walk(x, True)
            elif k == "opt":
                walk(node[1], True)
        walk(tree, False)
        if problems and problems[-1].startswith(f"{it.style}/{it.name}: unknown"):
            continue
        if not it.function:
            continue
        int_keys = {slots[n].key for n in used if n in slots and slots[n].key}
        for _ in range(renders):
            text, exp, _ = realize(it, tpl, rng, clean=True)
            low = text.lower()
            for k, v in exp["calls"][0]["args"].items():
                cue = CUES.get((k, v))
                if cue and not re.search(cue, low):
                    problems.append(f"{it.style}/{it.name}: {k}={v} without a word for it in {text!r} ({tpl!r})")
                if isinstance(v, int) and k not in int_keys:
                    problems.append(f"{it.style}/{it.name}: {k}={v} without a slot in {tpl!r}")
                if k in ("title", "query") and v not in text:
                    problems.append(f"{it.style}/{it.name}: {k}={v!r} not in {text!r}")
    return sorted(set(problems))


# ----------------------------------------------------------------------------------------------
# Generation

STYLE_SHARE = {"de": 0.35, "colloq": 0.27, "en": 0.38}   # training examples per style
P_OPEN = {"de": 0.35, "colloq": 0.45, "en": 0.45}        # a copyable name replaced by an open list's name
P_GEN = 0.5             # training: an open name is a generated one (tv_open_names.gen_name)
P_LISTED_LOWER = 0.1    # training: a listed channel or app name typed in lower case (value normalized)
P_TEXT = 0.085          # training: an utterance that no function fits (before the dedup of short phrases)
DEV_COUNTS = {"de": 120, "colloq": 75, "en": 75, "heldout": 30}


def _by_function(items, dev):
    """style -> function (or "(text)") -> [(intent, [template indices], [handwritten flags])]."""
    out = collections.defaultdict(lambda: collections.defaultdict(list))
    grouped = collections.OrderedDict()
    for it, i, d, hand in items:
        if d == dev:
            grouped.setdefault(id(it), (it, [], []))
            grouped[id(it)][1].append(i)
            grouped[id(it)][2].append(hand)
    for it, idx, hand in grouped.values():
        out[it.style][it.function or "(text)"].append((it, idx, hand))
    return out


def _pick(rng, by_fn, fname=None):
    fname = fname or rng.choice(sorted(by_fn))
    intents = by_fn[fname]
    it, idx, hand = rng.choices(intents, weights=[len(x[1]) ** 0.5 * getattr(x[0], "weight", 1) for x in intents])[0]
    h = [i for i, f in zip(idx, hand) if f]
    g = [i for i, f in zip(idx, hand) if not f]
    if h and g:  # tv_de_templates: handwritten and generated templates get half of the draws each (as make_data.py)
        return it, rng.choice(h if rng.random() < 0.5 else g)
    return it, rng.choice(idx)


def _name_re(names):
    names = sorted({norm(n) for n in names if norm(n)}, key=len, reverse=True)
    return re.compile(r"\b(" + "|".join(re.escape(n) for n in names) + r")\b") if names else None


def _expansions(tpl):
    """Every wording of a template: its alternatives and optional parts spelled out, slots kept as {name}."""
    def ex(node):
        k = node[0]
        if k == "text":
            return [node[1]]
        if k == "slot":
            return ["{" + node[1] + "}"]
        if k == "seq":
            out = [""]
            for x in node[1]:
                out = [a + b for a in out for b in ex(x)]
            return out
        if k == "alt":
            return [s for x in node[1] for s in ex(x)]
        return [""] + ex(node[1])  # opt
    return [re.sub(r"\s+([,?!.])", r"\1", " ".join(s.split())) for s in ex(tv_de_templates._parse(tpl))]


_SLOT_GROUP = {"auf": "ch", "zu": "ch", "im": "ch", "tacc": "t", "tnom": "t", "tdat": "t"}


def _wording_key(text):
    return norm(re.sub(r"\{(\w+)\}", lambda m: " qq" + _SLOT_GROUP.get(m.group(1), m.group(1)) + "qq ", text))


def _extra_items(items):
    """The training-only templates of tv270m_train_only, each spelled out into its wordings, less every wording that a
    dev template can also say (compared lower-cased, without punctuation, a channel or title slot as one slot):
    they must not bring a held-out phrasing into training."""
    import tv270m_train_only
    dev_keys = {_wording_key(w) for it, i, d, _ in items if d for w in _expansions(it.templates[i])}
    out, dropped = [], 0
    for it in tv270m_train_only.intents():
        keep = []
        for t in it.templates:
            ws = [w for w in _expansions(t) if _wording_key(w) not in dev_keys]
            dropped += len(_expansions(t)) - len(ws)
            keep += [w for w in ws if w not in keep]
        it.templates = keep
        out += [(it, i, False, True) for i in range(len(keep))]
    return out, dropped


def generate(n_train, seed, demo_keys, validate, forbidden=()):
    """-> (train, dev): lists of {"utterance", "expected", "intent", "lang", "style"}. forbidden: names that no
    training utterance may contain (the probe's)."""
    import random
    items = all_intents()
    extra, extra_dropped = _extra_items(items)  # training only (tv270m_train_only.py); not in the dev draws
    items_all = items + extra
    problems = check(items_all, random.Random(seed))
    if problems:
        raise SystemExit("tv270m template problems:\n  " + "\n  ".join(problems))
    dev_by = _by_function(items, True)
    train_by = _by_function(items_all, False)

    rng = random.Random(seed)
    dev, dev_keys, heldout_names, dev_removed = [], set(), set(), []

    def add_dev(style, it, i, pool, p_open, clean):
        text, exp, opened = realize(it, it.templates[i], rng, clean=clean, pool=pool, p_open=p_open)
        k = norm(text)
        if k in dev_keys or k in demo_keys or (pool == "heldout" and not opened):
            return False
        validate(exp)
        args = exp.get("calls", [{}])[0].get("args", {})
        name = args.get("app") or args.get("channel")
        if name and name.lower() in {n.lower() for n in opened} and not name_cue_ok(it.function, text, name):
            # an unlisted name whose wording does not say app or channel: the conventions do not decide the
            # label; the line is left out (counted, so that the following draws stay those of run 1's dev set)
            dev_removed.append({"utterance": text, "expected": exp, "intent": it.name, "lang": it.lang, "style": style})
            return True
        dev_keys.add(k)
        heldout_names.update(opened if pool == "heldout" else [])
        dev.append({"utterance": text, "expected": exp, "intent": it.name, "lang": it.lang, "style": style})
        return True

    for style in STYLES:
        fns = sorted(dev_by[style])
        made, n = 0, 0
        while made < DEV_COUNTS[style]:
            fname = fns[n % len(fns)]
            n += 1
            it, i = _pick(rng, dev_by[style], fname)
            made += add_dev(style, it, i, "train", 0.0, clean=n % 3 == 0)
            if n > DEV_COUNTS[style] * 50:
                raise RuntimeError(f"cannot find {DEV_COUNTS[style]} distinct dev utterances of style {style}")
    # held-out names: dev templates of the three styles whose wording has a copyable name, the functions in turn
    by_fn = collections.defaultdict(list)
    for it, i, d, _ in items:
        if d and it.function and copy_groups(it, it.templates[i], it.sampler(rng)[0]):
            by_fn[(it.function, it.style)].append((it, i))
    fns = sorted({f for f, _ in by_fn})
    made, n = 0, 0
    while made < DEV_COUNTS["heldout"]:
        fname, style = fns[(n // 3) % len(fns)], STYLES[n % 3]
        n += 1
        cands = by_fn.get((fname, style)) or [c for s in STYLES for c in by_fn.get((fname, s), [])]
        it, i = rng.choice(cands)
        made += add_dev("heldout", it, i, "heldout", 1.0, clean=n % 3 == 0)
        if n > DEV_COUNTS["heldout"] * 50:
            raise RuntimeError("cannot find enough distinct held-out-name dev utterances")

    # training: never a dev utterance, a demo utterance, or a held-out name the dev set uses
    _learn_mid_words(it.templates[i] for it, i, _, _ in extra)
    held_re = _name_re(set(heldout_names) | set(forbidden))
    rng = random.Random(seed + 1)
    train, train_keys, seen = [], set(), collections.Counter()
    styles, weights = list(STYLE_SHARE), list(STYLE_SHARE.values())
    tries = rejected_names = cue_rejected = n_gen = 0
    train_fns = {s: sorted(f for f in train_by[s] if f != "(text)") for s in styles}
    while len(train) < n_train:
        tries += 1
        if tries > n_train * 30:
            raise RuntimeError("cannot find enough distinct training utterances")
        style = rng.choices(styles, weights)[0]
        fns = train_fns[style]
        it, i = _pick(rng, train_by[style], "(text)" if rng.random() < P_TEXT else rng.choice(fns))
        text, exp, opened = realize(it, it.templates[i], rng, clean=rng.random() < 0.15, pool="train",
                                    p_open=P_OPEN[style], vary=True)
        k = norm(text)
        if k in dev_keys or k in demo_keys or seen[k] >= 3:
            continue
        if opened and it.function in ("open_app", "switch_channel"):
            args = exp["calls"][0]["args"]
            name = args.get("app") or args.get("channel")
            if name and name.lower() in {n.lower() for n in opened} and not name_cue_ok(it.function, text, name):
                cue_rejected += 1
                continue
        if held_re and held_re.search(k):
            rejected_names += 1
            continue
        for c in exp.get("calls", []):
            for key in ("title", "query"):
                if key in c["args"] and c["args"][key] not in text:
                    raise AssertionError(f"{key} {c['args'][key]!r} is not in {text!r}")
        seen[k] += 1
        gen = [n for n in opened if n.lower() in O.GENERATED]
        assert not any(O.gen_is_heldout(n) for n in gen), gen
        n_gen += bool(gen)
        validate(exp)
        train_keys.add(k)
        train.append({"utterance": text, "expected": exp, "intent": it.name, "lang": it.lang, "style": style})
    dev = [d for d in dev if norm(d["utterance"]) not in train_keys]
    stats = {"templates": collections.Counter((it.style, d) for it, _, d, _ in items), "rejected_names": rejected_names,
             "heldout_names": sorted(heldout_names), "dev_removed": dev_removed, "cue_rejected": cue_rejected,
             "extra_templates": collections.Counter(it.style for it, _, _, _ in extra), "extra_dropped": extra_dropped, "generated_names": n_gen}
    return train, dev, stats
