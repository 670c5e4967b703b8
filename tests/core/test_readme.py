"""The README's Python example runs as written (on a sample warehouse)."""
from __future__ import annotations

import re
from pathlib import Path

import paimon_ops as po
from paimon_ops.sample import build_sample_warehouse

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_python_example_runs(tmp_path):
    text = README.read_text()
    section = text[text.index("## Python"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    wh = str(tmp_path / "wh")
    build_sample_warehouse(wh, rounds=3)
    ns: dict = {"WAREHOUSE": wh}
    exec(compile(code, "README.md", "exec"), ns)
    report = ns["report"]
    assert isinstance(report, po.Report) and not report.dry_run and report.deleted
    t = ns["t"]
    assert t.latest_snapshot_id is not None and [x.name for x in t.tags.list()] == ["before-backfill"]


def test_readme_generated_tables_are_current():
    """The README's operation, command-line, Airflow operator, Dagster job and plan-enum tables are generated from the
    registry (docs/reference.py): a new operation, flag or plan type shows up there without editing the README by
    hand, and an edit by hand is caught here."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("reference", README.parent / "docs" / "reference.py")
    reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference)
    text = README.read_text()
    found = {m.group("name") for m in reference.MARKER.finditer(text)}
    assert found == set(reference.TABLES), f"README.md lacks generated tables {set(reference.TABLES) - found}"
    assert reference.render(text) == text, "README.md's generated tables drifted: run `python docs/reference.py`"
