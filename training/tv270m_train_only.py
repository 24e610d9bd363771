"""Training-only templates of the tv270m set, added for run 2 (training/README.md, "tv270m"): utterances that no
function fits (other devices, messages, arithmetic, chit-chat, questions about the world, alarms and kitchen
timers, music, some with TV words), colloquial reminders, power-off words, wanting no sound (mute), accents and
dialects (subtitles), vague guide questions, "Pause vorbei", and app and channel commands whose wording says
which of the two a name is (the cue a name nobody knows needs).

These templates are never split to dev: the dev set (tv270m-dev.jsonl) stays the one run 1 was measured on,
less the lines the conventions do not decide. None of them is a dev utterance (make_data drops a training
utterance equal to a dev one anyway)."""
import tv_de_templates
import tv_de_values as V
import tv270m_en as E
from tv270m_intent import Intent, lines
from tv_de_templates import Slot

_CITIES_DE = ["München", "Hamburg", "Köln", "Berlin", "Leipzig", "Dresden", "Bremen", "Wien", "Zürich", "Rostock", "Kassel",
              "Freiburg", "Mainz", "Paris", "Rom", "Nürnberg"]
_CITIES_EN = ["London", "Paris", "Berlin", "Madrid", "Boston", "Sydney", "Toronto", "Rome", "Dublin", "Chicago", "Leeds",
              "Edinburgh", "Seattle", "Prague"]
_ITEMS_DE = ["Milch", "Brot", "Eier", "Butter", "Käse", "Kaffee", "Nudeln", "Tomaten", "Bier", "Wasser", "Klopapier",
             "Bananen", "Katzenfutter", "Windeln", "Batterien"]
_ITEMS_EN = ["milk", "bread", "eggs", "butter", "cheese", "coffee", "pasta", "tomatoes", "beer", "toilet paper", "bananas",
             "cat food", "batteries", "nappies", "detergent"]
_NAMES_EN = ["Emma", "Oliver", "Sophie", "Jack", "Mia", "Harry", "Chloe", "Noah", "Ava", "Liam", "Grace", "Ethan",
             "Deniz", "Priya", "Marco", "Lucy"]
_ARTISTS = ["Adele", "Helene Fischer", "Ed Sheeran", "Herbert Grönemeyer", "Taylor Swift", "Peter Fox", "Queen", "ABBA",
            "Coldplay", "Nena", "Beyoncé", "Die Ärzte", "Mark Forster", "Billie Eilish"]
