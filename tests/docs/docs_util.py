"""Helpers of the documentation tests: the site's pages, their code blocks, and a sandbox each page's examples run in.

How a page's code blocks run (tests/docs/test_examples.py), in order, in one sandbox directory per page:

* a block with a `title` is a file: written into the sandbox at that path (a `bash` one made executable);
* a `bash` block runs in bash (`-e -o pipefail`), with the environment the previous bash blocks of the page left;
* a `python` block runs in this interpreter, in one namespace per page, with the sandbox as working directory;
* `text`, `json` and `mermaid` blocks are output shown to the reader and diagrams, not code.

Two kinds of command would leave the machine — installing packages and starting a long-running server — and are
replaced by what can be checked of them here, through small scripts first on the PATH: `pip install SPEC` checks that
each requirement names this package with extras it declares (and installs nothing); `dagster dev ARGS` loads the
same definitions with `dagster definitions validate ARGS` (the real code location, loaded by Dagster's own loader).
Placeholders that stand for the reader's infrastructure are replaced by real local ones (`SUBSTITUTIONS` of each page
in test_examples.py): an S3 endpoint by a moto server holding the sample warehouse, a warehouse URI by the sample.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
VENV_BIN = Path(sys.executable).parent
AIRFLOW_BIN = REPO / ".venv-airflow" / "bin"

# Languages of blocks that are shown, not run.
SHOWN = {"text", "json", "mermaid", "console"}
RUN = {"bash", "python", "yaml"}

_FENCE = re.compile(r"^(?P<indent>[ ]*)(?P<fence>`{3,})(?P<lang>[\w-]*)(?P<attrs>[^\n]*)\n(?P<body>.*?)^(?P=indent)(?P=fence)[ ]*$",
                    re.S | re.M)


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    lang: str
    title: str | None
    code: str

    def where(self) -> str:
        return f"docs/{self.page}:{self.line}"


def blocks(page: str) -> list[Block]:
    text = (DOCS / page).read_text()
    out = []
    for m in _FENCE.finditer(text):
        title = re.search(r'title="([^"]+)"', m.group("attrs"))
        body = m.group("body")
        if m.group("indent"):
            body = "\n".join(line[len(m.group("indent")):] for line in body.splitlines()) + "\n"
        out.append(Block(page, text.count("\n", 0, m.start()) + 1, m.group("lang"), title.group(1) if title else None,
                         body))
    return out


def hand_written_pages() -> list[str]:
    """Every Markdown page of docs/ except the hooks' (the reference pages are generated, not files)."""
    return sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md") if "hooks" not in p.parts)


def example_pages() -> list[str]:
    """The pages whose examples the tests run: the home page, getting started and the guides."""
    return ["index.md"] + [p for p in hand_written_pages() if p.startswith(("getting-started/", "guides/"))]


PIP_SHIM = """#!{python}
# docs test: `pip install SPEC…` checks each requirement names paimon-ops (or `.`, a checkout) with extras it declares
import re, sys, tomllib
args = sys.argv[1:]
if not args or args[0] != "install":
    sys.exit(f"docs test: only `pip install` is checked, got pip {{' '.join(args)}}")
extras = set(tomllib.load(open({pyproject!r}, "rb"))["project"]["optional-dependencies"])
for spec in (a for a in args[1:] if not a.startswith("-")):
    m = re.fullmatch(r"(\\.|paimon-ops)(?:\\[([\\w,-]+)\\])?", spec)
    if not m:
        sys.exit(f"docs test: pip install {{spec!r}}: not this package")
    unknown = set(filter(None, (m.group(2) or "").split(","))) - extras
    if unknown:
        sys.exit(f"docs test: pip install {{spec!r}}: no extra {{sorted(unknown)}} in pyproject.toml")
print("docs test: pip install", *args[1:], "checked (nothing installed)")
"""

DAGSTER_SHIM = """#!/usr/bin/env bash
# docs test: `dagster dev ARGS` loads the same code location with `dagster definitions validate ARGS`
if [ "${{1:-}}" = dev ]; then
  shift
  exec {dagster} definitions validate "$@"
fi
exec {dagster} "$@"
"""


def write_shims(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in (("pip", PIP_SHIM.format(python=sys.executable, pyproject=str(REPO / "pyproject.toml"))),
                       ("dagster", DAGSTER_SHIM.format(dagster=VENV_BIN / "dagster"))):
        path = directory / name
        path.write_text(text)
        path.chmod(0o755)
    return directory
