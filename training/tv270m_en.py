"""English TV commands for the tv270m set: per intent the verb phrases (said as commands, polite
questions, requests and "I'd like you to ..."), the user's own wishes ("I'd like to watch X"), elliptic
nouns ("volume up", "subtitles off") and statements and questions said as they are ("I can't hear
anything", "What's on tonight?"). Template syntax as in tv_de_templates.py: (a|b), [optional], {slot}; a slot that
carries an argument is never inside an alternative or an optional part.

Values follow training/README.md's conventions: channels and apps that tv_de_values lists keep their
normalized name, everything else that names a title, person, topic, app or channel is copied as said;
languages are English names (what an English speaker says anyway); numbers from digits or English
words; clock times HH:MM (always said unambiguously: "8 pm", "20:15", "quarter past eight in the evening")."""
import tv_open_names as O
import tv_de_values as V
from tv_de_templates import Slot
from tv270m_intent import XSlot

# ----------------------------------------------------------------------------------------------
# Frames

_MODAL = "(Can|Could|Would|Will) you [(please|maybe|just)]"
_POLITE = "(Do you think you could|Is it possible to|Any chance you could|Would it be possible to|Would you mind helping me)"


def expand(vps=(), uvps=(), nouns=(), wants=(), extra="", timed=False):
    """The templates of one intent from its phrases (deduplicated, in a fixed order)."""
    out = []
    for vp in vps:
        out += [vp, f"please {vp}", f"{vp}, please", f"{vp} please", f"{_MODAL} {vp}?", f"{_POLITE} {vp}?",
                f"(I'd like you to|I want you to|I need you to) {vp}", f"(Go ahead and|Just) {vp}", f"{vp} for me"]
        if not timed:
            out.append(f"{vp} (now|right now|real quick)")
    for u in uvps:
        out += [f"(I'd like to|I want to|I wanna|I would like to|I'd love to) {u}", f"Let's {u}",
                f"(Can I|Could I|Can we|Could we) {u}?"]
    for n in nouns:
        out += [n, f"{n} please", f"{n}, please", f"Please, {n}"]
    for n in wants:
        out += [f"(I'd like|I want|Give me|Can I have|Could I get|I need) {n}"]
    out += [t.strip() for t in extra.strip().splitlines() if t.strip()]
    seen, res = set(), []
    for t in out:
        t = " ".join(t.split()).replace(" ,", ",").replace(" ?", "?")
        t = t[0].upper() + t[1:] if t[0].islower() else t
        if t not in seen:
            seen.add(t)
            res.append(t)
    return res


# ----------------------------------------------------------------------------------------------
# Samplers

_EN_CHANNELS = O.en_channel_forms()
_EN_APPS = O.en_app_forms()


def _ch(rng):
    value, names = rng.choice(_EN_CHANNELS)
    return Slot(rng.choice(names), "channel", value)


def _app(rng):
    value, names = rng.choice(_EN_APPS)
    return Slot(rng.choice(names), "app", value)


def _title(rng):
    return Slot(rng.choice(V.TITLES)[0], "title", copy=True)


def _person(rng):
    if rng.random() < 0.55:
        return rng.choice(V.PEOPLE)
    return rng.choice(V.FIRST_NAMES) + " " + rng.choice(V.LAST_NAMES)


def _query(rng, kind):
    """A search query slot (copied as said); kind title/person/genre/subject or None (any of them)."""
    kind = kind or rng.choice(["title", "title", "person", "genre", "subject"])
    if kind == "title":
        v = rng.choice(V.TITLES)[0]
    elif kind == "person":
        v = _person(rng)
    elif kind == "genre":
        v = rng.choice(O.GENRES_EN_TRAIN)
    else:
        v = rng.choice(O.SUBJECTS_EN_TRAIN)
    s = Slot(v, "query", copy=True)
    s.kind = kind  # tv270m_data.copy_groups: which open list can replace it
    return s


def _lang(rng):
    (value, _, _), = rng.choices(V.LANGUAGES, weights=V.LANGUAGE_WEIGHTS)
    return Slot(value, "language", value)


def _clock(rng, key):
    hh, mm = V.sample_clock(rng)
    return Slot(O.en_time_surface(rng, hh, mm), key, f"{hh:02d}:{mm:02d}")


def _vol(rng):
    import tv_de_templates
    return tv_de_templates.rnd_volume(rng)


_DAY = {"today": ["today"], "tomorrow": ["tomorrow"],
        "weekend": ["this weekend", "on the weekend", "at the weekend", "over the weekend", "on Saturday and Sunday"]}
_DAY_FOR = {"today": ["today"], "tomorrow": ["tomorrow"], "weekend": ["the weekend", "this weekend"]}
_DAY_POSS = {"today": ["today's"], "tomorrow": ["tomorrow's"], "weekend": ["this weekend's", "the weekend's"]}
_DAYTIME = [("tonight", "today", "evening"), ("this evening", "today", "evening"), ("tomorrow night", "tomorrow", "evening"),
            ("tomorrow evening", "tomorrow", "evening"), ("tonight at 8", "today", "20:00"), ("today at 8 pm", "today", "20:00"),
            ("tomorrow at 20:15", "tomorrow", "20:15"), ("tomorrow at 9 pm", "tomorrow", "21:00"),
            ("today at 6 pm", "today", "18:00"), ("tonight at quarter past eight", "today", "20:15"),
            ("this weekend in the evening", "weekend", "evening"), ("tonight at 10", "today", "22:00"),
            ("tomorrow at half past seven in the evening", "tomorrow", "19:30"), ("today at 21:45", "today", "21:45")]
