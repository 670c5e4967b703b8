"""Changelog expiry on its own schedule (`expire_changelogs`, the decoupled changelog life cycle; maintenance.md §2.8)
against Java Paimon 0.9: Java writes a changelog-producer=input table with decoupled retention and expires snapshots
itself (turning them into long-lived changelogs), the table is copied twice, Java's ExpireChangelogImpl runs on one
copy and ours on the other. Exactly the same files must remain (the long-lived changelogs, their manifests and
changelog files, the hints); Java then reads the table's rows unchanged and its check_files finds nothing missing.
(Java 0.9's batch reads of a changelog range stop at the earliest snapshot, so the long-lived changelogs are compared
as files.) The operation is derived like every other: the facade method, the CLI command, the plan's JSON round trip
through `apply`."""
from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys

import pytest

import paimon_ops as po
from paimon_ops.table.table import FileStoreTable
from tests.conftest import REPO
from tests.interop import java_harness as jh
from tests.interop.java_harness import JavaTable
from tests.lifecycle.helpers import copy_table, rel_files

pytestmark = [
    pytest.mark.java,
    pytest.mark.skipif(not jh.java_available(), reason=jh.skip_reason() or "java not available"),
]

FIELDS = [{"name": "pt", "type": "STRING NOT NULL"}, {"name": "k", "type": "INT NOT NULL"},
          {"name": "v", "type": "STRING"}]
# decoupled: snapshots keep 2, changelogs 8 (by count: a changelog is younger than a day throughout the test)
OPTIONS = {"bucket": "1", "changelog-producer": "input", "snapshot.num-retained.min": "2",
           "snapshot.num-retained.max": "2", "changelog.num-retained.min": "2", "changelog.num-retained.max": "8",
           "snapshot.time-retained": "1 ms", "changelog.time-retained": "1 d", "snapshot.expire.limit": "50"}


def _rows(i: int) -> list[list]:
    return [[p, (i * 3 + j) % 7, f"v{i}-{j}"] for p in ("a", "b") for j in range(4)]


def _sorted(rows):
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True))


@pytest.fixture(scope="module")
def java_table(tmp_path_factory):
    """12 writes by Java (and the compactions its writer triggers), then Java's own decoupled snapshot expiry (its
    writer's on every commit, then the table's config once more): the two
    newest snapshots stay, and the long-lived changelogs of the 6 snapshots before them (8 retained changelogs)."""
    jh.ensure_built()
    wh = tmp_path_factory.mktemp("changelogs") / "wh"
    t = JavaTable(wh, "db", "cl")
    jh.run_many([
        ("create_table", t.payload(schema={"fields": FIELDS, "partition_keys": ["pt"], "primary_keys": ["pt", "k"],
                                           "options": OPTIONS})),
        ("write", t.payload(batches=[{"rows": _rows(i)} for i in range(12)])),
        ("expire_snapshots", t.payload(table_config=True)),
        ("snapshots", t.payload()),
    ])
    table = FileStoreTable(str(t.path))
    latest = table.snapshots.latest_id()
    assert table.snapshots.list_ids() == [latest - 1, latest]  # (Java's writer expires on commit, decoupled too)
    assert table.changelogs.list_ids() == list(range(latest - 7, latest - 1))  # 8 changelogs kept: 6 long-lived
    return t


def _copies(java_table, tmp_path):
    java = copy_table(str(java_table.path), str(tmp_path / "java"), "db", "cl")
    ours = copy_table(str(java_table.path), str(tmp_path / "ours"), "db", "cl")
    return java, ours, JavaTable(tmp_path / "java", "db", "cl"), JavaTable(tmp_path / "ours", "db", "cl")


@pytest.mark.parametrize("kw,java_kw", [
    (dict(retain_max=5), dict(retain_max=5)),                                       # by count
    (dict(retain_max=3, max_deletes=2), dict(retain_max=3, max_deletes=2)),         # at most 2 per run
    (dict(retain_min=3, min_age=dt.timedelta(0)), dict(retain_min=3, time_retained_ms=0)),  # by time, keeping 3
])
def test_same_result_as_java(java_table, tmp_path, kw, java_kw):
    java, ours, jt_java, jt_ours = _copies(java_table, tmp_path)
    before = jh.run_many([("read", jt_ours.payload())])
    plan = po.Table.open(ours).maintenance.expire_changelogs(**kw)
    saved = po.load_plan(plan.to_json())  # the apply round trip: re-planned with the recorded arguments
    report = saved.execute()
    assert report.details["expired_changelogs"], report.details
    res = jh.run_many([("expire_changelogs", jt_java.payload(**java_kw)), ("read", jt_ours.payload()),
                       ("check_files", jt_ours.payload())])
    assert res[0]["expired"] == len(report.details["expired_changelogs"])
    assert rel_files(ours) == rel_files(java)  # exactly the files Java keeps, hints included
    assert _sorted(res[1]["rows"]) == _sorted(before[0]["rows"])  # the table's rows are untouched
    assert res[2]["missing"] == []
    t = FileStoreTable(ours)
    assert t.changelogs.list_ids() == FileStoreTable(java).changelogs.list_ids()
    assert t.snapshots.list_ids() == FileStoreTable(java).snapshots.list_ids()


def test_cli_dry_run_lists_every_file_and_changes_nothing(java_table, tmp_path):
    _, ours, _, _ = _copies(java_table, tmp_path)
    before = rel_files(ours)
    wh = os.path.dirname(os.path.dirname(ours))
    p = subprocess.run([sys.executable, "-m", "paimon_ops.cli", "expire-changelogs", wh, "db.cl", "--retain-max", "4",
                        "--dry-run", "--json"], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert p.returncode == 0, p.stderr
    plan = json.loads(p.stdout)
    assert plan["operation"] == "expire_changelogs"
    files = [f for s in plan["steps"] for f in s["files"]]
    assert {f["kind"] for f in files} >= {"changelog-metadata", "changelog", "manifest-list"}
    assert rel_files(ours) == before
    p = subprocess.run([sys.executable, "-m", "paimon_ops.cli", "expire-changelogs", wh, "db.cl", "--older-than",
                        "1 d"], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert p.returncode == 2 and "--older-than '1 d' is an age" in p.stderr and "--min-age" in p.stderr


def test_a_table_without_decoupled_changelogs_has_nothing_to_expire(tmp_path):
    jt = JavaTable(tmp_path / "wh", "db", "plain")
    jh.run_many([("create_table", jt.payload(schema={"fields": FIELDS, "partition_keys": ["pt"],
                                                      "primary_keys": ["pt", "k"], "options": {"bucket": "1"}})),
                 ("write", jt.payload(batches=[{"rows": _rows(i)} for i in range(3)]))])
    before = rel_files(str(jt.path))
    plan = po.Table.open(str(jt.path)).maintenance.expire_changelogs(retain_min=1, retain_max=1)
    assert plan.is_empty and "not decoupled" in " ".join(plan.details["notes"])
    plan.execute()
    assert rel_files(str(jt.path)) == before
