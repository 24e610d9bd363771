#!/usr/bin/env python3
"""Checks that the documentation points at things that exist.

  scripts/check-docs.py [--fgemma build/fgemma]

1. Links: every relative Markdown link `[text](path)` in the repository's tracked .md files must name
   a file or folder that exists (relative to the page). Web links and anchors are not followed.
2. Paths: every backticked repository path in them (`scripts/setup.sh`, `src/nlu/`) must exist,
   unless git ignores it (a generated file such as `build/models/x.gguf` or `.cache/...`). Globs
   (`tests/test_*.c`) must match at least one file.
3. The README's command table ("## Command-line tool"): every command `fgemma --help` lists has a
   row and every row names a command that exists; every `--option` in a row is one that
   `fgemma COMMAND --help` describes. The options the paragraph below the table says every
   model-loading command takes must be in `fgemma info --help`, the session ones in `fgemma call --help`.

Prints one line per problem and exits with 1 when there is any.
"""
import argparse
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
CODE = re.compile(r"`([^`\n]+)`")
FENCE = re.compile(r"^\s*```")


def tracked_markdown():
    out = subprocess.run(["git", "ls-files", "*.md"], cwd=ROOT, check=True, capture_output=True, text=True)
    return [p for p in out.stdout.splitlines() if "node_modules/" not in p]


def top_dirs():
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, check=True, capture_output=True, text=True)
    return {p.split("/", 1)[0] for p in out.stdout.splitlines() if "/" in p}


def ignored(path):
    """Whether git ignores the path, or what would be inside it (a generated folder)."""
    for p in (path, path + "/x"):
        if subprocess.run(["git", "check-ignore", "-q", "--no-index", p], cwd=ROOT).returncode == 0:
            return True
    return False


def prose_lines(text):
    """(number, line) of the lines outside fenced code blocks."""
    fenced = False
    for n, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield n, line


def check_links(page, text, problems):
    here = os.path.dirname(page)
    for n, line in prose_lines(text):
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue
            path = os.path.normpath(os.path.join(here, target.split("#", 1)[0]))
            if not os.path.exists(os.path.join(ROOT, path)):
                problems.append(f"{page}:{n}: link to a file that does not exist: {target}")


# a backticked token that looks like a path inside one of the repository's top folders
def candidate_path(token, tops):
    token = token.strip().rstrip(".,;:")
    if " " in token or not re.match(r"^[A-Za-z0-9_.\-/*]+$", token):
        return None
    first = token.split("/", 1)[0]
    if "/" not in token or first not in tops:
        return None
    token = re.sub(r":\d+(-\d+)?$", "", token)
    return token


def check_paths(page, text, tops, problems):
    for n, line in prose_lines(text):
        for token in CODE.findall(line):
            path = candidate_path(token, tops)
            if path is None or "node_modules" in path or "..." in path:
                continue
            full = os.path.join(ROOT, path)
            if "*" in path:
                if not glob.glob(full):
                    problems.append(f"{page}:{n}: no file matches `{token}`")
            elif not os.path.exists(full) and not ignored(path.rstrip("/")):
                problems.append(f"{page}:{n}: `{token}` does not exist")


def help_text(fgemma, *args):
    r = subprocess.run([fgemma, *args, "--help"], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def check_commands(fgemma, problems):
    rc, top = help_text(fgemma)
    if rc != 0:
        problems.append(f"fgemma --help exited with {rc}")
        return
    listed = set()
    in_list = False
    for line in top.splitlines():
        if line.strip() == "commands:":
            in_list = True
            continue
        if in_list:
            m = re.match(r"^  ([a-z][a-z0-9-]*)\s", line)
            if m:
                listed.add(m.group(1))
            elif line.strip():
                in_list = False
    if not listed:
        problems.append("fgemma --help lists no commands")

    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    m = re.search(r"^## Command-line tool\n(.*?)(?=^## )", readme, re.S | re.M)
    if not m:
        problems.append("README.md: no '## Command-line tool' section")
        return
    section = m.group(1)
    rows = {}
    for n, line in enumerate(section.splitlines()):
        if not line.startswith("| `fgemma "):
            continue
        first = line.split(" | ", 1)[0]
        for usage in re.findall(r"`fgemma ([^`]+)`", first):
            cmd = usage.split()[0]
            rows.setdefault(cmd, set()).update(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", usage))
    for cmd in sorted(listed - rows.keys()):
        problems.append(f"README.md: the command table has no row for `fgemma {cmd}`")
    for cmd in sorted(rows.keys() - listed):
        problems.append(f"README.md: the command table names `fgemma {cmd}`, which fgemma --help does not list")
    for cmd in sorted(rows.keys() & listed):
        rc, text = help_text(fgemma, cmd)
        if rc != 0:
            problems.append(f"fgemma {cmd} --help exited with {rc}")
            continue
        for opt in sorted(rows[cmd]):
            if not re.search(r"(?<![\w-])" + re.escape(opt) + r"(?![\w-])", text):
                problems.append(f"README.md: `fgemma {cmd}` is shown with {opt}, which `fgemma {cmd} --help` does not describe")

    # "Every command that loads a model takes ...; every command that runs a session takes ..."
    after = section.split("\n\n")
    for para in after:
        if "Every command that loads a model" not in para:
            continue
        load, _, sess = para.partition("every command that runs a session")
        for cmd, part in (("info", load), ("call", sess)):
            rc, text = help_text(fgemma, cmd)
            for opt in re.findall(r"`(--[a-z][a-z0-9-]*)", part):
                if not re.search(r"(?<![\w-])" + re.escape(opt) + r"(?![\w-])", text):
                    problems.append(f"README.md: says every such command takes {opt}, but `fgemma {cmd} --help` does not describe it")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fgemma", default=os.path.join(ROOT, "build", "fgemma"),
                    help="the fgemma binary whose --help the README must match (default: build/fgemma)")
    ap.add_argument("--no-commands", action="store_true", help="check links and paths only")
    args = ap.parse_args()
    problems = []
    tops = top_dirs()
    for page in tracked_markdown():
        text = open(os.path.join(ROOT, page), encoding="utf-8").read()
        check_links(page, text, problems)
        check_paths(page, text, tops, problems)
    if not args.no_commands:
        if not os.access(args.fgemma, os.X_OK):
            problems.append(f"{args.fgemma}: not an executable (build fgemma first, or pass --fgemma)")
        else:
            check_commands(args.fgemma, problems)
    for p in problems:
        print(p)
    pages = len(tracked_markdown())
    print(f"check-docs: {pages} pages, {len(problems)} problem(s)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