_EVENING = ["in the evening", "at prime time", "during prime time", "for the evening", "in prime time", "for prime time"]
_CH_WHEN = [("today", {"day": "today"}), ("tomorrow", {"day": "tomorrow"}), ("tonight", {"day": "today", "time": "evening"}),
            ("this evening", {"day": "today", "time": "evening"}), ("this weekend", {"day": "weekend"}),
            ("tomorrow night", {"day": "tomorrow", "time": "evening"}), ("at the weekend", {"day": "weekend"})]

_MODES = {"cinema": ["cinema", "movie", "film", "theater"], "sport": ["sport", "sports"], "game": ["game", "gaming"],
          "vivid": ["vivid", "dynamic", "vibrant"], "standard": ["standard", "normal", "default"]}


def _sampler(kind):
    """The sampler of an English intent by the slots it needs."""
    def s(rng):
        import tv_de_templates
        slots = {}
        if kind in ("ch", "t_ch", "t_ch_time", "ch_time", "info", "guide_ch", "guide_clock", "t_ch_mins"):
            slots["ch"] = _ch(rng)
        if kind in ("t", "t_ch", "t_time", "t_ch_time", "t_mins", "t_ch_mins", "t_now"):
            slots["t"] = _title(rng)
        if kind in ("t_time", "t_ch_time", "ch_time"):
            slots["time"] = _clock(rng, "start")
        if kind in ("t_mins", "t_ch_mins"):
            m = tv_de_templates.rnd_before(rng)
            slots["mins"] = Slot(O.en_minutes(rng, m), "minutes_before", m)
        if kind == "t_now":
            slots["ch"] = _ch(rng)
        if kind == "num":
            n = tv_de_templates.rnd_channel_number(rng)
            slots["num"] = Slot(O.en_number_surface(rng, n, 0.35), "number", n)
        if kind == "level":
            n = _vol(rng)
            slots["level"] = Slot(O.en_number_surface(rng, n, 0.4), "level", n)
        if kind == "steps":
            n = tv_de_templates.rnd_steps(rng)
            slots["steps"] = Slot(O.en_number_surface(rng, n, 0.5), "steps", n)
        if kind == "sec":
            n = tv_de_templates.rnd_seconds(rng)
            slots["sec"] = Slot(O.en_seconds(rng, n), "seconds", n)
        if kind == "dur":
            n = tv_de_templates.rnd_sleep(rng)
            slots["dur"] = Slot(O.en_minutes(rng, n), "minutes", n)
        if kind == "app":
            slots["app"] = _app(rng)
        if kind == "lang":
            slots["lang"] = _lang(rng)
        if kind == "mode":
            m = rng.choice(list(_MODES))
            slots["mode"] = Slot(rng.choice(_MODES[m]), "mode", m)
        if kind == "day":
            d = rng.choice(list(_DAY))
            slots["day"] = Slot(rng.choice(_DAY[d]), "day", d)
            slots["fday"] = Slot(rng.choice(_DAY_FOR[d]), "day", d)
            slots["dposs"] = Slot(rng.choice(_DAY_POSS[d]), "day", d)
        if kind == "daytime":
            surf, d, t = rng.choice(_DAYTIME)
            slots["dt"] = XSlot(surf, {"day": d, "time": t})
        if kind == "evening":
            slots["ev"] = XSlot(rng.choice(_EVENING), {"time": "evening"})
        if kind == "guide_ch":
            surf, a = rng.choice(_CH_WHEN)
            slots["cw"] = XSlot(surf, a)
        if kind == "guide_clock":
            slots["clock"] = _clock(rng, "time")
        if kind.startswith("q_"):
            q = kind[2:]
            slots["q"] = _query(rng, None if q == "any" else q)
            slots["p"] = _query(rng, "person")
            slots["topic"] = _query(rng, "subject")
            slots["genre"] = _query(rng, "genre")
        if kind == "no_call":
            slots["name"] = Slot(rng.choice(V.FIRST_NAMES))
            slots["city"] = Slot(rng.choice(["London", "Paris", "Berlin", "Munich", "New York", "Rome", "Vienna", "Madrid",
                                              "Hamburg", "Dublin", "Amsterdam", "Chicago"]))
            slots["item"] = Slot(rng.choice(["milk", "bread", "eggs", "butter", "cheese", "apples", "coffee", "pasta",
                                              "tomatoes", "beer", "water", "sugar"]))
        return slots
    return s


# ----------------------------------------------------------------------------------------------
# Intents: name -> (function, fixed args, sampler kind, phrases)

_TV = "(the TV|the television|the telly|the box)"

