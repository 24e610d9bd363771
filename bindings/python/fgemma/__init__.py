"""fgemma: FunctionGemma / Gemma 3 on the CPU, from Python.

A C extension over libfgemma's public API (fgemma.h). Quick start::

    import fgemma
    with fgemma.Model("functiongemma-270m-it-Q8_0.gguf") as model:
        nlu = model.nlu("examples/tv-catalog.json")
        print(nlu.ask("Schalte auf ZDF um"))

See bindings/python/README.md for the whole API.
"""

from ._fgemma import (
    ArgumentError as ArgumentError,
    Error as Error,
    FileError as FileError,
    Model as Model,
    Nlu as Nlu,
    Session as Session,
    Snapshot as Snapshot,
    __version__ as __version__,
)

__all__ = ["Model", "Session", "Snapshot", "Nlu", "Error", "ArgumentError", "FileError", "__version__"]
