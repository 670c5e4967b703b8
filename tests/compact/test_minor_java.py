"""The dedicated compactor against Java Paimon 0.9.

Every source table is written by Java with `write-only=true` (data stays in level 0 until a compaction job moves
it), with an earlier Java full and minor compaction so that the buckets hold several levels and deletion vectors.
Each test copies a table twice: on one copy Java compacts (`write.compact(partition, bucket, full)` with
write-only=false, through the harness), on the other paimon-ops does (`minor` / `full`). Then Java:

* reads the same rows at the new latest snapshot,
* reads the same changelog for the compaction — `$audit_log` with `incremental-between=<before>,<after>` and
  `incremental-between-scan-mode=changelog`, compared as a multiset of rows with their row kinds,
* finds every file our snapshot references,
* keeps writing (write-only) and compacting both copies with the same rows and changelog afterwards.

All source tables are written in one JVM call (session fixture); each test needs one more JVM call.
"""
from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

import paimon_ops as po
from paimon_ops.compact.planner import plan_compaction
from paimon_ops.errors import UnsupportedError
from paimon_ops.table.table import FileStoreTable
from tests.interop import java_harness as jh
from tests.interop.java_harness import JavaTable

pytestmark = [pytest.mark.java,
              pytest.mark.skipif(not jh.java_available(), reason=jh.skip_reason() or "java not available")]

FIELDS = [("pt", "STRING NOT NULL"), ("id", "INT NOT NULL"), ("a", "BIGINT"), ("b", "STRING"), ("c", "DOUBLE")]
WO = {"write-only": "true"}


def _history(deletes: bool = True, pts=("x", "y"), n: int = 80) -> list[tuple[str, dict]]:
    """write -> Java full compaction (max level) -> updates/deletes -> Java minor compaction (DVs, level 4) ->
    two more level-0 commits (one touching old and new keys, one with a delete)."""
    b1 = {"rows": [[p, i, i, f"b{i}", i / 2] for p in pts for i in range(n)]}
    b2 = {"rows": [[p, i, 100 + i, f"u{i}", None] for p in pts for i in range(0, 25)]}
    b2["kinds"] = ["+U"] * len(b2["rows"])
    if deletes:
        b2["rows"] += [[p, 50, 50, "b50", 25.0] for p in pts]
        b2["kinds"] += ["-D"] * len(pts)
    b3 = {"rows": [[p, i, 1000 + i, None, float(i)] for p in pts for i in range(10, 95, 3)]}
    b4 = {"rows": [[pts[0], 30, 7, "z", 1.0], [pts[0], 200, 1, "new", None]], "kinds": ["+I", "+I"]}
    if deletes:
        b4["rows"] += [[pts[0], 5, 105, "u5", None], [pts[-1], 13, 0, None, None]]
        b4["kinds"] += ["-D", "-D"]
    return [("write", {"batches": [b1]}), ("compact", {"full": True}), ("write", {"batches": [b2]}),
            ("compact", {"full": False}), ("write", {"batches": [b3]}), ("write", {"batches": [b4]})]


AGG = {"merge-engine": "aggregation", "fields.a.aggregate-function": "sum", "fields.b.aggregate-function": "max",
       "fields.b.ignore-retract": "true", "fields.c.aggregate-function": "last_non_null_value"}

TABLES: dict[str, dict] = {
    # a large max level: level 0 goes to level 3, lookups reach levels 4 and 5
    "dv_dedup": dict(options={"bucket": "2", "deletion-vectors.enabled": "true", **WO}, n=3000),
    "dv_dedup_seq": dict(options={"bucket": "1", "deletion-vectors.enabled": "true", "sequence.field": "a", **WO}),
    "dv_partial_update": dict(options={"bucket": "1", "deletion-vectors.enabled": "true",
                                       "merge-engine": "partial-update", "file.format": "orc", **WO}, deletes=False),
    "dv_aggregation": dict(options={"bucket": "2", "deletion-vectors.enabled": "true", **AGG, **WO}),
    "lookup_changelog": dict(options={"bucket": "2", "changelog-producer": "lookup",
                                      "changelog-producer.row-deduplicate": "true", **WO}),
    "lookup_changelog_dv_pu": dict(options={"bucket": "1", "changelog-producer": "lookup",
                                            "deletion-vectors.enabled": "true", "merge-engine": "partial-update",
                                            **WO}, deletes=False, n=1500),
    "lookup_changelog_dv_agg": dict(options={"bucket": "1", "changelog-producer": "lookup",
                                             "deletion-vectors.enabled": "true", **AGG, **WO}),
    "first_row": dict(options={"bucket": "2", "merge-engine": "first-row", "changelog-producer": "lookup", **WO},
                      deletes=False),
    "full_changelog": dict(options={"bucket": "1", "changelog-producer": "full-compaction",
                                    "num-sorted-run.compaction-trigger": "2", **WO}),
    "full_changelog_pu_orc": dict(options={"bucket": "2", "changelog-producer": "full-compaction",
                                           "merge-engine": "partial-update", "file.format": "orc",
                                           "num-sorted-run.compaction-trigger": "3", **WO}, deletes=False),
    "force_lookup_trigger3": dict(options={"bucket": "1", "force-lookup": "true", **AGG,
                                           "num-sorted-run.compaction-trigger": "3", **WO}),
}