SPEC = {
    # ---- switch_channel
    "switch_name": ("switch_channel", {}, "ch", dict(
        vps=["switch to {ch}", "switch over to {ch}", "change (the channel|it) to {ch}", "change over to {ch}",
             "go to {ch}", "put {ch} on", "put on {ch}", "turn to {ch}", "tune (in to|into|to) {ch}", "flip (over to|to) {ch}",
             "switch the channel to {ch}", "take me to {ch}", "bring up {ch}", "put the TV on {ch}", "jump to {ch}",
             "change the station to {ch}", "switch the TV over to {ch}"],
        uvps=["watch {ch}", "see {ch}", "watch something on {ch}", "switch to {ch}", "have {ch} on"],
        nouns=["{ch}", "over to {ch}", "{ch} now", "channel {ch}"],
        wants=["{ch}"],
        extra="""
I feel like watching {ch}
How about {ch}?
Let me see {ch}
{ch}, I said
Switch it to {ch}, the match is on
This is boring, put on {ch}
Can we have {ch} on?
Anything but this, switch to {ch}
""")),
    "switch_number": ("switch_channel", {}, "num", dict(
        vps=["switch to channel {num}", "go to channel {num}", "change to channel {num}", "put on channel {num}",
             "turn to channel {num}", "tune to channel {num}", "jump to channel {num}", "switch to number {num}",
             "change the channel to {num}", "select channel {num}", "go to programme {num}", "punch in channel {num}"],
        uvps=["watch channel {num}"],
        nouns=["channel {num}", "channel number {num}", "number {num}", "programme {num}"],
        extra="""
Channel {num}, quick
What's on channel {num}? Switch over
""")),
    # ---- set_volume
    "volume_level": ("set_volume", {}, "level", dict(
        vps=["set the volume to {level}", "turn the volume to {level}", "put the volume (at|on|to) {level}",
             "change the volume to {level}", "adjust the volume to {level}", "make the volume {level}",
             "bring the volume to {level}", "set it to volume {level}", "turn the sound to {level}"],
        nouns=["volume {level}", "volume to {level}", "volume at {level}", "volume {level} percent", "volume level {level}",
               "sound to {level}"],
        extra="""
I want the volume at {level}
The volume should be {level}
Volume to {level}, it's too loud
Can we have the volume at {level}?
""")),
    "volume_up": ("set_volume", {"direction": "up"}, "none", dict(
        vps=["turn (it|the volume|the sound|the TV) up", "turn up the (volume|sound|TV)", "make it louder",
             "make the (sound|TV|volume) louder", "raise the volume", "increase the volume", "pump up the volume",
             "crank (it|the volume) up", "bump (it|the volume) up", "bring the volume up", "boost the volume",
             "turn it up (a bit|a little|a notch)"],
        nouns=["volume up", "louder", "a bit louder", "a little louder", "more volume", "a little more volume", "sound up",
               "turn it up"],
        wants=["more volume"],
        extra="""
I can't hear (anything|a thing|it|them)
It's (too quiet|way too quiet|a bit too quiet|much too quiet)
I can (barely|hardly) hear (it|anything|them|a thing)
Can't hear a thing
The volume is too low
It's not loud enough
This is too soft
I didn't catch a word, louder
What? I can't hear them
Louder, I can't hear
Speak up, I can't hear the TV
""")),
    "volume_down": ("set_volume", {"direction": "down"}, "none", dict(
        vps=["turn (it|the volume|the sound|the TV) down", "turn down the (volume|sound|TV)", "make it quieter",
             "make it (softer|less loud)", "lower the volume", "decrease the volume", "reduce the volume",
             "bring the volume down", "keep it down", "tone it down", "turn it down (a bit|a little|a notch)"],
        nouns=["volume down", "quieter", "softer", "a bit quieter", "a little quieter", "less volume", "not so loud",
               "sound down"],
        extra="""
It's too loud
It's (way|far|much|a bit) too loud
That's too loud
This is way too loud
My ears are hurting
The neighbours are complaining
The baby is sleeping, (quieter please|turn it down)
Could it be a bit quieter?
Too loud!
Ouch, that's loud
""")),
    "volume_steps_up": ("set_volume", {"direction": "up"}, "steps", dict(
        vps=["turn (it|the volume) up by {steps}", "turn (it|the volume) up {steps} (steps|notches|levels)",
             "raise the volume by {steps}", "increase the volume by {steps} [steps]", "make it {steps} (steps|notches) louder",
             "go up {steps} (steps|notches)"],
        nouns=["volume up {steps}", "volume up by {steps}", "{steps} steps louder", "{steps} notches up", "volume plus {steps}",
               "up {steps}"])),
    "volume_steps_down": ("set_volume", {"direction": "down"}, "steps", dict(
        vps=["turn (it|the volume) down by {steps}", "turn (it|the volume) down {steps} (steps|notches|levels)",
             "lower the volume by {steps}", "decrease the volume by {steps} [steps]", "make it {steps} (steps|notches) quieter",
             "go down {steps} (steps|notches)"],
        nouns=["volume down {steps}", "volume down by {steps}", "{steps} steps quieter", "{steps} notches down",
               "volume minus {steps}", "down {steps}"])),
    # ---- mute
    "mute_on": ("mute", {"state": "on"}, "none", dict(
        vps=["mute (the TV|the sound|it|everything)", "mute", "turn off the sound", "turn the sound off", "kill the sound",
             "switch the sound off", "silence the TV", "cut the sound", "shut the sound off"],
        nouns=["mute", "sound off", "no sound", "silence", "audio off"],
        extra="""
I'm on the phone, mute it
The phone is ringing, mute
Shh, mute
I don't want to hear anything
Silence please
Be quiet please
Hit mute
""")),
    "mute_off": ("mute", {"state": "off"}, "none", dict(
        vps=["unmute (the TV|the sound|it)", "turn the sound back on", "turn on the sound", "bring the sound back",
             "switch the sound (back on|on)", "restore the sound", "turn mute off", "turn off mute", "cancel mute"],
        nouns=["unmute", "sound on", "sound back on", "audio on", "mute off", "sound back"],
        extra="""
It's muted, turn the sound back on
Why is there no sound? Unmute it
I want the sound back
""")),
    # ---- playback_control
    "playback_pause": ("playback_control", {"action": "pause"}, "none", dict(
        vps=["pause (it|the movie|the show|the video|playback|this)", "put it on pause", "hit pause", "press pause",
             "pause for a (sec|second|moment)", "freeze the picture"],
        nouns=["pause", "pause for a moment"],
        extra="""
Hold on, pause
Wait a sec, pause
Someone's at the door, pause it
Hang on, pause
I need a bathroom break, pause
Hold it, I'll be right back
""")),
    "playback_play": ("playback_control", {"action": "play"}, "none", dict(
        vps=["resume (playback|the movie|the show|it)", "continue (playing|the movie|watching)", "keep playing",
             "unpause (it|the movie)", "start playing again", "carry on", "hit play", "press play", "let it play",
             "go on playing"],
        nouns=["play", "resume", "continue", "unpause"],
        extra="""
I'm back, (continue|resume|keep going)
OK, you can continue
Let's keep watching
Go on
""")),
    "playback_stop": ("playback_control", {"action": "stop"}, "none", dict(
        vps=["stop (the movie|playback|the video|it|the show)", "end (the movie|playback|this)", "quit (the movie|playback)",
             "cancel playback"],
        nouns=["stop", "stop playback"],
        extra="""
This is boring, stop it
I don't want to watch this anymore, stop
Enough, stop the movie
That's enough, stop
""")),
    "playback_forward": ("playback_control", {"action": "forward"}, "none", dict(
        vps=["fast forward [a bit]", "skip ahead [a bit]", "skip forward", "jump ahead", "go forward a bit",
             "skip (this part|the ads|the intro|the credits)", "move ahead a bit"],
        nouns=["fast forward", "forward", "skip ahead", "skip"],
        extra="""
This part is boring, skip ahead
""")),
    "playback_rewind": ("playback_control", {"action": "rewind"}, "none", dict(
        vps=["rewind [a bit]", "go back a bit", "skip back", "jump back", "rewind (a little|the movie)", "back up a bit"],
        nouns=["rewind", "back a bit"],
        extra="""
I missed that, rewind
What did he say? Go back a bit
Can I see that again? Rewind
""")),
    "playback_restart": ("playback_control", {"action": "restart"}, "none", dict(
        vps=["start (it|the movie|the episode|this) over", "start over", "restart (the movie|the episode|it|this)",
             "play (it|the movie|the episode) from the (beginning|start)", "go back to the (beginning|start)",
             "start from the beginning"],
        nouns=["from the beginning", "from the top", "start over", "restart", "back to the start"],
        extra="""
I missed the beginning, start it over
Let's watch it again from the start
""")),
    "playback_forward_sec": ("playback_control", {"action": "forward"}, "sec", dict(
        vps=["skip (ahead|forward) {sec}", "fast forward {sec}", "jump (ahead|forward) {sec}", "go forward {sec}",
             "skip {sec} ahead", "move forward {sec}", "skip the next {sec}"],
        nouns=["forward {sec}", "{sec} forward", "plus {sec}", "skip {sec}"])),
    "playback_rewind_sec": ("playback_control", {"action": "rewind"}, "sec", dict(
        vps=["go back {sec}", "rewind {sec}", "skip back {sec}", "jump back {sec}", "rewind by {sec}",
             "show me the last {sec} again", "replay the last {sec}"],
        nouns=["back {sec}", "{sec} back", "minus {sec}", "rewind {sec}"])),
    # ---- search_content
    "search_title": ("search_content", {}, "q_any", dict(
        vps=["search for {q}", "look for {q}", "find {q}", "look up {q}", "search {q}", "find something about {q}",
             "show me something about {q}", "search the media library for {q}", "find me {q}", "find something with {q}"],
        uvps=["see something about {q}", "watch something with {q}"],
        nouns=["search {q}", "search: {q}", "results for {q}"],
        extra="""
Is there anything with {q}?
Do you have anything about {q}?
Where can I watch {q}?
Is {q} available anywhere?
Anything on {q}?
I'm in the mood for {genre}
Find me some {genre}
Got any {genre}?
""")),
    "search_movie": ("search_content", {"kind": "movie"}, "q_person", dict(
        vps=["search for (movies|films) with {q}", "find (movies|films) (with|starring) {q}", "show me (movies|films) with {q}",
             "look for a (movie|film) with {q}", "find me a (movie|film) starring {q}", "list (movies|films) with {q}"],
        uvps=["watch a (movie|film) with {q}"],
        nouns=["(movies|films) with {q}", "(movies|films) starring {q}"],
        extra="""
What (movies|films) has {q} been in?
Which (movies|films) (are there|do you have) with {q}?
Any (movies|films) with {q}?
""")),
    "search_movie_title": ("search_content", {"kind": "movie"}, "q_title", dict(
        vps=["search for the (movie|film) {q}", "find the (movie|film) {q}", "look for the (movie|film) {q}",
             "show me the (movie|film) {q}", "look up the (movie|film) {q}"],
        uvps=["watch the (movie|film) {q}"],
        nouns=["the (movie|film) {q}", "(movie|film): {q}"],
        extra="""
Do you have the (movie|film) {q}?
Where can I (watch|find) the (movie|film) {q}?
Is the (movie|film) {q} available?
""")),
    "search_movie_topic": ("search_content", {"kind": "movie"}, "q_subject", dict(
        vps=["find (movies|films) about {q}", "search for (movies|films) about {q}", "show me (movies|films) about {q}",
             "look for a (movie|film) about {q}"],
        nouns=["(movies|films) about {q}"],
        extra="""
Are there any (movies|films) about {q}?
""")),
    "search_series": ("search_content", {"kind": "series"}, "q_title", dict(
        vps=["search for the series {q}", "find the series {q}", "show me the series {q}", "look for the (series|TV series) {q}",
             "find series with {p}", "find series about {topic}", "search for series starring {p}"],
        uvps=["(continue|keep) watching the series {q}"],
        nouns=["the series {q}", "series with {p}", "series about {topic}"],
        extra="""
Do you have the series {q}?
Where can I watch the series {q}?
Which series is {p} in?
Are there any series about {topic}?
""")),
    "search_show": ("search_content", {"kind": "show"}, "q_title", dict(
        vps=["search for the show {q}", "find the show {q}", "look for the (show|programme) {q}", "find shows with {p}",
             "find shows about {topic}", "show me shows with {p}"],
        nouns=["the show {q}", "shows with {p}", "shows about {topic}"],
        extra="""
When is the show {q} on?
Are there any shows about {topic}?
Which shows is {p} in?
""")),
    "search_person": ("search_content", {"kind": "person"}, "q_person", dict(
        vps=["search for the (actor|actress) {q}", "find the (actor|actress|person) {q}", "show me the profile of {q}",
             "look up the (actor|actress) {q}", "show me everything about the (actor|actress) {q}"],
        extra="""
Who is {q}?
Who's {q}?
Tell me about the (actor|actress) {q}
What do you know about the (actor|actress) {q}?
""")),
    "search_anykind": ("search_content", {"kind": "any"}, "q_any", dict(
        vps=["search everywhere for {q}", "search all categories for {q}", "find everything (with|about|on) {q}",
             "search for {q} everywhere", "show me everything (with|about) {q}", "look everywhere for {q}"],
        nouns=["everything (with|about) {q}"])),
    # ---- open_app
    "open_app": ("open_app", {}, "app", dict(
        vps=["open {app}", "launch {app}", "start {app}", "fire up {app}", "bring up {app}", "go to {app}", "switch to {app}",
             "load {app}", "run {app}", "pull up {app}", "take me to {app}", "put on {app}", "get {app} going"],
        uvps=["watch something on {app}", "use {app}", "go on {app}", "watch {app}"],
        nouns=["{app}"],
        extra="""
I feel like {app}
Time for {app}
Open up {app}
Can we go on {app}?
""")),
    # ---- record_program
    "record_title": ("record_program", {}, "t", dict(
        vps=["record {t}", "tape {t}", "save {t}", "set a recording for {t}", "schedule a recording of {t}",
             "make a recording of {t}"],
        uvps=["record {t}"],
        nouns=["recording of {t}"],
        wants=["a recording of {t}"],
        extra="""
Don't forget to record {t}
Make sure you record {t}
I'm out tonight, record {t}
I can't watch {t}, record it
""", timed=True)),
    "record_title_channel": ("record_program", {}, "t_ch", dict(
        vps=["record {t} on {ch}", "record {t} from {ch}", "set a recording for {t} on {ch}", "tape {t} on {ch}"],
        uvps=["record {t} on {ch}"],
        extra="""
{t} is on {ch}, record it
""", timed=True)),
    "record_title_time": ("record_program", {}, "t_time", dict(
        vps=["record {t} at {time}", "record {t} starting at {time}", "set a recording for {t} at {time}",
             "tape {t} at {time}"],
        extra="""
At {time}, record {t}
Record {t}, it starts at {time}
""", timed=True)),
    "record_full": ("record_program", {}, "t_ch_time", dict(
        vps=["record {t} on {ch} at {time}", "record {t} at {time} on {ch}", "schedule a recording of {t} on {ch} at {time}"],
        extra="""
At {time} record {t} on {ch}
Set a recording: {t}, {ch}, {time}
Recording: {t} on {ch} at {time}
""", timed=True)),
    "record_channel_time": ("record_program", {}, "ch_time", dict(
        vps=["record {ch} at {time}", "record {ch} from {time}", "start recording {ch} at {time}",
             "set a recording on {ch} at {time}"],
        extra="""
At {time}, record {ch}
""", timed=True)),
    "record_now": ("record_program", {"start": "now"}, "t_now", dict(
        vps=["record (this|this show|this movie|it) (now|right now)", "start recording (now|right now|immediately)",
             "record now", "record right away", "record {ch} now", "record {t} now", "start recording {ch} right now",
             "record this immediately"],
        extra="""
This is good, record it now
Quick, record now
Record what's on now
""", timed=True)),
    "record_plain": ("record_program", {}, "ch", dict(
        vps=["record (this|it|this show|this movie)", "start recording", "start a recording", "record {ch}",
             "record the show on {ch}"],
        nouns=["recording on {ch}"],
        extra="""
I want to keep this, record it
Hit record
""", timed=True)),
    # ---- set_reminder
    "remind_title": ("set_reminder", {}, "t", dict(
        vps=["remind me (about|of) {t}", "set a reminder for {t}", "remind me when {t} (starts|is on|begins)",
             "let me know when {t} (starts|comes on|begins)", "tell me when {t} starts", "notify me when {t} starts"],
        extra="""
I don't want to miss {t}
Don't let me miss {t}
Make sure I don't miss {t}
Reminder for {t}
""", timed=True)),
    "remind_title_minutes": ("set_reminder", {}, "t_mins", dict(
        vps=["remind me {mins} before {t}", "remind me {mins} before {t} starts", "set a reminder {mins} before {t}",
             "let me know {mins} before {t} (starts|begins)", "remind me about {t} {mins} (before|ahead|early|in advance)",
             "give me a heads-up {mins} before {t}"],
        timed=True)),
    "remind_title_channel": ("set_reminder", {}, "t_ch_mins", dict(
        vps=["remind me about {t} on {ch}", "set a reminder for {t} on {ch}", "remind me {mins} before {t} on {ch}",
             "let me know when {t} starts on {ch}"],
        timed=True)),
    # ---- show_guide
    "guide_plain": ("show_guide", {}, "none", dict(
        vps=["show (me|) the (TV guide|program guide|programme guide|guide|EPG|schedule|TV schedule|listings|TV listings)",
             "open the (guide|TV guide|EPG)", "bring up the (TV guide|guide|listings)", "pull up the guide"],
        nouns=["TV guide", "program guide", "the guide", "EPG", "TV listings", "the schedule"],
        extra="""
What's on TV?
What's on?
What's on the telly?
What can I watch?
Anything good on TV?
Is there anything good on?
What's showing?
What is there to watch?
""", timed=True)),
    "guide_day": ("show_guide", {}, "day", dict(
        vps=["show me the (guide|TV guide|schedule|listings) for {fday}", "open the TV guide for {fday}",
             "show me {dposs} (schedule|listings|programme)"],
        nouns=["{dposs} (schedule|listings|TV guide)"],
        extra="""
What's on {day}?
What's on TV {day}?
What's showing {day}?
What can I watch {day}?
Anything good on {day}?
What's the schedule {day}?
""", timed=True)),
    "guide_daytime": ("show_guide", {}, "daytime", dict(
        vps=["show me the (guide|TV guide|schedule) for {dt}", "open the listings for {dt}"],
        extra="""
What's on {dt}?
What's on TV {dt}?
What can I watch {dt}?
Anything good on {dt}?
What's showing {dt}?
What are they showing {dt}?
""", timed=True)),
    "guide_evening": ("show_guide", {}, "evening", dict(
        vps=["show me the (guide|schedule) for {ev}"],
        extra="""
What's on {ev}?
What's showing {ev}?
What can I watch {ev}?
""", timed=True)),
    "guide_channel": ("show_guide", {}, "guide_ch", dict(
        vps=["show me the (guide|schedule|listings) for {ch}", "open the TV guide for {ch}", "show me the {ch} schedule",
             "show me the (schedule|listings) for {ch} {cw}"],
        nouns=["(schedule|listings|programme guide) for {ch}"],
        extra="""
What's on {ch} {cw}?
What's {ch} showing {cw}?
What's on {cw} on {ch}?
""", timed=True)),
    "guide_time": ("show_guide", {}, "guide_clock", dict(
        vps=["show me the guide (from|for) {clock}", "show me what's on at {clock}"],
        extra="""
What's on at {clock}?
What's on TV at {clock}?
What's on {ch} at {clock}?
What's showing at {clock} on {ch}?
What's on at {clock} on {ch}?
""", timed=True)),
    "guide_now": ("show_guide", {"time": "now"}, "none", dict(
        vps=["show me the guide for right now", "show me the (schedule|listings) for now"],
        extra="""
What's on everywhere right now?
What's on all channels right now?
""", timed=True)),
    # ---- set_subtitles
    "subs_on": ("set_subtitles", {"state": "on"}, "none", dict(
        vps=["turn on (the subtitles|subtitles|captions|subs)", "turn (the subtitles|subtitles|captions) on",
             "switch on subtitles", "enable (subtitles|captions)", "show (the subtitles|subtitles)",
             "put (the subtitles|subtitles) on", "activate subtitles", "put on captions"],
        nouns=["subtitles", "subtitles on", "captions on", "subs on", "closed captions"],
        wants=["subtitles", "captions"],
        extra="""
I can't understand (their|the) (accent|dialect)
I can't understand (their|the) accent, (subtitles please|turn on subtitles)
I'm hard of hearing, subtitles on
""")),
    "subs_off": ("set_subtitles", {"state": "off"}, "none", dict(
        vps=["turn off (the subtitles|subtitles|captions|subs)", "turn (the subtitles|subtitles) off", "disable subtitles",
             "hide (the subtitles|subtitles)", "remove the subtitles", "get rid of the subtitles", "switch off subtitles",
             "take the subtitles off"],
        nouns=["subtitles off", "no subtitles", "captions off", "subs off", "without subtitles"],
        extra="""
The subtitles are annoying
I don't need subtitles
Subtitles are distracting, turn them off
""")),
    "subs_lang": ("set_subtitles", {"state": "on"}, "lang", dict(
        vps=["turn on {lang} subtitles", "switch (the subtitles|subtitles) to {lang}", "set (the subtitles|subtitles) to {lang}",
             "change the subtitle language to {lang}", "show {lang} subtitles", "put on {lang} subtitles",
             "change subtitles to {lang}"],
        nouns=["{lang} subtitles", "subtitles in {lang}", "{lang} subs", "{lang} captions"],
        wants=["{lang} subtitles"],
        extra="""
Do you have {lang} subtitles? Turn them on
""")),
    # ---- set_audio_language
    "audio_lang": ("set_audio_language", {}, "lang", dict(
        vps=["switch the audio to {lang}", "change the (audio|language|audio track|soundtrack) to {lang}",
             "set the audio to {lang}", "play it in {lang}", "switch to {lang} audio", "switch (the language|language) to {lang}",
             "put it in {lang}", "change audio language to {lang}", "select the {lang} audio track"],
        uvps=["hear (it|this) in {lang}", "watch (it|this) in {lang}"],
        nouns=["{lang} audio", "audio in {lang}", "{lang} soundtrack", "{lang} dub", "{lang} version"],
        extra="""
Is this available in {lang}? Switch to it
Can we have it in {lang}?
In {lang}, please
""")),
    "audio_original": ("set_audio_language", {"language": "original"}, "none", dict(
        vps=["switch to the original (audio|version|language)", "play (it|this) in the original (language|version)",
             "change the audio to original", "turn on the original (audio|soundtrack)",
             "set the audio to the original language"],
        uvps=["watch (it|this) in the original (version|language)", "hear the original (voices|audio)"],
        nouns=["original version", "original audio", "original language", "OV", "original soundtrack"],
        extra="""
No dubbing, original audio please
I hate dubbing, switch to the original
""")),
    # ---- set_sleep_timer
    "sleep": ("set_sleep_timer", {}, "dur", dict(
        vps=["turn (the TV|it) off in {dur}", "switch off in {dur}", "turn off in {dur}", "shut down in {dur}",
             "set (a|the) sleep timer (for|to) {dur}", "set a timer to turn off in {dur}", "turn (the TV|it) off after {dur}",
             "power off in {dur}"],
        nouns=["sleep timer {dur}", "sleep timer for {dur}", "off in {dur}"],
        extra="""
I'm going to bed, turn off in {dur}
I'll fall asleep soon, switch off in {dur}
The TV should turn off in {dur}
Can the TV go off in {dur}?
Turn off automatically in {dur}
""")),
    # ---- power
    "power_off": ("power", {"state": "off"}, "none", dict(
        vps=[f"turn {_TV} off", f"turn off {_TV}", "turn it off", "switch (the TV|it) off", "switch off (the TV|the television)",
             "shut (the TV|it) down", "shut down (the TV|the television)", "power (the TV|it) off", "power off",
             "shut off the TV", "kill the TV"],
        nouns=["TV off", "off", "power off", "television off", "switch off", "turn off"],
        extra="""
I'm going to bed, turn it off
I'm done watching, turn off the TV
Enough TV for today, off
Good night, turn the TV off
We're done, TV off
""")),
    "power_on": ("power", {"state": "on"}, "none", dict(
        vps=[f"turn {_TV} on", f"turn on {_TV}", "turn it on", "switch (the TV|it) on", "switch on the TV",
             "power (the TV|it) on", "power on", "wake up the TV", "wake (the TV|it) up", "start the TV", "boot up the TV"],
        nouns=["TV on", "power on", "on", "television on"],
        extra="""
I want to watch TV
Let's watch some TV
Time for TV, turn it on
""")),
    "power_standby": ("power", {"state": "standby"}, "none", dict(
        vps=["put (the TV|it) (in|into|on) standby", "go (to|into) standby", "switch to standby", "put the TV to sleep",
             "enter standby mode", "go to sleep mode"],
        nouns=["standby", "standby mode", "sleep mode", "stand by"])),
    # ---- get_program_info
    "info_now": ("get_program_info", {"when": "now"}, "info", dict(
        vps=["tell me what's on {ch} right now", "show me what's on {ch} now", "tell me what's on right now"],
        extra="""
What's on (right now|now|at the moment|currently)?
What's on {ch} (right now|now|at the moment)?
What's (playing|showing|running) (right now|now) on {ch}?
What's currently on {ch}?
What am I watching (right now|now)?
What show is on (now|right now)?
What's this show I'm watching right now?
What movie is on {ch} (right now|at the moment)?
What are they showing on {ch} right now?
Do you know what's on {ch} now?
""", timed=True)),
    "info_next": ("get_program_info", {"when": "next"}, "info", dict(
        vps=["tell me what's next on {ch}", "tell me what comes next", "show me what's on next on {ch}"],
        extra="""
What's on next?
What's (on|coming up|showing) next on {ch}?
What comes (next|after this)?
What's after this (show|movie)?
What's on after this on {ch}?
What follows on {ch}?
What's the next show on {ch}?
And after that, what's on {ch}?
Do you know what comes next on {ch}?
""", timed=True)),
    "info_plain": ("get_program_info", {}, "info", dict(
        vps=["tell me about this (show|movie|program)", "show me info about this (show|program)", "show (the program info|program info)",
             "show me the info for the show on {ch}"],
        extra="""
What's on {ch}?
What's playing on {ch}?
What's showing on {ch}?
What is this (show|movie|program)?
What's this (show|movie) about?
What am I watching?
What are they showing on {ch}?
What's this about?
""", timed=True)),
    # ---- set_picture_mode
    "picture_mode": ("set_picture_mode", {}, "mode", dict(
        vps=["(set|change|switch) the picture mode to {mode}", "switch to {mode} mode", "turn on {mode} mode",
             "put the picture (on|in|to) {mode} mode", "use the {mode} picture (mode|setting)", "set the TV to {mode} mode",
             "change the picture to {mode}"],
        nouns=["{mode} mode", "picture mode {mode}", "{mode} picture mode"],
        wants=["the {mode} picture mode"])),
}