_DE_NUM = ["zwei", "drei", "vier", "fünf", "sechs", "sieben", "acht", "neun", "zehn", "zwölf", "zwanzig", "fünfzehn"]
_EN_NUM = ["two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "twelve", "twenty", "fifteen"]


def _text_sampler(lang):
    def s(rng):
        de = lang == "de"
        nums = _DE_NUM if de else _EN_NUM
        n, m = (str(rng.randint(2, 99)) if rng.random() < 0.5 else rng.choice(nums) for _ in range(2))
        return {"name": Slot(rng.choice(V.FIRST_NAMES if de else _NAMES_EN)),
                "city": Slot(rng.choice(_CITIES_DE if de else _CITIES_EN)),
                "item": Slot(rng.choice(_ITEMS_DE if de else _ITEMS_EN)),
                "artist": Slot(rng.choice(_ARTISTS)),
                "n": Slot(n), "m": Slot(m),
                "h": Slot(str(rng.randint(5, 9)) if rng.random() < 0.5 else rng.choice(nums[1:8])),
                "min": Slot(str(rng.choice([3, 5, 8, 10, 12, 15, 20, 25, 40]))),
                "deg": Slot(str(rng.randint(17, 24)))}, {}
    return s


NO_CALL_DE = """
Schreib {name} eine Nachricht
Schick {name} (eine|ne) (SMS|WhatsApp|Mail)
Schreib {name}, dass ich später komme
Sag {name}, dass das Essen fertig ist
Schreib {name}, dass der Film gleich anfängt
Ruf {name} an und sag, wir gucken heute Abend Fußball
Schick {name} ein Foto vom Fernseher
(Ruf|Klingel) mal bei {name} an
Wie viel ist {n} (mal|plus|minus|geteilt durch) {m}?
Was ist {n} (mal|plus) {m}?
Rechne {n} (mal|plus|minus) {m}
Was gibt {n} mal {m}?
Wie viel sind {n} Prozent von {m}?
Wie geht's dir (heute|denn|so)?
Wie geht es dir?
Was machst du (so|gerade)?
Bist du ein Roboter?
Wie heißt du (eigentlich|denn)?
Was kannst du (alles|eigentlich)?
Magst du Filme?
Was ist deine Lieblingsserie?
Hast du einen Lieblingssender?
Guckst du auch gern Fernsehen?
Wer hat dich gebaut?
(Danke|Vielen Dank), das war's
Gute Nacht
Guten Morgen
Ich hab dich lieb
Mir ist langweilig, erzähl was
Erzähl mir (einen Witz|eine Geschichte|was Lustiges)
Wie hoch ist die Zugspitze?
Wie viele Einwohner hat {city}?
Wer hat (Faust|die Relativitätstheorie|das Telefon) (geschrieben|erfunden|entdeckt)?
Wann wurde das Fernsehen erfunden?
Wer hat den Fernseher erfunden?
Wie viel Strom verbraucht (ein|der) Fernseher?
Was kostet ein neuer Fernseher?
(Bestell|Kauf) (mir|uns) einen neuen Fernseher
Was ist die Hauptstadt von (Australien|Kanada|Norwegen)?
Wie weit ist es (bis|nach) {city}?
Wie (wird|ist) das Wetter (morgen|am Wochenende|in {city})?
Regnet es (morgen|heute|in {city})?
Wie spät ist es in {city}?
(Bestell|Kauf) (mir|uns) {item}
Bestell uns (Essen|Pizza|Sushi|was vom Chinesen)
Setz {item} auf die Einkaufsliste
Wir brauchen noch {item}
Stell (mir|) (den|meinen) Wecker auf {h} Uhr morgens
Wecker auf {h} Uhr stellen
Weck mich (morgen|) um {h} Uhr
Stell einen Timer auf {min} Minuten
Stell (mir|) einen Timer für die (Nudeln|Eier|Pizza)
(Erinnere|Erinner) mich daran, (den Müll rauszubringen|die Blumen zu gießen|{name} anzurufen|{item} zu kaufen)
Erinnere mich morgen an den Zahnarzttermin
Spiel (mir|) (ein Lied|was) von {artist}
Spiel mal (ein bisschen|) Musik von {artist}
Sing mir (was|ein Lied) vor
Spiel (mir|) (das neue Album|den neuesten Song) von {artist}
(Mach|Schalt) das Licht (im Wohnzimmer|in der Küche|im Flur|) (an|aus)
Dreh die Heizung (auf|runter|hoch)
Stell die Heizung auf {deg} Grad
(Mach|Schalt) die (Kaffeemaschine|Spülmaschine|Waschmaschine|Lampe|Klimaanlage) (an|aus|ein)
Starte die (Spülmaschine|Waschmaschine|Kaffeemaschine)
Schließ die (Haustür|Garage|Fenster) ab
Mach die (Rollläden|Jalousien) (hoch|runter|zu)
Staubsaug mal das Wohnzimmer
Nimm eine Sprachnotiz auf
Nimm (mal|) meine Stimme auf
Mach ein Foto
Buch (mir|uns) einen Flug nach {city}
Wann fährt der nächste Zug nach {city}?
Wie ist der Verkehr (heute|gerade)?
Ruf mir ein Taxi
Hilf mir bei den Hausaufgaben
Was heißt (Hallo|Danke|Fernseher) auf (Englisch|Französisch|Spanisch)?
Übersetz (Hallo|Guten Morgen) ins (Englische|Italienische)
Wer hat (gestern|das Spiel) gewonnen?
Wie ist das Spiel ausgegangen?
Was gibt's heute zu essen?
Was soll ich kochen?
Wie lange kocht man ein Ei?
Kannst du (Wäsche waschen|kochen|staubsaugen)?
Wo ist mein Handy?
Such mein Handy
"""

NO_CALL_EN = """
Send (a message|a text|an email) to {name}
Text {name} (that I'm on my way|that dinner is ready|that the film is starting)
Message {name} on WhatsApp
Email {name} (the photos|about tomorrow)
Tell {name} (I'll be late|to come downstairs|the match is on)
Call {name} and tell (him|her) the game is on
(Call|Ring|Phone) {name}
What's {n} (times|plus|minus|divided by) {m}?
What is {n} (times|plus|minus) {m}?
(Calculate|Work out) {n} (times|plus|minus) {m}
How much is {n} percent of {m}?
How are you (doing|today)?
How's it going?
What's up?
Are you a robot?
What's your name?
Who made you?
Tell me about yourself
Do you like movies?
What's your favourite (show|film|channel)?
Do you watch TV too?
(Thanks|Thank you), that's all
Good (night|morning|evening)
See you later
I'm bored, tell me something
Tell me (a joke|a story|something funny)
How high is Mount Everest?
How many people live in {city}?
Who (wrote Hamlet|invented the telephone|painted the Mona Lisa)?
When was (television|the TV) invented?
Who invented the television?
How much power does a TV use?
How much does a new TV cost?
(Order|Buy) (me|us) a new TV
What's the capital of (Australia|Canada|Norway)?
How far is it to {city}?
What's the weather (like|going to be) (tomorrow|at the weekend|in {city})?
Will it rain (tomorrow|today|in {city})?
What time is it in {city}?
(Order|Buy|Get) (me|us) {item}
Order (us|me) (some food|a pizza|Chinese|sushi) (tonight|)
Put {item} on the shopping list
We need more {item}
(Set|Make) an alarm for {h} (am|o'clock|in the morning)
Wake me up at {h} (tomorrow|)
Set a timer for {min} minutes
Set a (kitchen|cooking|pasta|egg) timer
Remind me to (take out the bins|water the plants|call {name}|buy {item})
Play (me|) (a song|something) by {artist}
Play (some|) music by {artist}
Sing me a song
Play the new album by {artist}
(Turn|Switch) (on|off) the lights (in the living room|in the kitchen|)
(Turn up|Turn down) the heating
Set the heating to {deg} degrees
(Turn|Switch) (on|off) the (coffee machine|dishwasher|washing machine|lamp|air con)
Start the (dishwasher|washing machine|coffee machine)
Lock the (front door|garage|car)
(Raise|Lower|Close) the blinds
Record a voice memo
Record my voice
Take a photo
Book (me|us) a flight to {city}
When's the next train to {city}?
How's the traffic (today|right now)?
Get me a taxi
Help me with my homework
How do you say (hello|thank you|television) in (French|Spanish|German)?
Translate (good morning|hello) into (Italian|German)
Who won (yesterday|the game|the match)?
What was the score last night?
What's for dinner?
What should I cook?
How long do you boil an egg?
Can you (do the laundry|cook|vacuum)?
Where's my phone?
Find my phone
"""

NO_CALL_COLLOQ = """
Schreib ma {name} ne Nachricht
Schick {name} ma ne WhatsApp
Sag ma {name}, dass ich gleich komm
Wat is {n} mal {m}?
Was is'n {n} mal {m}?
Rechne ma {n} plus {m}
Na, wie geht's?
Wie geht's'n so?
Alles klar bei dir?
Was kannste eigentlich?
Biste'n Roboter?
Wer bist'n eigentlich du?
Erzähl ma was
Bestell uns ma {item}
Bestell ma (Pizza|Döner|wat zu essen)
Stell ma nen Wecker auf {h}
Weck mich ma um {h}
Stell ma nen Timer auf {min} Minuten
Spiel ma wat von {artist}
Sing ma was
Mach ma das Licht aus, Mensch
Mach ma die Heizung höher
Schmeiß ma die Spülmaschine an
Mach ma die Kaffeemaschine an
Wie wird's Wetter in {city}?
Regnet's morgen?
Wer hat'n gestern gewonnen?
Was kost'n so'n neuer Fernseher?
Ruf ma {name} an, der Film fängt gleich an
"""

REMIND_DE = """
Denk an {tacc}
Denk bitte an {tacc}
Denk (mal|ma|) an {tacc}, ja
Denkst du an {tacc}?
Erinner mich an {tacc}
Erinner mich (mal|ma|bitte) an {tacc}
Kannste mich an {tacc} erinnern?
Vergiss {tacc} nicht
Vergiss (mal|ma|bloß) {tacc} nicht
{tnom} nicht vergessen
Nicht {tacc} vergessen
Lass mich {tacc} nicht verpassen
Ich will {tacc} nicht verpassen
Ich darf {tacc} nicht verpassen
Sag mir Bescheid, wenn {tnom} (kommt|anfängt|läuft)
Gib mir Bescheid, wenn {tnom} (kommt|anfängt)
Merk dir {tacc}
Merk dir (mal|ma) {tacc} für mich
Denk dran: {tnom}
Denk an {tacc}, ne?
Erinner mich ma an {tacc}, gell
Pass auf, dass ich {tacc} nicht verpass
"""

REMIND_MINS_DE = """
Denk {mins} vor {tdat} an mich
Sag mir {mins} vor {tdat} Bescheid
Gib mir {mins} vor {tdat} Bescheid
Erinner mich {mins} vor {tdat}, ja
"""

REMIND_EN = """
Remind me about {t}
(Please|) remind me of {t}
Don't let me miss {t}
Don't forget {t}
Make sure I don't miss {t}
Remember {t} for me
Let me know when {t} (starts|comes on|is on)
Ping me when {t} starts
I can't miss {t}
I don't want to miss {t}
Give me a heads-up (for|before) {t}
Set a reminder for {t}
Remind me when {t} comes on
Tell me when {t} starts
Don't let me forget {t}
"""

REMIND_MINS_EN = """
Remind me {mins} before {t}
Give me a heads-up {mins} before {t}
Ping me {mins} before {t} starts
Let me know {mins} before {t}
"""

POWER_OFF_DE = """
(Fernseher|Gerät|TV|Die Kiste) herunterfahren
Fahr (den Fernseher|das Gerät|die Kiste|den TV) herunter
Fahr (den Fernseher|das Gerät|die Kiste) runter
Den Fernseher runterfahren
Ausmachen
Ausmachen bitte
Mach (den Fernseher|die Kiste|die Glotze|alles|das Ding) aus
Mach aus, ich geh ins Bett
Ausschalten
Abschalten
Schalt (ab|aus)
Schalt die Kiste ab
Feierabend, mach aus
Kannst du den Fernseher ausmachen?
Jetzt wird ausgemacht
Ich bin fertig, aus
Alles aus
"""

POWER_OFF_EN = """
Shut down
Shut (it|the TV|everything) down
Shut down the (TV|television)
Shutdown
Power (down|off)
Power the TV (down|off)
Turn it off
Turn everything off
Switch (it|everything) off
Kill the TV
I'm done, turn it off
Off, please
Turn off, I'm going to bed
"""

MUTE_DE = """
Ich will nichts (mehr|) hören
Ich möchte (grad|gerade|jetzt|) nichts hören
Ich will (grad|gerade|) nix hören
Ich kann das nicht mehr hören, Ton weg
Ich will Ruhe
Ich will meine Ruhe
Ruhe bitte
Kein Ton mehr
Keinen Ton bitte
Ich will das nicht hören
Ich brauch (mal|) absolute Stille
Stille bitte
Gar keinen Ton
Ich will keinen Mucks hören
"""

MUTE_EN = """
I don't want to hear (it|that|a thing|any sound)
I don't wanna hear (it|anything)
I don't want any sound
No sound (please|at all)
I want (silence|some silence)
I need (total|complete) silence
Silence, please
Cut the sound
Kill the sound
Make it silent
I can't stand hearing this, sound off
Not a sound
"""

SUBS_DE = """
Den (Akzent|Dialekt|Slang) versteh ich nicht
Bei dem (Akzent|Dialekt) versteh ich kein Wort
Der Akzent ist (zu stark|so stark|mir zu stark)
Die nuscheln so mit ihrem Dialekt
Ich kapier den (Akzent|Dialekt) nicht
Was für ein Akzent, ich versteh gar nichts
Die sprechen (Platt|Schwäbisch|Bairisch|Sächsisch|Schweizerdeutsch), das versteh ich nicht
Ich versteh das (Platt|Bairisch|Schwäbisch|Schweizerdeutsch) nicht
Mit dem (Akzent|Dialekt) komm ich nicht klar
Ich versteh den Dialekt von denen nicht
Der redet so (breites|starkes) (Bairisch|Sächsisch|Platt)
Die reden mit so nem Akzent, ich versteh nix
Den Akzent versteht doch keiner
"""

SUBS_EN = """
I can't understand (the|their|his|her) (accent|dialect)
I don't understand (the|their|his|her) (accent|dialect)
The accent is (too strong|too thick|too heavy)
Their accent is (too thick|so strong)
I can't follow (the Scottish|the Irish|that) accent
What are they saying? The accent is too heavy
I don't get the dialect
With that accent I can't understand a word
He mumbles with such a strong accent
"""

GUIDE_DE = [
    ({"day": "today", "time": "evening"}, """
Was läuft denn heut Abend so?
Heute Abend, was kommt da?
Heute Abend, was läuft so?
Und heut Abend?
Was gibt's heute Abend im Fernsehen?
Heut Abend was Gutes im Fernsehen?
Läuft heut Abend was?
Heut Abend, was gibt's?
Heute Abend was los im Fernsehen?
"""),
    ({"day": "today"}, """
Heute, was läuft da?
Was kommt heute so?
Was gibt's heute?
Heute was Gutes im Fernsehen?
Läuft heute was?
"""),
    ({"day": "tomorrow"}, """
Morgen, was läuft da?
Was kommt morgen so?
Läuft morgen was?
Und morgen?
"""),
    ({"day": "tomorrow", "time": "evening"}, """
Morgen Abend, was läuft da?
Was kommt morgen Abend?
Läuft morgen Abend was?
"""),
    ({"day": "weekend"}, """
Was läuft am Wochenende?
Am Wochenende, was kommt da?
Läuft am Wochenende was?
"""),
]

GUIDE_EN = [
    ({"day": "today", "time": "evening"}, """
Tonight, what's on?
What's on tonight?
Anything good on tonight?
What's on this evening?
This evening, what's on?
Anything on tonight?
And tonight?
"""),
    ({"day": "today"}, """
Today, what's on?
Anything on today?
What's on today then?
"""),
    ({"day": "tomorrow"}, """
Tomorrow, what's on?
Anything on tomorrow?
"""),
    ({"day": "tomorrow", "time": "evening"}, """
Tomorrow night, what's on?
Anything good on tomorrow night?
"""),
    ({"day": "weekend"}, """
Anything on this weekend?
This weekend, what's on?
"""),
]

PLAY_DE = """
Pause (ist|) vorbei
Pause vorbei, weiter
Genug Pause
Weiter geht's
Mach weiter
Lass (es|) weiterlaufen
Weiterspielen
Die Pause ist um
So, Pause vorbei
Schluss mit Pause
"""

PLAY_EN = """
Break's over
The break is over, play
Pause is over
Keep playing
Carry on
Resume
Unpause
Back to it, play
"""

# app and channel commands whose wording says which of the two the name is (training/README.md: a name nobody
# knows needs the cue)
APP_DE = """
Öffne die App {app}
Starte die App {app}
(Mach|Mach mal) die App {app} auf
Die App {app} (öffnen|starten|aufmachen)
{app} (öffnen|starten|aufmachen)
{app} (bitte|mal) (öffnen|starten)
Starte (mal|bitte|) {app}
Mach (mal|ma|) {app} auf
Kannst du {app} öffnen?
Kannst du die App {app} starten?
Ich will die App {app} öffnen
Wirf (mal|ma|) {app} an
Lad (mal|) {app}
"""

APP_EN = """
Open the app {app}
Launch the app {app}
Start the app {app}
(Open|Launch|Start) {app}
Can you (open|launch|start) the app {app}?
Fire up {app}
Open up {app}
I want to open {app}
Please launch {app}
Load the app {app}
"""

CHANNEL_DE = """
Schalte auf den Sender {ch}
Schalt (mal|ma|) auf den Sender {ch} um
Wechsel zum Sender {ch}
Zum Sender {ch} (schalten|wechseln)
Auf den Sender {ch} umschalten
Den Sender {ch} (bitte|mal|) einschalten
Sender {ch}, bitte
Kanal {ch}, bitte
Schalt (mal|ma|) auf den Kanal {ch}
Stell den Sender {ch} ein
Zapp (mal|ma|) auf {ch}
Auf {ch} umschalten
Schalt (mal|ma|bitte|) {auf}
"""

CHANNEL_EN = """
Switch to the channel {ch}
Switch to the {ch} channel
Put on the {ch} channel
Change the channel to {ch}
Tune (in|) to {ch}
Go to the channel {ch}
Flip over to {ch}
Change to {ch}
Switch (over|) to {ch}
Turn to the {ch} channel
Can you switch to {ch}?
"""


_ART = ("der ", "die ", "das ", "den ", "the ")


def _de_ch(rng):
    c = rng.choice(V.CHANNELS)
    forms = [f for f in c[1] if not f.lower().startswith(_ART)] or [c[0]]
    f = rng.choice(forms)
    return {"ch": Slot(f, "channel", c[0]), "auf": Slot("auf " + f, "channel", c[0])}, {}


def _en_app(rng):
    value, forms = rng.choice(E._EN_APPS)
    forms = [f for f in forms if not f.lower().startswith(_ART)] or [value]
    return {"app": Slot(rng.choice(forms), "app", value)}, {}


def _de_app(rng):
    value, forms = rng.choice(V.APPS)
    forms = [f for f in forms if not f.lower().startswith(_ART)] or [value]
    return {"app": Slot(rng.choice(forms), "app", value)}, {}


def intents():
    """The training-only intents (style de, colloq or en)."""
    by_name = {it.name: it for it in tv_de_templates.INTENTS}
    de = lambda name: by_name[name].sampler  # noqa: E731
    en = lambda kind, a: (lambda rng, s=E._sampler(kind): (s(rng), dict(a)))  # noqa: E731
    fixed = lambda a: (lambda rng: ({}, dict(a)))  # noqa: E731
    out = [
        Intent("x_no_call", None, _text_sampler("de"), lines(NO_CALL_DE), "de", "de"),
        Intent("x_no_call", None, _text_sampler("de"), lines(NO_CALL_COLLOQ), "de", "colloq"),
        Intent("x_no_call", None, _text_sampler("en"), lines(NO_CALL_EN), "en", "en"),
        Intent("remind_x", "set_reminder", de("remind_title"), lines(REMIND_DE), "de", "colloq"),
        Intent("remind_x_minutes", "set_reminder", de("remind_title_minutes"), lines(REMIND_MINS_DE), "de", "colloq"),
        Intent("remind_x", "set_reminder", en("t", {}), lines(REMIND_EN), "en", "en"),
        Intent("remind_x_minutes", "set_reminder", en("t_mins", {}), lines(REMIND_MINS_EN), "en", "en"),
        Intent("x_power_off", "power", fixed({"state": "off"}), lines(POWER_OFF_DE), "de", "colloq"),
        Intent("x_power_off", "power", fixed({"state": "off"}), lines(POWER_OFF_EN), "en", "en"),
        Intent("x_mute_on", "mute", fixed({"state": "on"}), lines(MUTE_DE), "de", "colloq"),
        Intent("x_mute_on", "mute", fixed({"state": "on"}), lines(MUTE_EN), "en", "en"),
        Intent("x_subs_on", "set_subtitles", fixed({"state": "on"}), lines(SUBS_DE), "de", "colloq"),
        Intent("x_subs_on", "set_subtitles", fixed({"state": "on"}), lines(SUBS_EN), "en", "en"),
        Intent("x_play", "playback_control", fixed({"action": "play"}), lines(PLAY_DE), "de", "colloq"),
        Intent("x_play", "playback_control", fixed({"action": "play"}), lines(PLAY_EN), "en", "en"),
        Intent("x_open_app", "open_app", _de_app, lines(APP_DE), "de", "de"),
        Intent("x_open_app", "open_app", _en_app, lines(APP_EN), "en", "en"),
        Intent("x_switch_name", "switch_channel", _de_ch, lines(CHANNEL_DE), "de", "de"),
        Intent("x_switch_name", "switch_channel", en("ch", {}), lines(CHANNEL_EN), "en", "en"),
    ]
    for i, (args, text) in enumerate(GUIDE_DE):
        out.append(Intent(f"guide_x_{i}", "show_guide", fixed(args), lines(text), "de", "colloq"))
    for i, (args, text) in enumerate(GUIDE_EN):
        out.append(Intent(f"guide_x_{i}", "show_guide", fixed(args), lines(text), "en", "en"))
    for it in out:  # drawn more often than their template counts say: the phrasings run 1 missed
        if it.function in ("power", "mute", "set_subtitles", "playback_control", "show_guide"):
            it.weight = 3
        elif it.function == "set_reminder":
            it.weight = 2.5
    return out