@pytest.fixture(scope="session")
def java_tables(tmp_path_factory) -> Path:
    """Every source table, written (write-only) and compacted by Java Paimon 0.9 in one JVM."""
    wh = tmp_path_factory.mktemp("java_minor_src")
    cmds = []
    for name, spec in TABLES.items():
        t = JavaTable(wh, "db", name)
        cmds.append(("create_table", t.payload(schema={
            "fields": [{"name": n, "type": ty} for n, ty in FIELDS], "partition_keys": ["pt"],
            "primary_keys": ["pt", "id"], "options": spec["options"]})))
        for cmd, payload in _history(deletes=spec.get("deletes", True), n=spec.get("n", 80)):
            cmds.append((cmd, t.payload(**payload)))
    jh.run_many(cmds)
    return wh


def _copy(src: Path, dst: Path, name: str) -> JavaTable:
    shutil.copytree(src / "db.db" / name, dst / "db.db" / name)
    return JavaTable(dst, "db", name)


def _bag(rows: list[list]) -> Counter:
    return Counter(json.dumps(r, sort_keys=True) for r in rows)


def _extra(name: str) -> dict:
    deletes = TABLES[name].get("deletes", True)
    rows = [["x", 1, 7, "late", 3.5], ["x", 201, 8, "n201", None], ["y", 2, 9, None, 1.0], ["y", 70, 1, "v", 0.5]]
    kinds = ["+I"] * 4
    if deletes:
        rows.append(["y", 11, 0, None, None])
        kinds.append("-D")
    return {"rows": rows, "kinds": kinds}


def _dv_positions(scan: dict) -> int:
    return sum(r["cardinality"] or 0 for ie in scan["index_files"] for r in (ie["dv_ranges"] or []))


MODES = ("minor", "full")
CASES = [(name, mode) for name in TABLES for mode in MODES]


@pytest.fixture(scope="session")
def outcomes(java_tables, tmp_path_factory) -> dict:
    """For every (table, mode): our compaction on one copy, then ONE JVM call doing Java's side for all of them
    (Java's compaction of the other copy, reads, changelogs, file checks, more writes and compactions)."""
    root = tmp_path_factory.mktemp("java_minor_cases")
    per_case: dict[tuple[str, str], dict] = {}
    cmds: list[tuple[str, dict]] = []
    for name, mode in CASES:
        case = root / f"{name}-{mode}"
        java = _copy(java_tables, case / "java", name)
        ours = _copy(java_tables, case / "ours", name)
        table = FileStoreTable(str(ours.path))
        before = table.snapshots.latest_id()
        json.dumps(plan_compaction(table, mode=mode).to_dict(), default=str)  # plans stay JSON-serialisable
        report = po.Table(table).maintenance.compact(mode=mode).execute()
        extra = _extra(name)
        steps = [
            ("compact", java.payload(full=mode == "full")),
            ("read", java.payload()), ("read", ours.payload()),
            ("audit_log", java.payload(start=before)), ("audit_log", ours.payload(start=before)),
            ("scan", ours.payload()), ("scan", java.payload()), ("check_files", ours.payload()),
        ]
        if mode == "minor":  # (after full compactions Java keeping on is covered by test_java_interop)
            steps += [
                # Java keeps writing (write-only, level 0) and compacting both copies
                ("write", java.payload(batches=[extra])), ("write", ours.payload(batches=[extra])),
                ("compact", java.payload(full=False)), ("compact", ours.payload(full=False)),
                ("read", java.payload()), ("read", ours.payload()),
                ("audit_log", java.payload(start=-2)), ("audit_log", ours.payload(start=-2)),
                ("check_files", ours.payload()),
            ]
        per_case[(name, mode)] = {"report": report, "first": len(cmds), "n": len(steps)}
        cmds += steps
    results = jh.run_many(cmds)
    keys = ("java_compact", "java_read", "our_read", "java_log", "our_log", "our_scan", "java_scan", "missing",
            "_w1", "_w2", "_c1", "_c2", "java_read2", "our_read2", "java_log2", "our_log2", "missing2")
    out = {}
    for case, d in per_case.items():
        r = results[d["first"]:d["first"] + d["n"]]
        out[case] = dict(zip(keys, r), report=d["report"])
    return out