NO_CALL = """
What's the weather (like|) (today|tomorrow|in {city})?
Tell me a joke
What time is it?
Turn on the (lights|light in the living room)
Turn off the lights
Order (me|) a pizza
Call {name}
Set an alarm for 7 am
How are you?
Hello
Thank you
What can you do?
Send a message to {name}
What's five times seven?
Translate hello into German
Add {item} to the shopping list
How tall is Mount Everest?
Turn up the heating
Close the blinds
How long does it take to get to {city}?
Good morning
I'm tired
How old is {name}?
When is the next bus?
Buy {item}
What's the capital of France?
Open the garage door
Play some music
Make me a coffee
Who are you?
Start the washing machine
Book a flight to {city}
How's the traffic?
What's for dinner?
Read me the news
Good night
Bye
I love you
Help me with my homework
How do you spell rhythm?
Open the door
How warm is it outside?
Find a recipe for lasagna
Set the heating to 21 degrees
What is a black hole?
Call a taxi
Who was the first man on the moon?
Sing a song
What's your name?
Vacuum the living room
Remind me to take out the trash
Lock the front door
Is it going to rain?
(Turn|Switch) (on|off) the coffee machine
Text {name} that I'm late
What's the score of the game?
I'm hungry
Who won the election?
Play the next song
Turn the oven on
(Can|Could) you (tell me|check) (the weather|the news|my calendar|the time) (for me|)?
(Turn|Switch) (on|off) the (lights|lamp|fan|heater|air conditioning) in the (kitchen|bedroom|living room|hallway)
(Order|Get) (me|us) (some sushi|a burger|a taxi|groceries) (for tonight|now|)
What's (the time|the date|the weather) in {city}?
Remind me to (call {name}|buy {item}|water the plants) (tomorrow|tonight|later)
How (do I|can I) (make pancakes|cook rice|get to {city})?
(Tell|Give) me (a fun fact|a recipe|the news|a riddle)
Who (is|was) (Albert Einstein|the president of France|Shakespeare)?
(Open|Close|Lock|Unlock) the (window|front door|garage|back door)
(Add|Put) {item} (on|to) my (shopping list|list)
What's in my calendar (today|tomorrow)?
Is it (cold|warm|sunny|windy) (outside|in {city})?
(Play|Put on) (some|) (jazz|music|the radio|a podcast)
"""


def intents():
    """The English intents as tv270m_intent.Intent objects."""
    from tv270m_intent import Intent
    out = []
    for name, (function, args, kind, phrases) in SPEC.items():
        phrases = dict(phrases)
        timed = phrases.pop("timed", name.startswith(("record_", "remind_", "guide_", "info_")))
        tpls = expand(timed=timed, **phrases)
        samp = _sampler(kind)
        out.append(Intent(name, function, (lambda rng, s=samp, a=args: (s(rng), dict(a))), tpls, "en", "en"))
    out.append(Intent("no_call", None, lambda rng, s=_sampler("no_call"): (s(rng), {}),
                      [t.strip() for t in NO_CALL.strip().splitlines() if t.strip()], "en", "en"))
    return out
