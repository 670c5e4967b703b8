"""Postpone-bucket compaction of tables written by pypaimon 2.1.0 (several writers and commits into
`bucket-postpone`), read back by pypaimon 2.1.0 and pypaimon-rust 0.4.0.

The expected rows come from pypaimon itself: every history is also written, commit for commit, into a twin table
with the same options but a fixed `bucket` = N, which pypaimon routes and merges on its own; our compaction of the
postpone table must read exactly as pypaimon reads its twin, and every key must sit in the bucket pypaimon put it in.
"""
from __future__ import annotations

import json

import pyarrow as pa
import pytest

import paimon_ops as po
from paimon_ops.cli import main
from paimon_ops.compact.postpone import (
    bucket_num_by_rows,
    plan_postpone_compaction,
    replay_order,
    resolve_bucket_count,
    writer_prefix,
)
from paimon_ops.errors import InvalidOptionError, StalePlanError, UnsupportedError
from paimon_ops.execution.plan import Plan
from paimon_ops.execution.runner import LocalRunner
from paimon_ops.table.reader import read_file
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import FileStoreTable, FileSystemCatalog
from tests import pypaimon_util as pu

SCHEMA = pa.schema([("pt", pa.string()), ("id", pa.int32()), ("a", pa.int64()), ("b", pa.string()),
                    ("rk", pa.string())])
N = 3


def rust_rows(warehouse: str, ident: str, snapshot_id: int | None = None) -> list[dict]:
    from pypaimon_rust.datafusion import PaimonCatalog
    t = PaimonCatalog({"warehouse": str(warehouse)}).get_table(ident)
    rb = t.new_read_builder({"scan.snapshot-id": str(snapshot_id)} if snapshot_id else None)
    plan = rb.new_scan().plan()
    batches = rb.new_read().read(plan.splits()) if len(plan) else []
    return _sorted(pa.Table.from_batches(batches).to_pylist() if batches else [])


def _sorted(rows: list[dict]) -> list[dict]:
    return sorted(({k: r[k] for k in ("pt", "id", "a", "b")} for r in rows), key=lambda r: (r["pt"], r["id"], str(r["a"]), str(r["b"])))


def py_rows(warehouse: str, ident: str) -> list[dict]:
    return _sorted(pu.read(warehouse, ident).to_pylist())


def _batch(pt, ids, a, b, rk=None) -> dict:
    return {"pt": pt if isinstance(pt, list) else [pt] * len(ids), "id": ids, "a": a, "b": b,
            "rk": rk or ["+I"] * len(ids)}


ROUND_1 = [  # (commit: [writer batches]) — writers of one commit hold disjoint keys (they have no order)
    [_batch("x", list(range(40)), list(range(40)), [f"w1-{i}" for i in range(40)])],
    [_batch("x", [1, 2, 3, 50], [10, None, 30, 500], ["u1", "u2", None, "n50"]),
     _batch("y", list(range(20)), list(range(100, 120)), ["y"] * 20)],
    [_batch("x", [2, 4, 50], [20, 40, 5000], ["again", "del", "n50b"], ["+U", "-D", "+I"])],
]
ROUND_2 = [
    [_batch("x", [1, 7, 60], [11, 77, 600], ["r2", "r2", "n60"]),
     _batch("z", [1, 2], [1, 2], ["z", "z"])],
    [_batch("y", [3, 4], [None, 44], ["y2", None], ["-D", "+U"])],
]


def _write(table, commits: list[list[dict]], retractions: bool = True) -> None:
    for commit in commits:
        if not retractions:
            commit = [{k: [v for v, rk in zip(vs, d["rk"]) if rk != "-D"] for k, vs in d.items()} for d in commit]
        wb = table.new_batch_write_builder()
        writers = [wb.new_write() for _ in commit]
        c = wb.new_commit()
        try:
            msgs = []
            for w, data in zip(writers, commit):
                w.write_arrow(pa.Table.from_pydict(data, schema=SCHEMA))
                msgs += w.prepare_commit()
            c.commit(msgs)
        finally:
            for w in writers:
                w.close()
            c.close()


SHAPES = {
    "dedup": {},
    "deletion_vectors": {"deletion-vectors.enabled": "true"},
    "lookup_changelog": {"changelog-producer": "lookup"},
    "input_changelog": {"changelog-producer": "input"},
    "partial_update": {"merge-engine": "partial-update"},
    "aggregation": {"merge-engine": "aggregation", "fields.a.aggregate-function": "sum",
                    "fields.b.aggregate-function": "last_non_null_value"},
    "first_row": {"merge-engine": "first-row"},
}
RETRACT_FREE = {"partial_update", "aggregation", "first_row"}  # engines pypaimon reads only without retractions


