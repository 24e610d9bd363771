"""The pieces of the tv270m set that its template files build on: an intent (function, sampler, templates,
language, style), a slot whose wording sets arguments, and the template-list reader. tv270m_data.py (the
generator) imports the template files (tv270m_colloq.py, tv270m_en.py, tv270m_train_only.py); they import
only this, so imports go one way."""
from tv_de_templates import Slot


class XSlot(Slot):
    """A slot whose wording sets arguments when it is rendered (e.g. "tonight" -> day today, time evening)."""

    def __init__(self, core, args):
        super().__init__(core)
        self.args = args


class Intent:
    """An intent of the tv270m set: a function, a sampler (rng -> (slots, fixed args)), templates, a language
    and a style; `fix(template, args)` may set arguments from the template's words (tv_de_templates.py's fixups)."""

    def __init__(self, name, function, sampler, templates, lang, style, fix=None):
        self.name, self.function, self.sampler, self.lang, self.style, self.fix = name, function, sampler, lang, style, fix
        self.templates = templates


def lines(text):
    return [t.strip() for t in text.strip().splitlines() if t.strip() and not t.strip().startswith("#")]
