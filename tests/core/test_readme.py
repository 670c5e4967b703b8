"""The README is a README: what paimon-ops is, exactly the two set-up commands, a thirty-second example that runs,
and links into the documentation that resolve. The Python walk-through it once held is
docs/getting-started/python.md, whose example runs here as written (tests/docs runs every other example)."""
from __future__ import annotations

import os
import re
from pathlib import Path

import paimon_ops as po
from paimon_ops.sample import build_sample_warehouse
from tests.docs.docs_util import Block, blocks

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"


def _readme_blocks() -> list[Block]:
    text = README.read_text()
    out = []
    for m in re.finditer(r"^```(\w+)\n(.*?)^```$", text, re.S | re.M):
        out.append(Block("../README.md", text.count("\n", 0, m.start()) + 1, m.group(1), None, m.group(2)))
    return out


def test_readme_is_short_with_the_two_setup_commands():
    text = README.read_text()
    assert len(text.splitlines()) < 200
    setup = text[text.index("## Set-up"):]
    setup = setup[:setup.index("\n## ", 1)]
    (block,) = re.findall(r"```bash\n(.*?)```", setup, re.S)
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    assert commands == ["./dev.sh demo", "./dev.sh test"]


def test_readme_links_resolve():
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README.read_text()):
        if not re.match(r"[a-z]+://", target):
            assert (REPO / target).exists(), f"README links to {target}, which does not exist"


def test_readme_example_runs(tmp_path):
    from tests.docs.test_examples import Sandbox, Setup
    sample = tmp_path / "sample"
    build_sample_warehouse(str(sample), rounds=3)
    box = Sandbox(tmp_path / "sandbox", "../README.md", Setup(), sample, {})
    ran = 0
    for b in _readme_blocks():
        if b.lang == "bash" and "./dev.sh" in b.code:
            continue  # the set-up commands (./dev.sh test is this suite)
        assert b.lang in ("bash", "python"), b.where()
        box.run(b)
        ran += 1
    assert ran >= 2
    assert isinstance(box.namespace["report"], po.Report)


def test_python_getting_started_example_runs(tmp_path):
    code = next(b for b in blocks("getting-started/python.md") if b.lang == "python").code
    build_sample_warehouse(str(tmp_path / "wh"), rounds=3)
    ns: dict = {}
    before = os.getcwd()
    os.chdir(tmp_path)
    try:
        exec(compile(code, "docs/getting-started/python.md", "exec"), ns)
    finally:
        os.chdir(before)
    report = ns["report"]
    assert isinstance(report, po.Report) and not report.dry_run and report.deleted
    t = ns["t"]
    assert t.latest_snapshot_id is not None and [x.name for x in t.tags.list()] == ["before-backfill"]