def _key_buckets(table: FileStoreTable) -> dict[tuple, tuple[int, int]]:
    """(pt, id) -> (bucket, total buckets) of every live row of the latest snapshot (real buckets only)."""
    scanner = TableScanner(table)
    out: dict[tuple, tuple[int, int]] = {}
    for f in scanner.scan_latest().files:
        if f.bucket < 0:
            continue
        t = read_file(scanner, f)
        for pt, i in zip(t.column("pt").to_pylist(), t.column("id").to_pylist()):
            out[(pt, i)] = (f.bucket, f.total_buckets)
    return out


@pytest.mark.parametrize("shape", list(SHAPES))
def test_postpone_compaction_reads_as_pypaimon_reads_its_fixed_bucket_twin(warehouse, shape):
    base = {"rowkind.field": "rk", **SHAPES[shape]}
    pp = pu.create_table(warehouse, "db.pp", SCHEMA, ["pt"], ["pt", "id"],
                         {**base, "bucket": "-2", "postpone.default-bucket-num": str(N)})
    twin_opts = {**base, "bucket": str(N)}
    if shape == "deletion_vectors":  # pypaimon's level-0 files are invisible with DVs: the twin reads without them
        twin_opts.pop("deletion-vectors.enabled")
    twin = pu.create_table(warehouse, "db.twin", SCHEMA, ["pt"], ["pt", "id"], twin_opts)
    catalog = FileSystemCatalog(warehouse)
    visible: list[dict] = []
    for n, commits in enumerate((ROUND_1, ROUND_2)):
        _write(pp, commits, shape not in RETRACT_FREE)
        _write(twin, commits, shape not in RETRACT_FREE)
        assert py_rows(warehouse, "db.pp") == visible  # rows waiting in bucket-postpone are hidden from readers
        table = catalog.get_table("db.pp")
        plan = Plan.from_json(plan_postpone_compaction(table).to_json())  # the apply round trip
        assert plan.segments and all(a.path.count("/bucket-postpone/") for a in plan.deletes)
        report = plan.execute(runner=LocalRunner())
        if shape == "first_row":  # first-row readers skip level 0 too: the twin is read after a full compaction
            po.Table(catalog.get_table("db.twin")).maintenance.compact().execute(runner=LocalRunner())
        expected = py_rows(warehouse, "db.twin")
        assert py_rows(warehouse, "db.pp") == expected, f"round {n + 1}: pypaimon"
        assert rust_rows(warehouse, "db.pp") == expected, f"round {n + 1}: pypaimon-rust"
        visible = expected
        table = table.refresh()
        result = TableScanner(table).scan_latest()
        assert result.snapshot.commit_kind == "COMPACT"
        assert not [f for f in result.files if f.bucket == -2], "every postpone file moved"
        # each key in the bucket pypaimon's own writer put it in (the twin), with the partition's count
        ours, theirs = _key_buckets(table), _key_buckets(catalog.get_table("db.twin"))
        assert {k: v for k, v in ours.items() if k in theirs} == {k: theirs[k] for k in ours if k in theirs}
        assert {v[1] for v in ours.values()} == {N}
        if shape in ("lookup_changelog", "input_changelog"):
            assert report.details["changelog_files"] > 0 and result.snapshot.changelog_manifest_list
        if shape == "deletion_vectors":
            assert {f.level for f in result.files} - {0} and not [f for f in result.files if f.level == 0]
            if n:
                assert report.details["dv_index_files_written"] >= 1  # updated keys marked in the levels above
    # pypaimon writes more (postpone rows again) and reads; a third compaction keeps the known count
    _write(pp, [[_batch("x", [5], [55], ["late"])]])
    _write(twin, [[_batch("x", [5], [55], ["late"])]])
    po.Table(catalog.get_table("db.pp")).maintenance.compact_postpone().execute(runner=LocalRunner())
    if shape == "first_row":
        po.Table(catalog.get_table("db.twin")).maintenance.compact().execute(runner=LocalRunner())
    assert py_rows(warehouse, "db.pp") == py_rows(warehouse, "db.twin") == rust_rows(warehouse, "db.pp")


