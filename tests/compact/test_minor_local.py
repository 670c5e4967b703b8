"""Minor / lookup compaction on tables we write ourselves: composite string keys (the join path of the lookup
probe), tiny memory budgets (many merge slices, lookups per slice), Spark executors, failure cleanup, changelog
expiry, and the changelog rules on hand-made records (options Java 0.9 does not have)."""
from __future__ import annotations

import json
import os
import random
from collections import Counter

import pyarrow as pa
import pytest

import paimon_ops as po
import paimon_ops.compact.changelog as cl
from paimon_ops.compact.planner import plan_compaction
from paimon_ops.errors import MissingFileError
from paimon_ops.execution.runner import SparkRunner
from paimon_ops.merge.merge import merge_records
from paimon_ops.merge.spec import MergeSpec
from paimon_ops.table.reader import read_file, visible_files
from paimon_ops.table.scan import LiveFile, TableScanner
from paimon_ops.table.table import FileStoreTable
from paimon_ops.table.writer import create_table, write_rows
from tests.interop import java_harness as jh
from tests.interop.java_harness import JavaTable

FIELDS = [("pt", "STRING"), ("k1", "STRING"), ("k2", "INT"), ("v", "BIGINT"), ("s", "STRING")]
OPTS = {"bucket": "2", "deletion-vectors.enabled": "true", "changelog-producer": "lookup", "write-only": "true",
        "num-sorted-run.compaction-trigger": "3"}


def _visible(table: FileStoreTable) -> Counter:
    """What a Java batch reader of a DV table reads: level >= 1 files, raw, deletion vectors applied."""
    sc = TableScanner(table)
    res = sc.scan_latest()
    out = Counter()
    for f in visible_files(sc, res):
        hit = res.dv_of(f)
        t = read_file(sc, f, sc.deletion_vector(*hit) if hit else None, keep_system_columns=False)
        out.update(json.dumps(r) for r in t.to_pylist())
    return out


def _changelog(table: FileStoreTable, snapshot_id: int) -> list[dict]:
    sc = TableScanner(table)
    snap = table.snapshots.snapshot(snapshot_id)
    if not snap.changelog_manifest_list:
        return []
    rows = []
    for e in sc.store.entries_of_list(snap.changelog_manifest_list):
        f = LiveFile(e.partition, e.bucket, e.total_buckets, e.file, sc.data_file_path(e.partition, e.bucket, e.file))
        rows += read_file(sc, f, None).to_pylist()
    return rows


def _batch(rnd: random.Random, n: int, i: int) -> tuple[dict, list[int]]:
    rows = [(rnd.choice(["p", "q"]), rnd.choice(["alpha", "beta", "gamma", "é", "zz"]) + str(rnd.randint(0, 30)),
             rnd.randint(0, 3), rnd.randint(-9, 9), f"r{i}") for _ in range(n)]
    kinds = [3 if rnd.random() < 0.15 else 0 for _ in rows]
    data = {"pt": [r[0] for r in rows], "k1": [r[1] for r in rows], "k2": pa.array([r[2] for r in rows], pa.int32()),
            "v": pa.array([r[3] for r in rows], pa.int64()), "s": [r[4] for r in rows]}
    return data, kinds


def _composite_history(warehouse: str, budget: int | None) -> tuple[FileStoreTable, dict, dict]:
    """Nine rounds of churn on composite string keys, a minor compaction after each; after every compaction the
    visible rows equal the model and the replayed changelog equals it too. Returns (table, model, stats)."""
    rnd = random.Random(7)
    t = create_table(warehouse, "db.c", FIELDS, partition_keys=["pt"], primary_keys=["pt", "k1", "k2"],
                     options={**OPTS, **({"compaction.memory-budget": str(budget)} if budget else {})})
    model: dict[tuple, dict] = {}
    replay: dict[tuple, dict] = {}
    stats = {"slices": 0, "marked": 0}
    for i in range(9):
        data, kinds = _batch(rnd, 400 if i == 0 else 60, i)
        write_rows(t.refresh(), data, kinds)
        for j, kind in enumerate(kinds):
            key = (data["pt"][j], data["k1"][j], data["k2"][j].as_py())
            if kind == 3:
                model.pop(key, None)
            else:
                model[key] = {"pt": key[0], "k1": key[1], "k2": key[2], "v": data["v"][j].as_py(), "s": data["s"][j]}
        r = po.Table(t.refresh()).maintenance.compact(mode="full" if i == 0 else "minor").execute()
        if r.snapshot_id is None:
            continue
        stats["slices"] += r.details.get("merge_slices", 0)
        stats["marked"] += r.details.get("rows_marked_deleted", 0)
        assert _visible(t.refresh()) == Counter(json.dumps(v) for v in model.values())
        for row in _changelog(t.refresh(), r.snapshot_id):
            key = (row["pt"], row["k1"], row["k2"])
            kind = row.pop("_VALUE_KIND")
            row = {c: row[c] for c in ("pt", "k1", "k2", "v", "s")}
            if kind in (1, 3):
                assert replay.pop(key) == row
            else:
                assert kind == 2 or key not in replay
                replay[key] = row
        assert replay == model
    return t.refresh(), model, stats


