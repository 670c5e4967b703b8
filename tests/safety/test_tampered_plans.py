"""A plan is a review artifact, not an authority. A saved plan edited in any way — files added to a
delete step (a live data file, schema/schema-0), steps added (deleting or overwriting the latest snapshot, moving the
LATEST hint), its table or location changed to another table, its preconditions stripped, its base snapshot or
arguments edited, a file-format option overridden, a compaction input pointing outside the table or at a file that is
no longer live — is refused, through `paimon-ops apply` and through `po.load_plan(...).execute()`, and nothing
changes: not the table, not the other table, not a victim directory beside the warehouse. Java Paimon 0.9 then reads
the table exactly as before (every file present, rows of the latest snapshot and of the tag); the genuine plans
still apply, and Java reads the result."""
from __future__ import annotations

import copy
import json
import os
import shutil
from pathlib import Path
from typing import Any, Callable

import pytest

import paimon_ops as po
from paimon_ops.errors import PaimonOpsError
from paimon_ops.table.table import FileStoreTable
from tests.cli.conftest import cli
from tests.interop import java_harness as jh
from tests.interop.java_harness import JavaTable
from tests.safety.java_proof import java_view
from tests.safety.util import age, make_victim, tree_digest

pytestmark = [pytest.mark.java]

SCHEMA = {"fields": [{"name": "pt", "type": "STRING NOT NULL"}, {"name": "id", "type": "INT NOT NULL"},
                     {"name": "v", "type": "STRING"}],
          "partition_keys": ["pt"], "primary_keys": ["pt", "id"], "options": {"bucket": "2"}}


@pytest.fixture(scope="module")
def java_src(tmp_path_factory) -> Path:
    """Two Java-written tables: db.t with a history (a full compaction, so some files are no longer live; tag
    'keep' on snapshot 2) and db.other."""
    wh = tmp_path_factory.mktemp("tampered_java")
    t, other = JavaTable(wh, "db", "t"), JavaTable(wh, "db", "other")
    batches = [{"rows": [[p, i, f"v{n}-{i}"] for p in ("a", "b") for i in range(20)]} for n in range(4)]
    batches[2]["compact"] = True
    jh.run_many([("create_table", t.payload(schema=SCHEMA)), ("write", t.payload(batches=batches[:2])),
                 ("create_tag", t.payload(tag="keep", snapshot_id=2)),
                 ("write", t.payload(batches=batches[2:], first_commit_identifier=3)),
                 ("create_table", other.payload(schema=SCHEMA)), ("write", other.payload(batches=batches[:2]))])
    return wh


@pytest.fixture(scope="module")
def case(java_src, tmp_path_factory):
    """A copy of the warehouse, a victim directory beside it, the reviewed plans (saved JSON), Java's view."""
    root = tmp_path_factory.mktemp("tampered")
    wh = root / "wh"
    shutil.copytree(java_src, wh)
    victim = Path(make_victim(str(root)))
    orphan = wh / "db.db" / "t" / "pt=a" / "bucket-0" / "data-orphan-0.parquet"
    orphan.write_bytes(b"an old leftover")
    age(str(orphan.parent), days=3)
    plans = {}
    for name, argv in (("expire", ["expire-snapshots", "--retain-min", "1", "--min-age", "1 ms"]),
                       ("compact", ["compact", "--mode", "full"]),
                       ("orphans", ["remove-orphans", "--min-age", "1 d"]),
                       ("delete_tag", ["delete-tag", "keep"])):
        r = cli(argv[0], wh, "db.t", *argv[1:], "--dry-run", "--json")
        assert r.code == 0, r.err
        plans[name] = r.json
    assert any(s["files"] for s in plans["expire"]["steps"]) and plans["compact"]["tasks"]
    return {"root": root, "wh": wh, "victim": victim, "plans": plans, "java": java_view(wh / "db.db" / "t")}


def _live_file(wh: Path) -> str:
    t = FileStoreTable(str(wh / "db.db" / "t"))
    from paimon_ops.table.scan import TableScanner
    return TableScanner(t).scan(t.snapshots.latest()).files[0].path


def _not_live_file(wh: Path) -> dict:
    """An input-file record for a data file that exists on disk but is not live (compacted away, kept by the tag)."""
    from paimon_ops.compact.model import meta_to_json
    from paimon_ops.table.scan import TableScanner
    t = FileStoreTable(str(wh / "db.db" / "t"))
    sc = TableScanner(t)
    live = {f.name for f in sc.scan(t.snapshots.latest()).files}
    f = next(f for f in sc.scan_tag("keep").files if f.name not in live and os.path.exists(f.path))
    return {"name": f.name, "path": f.path, "level": f.level, "row_count": f.meta.row_count,
            "file_size": f.meta.file_size, "meta": meta_to_json(f.meta)}


def _step(name: str, action: str, path: str, kind: str, **params: Any) -> dict:
    return {"name": name, "action": action, "files": [{"path": path, "kind": kind, "reason": "edited", "size": None}],
            "params": params, "creates": []}