def test_lookup_changelog_rows(warehouse):
    """changelog-producer=lookup: the first move emits +I per visible key; later moves -U/+U for updated keys and
    -D for deleted ones (Paimon's LookupChangelogMergeFunctionWrapper)."""
    pp = pu.create_table(warehouse, "db.cl", SCHEMA, ["pt"], ["pt", "id"],
                         {"rowkind.field": "rk", "bucket": "-2", "changelog-producer": "lookup"})
    table = FileSystemCatalog(warehouse).get_table("db.cl")

    def changelog(t: FileStoreTable) -> list[tuple]:
        from paimon_ops.format.datafile import VALUE_KIND
        scanner = TableScanner(t)
        snap = t.snapshots.latest()
        rows = []
        for e in scanner.store.entries_of_list(snap.changelog_manifest_list):
            f = type(scanner.scan(snap).files[0])(e.partition, e.bucket, e.total_buckets, e.file,
                                                  scanner.data_file_path(e.partition, e.bucket, e.file))
            d = read_file(scanner, f)
            rows += list(zip(d.column(VALUE_KIND).to_pylist(), d.column("id").to_pylist(), d.column("a").to_pylist()))
        return sorted(rows, key=lambda r: (r[1], r[0]))

    _write(pp, [[_batch("x", [1, 2, 3], [1, 2, 3], ["a"] * 3)]])
    po.Table(table).maintenance.compact_postpone().execute(runner=LocalRunner())
    assert changelog(table.refresh()) == [(0, 1, 1), (0, 2, 2), (0, 3, 3)]
    _write(pp, [[_batch("x", [1, 2, 4], [10, 2, 4], ["a", "a", "a"], ["+U", "-D", "+I"])]])
    po.Table(table.refresh()).maintenance.compact_postpone().execute(runner=LocalRunner())
    assert changelog(table.refresh()) == [(1, 1, 1), (2, 1, 10), (3, 2, 2), (0, 4, 4)]


def test_bucket_count_from_target_row_num_per_bucket(warehouse):
    """Paimon's own case (PostponeBucketTableITCase#testCompactWithTargetRowNumPerBucket): 100 and 450 rows with a
    target of 200 rows per bucket -> 1 and 3 buckets; the partition keeps its count afterwards."""
    s = pa.schema([("pt", pa.int32()), ("k", pa.int32()), ("v", pa.int32())])
    t = pu.create_table(warehouse, "db.target", s, ["pt"], ["pt", "k"],
                        {"bucket": "-2", "postpone.target-row-num-per-bucket": "200"})
    pu.write(t, {"pt": [0] * 100 + [1] * 450, "k": list(range(100)) + list(range(450)),
                 "v": list(range(100)) + list(range(450))})
    table = FileSystemCatalog(warehouse).get_table("db.target")
    report = po.Table(table).maintenance.compact_postpone().execute(runner=LocalRunner())
    assert sorted((p["partition"]["pt"], p["buckets"]) for p in report.details["partitions"]) == [(0, 1), (1, 3)]
    buckets = {}
    for f in TableScanner(table.refresh()).scan_latest().files:
        buckets.setdefault(f.partition, set()).add((f.bucket, f.total_buckets))
    assert sorted(len(v) for v in buckets.values()) == [1, 3]
    assert len(pu.read(warehouse, "db.target")) == 550
    pu.write(pu.get_table(warehouse, "db.target"), {"pt": [0] * 300, "k": list(range(300)), "v": [1] * 300})
    plan = plan_postpone_compaction(table.refresh())
    assert [(p["buckets"], p["bucket_count_from"]) for p in plan.details["partitions"]] ==\
        [(1, "known: the partition's existing buckets")]