@pytest.mark.parametrize("budget", [None, 16 << 10])
def test_composite_string_keys_many_slices_model_and_changelog(warehouse, budget):
    _, _, stats = _composite_history(warehouse, budget)
    assert stats["marked"] > 0
    if budget:
        assert stats["slices"] > 30  # the lookups ran per slice


@pytest.mark.java
@pytest.mark.skipif(not jh.java_available(), reason=jh.skip_reason() or "java not available")
def test_composite_string_keys_read_by_java(warehouse):
    _, model, _ = _composite_history(warehouse, 16 << 10)
    rows = JavaTable(warehouse, "db", "c").read()["rows"]
    assert Counter(json.dumps(dict(zip(["pt", "k1", "k2", "v", "s"], r))) for r in rows) ==\
        Counter(json.dumps(v) for v in model.values())


def test_minor_compaction_on_spark_carries_changelog_and_deletion_vectors(spark, warehouse):
    t = create_table(warehouse, "db.s", FIELDS, partition_keys=["pt"], primary_keys=["pt", "k1", "k2"], options=OPTS)
    rnd = random.Random(3)
    write_rows(t, *_batch(rnd, 300, 0))
    po.Table(t.refresh()).maintenance.compact(mode="full").execute(runner=SparkRunner(spark))
    write_rows(t.refresh(), *_batch(rnd, 80, 1))
    before = _visible(t.refresh())
    r = po.Table(t.refresh()).maintenance.compact(mode="minor").execute(runner=SparkRunner(spark))
    assert r.snapshot_id and r.details["changelog_rows"] > 0 and r.details["rows_marked_deleted"] > 0
    assert r.written.get("changelog") and r.written.get("index") == r.details["buckets"]  # one DV file per bucket
    snap = t.refresh().snapshots.latest()
    assert snap.commit_kind == "COMPACT" and snap.changelog_record_count == r.details["changelog_rows"]
    assert _visible(t.refresh()) != before


def test_failed_lookup_task_leaves_nothing(warehouse):
    t = create_table(warehouse, "db.f", FIELDS, partition_keys=["pt"], primary_keys=["pt", "k1", "k2"],
                     options={**OPTS, "bucket": "1"})
    rnd = random.Random(5)
    write_rows(t, *_batch(rnd, 300, 0))
    po.Table(t.refresh()).maintenance.compact(mode="full").execute()
    write_rows(t.refresh(), *_batch(rnd, 50, 1))
    plan = plan_compaction(t.refresh(), mode="minor")
    victim = next(f for task in plan.tasks for f in task.lookup_files)
    root = t.location
    before = {os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs}
    os.rename(victim.path, victim.path + ".hidden")  # the lookup target cannot be read
    latest = t.snapshots.latest_id()
    with pytest.raises(MissingFileError, match="a compaction input"):  # (refused before any task writes)
        po.Table(t.refresh()).maintenance.compact(mode="minor").execute()
    os.rename(victim.path + ".hidden", victim.path)
    after = {os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs}
    assert after == before and t.snapshots.latest_id() == latest


