"""The console script `fgemma` of the wheel: runs the CLI executable bundled in the package.

The wheel's CMake build installs the C program `fgemma` (tools/cli, with `fgemma serve`) as
fgemma/_bin/fgemma (bindings/python/CMakeLists.txt); auditwheel points its RPATH at the shared
libraries bundled in fgemma.libs/. `main` replaces this Python process with that program (os.execv),
so arguments, standard streams, signals (SIGTERM to `fgemma serve`) and the exit status are the
program's own.
"""

import os
import sys

__all__ = ["binary", "main"]


def binary() -> str:
    """The path of the bundled `fgemma` executable (it may be missing: see `main`)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "fgemma")


def main() -> None:
    exe = binary()
    if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
        sys.stderr.write(
            f"fgemma: the command-line tool is not in this installation of the Python package "
            f"(no executable {exe}). The wheels built by scripts/build-wheel.sh carry it; a plain "
            f"CMake build makes it too (build/fgemma).\n"
        )
        sys.exit(127)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execv(exe, ["fgemma", *sys.argv[1:]])
    except OSError as e:  # exec itself failed (e.g. a foreign architecture): say which file
        sys.stderr.write(f"fgemma: cannot run {exe}: {e.strerror}\n")
        sys.exit(126)


if __name__ == "__main__":
    main()