@pytest.mark.parametrize("name,mode", CASES)
def test_compaction_equals_java(outcomes, name, mode):
    o = outcomes[(name, mode)]
    report = o["report"]
    # 1. the same rows at the new latest snapshot
    assert _bag(o["our_read"]["rows"]) == _bag(o["java_read"]["rows"])
    # 2. the same changelog for the compaction, row kinds included
    assert _bag(o["our_log"]["rows"]) == _bag(o["java_log"]["rows"]), (o["our_log"]["rows"], o["java_log"]["rows"])
    if o["our_log"]["rows"]:
        assert report.details.get("changelog_rows") == len(o["our_log"]["rows"])
    # 3. our snapshot references only existing files; deletion vectors point at live files
    assert o["missing"]["missing"] == []
    assert (report.snapshot_id is None) == (o["java_compact"]["snapshot_ids"] == [])
    if report.snapshot_id is not None:
        assert o["our_scan"]["commit_kind"] == "COMPACT"
    live = {(f["partition_path"], f["file_name"]) for f in o["our_scan"]["files"]}
    for ie in o["our_scan"]["index_files"]:
        for r in ie["dv_ranges"] or []:
            assert (ie["partition_path"], r["data_file"]) in live
    if mode == "minor" and _dv_positions(o["java_scan"]) > 0:
        assert _dv_positions(o["our_scan"]) > 0, "our minor compaction must create deletion vectors where Java does"
    # 4. Java keeps writing and compacting: same rows and changelog on both copies
    if mode != "minor":
        return
    assert _bag(o["our_read2"]["rows"]) == _bag(o["java_read2"]["rows"])
    assert _bag(o["our_log2"]["rows"]) == _bag(o["java_log2"]["rows"])
    assert o["missing2"]["missing"] == []


def test_minor_compaction_creates_deletion_vectors_java_reads(java_tables, tmp_path):
    """Level-0 updates of keys living in the max level: the old rows are marked in the max-level file's deletion
    vector (no rewrite of the big file), the bucket's DV index is one new file replacing the old entry."""
    ours = _copy(java_tables, tmp_path / "ours", "dv_dedup")
    table = FileStoreTable(str(ours.path))
    before = jh.run("scan", ours.payload())
    plan = plan_compaction(table, mode="minor")
    assert plan.tasks and all(t.kind == "lsm" for t in plan.tasks) and any(t.lookup_files for t in plan.tasks)
    max_files = {f["file_name"] for f in before["files"] if f["level"] == 5}
    assert not any(f.name in max_files for t in plan.tasks for f in t.files), "max-level files are not rewritten"
    report = po.Table(table).maintenance.compact(mode="minor").execute()
    assert report.details["rows_marked_deleted"] > 0 and report.details["keys_found"] > 0
    after = jh.run("scan", ours.payload())
    assert {f["file_name"] for f in after["files"] if f["level"] == 5} == max_files
    per_bucket = Counter((ie["partition_path"], ie["bucket"]) for ie in after["index_files"]
                         if ie["index_type"] == "DELETION_VECTORS")
    assert per_bucket and set(per_bucket.values()) == {1}
    assert not any(f["level"] == 0 for f in after["files"]), "lookup compaction moves all of level 0 up"
    old = {r["data_file"]: r["cardinality"] for ie in before["index_files"] for r in ie["dv_ranges"] or []}
    new = {r["data_file"]: r["cardinality"] for ie in after["index_files"] for r in ie["dv_ranges"] or []}
    assert any(new.get(n, 0) > old.get(n, 0) for n in max_files)


def test_refusals(tmp_path):
    """Combinations we cannot do exactly as Java are refused before anything is written (CLI: exit 2)."""
    from paimon_ops.cli import main
    from paimon_ops.table.writer import create_table, write_rows

    wh = str(tmp_path / "wh")
    t = create_table(wh, "db.fr", [("k", "INT"), ("v", "STRING")], primary_keys=["k"],
                     options={"bucket": "1", "merge-engine": "first-row", "changelog-producer": "full-compaction"})
    write_rows(t, {"k": [1, 2], "v": ["a", "b"]})
    with pytest.raises(UnsupportedError, match="first-row"):
        plan_compaction(t, mode="minor")
    assert main(["compact", wh, "db.fr", "--mode", "minor", "--local"]) == 2
    assert po.Table(t).maintenance.compact(mode="full").execute().snapshot_id is not None  # everything to the max level is fine
    ap = create_table(wh, "db.ap", [("k", "INT")], options={"bucket": "-1"})
    write_rows(ap, {"k": [1]})
    assert main(["compact", wh, "db.ap", "--mode", "minor", "--local"]) == 2
