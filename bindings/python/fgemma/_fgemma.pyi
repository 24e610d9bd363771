"""Type stubs of fgemma._fgemma, the C extension over libfgemma (fgemma.h)."""

import os
from typing import Any, Dict, List, Literal, Optional, Sequence, SupportsIndex, Tuple, Union

__version__: str

_Path = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
_Catalog = Union[Dict[str, Any], List[Any], str, bytes, "os.PathLike[str]"]
_Lora = Union[_Path, Tuple[_Path, float]]

class Error(Exception):
    """An error of the fgemma library."""

    status: str
    """The fg_status name, e.g. "FG_ERR_FORMAT"."""
    code: int
    """The fg_status number."""

class ArgumentError(Error, ValueError):
    """A bad argument value or a closed object (status "FG_ERR_INVALID_ARG")."""

class FileError(Error, OSError):
    """A file could not be opened, read, written or mapped (status "FG_ERR_IO")."""

class Model:
    """A GGUF model file, mapped and immutable; may be shared by threads. A context manager."""

    def __init__(
        self,
        path: _Path,
        *,
        head_type: Optional[Literal["file", "q8_0", "q4_0"]] = None,
        threads: Optional[int] = None,
        repack: bool = True,
        lora: Union[_Lora, List[_Lora], None] = None,
        lora_merge: Optional[Literal["off", "f32", "bf16", "q8_0"]] = None,
        no_mmap: bool = False,
        check_tensors: bool = False,
    ) -> None: ...
    @property
    def info(self) -> Dict[str, Any]:
        """Architecture, dimensions, types and sizes (fg_model_info), the adapters (loras, n_loras, lora_merge,
        lora_bytes, lora_ms), and kernels: the kernel table this process runs on (fg_kernels_name: "ref",
        "avx2", "avx512", "neon", ...)."""
    @property
    def path(self) -> str: ...
    @property
    def loras(self) -> Tuple[Tuple[str, float], ...]:
        """The LoRA adapters applied, in order: (path, scale as a float32)."""
    @property
    def closed(self) -> bool: ...
    def tokenize(self, text: Union[str, bytes], bos: bool = False, *, special: bool = True) -> List[int]: ...
    def detokenize(self, ids: Sequence[SupportsIndex]) -> str: ...
    def session(
        self,
        kv_type: Optional[Literal["f32", "f16"]] = None,
        *,
        threads: Optional[int] = None,
        n_ctx: Optional[int] = None,
        batch: Optional[int] = None,
    ) -> Session: ...
    def nlu(
        self,
        catalog: _Catalog,
        *,
        constrained: Optional[Literal["off", "call-only", "call-or-text"]] = "call-or-text",
        max_tokens: Optional[int] = None,
        snapshot_path: Optional[_Path] = None,
        multi_call: Optional[bool] = False,
        threads: Optional[int] = None,
        snapshot_dir: Optional[_Path] = None,
        kv_type: Optional[Literal["f32", "f16"]] = None,
        n_ctx: Optional[int] = None,
        batch: Optional[int] = None,
        speculate: Optional[bool] = True,
        max_draft: Optional[int] = None,
        answer_cache: Optional[bool] = True,
        multi: Optional[bool] = None,
    ) -> Nlu:
        """Options and defaults as on every surface (docs/OPTIONS.md); multi is the deprecated old name of
        multi_call (DeprecationWarning)."""
    def with_lora(self, lora: Union[_Lora, List[_Lora]], scale: Optional[float] = None) -> "Model":
        """A view: this model's weights (shared, not loaded again) with this model's adapters and then lora,
        applied at run time (fg_model_with_loras). scale goes with a single path."""
    def close(self) -> None: ...
    def __enter__(self) -> "Model": ...
    def __exit__(self, *exc: object) -> Literal[False]: ...

class Session:
    """A KV cache, a position and the logits of the last appended token. One call at a time: a call from
    another thread while one runs waits for it (GIL released); from the same thread it raises RuntimeError."""

    @property
    def position(self) -> int: ...
    @property
    def stats(self) -> Dict[str, int]: ...
    @property
    def kv_type(self) -> Literal["f32", "f16"]: ...
    @property
    def model(self) -> Model: ...
    @property
    def closed(self) -> bool: ...
    def prefill(self, ids: Sequence[SupportsIndex], /) -> int: ...
    def step(self, id: SupportsIndex, /) -> int: ...
    def logits(self) -> memoryview:
        """Read-only float32 view of the logits (n_vocab values), without a copy."""
    def snapshot(self) -> Snapshot: ...
    def restore(self, snapshot: Snapshot, /) -> None: ...
    def cancel(self) -> bool:
        """Stop the call running in another thread; True when one was running."""
    def close(self) -> None: ...
    def __enter__(self) -> "Session": ...
    def __exit__(self, *exc: object) -> Literal[False]: ...

class Snapshot:
    """An immutable session state."""

    @property
    def position(self) -> int: ...
    @property
    def kv_type(self) -> Literal["f32", "f16"]: ...
    @property
    def model(self) -> Model: ...
    @property
    def closed(self) -> bool: ...
    def fork(
        self, *, threads: Optional[int] = None, n_ctx: Optional[int] = None, batch: Optional[int] = None
    ) -> Session: ...
    def save(self, path: _Path, /) -> None: ...
    @staticmethod
    def load(model: Model, path: _Path, /) -> Snapshot: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Snapshot": ...
    def __exit__(self, *exc: object) -> Literal[False]: ...

class Nlu:
    """The NLU engine of one tool catalog."""

    @property
    def info(self) -> Dict[str, Any]:
        """prefix_tokens, prefix_ms, prefix_from_file, snapshot_written, snapshot_refused, snapshot_name,
        functions, constrained (the mode in effect) and speculate."""
    @property
    def model(self) -> Model: ...
    @property
    def closed(self) -> bool: ...
    def ask(self, text: Union[str, bytes], *, full: bool = False) -> Dict[str, Any]:
        """The result object of `fgemma call` ({"calls": [...], "text": ...}) plus "ms" timings."""
    def cancel(self) -> bool: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Nlu": ...
    def __exit__(self, *exc: object) -> Literal[False]: ...