def test_bucket_count_rules_and_writer_order(warehouse):
    # PostponeUtilsTest#testComputeBucketNumByRowCount
    assert [bucket_num_by_rows(r, t) for r, t in [(0, 100), (1, 100), (100, 100), (101, 100), (999, 200),
                                                  (1000, 200)]] == [1, 1, 1, 2, 5, 5]
    with pytest.raises(InvalidOptionError, match="target-row-num-per-bucket"):
        bucket_num_by_rows(2 ** 62, 1)
    with pytest.raises(InvalidOptionError):
        bucket_num_by_rows(10, 0)
    assert writer_prefix("data--u-user-s-7-w-uuid-3.avro") == "data--u-user-s-7-w-"
    with pytest.raises(UnsupportedError, match="writer"):
        writer_prefix("data-1234-0.parquet")
    t = pu.create_table(warehouse, "db.rules", SCHEMA, ["pt"], ["pt", "id"], {"bucket": "-2"})
    _write(t, ROUND_1)
    table = FileSystemCatalog(warehouse).get_table("db.rules")
    assert resolve_bucket_count(table, b"p", {}, 5) == (1, "postpone.default-bucket-num 1 (default)")
    assert resolve_bucket_count(table, b"p", {b"p": 7}, 5)[0] == 7
    files = [f for f in TableScanner(table).scan_latest().files if f.bucket == -2]
    order = replay_order(files)
    # one writer's files stay together, in creation order; writers by their first file
    prefixes = [writer_prefix(f.name) for f in order]
    assert prefixes == sorted(prefixes, key=prefixes.index) and len(set(prefixes)) == 4
    assert all(a.meta.creation_time <= b.meta.creation_time for a, b in zip(order, order[1:])
               if writer_prefix(a.name) == writer_prefix(b.name))


