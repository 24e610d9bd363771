"""Shared fixtures: the generated test models, the CLI of the same tree, a report of benchmark figures.

FGEMMA_TEST_MODELS names the folder of the generated models (the C tests write them; default: the
repository's build/models) and FGEMMA_CLI the `fgemma` binary built from the same source (default:
build/fgemma). A missing model or CLI fails the tests that need it, with the path in the message;
nothing is skipped.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

import fgemma

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples"

# a two-function catalog that fits the tiny models' context with their synthetic vocabulary
MINI_CATALOG = {
    "id": "mini",
    "functions": [
        {
            "name": "set_volume",
            "description": "Lautstärke setzen",
            "parameters": {"level": {"type": "integer", "description": "0 bis 100"}},
            "required": ["level"],
        },
        {
            "name": "switch_channel",
            "description": "Sender wechseln",
            "parameters": {"channel": {"type": "string", "description": "Name", "enum": ["ARD", "ZDF"]}},
            "required": ["channel"],
        },
    ],
}

_report = []


def report(line):
    """A figure to print at the end of the run (benchmarks print, they do not assert on time)."""
    _report.append(line)


def pytest_terminal_summary(terminalreporter):
    if _report:
        terminalreporter.section("fgemma figures")
        for line in _report:
            terminalreporter.write_line(line)


def _models_dir():
    return Path(os.environ.get("FGEMMA_TEST_MODELS") or REPO / "build" / "models")


def model_path(name):
    p = _models_dir() / name
    if not p.is_file():
        pytest.fail(
            f"test model {p} is missing: the C tests generate it (ctest in the build tree), and "
            f"FGEMMA_TEST_MODELS names the folder (scripts/test-python.sh sets it)",
            pytrace=False,
        )
    return str(p)


def cli_path():
    p = Path(os.environ.get("FGEMMA_CLI") or REPO / "build" / "fgemma")
    if not (p.is_file() and os.access(p, os.X_OK)):
        pytest.fail(f"the fgemma CLI {p} is missing: build the CMake tree, or set FGEMMA_CLI", pytrace=False)
    return str(p)


def run_cli(*args, stdin=None):
    r = subprocess.run([cli_path(), *args], input=stdin, capture_output=True, check=False)
    if r.returncode != 0:
        pytest.fail(f"fgemma {' '.join(args)} failed ({r.returncode}): {r.stderr.decode(errors='replace')}")
    return r.stdout


@pytest.fixture(scope="session")
def tiny():
    """tiny preset, f32, synthetic 512-token vocabulary: fast."""
    with fgemma.Model(model_path("tiny-f32.gguf"), threads=1) as m:
        yield m


@pytest.fixture(scope="session")
def tiny_vocab():
    """tiny preset with the real Gemma 3 vocabulary (262,144 tokens)."""
    with fgemma.Model(model_path("tiny-vocab-f32.gguf"), threads=1) as m:
        yield m


@pytest.fixture(scope="session")
def m270():
    """the 270m shape, Q8_0, with the real vocabulary (the demo's synthetic model)."""
    with fgemma.Model(model_path("270m-vocab-q8_0.gguf")) as m:
        yield m


@pytest.fixture(scope="session")
def utterances():
    lines = (EXAMPLES / "utterances-de.txt").read_text(encoding="utf-8").splitlines()
    lines = [line for line in lines if line.strip()]
    assert len(lines) == 12
    return lines


@pytest.fixture(scope="session")
def tv_catalog_path():
    return str(EXAMPLES / "tv-catalog.json")


@pytest.fixture(scope="session")
def tv_catalog(tv_catalog_path):
    return json.loads(Path(tv_catalog_path).read_text(encoding="utf-8"))