def _tampers(case) -> dict[str, tuple[str, Callable[[dict], None]]]:
    wh = case["wh"]
    t = wh / "db.db" / "t"
    latest = FileStoreTable(str(t)).snapshots.latest_id()
    victim_file = str(case["victim"] / "data-precious-1.parquet")

    def add_delete(path: str, kind: str = "data") -> Callable[[dict], None]:
        def f(p: dict) -> None:
            step = next((s for s in p["steps"] if s["action"] == "delete-files"), None)
            if step is None:
                p["steps"].append(_step("edited", "delete-files", path, kind))
            else:
                step["files"].append({"path": path, "kind": kind, "reason": "edited", "size": None})
        return f

    def set_(key: str, value: Any) -> Callable[[dict], None]:
        def f(p: dict) -> None:
            p[key] = value
        return f

    def edit_param(key: str, value: Any) -> Callable[[dict], None]:
        def f(p: dict) -> None:
            p["planned_with"][key] = value
        return f

    def other_table(p: dict) -> None:
        p["table"] = "db.other"
        p["location"] = str(wh / "db.db" / "other")

    def other_location_only(p: dict) -> None:
        p["location"] = str(wh / "db.db" / "other")

    def input_outside(p: dict) -> None:
        f = p["tasks"][0]["files"][0]
        f["path"] = victim_file

    def input_not_live(p: dict) -> None:
        p["tasks"][0]["files"][0] = _not_live_file(wh)

    def append(step: dict) -> Callable[[dict], None]:
        def f(p: dict) -> None:
            p["steps"].append(step)
        return f

    snap = str(t / "snapshot" / f"snapshot-{latest}")
    return {
        "add-live-data-file": ("expire", add_delete(_live_file(wh))),
        "add-schema-file": ("expire", add_delete(str(t / "schema" / "schema-0"))),
        "add-victim-outside": ("orphans", add_delete(victim_file, "orphan")),
        "add-step-delete-latest": ("expire", append(_step("x", "delete-ordered", snap, "snapshot"))),
        "add-step-overwrite-latest": ("expire", append({**_step("x", "write-files", snap, "snapshot",
                                                                 contents=["{}"], mode="overwrite")})),
        "add-step-hint": ("expire", append(_step("x", "write-hint", str(t / "snapshot" / "LATEST"), "hint",
                                                 value=1))),
        "tag-deletion-deletes-data": ("delete_tag", add_delete(_live_file(wh))),
        "other-table": ("expire", other_table),
        "other-location": ("expire", other_location_only),
        "stripped-preconditions": ("expire", set_("preconditions", [])),
        "edited-base-snapshot": ("expire", set_("base_snapshot", latest - 1)),
        "no-recorded-arguments": ("expire", set_("planned_with", {})),
        "edited-arguments": ("expire", edit_param("retain_min", 0)),
        "edited-now": ("orphans", edit_param("now_millis", 4_102_444_800_000)),  # 2100: every file old enough
        "file-option-override": ("expire", set_("options_override", {"data-file.external-paths": "file:///"})),
        "compaction-input-outside": ("compact", input_outside),
        "compaction-input-not-live": ("compact", input_not_live),
        "compaction-edited-step": ("compact", lambda p: p["steps"][0]["files"].pop()),
    }


def test_tampered_plans_are_refused_and_change_nothing(case):
    wh, root, victim = case["wh"], case["root"], case["victim"]
    before, victim_before = tree_digest(str(wh)), tree_digest(str(victim))
    failures = []
    for name, (which, tamper) in _tampers(case).items():
        plan = copy.deepcopy(case["plans"][which])
        tamper(plan)
        text = json.dumps(plan)
        path = root / f"{name}.json"
        path.write_text(text)
        r = cli("apply", path, "--local", "--yes", "--json")
        if r.code != 2 or len(r.err.splitlines()) != 1 or "Traceback" in r.err:
            failures.append(f"{name} (apply): exit {r.code}: {r.err}")
        try:
            po.load_plan(text).execute(runner=po.LocalRunner())
            failures.append(f"{name} (load_plan): executed")
        except PaimonOpsError:
            pass
        if tree_digest(str(wh)) != before or tree_digest(str(victim)) != victim_before:
            failures.append(f"{name}: something changed")
            break
    assert not failures, "\n".join(failures)
    # Java reads the table exactly as before: every file there, the latest snapshot and the tag the same rows
    view = java_view(wh / "db.db" / "t")
    assert view["missing"] == [] and view == case["java"]


def test_genuine_plans_still_apply_and_java_reads_the_result(java_src, case, tmp_path):
    wh = tmp_path / "wh"
    shutil.copytree(java_src, wh)
    for argv in (["compact", "--mode", "full"], ["expire-snapshots", "--retain-min", "1", "--min-age", "1 ms"],
                 ["delete-tag", "keep"]):
        r = cli(argv[0], wh, "db.t", *argv[1:], "--dry-run", "--json")
        assert r.code == 0, r.err
        (tmp_path / "plan.json").write_text(r.out)
        r = cli("apply", tmp_path / "plan.json", "--local", "--json")
        assert r.code == 0, (argv, r.err)
    view = java_view(wh / "db.db" / "t")
    assert view["missing"] == [] and view["latest"] == case["java"]["latest"] and view["tags"] == {}