def test_compaction_of_a_postpone_table_moves_the_waiting_rows_first(warehouse, capsys):
    """`compact` on a postpone-bucket table with rows waiting does what Java's compact procedure does there: the
    postpone compaction (every face: the CLI here, the facade and Dagster through the same planner); a saved plan is
    re-planned by the compaction that made it."""
    pu.create_table(warehouse, "db.plain", SCHEMA, ["pt"], ["pt", "id"], {"bucket": "-2"})
    _write(pu.get_table(warehouse, "db.plain"), ROUND_1[:1])
    # the CLI round trip: dry run as JSON -> apply
    assert main(["compact", warehouse, "db.plain", "--mode", "full", "--dry-run", "--json"]) == 0
    plan_json = capsys.readouterr().out
    saved = json.loads(plan_json)
    assert saved["operation"] == "compact_postpone" and saved["planned_by"] == "compact"
    assert any("moves them into real buckets first" in w and "compact again for full compaction" in w
               for w in saved["warnings"])
    assert py_rows(warehouse, "db.plain") == []  # the dry run changed nothing
    path = f"{warehouse}/plan.json"
    with open(path, "w") as f:
        f.write(plan_json)
    assert main(["apply", path, "--local", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["details"]["postpone_rows_moved"] == 40
    assert len(py_rows(warehouse, "db.plain")) == 40
    assert main(["apply", path, "--local"]) == 2  # applied once: its inputs are gone
    assert "no longer live" in capsys.readouterr().err
    _write(pu.get_table(warehouse, "db.plain"), ROUND_1[1:2])  # more rows wait: compact moves them, as the facade does
    report = po.Table(FileSystemCatalog(warehouse).get_table("db.plain")).maintenance.compact(mode="minor").execute()
    assert report.operation == "compact_postpone" and report.details["postpone_rows_moved"] > 0
    assert rust_rows(warehouse, "db.plain") == py_rows(warehouse, "db.plain") and py_rows(warehouse, "db.plain")
    assert main(["compact", warehouse, "db.plain"]) == 0  # nothing pending: the real buckets compact as usual


def test_stale_plan_and_concurrent_postpone_writes(warehouse):
    t = pu.create_table(warehouse, "db.stale", SCHEMA, ["pt"], ["pt", "id"], {"bucket": "-2"})
    _write(t, ROUND_1)
    table = FileSystemCatalog(warehouse).get_table("db.stale")
    po.Table(table).maintenance.compact_postpone().execute(runner=LocalRunner())
    _write(t, ROUND_2)
    plan = plan_postpone_compaction(table.refresh())
    # rows written to bucket-postpone after planning do not make the plan stale: they wait for the next run
    _write(t, [[_batch("x", [70], [7], ["later"])]])
    plan.execute(runner=LocalRunner())
    assert (("x", 70) not in {(r["pt"], r["id"]) for r in py_rows(warehouse, "db.stale")})
    # a second plan made before another job moved the same rows is refused, nothing written
    p2 = plan_postpone_compaction(table.refresh())
    other = plan_postpone_compaction(table.refresh())
    other.execute(runner=LocalRunner())
    before = sorted(p for p in _files(table))
    with pytest.raises(StalePlanError, match="no longer live"):
        p2.execute(runner=LocalRunner())
    assert sorted(p for p in _files(table)) == before
    assert ("x", 70) in {(r["pt"], r["id"]) for r in py_rows(warehouse, "db.stale")}


def _files(table: FileStoreTable) -> list[str]:
    return [st.path for st in table.io.walk_files(table.root)]


def test_on_spark(warehouse, spark):
    from paimon_ops.execution.runner import SparkRunner
    t = pu.create_table(warehouse, "db.spark", SCHEMA, ["pt"], ["pt", "id"],
                        {"bucket": "-2", "postpone.default-bucket-num": "2", "deletion-vectors.enabled": "true"})
    _write(t, ROUND_1)
    report = po.Table(FileSystemCatalog(warehouse).get_table("db.spark")).maintenance.compact_postpone().execute(runner=SparkRunner(spark))
    assert report.snapshot_id and report.details["buckets_compacted"] >= 1
    assert py_rows(warehouse, "db.spark") == rust_rows(warehouse, "db.spark")
    assert len(py_rows(warehouse, "db.spark")) == 61  # no rowkind.field here: the "-D" row is an insert


def test_partition_expiry_of_a_postpone_table(warehouse):
    """An expired partition loses its real buckets and its waiting postpone rows (Java's dropPartitions); the other
    partitions keep theirs, and their postpone rows still move afterwards."""
    from datetime import datetime, timedelta, timezone

    s = pa.schema([("dt", pa.string()), ("id", pa.int32()), ("v", pa.string())])
    t = pu.create_table(warehouse, "db.exp", s, ["dt"], ["dt", "id"], {"bucket": "-2"})
    pu.write(t, {"dt": ["2024-01-01", "2024-01-09"], "id": [1, 1], "v": ["old", "new"]})
    table = FileSystemCatalog(warehouse).get_table("db.exp")
    po.Table(table).maintenance.compact_postpone().execute(runner=LocalRunner())
    pu.write(t, {"dt": ["2024-01-01", "2024-01-09"], "id": [2, 2], "v": ["old-pending", "new-pending"]})
    now = int(datetime(2024, 1, 10, tzinfo=timezone.utc).timestamp() * 1000)
    report = po.Table(table.refresh()).maintenance.expire_partitions(now=now, expiration_time=timedelta(days=3)).execute()
    assert [p["partition"] for p in report.details["expired_partitions"]] == [{"dt": "2024-01-01"}]
    left = TableScanner(table.refresh()).scan_latest().files
    assert {(f.bucket, TableScanner(table).partition_dir(f.partition)) for f in left} ==\
        {(0, "dt=2024-01-09/"), (-2, "dt=2024-01-09/")}
    po.Table(table.refresh()).maintenance.compact_postpone().execute(runner=LocalRunner())
    expected = [{"dt": "2024-01-09", "id": 1, "v": "new"}, {"dt": "2024-01-09", "id": 2, "v": "new-pending"}]
    assert pu.sorted_rows(pu.read(warehouse, "db.exp"), ["dt", "id"]) == expected


def test_a_failed_route_task_removes_what_the_others_wrote(warehouse):
    """One partition's postpone file cannot be read: the run fails naming it, the other partitions' outputs are
    removed through the deletion path, nothing is committed, and pypaimon reads the table as before."""
    from paimon_ops.errors import CompactionTaskError
    t = pu.create_table(warehouse, "db.fail", SCHEMA, ["pt"], ["pt", "id"], {"bucket": "-2"})
    _write(t, ROUND_1 + [[_batch("y", [1, 2, 3], [1, 2, 3], ["y1", "y2", "y3"])]])
    table = FileSystemCatalog(warehouse).get_table("db.fail")
    plan = plan_postpone_compaction(table)
    assert len(plan.segments) >= 2
    victim = next(p for p in sorted(_files(table)) if "/pt=y/bucket-postpone/" in p and p.endswith(".avro"))
    with open(victim, "r+b") as f:  # garbled after planning: the plan's size and name still match
        f.seek(16)
        f.write(b"\xff" * 32)
    before, rows = sorted(_files(table)), py_rows(warehouse, "db.fail")
    with pytest.raises(CompactionTaskError, match=r"postpone compaction \(routing\) of db.fail failed in 1 of \d+ "
                                                  r"task\(s\); nothing was committed .* First failure \(partition \{'pt': 'y'\}"):
        plan.execute(runner=LocalRunner())
    assert sorted(_files(table)) == before and py_rows(warehouse, "db.fail") == rows