def test_changelog_files_expire_with_their_snapshots(warehouse):
    t = create_table(warehouse, "db.e", FIELDS, partition_keys=["pt"], primary_keys=["pt", "k1", "k2"],
                     options={**OPTS, "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    rnd = random.Random(9)
    write_rows(t, *_batch(rnd, 100, 0))
    r = po.Table(t.refresh()).maintenance.compact(mode="minor").execute()
    paths = [a.path for a in r.files if a.kind == "changelog"]
    assert paths and all(os.path.exists(p) for p in paths)
    write_rows(t.refresh(), *_batch(rnd, 10, 1))
    po.Table(t.refresh()).maintenance.expire_snapshots(retain_max=1, retain_min=1, older_than=10 ** 15).execute()
    assert not any(os.path.exists(p) for p in paths), "expiry deletes the changelog files of expired snapshots"


# ---------------------------------------------------------------------------------------------- the rules

def _records(rows: list[tuple], fields=("k", "v", "w")) -> pa.Table:
    """rows: (kind, seq, level, k, v, w)."""
    return pa.table({"k": pa.array([r[3] for r in rows], pa.int32()), "v": pa.array([r[4] for r in rows], pa.int64()),
                     "w": [r[5] for r in rows],
                     "_SEQUENCE_NUMBER": pa.array([r[1] for r in rows], pa.int64()),
                     "_VALUE_KIND": pa.array([r[0] for r in rows], pa.int8()),
                     "_LEVEL": pa.array([r[2] for r in rows], pa.int32())})


def _spec(warehouse: str, opts: dict) -> MergeSpec:
    t = create_table(warehouse, f"db.r{abs(hash(json.dumps(opts))) % 10000}", [("k", "INT"), ("v", "BIGINT"),
                                                                              ("w", "STRING")],
                     primary_keys=["k"], options={"bucket": "1", **opts})
    return MergeSpec.from_schema(t.schema, t.options, "t")


def _kinds(out: pa.Table | None) -> list[tuple]:
    if out is None:
        return []
    return [(r["_VALUE_KIND"], r["k"], r["v"], r["w"]) for r in out.to_pylist()]


def test_lookup_changelog_rules(warehouse):
    spec = _spec(warehouse, {"changelog-producer": "lookup"})
    cols = ["k", "v", "w", "_SEQUENCE_NUMBER", "_VALUE_KIND"]
    rec = _records([(0, 10, 0, 1, 5, "a"),                      # new key -> +I
                    (0, 11, 0, 2, 6, "b"), (0, 3, 4, 2, 1, "old"),  # update -> -U old, +U new
                    (3, 12, 0, 3, 0, None), (0, 4, 5, 3, 2, "x"),   # delete -> -D old
                    (3, 13, 0, 4, 0, None),                      # delete of nothing -> nothing
                    (0, 14, 0, 5, 9, "same"), (0, 5, 5, 5, 9, "same"),  # equal values (no row-dedup: -U/+U)
                    (0, 6, 3, 6, 1, "hi"),                       # no level-0 record -> nothing
                    (0, 15, 0, 7, 1, "n"), (1, 7, 2, 7, 1, "r")])   # BEFORE is a retract -> +I
    merged = merge_records(rec, spec, False, lookup_rewrite=True)
    info = cl.key_info(rec, ["k"], 5)
    got = _kinds(cl.lookup_changelog(rec, merged, info, ["k"], cols, None))
    assert got == [(0, 1, 5, "a"), (1, 2, 1, "old"), (2, 2, 6, "b"), (3, 3, 2, "x"), (1, 5, 9, "same"),
                   (2, 5, 9, "same"), (0, 7, 1, "n")]
    # changelog-producer.row-deduplicate drops equal pairs; -ignore-fields (master) compares the other fields only
    got = _kinds(cl.lookup_changelog(rec, merged, info, ["k"], cols, ["k", "v", "w"]))
    assert (1, 5, 9, "same") not in got and (2, 2, 6, "b") in got
    got = _kinds(cl.lookup_changelog(rec, merged, info, ["k"], cols, ["k", "v"]))
    assert (2, 2, 6, "b") in got and (1, 5, 9, "same") not in got
    rec2 = _records([(0, 10, 0, 1, 5, "new"), (0, 3, 4, 1, 5, "old")])
    m2 = merge_records(rec2, spec, False, lookup_rewrite=True)
    i2 = cl.key_info(rec2, ["k"], 5)
    assert _kinds(cl.lookup_changelog(rec2, m2, i2, ["k"], cols, ["k", "v"])) == []  # w ignored: equal
    assert len(_kinds(cl.lookup_changelog(rec2, m2, i2, ["k"], cols, ["k", "v", "w"]))) == 2


def test_full_changelog_rules(warehouse):
    spec = _spec(warehouse, {"changelog-producer": "full-compaction"})
    cols = ["k", "v", "w", "_SEQUENCE_NUMBER", "_VALUE_KIND"]
    rec = _records([(0, 1, 5, 1, 1, "top"),                      # only the max-level record -> nothing
                    (0, 2, 3, 2, 2, "mid"),                      # one record below max -> +I
                    (0, 3, 5, 3, 3, "t"), (0, 9, 0, 3, 4, "n"),  # -U/+U
                    (0, 4, 5, 4, 5, "t"), (3, 10, 0, 4, 0, None),  # -D
                    (3, 11, 1, 5, 0, None)])                     # a lone retract -> nothing
    merged = merge_records(rec, spec, False)
    info = cl.key_info(rec, ["k"], 5)
    assert _kinds(cl.full_changelog(rec, merged, info, ["k"], cols, None)) == [
        (0, 2, 2, "mid"), (1, 3, 3, "t"), (2, 3, 4, "n"), (3, 4, 5, "t")]
