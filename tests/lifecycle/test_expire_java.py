"""Differential tests against Java Paimon 0.9: the same tables (written by Java: several commits, updates and
deletes, COMPACT snapshots, a deletion-vector table, an append table with compaction, a changelog-producer=input
table, tags), copied twice; Java's expire_snapshots runs on one copy and ours on the other. The same snapshots and
tags must remain and exactly the same files must remain on disk; afterwards Java and pypaimon read every retained
snapshot and tag with unchanged rows and Java's check_files finds nothing missing that Java itself would not.

Known, intended divergences (tested as OUR behaviour, see each test):
* time rule: Java <= 1.x expires a snapshot when its OWN commit time is older than `now - time_retained`; Paimon
  2.0+ (and we) require its SUCCESSOR to be that old (apache/paimon#7706) -> we keep exactly one more snapshot.
* `snapshot.expire.limit` defaulted to 10 in 0.9 (50 since); the tests pass `max_deletes` explicitly.
* pypaimon 2.1.0 cannot read tables whose manifests Java 0.9 wrote (it requires the 1.0+ `_VALUE_STATS_COLS`
  field; probed on the untouched tables), so pypaimon reads are checked only where it can read the original;
  tests/lifecycle/test_faults.py and the property tests check pypaimon reads on tables we write.
* tags do not protect changelog manifests in either implementation: Java's check_files reports the tag's dangling
  changelog manifest list on Java's copy and ours alike.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import time

import pytest

import paimon_ops as po
from paimon_ops.table.table import FileStoreTable
from tests import pypaimon_util as pu
from tests.interop import java_harness as jh
from tests.interop.java_harness import JavaTable
from tests.lifecycle.helpers import DAY_MS, age_files, copy_table, rel_files, write_consumer

pytestmark = [
    pytest.mark.java,
    pytest.mark.skipif(not jh.java_available(), reason=jh.skip_reason() or "java not available"),
]

FIELDS = [{"name": "pt", "type": "STRING NOT NULL"}, {"name": "k", "type": "INT NOT NULL"},
          {"name": "v", "type": "STRING"}]
HOUR_MS = 3_600_000


def _rows(i: int, n: int = 6) -> list[list]:
    return [[p, (i * 3 + j) % 10, f"v{i}-{j}"] for p in ("a", "b") for j in range(n)]


def _schema(primary_keys, options):
    return {"fields": FIELDS, "partition_keys": ["pt"], "primary_keys": list(primary_keys), "options": options}


def _sorted(rows):
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True))


@pytest.fixture(scope="session")
def java_tables(tmp_path_factory):
    """Four Java-written tables plus Java's reads of every snapshot and tag (the expected rows)."""
    jh.ensure_built()
    wh = tmp_path_factory.mktemp("java-base") / "wh"
    pk, dv, ap, cl = (JavaTable(wh, "db", n) for n in ("pk", "dv", "ap", "cl"))
    pk_batches = []
    for i in range(8):
        b: dict = {"rows": _rows(i)}
        if i in (2, 3):  # updates and a delete
            b = {"rows": _rows(i)[:4] + [["a", 1, None]], "kinds": ["+U"] * 4 + ["-D"]}
        if i in (3, 6):
            b["compact"] = True  # full compaction -> COMPACT snapshot
        pk_batches.append(b)
    # Two JVM calls 2 s apart: the time-rule test needs a gap between two commits that is large compared with
    # the harness' clock emulation (it shifts time_retained by the JVM clock, which keeps running).
    first = jh.run_many([
        ("create_table", pk.payload(schema=_schema(["pt", "k"], {"bucket": "2",
                                                                  "num-sorted-run.compaction-trigger": "3"}))),
        ("write", pk.payload(batches=pk_batches[:4])),
    ])
    gap_after = first[1]["latest_snapshot_id"]
    time.sleep(2.0)
    cmds = [
        ("write", pk.payload(batches=pk_batches[4:], first_commit_identifier=100)),
        ("create_tag", pk.payload(tag="t2", snapshot_id=2)),
        ("create_tag", pk.payload(tag="t5", snapshot_id=5)),
        ("create_table", dv.payload(schema=_schema(["pt", "k"], {"bucket": "1", "deletion-vectors.enabled": "true"}))),
        ("write", dv.payload(batches=[{"rows": _rows(i)} for i in range(5)])),  # APPEND + COMPACT (DV) each
        ("create_tag", dv.payload(tag="d4", snapshot_id=4)),
        ("create_table", ap.payload(schema=_schema([], {"bucket": "-1"}))),
        ("write", ap.payload(batches=[{"rows": _rows(i, 2)} for i in range(4)])),
        ("compact", ap.payload()),
        ("write", ap.payload(batches=[{"rows": _rows(9, 2)}])),
        ("create_tag", ap.payload(tag="a2", snapshot_id=2)),
        ("create_table", cl.payload(schema=_schema(["pt", "k"], {"bucket": "1", "changelog-producer": "input"}))),
        ("write", cl.payload(batches=[{"rows": _rows(i), **({"compact": True} if i == 3 else {})}
                                      for i in range(6)])),
        ("create_tag", cl.payload(tag="c2", snapshot_id=2)),
    ]
    cmds += [("snapshots", t.payload()) for t in (pk, dv, ap, cl)]
    res = jh.run_many(cmds)
    snaps = dict(zip(("pk", "dv", "ap", "cl"), res[-4:]))
    # the expected rows: Java's reads of every snapshot and tag of the untouched tables
    reads, keys = [], []
    for name, t in (("pk", pk), ("dv", dv), ("ap", ap), ("cl", cl)):
        for s in snaps[name]["snapshots"]:
            reads.append(("read", t.payload(snapshot_id=s["id"])))
            keys.append((name, "snapshot_id", s["id"]))
        for tag in snaps[name]["tags"]:
            reads.append(("read", t.payload(tag=tag)))
            keys.append((name, "tag", tag))
    expected = {k: _sorted(r["rows"]) for k, r in zip(keys, jh.run_many(reads))}
    # pypaimon 2.1.0 cannot decode manifests written by Java 0.9 (it requires _VALUE_STATS_COLS, added in 1.0):
    # probe the untouched tables, so only tables it can read at all are compared with pypaimon.
    readable = {}
    for name in ("pk", "dv", "ap", "cl"):
        try:
            pu.read(str(wh), f"db.{name}")
            readable[name] = True
        except KeyError as e:
            readable[name] = False
            assert "_VALUE_STATS_COLS" in str(e)
    return {"wh": str(wh), "snapshots": snaps, "pypaimon_readable": readable, "gap_after": gap_after,
            "expected": expected}


def _copies(java_tables, tmp_path, name):
    src = os.path.join(java_tables["wh"], "db.db", name)
    a = copy_table(src, str(tmp_path / "java"), "db", name)
    b = copy_table(src, str(tmp_path / "ours"), "db", name)
    return a, b, JavaTable(tmp_path / "java", "db", name), JavaTable(tmp_path / "ours", "db", name)


def _check_after(java_tables, name, ours_root, jt_ours, extra_cmds=()):
    """In one JVM: `extra_cmds`, then Java reads of every retained snapshot and tag of our copy (compared with
    Java's reads of the untouched original) and check_files on our copy. pypaimon reads the same snapshots and tags
    where it can read the original at all. Returns [check_files result, *extra results]."""
    table = FileStoreTable(ours_root)
    targets = [("snapshot_id", i) for i in table.snapshots.list_ids()] + [("tag", t) for t in table.tags.names()]
    cmds = list(extra_cmds) + [("read", jt_ours.payload(**{k: v})) for k, v in targets] +\
        [("check_files", jt_ours.payload())]
    res = jh.run_many(cmds)
    extra, res = res[:len(extra_cmds)], res[len(extra_cmds):]
    expected = java_tables["expected"]
    for (k, v), got in zip(targets, res):
        assert _sorted(got["rows"]) == expected[(name, k, v)], f"{name}: {k}={v} reads differently after expiry"
    if java_tables["pypaimon_readable"][name]:
        wh = os.path.dirname(os.path.dirname(ours_root))
        for k, v in targets:
            got = [[r["pt"], r["k"], r["v"]] for r in pu.read(wh, f"db.{name}", **{k: v}).to_pylist()]
            assert _sorted(got) == expected[(name, k, v)], f"{name}: pypaimon reads {k}={v} differently"
    return [res[-1], *extra]


def _missing(m: list[dict], root: str) -> list[tuple]:
    return sorted((os.path.relpath(x["path"], root), x["kind"], x["referenced_by"]) for x in m)


NOW = int(time.time() * 1000) + 10 * DAY_MS  # every snapshot is old: count, limit, tags and consumers decide

SCENARIOS = [
    ("pk", dict(retain_min=1, retain_max=1000, max_deletes=50), None),   # all but the latest; tags t2, t5 protect
    ("pk", dict(retain_min=3, retain_max=1000, max_deletes=4), None),    # snapshot.expire.limit caps
    ("pk", dict(retain_min=2, retain_max=5, max_deletes=50), None),      # retain_max by count
    ("pk", dict(retain_min=1, retain_max=1000, max_deletes=50), 8),      # a consumer pins snapshot 8
    ("dv", dict(retain_min=1, retain_max=1000, max_deletes=50), None),   # DV index files replaced every commit
    ("dv", dict(retain_min=2, retain_max=3, max_deletes=50), None),
    ("ap", dict(retain_min=1, retain_max=1000, max_deletes=50), None),   # append table + compaction
    ("cl", dict(retain_min=1, retain_max=1000, max_deletes=50), None),   # changelog files (not decoupled)
    ("cl", dict(retain_min=2, retain_max=1000, max_deletes=3), None),
]


@pytest.mark.parametrize("name,args,consumer", SCENARIOS,
                         ids=[f"{n}-{'-'.join(f'{k}{v}' for k, v in a.items())}-c{c}" for n, a, c in SCENARIOS])
def test_same_result_as_java(java_tables, tmp_path, name, args, consumer):
    a, b, jt_java, jt_ours = _copies(java_tables, tmp_path, name)
    if consumer is not None:
        write_consumer(FileStoreTable(a), "reader", consumer)
        write_consumer(FileStoreTable(b), "reader", consumer)
    before = FileStoreTable(b).snapshots.list_ids()
    sizes = {os.path.join(d, f): os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(b) for f in fs}
    report = po.Table(FileStoreTable(b)).maintenance.expire_snapshots(now=NOW, min_age=dt.timedelta(hours=1), **args).execute()
    # the report counts real bytes: Java 0.9's snapshots record no manifest list sizes (reported as 0 B before)
    deleted = [f for f in report.files if f.path in sizes and f.kind != "hint"]  # (hints are written)
    assert [(f.path, f.size) for f in deleted] == [(f.path, sizes[f.path]) for f in deleted]
    assert report.deleted_bytes["manifest-list"] == sum(f.size for f in deleted if f.kind == "manifest-list") > 0
    check_ours, java_expired, snaps_java, snaps_ours, check_java = _check_after(java_tables, name, b, jt_ours, [
        ("expire_snapshots", jt_java.payload(now_ms=NOW, time_retained_ms=HOUR_MS, **args)),
        ("snapshots", jt_java.payload()),
        ("snapshots", jt_ours.payload()),
        ("check_files", jt_java.payload()),
    ])
    assert java_expired["expired"] == len(report.details["expired_snapshots"]) > 0
    assert [s["id"] for s in snaps_java["snapshots"]] == [s["id"] for s in snaps_ours["snapshots"]]
    assert snaps_java["tags"] == snaps_ours["tags"]
    assert (snaps_java["earliest"], snaps_java["latest"]) == (snaps_ours["earliest"], snaps_ours["latest"])
    if consumer is not None:
        assert snaps_ours["earliest"] == consumer
    assert len(before) - len(FileStoreTable(b).snapshots.list_ids()) == report.deleted["snapshot"]
    # exactly the same files remain
    assert rel_files(a) == rel_files(b)
    # Java's own expiry leaves the same (only tag changelog references can dangle: tags do not protect changelogs)
    assert _missing(check_ours["missing"], b) == _missing(check_java["missing"], a)
    for path, kind, owner in _missing(check_ours["missing"], b):
        assert owner.startswith("tag-") and name == "cl", (path, kind, owner)
    assert report.deleted_bytes.get("data", 0) > 0 or report.deleted.get("changelog", 0) > 0


def _plant_stale_hints(root: str, case: str) -> None:
    """A LATEST hint left behind by a writer that crashed before updating it (naming an old snapshot, which expiry
    deletes); before a rollback also an EARLIEST hint ahead (naming the newest snapshot, which the rollback deletes —
    before an expiry Java would trust it and expire nothing)."""
    ids = FileStoreTable(root).snapshots.list_ids()
    hints = {"LATEST": ids[0] + 1, **({"EARLIEST": ids[-1]} if case.startswith("rollback") else {})}
    for name, value in hints.items():
        with open(os.path.join(root, "snapshot", name), "w") as f:
            f.write(str(value))


@contextlib.contextmanager
def _failing_at(op: str, k: int):
    """Every FileIO opened meanwhile (the executor opens the plan's table afresh) fails its k-th `op`."""
    from paimon_ops.table.fileio import FileIO, fault_after
    hook, original = fault_after(op, k), FileIO.resolve

    def resolve(location, fault_hook=None, options=None):  # type: ignore[no-untyped-def]
        return original(location, fault_hook or hook, options)
    FileIO.resolve = staticmethod(resolve)  # type: ignore[method-assign]
    try:
        yield
    finally:
        FileIO.resolve = staticmethod(original)  # type: ignore[method-assign]


HINT_CASES = {
    "expire": lambda t: t.maintenance.expire_snapshots(now=NOW, min_age=dt.timedelta(hours=1), retain_min=1,
                                                       retain_max=1000, max_deletes=50),
    "expire-limited": lambda t: t.maintenance.expire_snapshots(now=NOW, min_age=dt.timedelta(hours=1), retain_min=1,
                                                               retain_max=1000, max_deletes=3),
    "rollback-snapshot": lambda t: t.maintenance.rollback(snapshot_id=t.raw.snapshots.list_ids()[-3]),
    "rollback-tag": lambda t: t.maintenance.rollback(tag="t5"),
}


@pytest.mark.parametrize("case", sorted(HINT_CASES))
def test_stale_hints_never_outlive_a_deleting_operation(java_tables, tmp_path, case):
    """A LATEST hint older than the earliest snapshot kept survived expiry: Java 0.9 then resolves the latest
    snapshot to a deleted file, and its next commit takes the id after the stale one. Java's own ExpireSnapshots does
    exactly that (shown on a twin copy). Every operation of ours that deletes snapshot files leaves LATEST and
    EARLIEST naming the newest and the earliest snapshot — LATEST rewritten before the first snapshot file goes, so
    that also a run failing at any file event leaves it right: Java resolves both, and a Java write commits the
    next id."""
    from paimon_ops.table.fileio import InjectedFault
    a, b, jt_java, jt_ours = _copies(java_tables, tmp_path, "pk")
    for root in (a, b):
        _plant_stale_hints(root, case)
    if case.startswith("expire"):  # Java's own expiry keeps the stale hint: its latest is then a deleted snapshot
        args = {"expire": dict(retain_min=1, retain_max=1000, max_deletes=50),
                "expire-limited": dict(retain_min=1, retain_max=1000, max_deletes=3)}[case]
        _, java_after = jh.run_many([("expire_snapshots", jt_java.payload(now_ms=NOW, time_retained_ms=HOUR_MS, **args)),
                                     ("snapshots", jt_java.payload())])
        assert java_after["latest"] not in [s["id"] for s in java_after["snapshots"]]
    HINT_CASES[case](po.Table(FileStoreTable(b))).execute()
    # the same run failing at every file event it makes (writes and deletes), on fresh copies
    failed = []
    for op in ("write", "delete"):
        for k in range(1, 200):
            c = copy_table(os.path.join(java_tables["wh"], "db.db", "pk"), str(tmp_path / f"{op}{k}"), "db", "pk")
            _plant_stale_hints(c, case)
            try:
                with _failing_at(op, k):
                    HINT_CASES[case](po.Table(FileStoreTable(c))).execute()
            except InjectedFault:
                failed.append(c)
                continue
            break  # no k-th event: every one was tried
    assert failed
    roots = [b] + failed
    cmds = [("snapshots", JavaTable(table_path=r).payload()) for r in roots]
    cmds += [("write", JavaTable(table_path=b).payload(batches=[{"rows": _rows(20)}], first_commit_identifier=500)),
             ("snapshots", JavaTable(table_path=b).payload())]
    out = jh.run_many(cmds)
    for root, snaps in zip(roots, out):
        ids = [s["id"] for s in snaps["snapshots"]]
        assert (snaps["earliest"], snaps["latest"]) == (ids[0], ids[-1]), (case, root)
    before, wrote, after = out[0], out[-2], out[-1]
    new = [i for batch in wrote["batches"] for i in batch["snapshot_ids"]]  # (its commit, and its compaction's)
    assert new and new[0] == before["latest"] + 1
    ids = [s["id"] for s in after["snapshots"]]
    assert ids == list(range(ids[0], new[-1] + 1)) and after["latest"] == new[-1]
    with open(os.path.join(b, "snapshot", "EARLIEST")) as f:  # (the hint itself: Java trusts an existing one)
        assert int(f.read()) == before["earliest"]


def test_time_rule_successor_vs_java_own_time(java_tables, tmp_path):
    """OUR rule (Paimon 2.0+): snapshot k may expire only when snapshot k+1 is older than now - time_retained.
    Java 0.9 tests snapshot k's own time and so expires one more snapshot; with the window made equal (Java given
    max_deletes = our window) both leave exactly the same files."""
    name = "pk"
    times = {s["id"]: s["timeMillis"] for s in java_tables["snapshots"][name]["snapshots"]}
    k = java_tables["gap_after"]
    assert times[k + 1] - times[k] >= 1500
    older_than = times[k] + 500  # snapshot k is older than the threshold, its successor k+1 is not
    now = older_than + HOUR_MS
    a, b, jt_java, jt_ours = _copies(java_tables, tmp_path, name)
    report = po.Table(FileStoreTable(b)).maintenance.expire_snapshots(now=now, min_age=dt.timedelta(hours=1), retain_min=1,
                                                              max_deletes=50).execute()
    assert report.details["expired_snapshots"] == list(range(1, k))  # k stays: its successor is too young
    assert report.details["end"] == k
    # Java 0.9 with the same clock expires k as well (own-time rule: documented divergence); with the window made
    # equal (max_deletes = our window) Java leaves exactly our files.
    a2, _, jt_java2, _ = _copies(java_tables, tmp_path / "own", name)
    check, java_own, expired, snaps = _check_after(java_tables, name, b, jt_ours, [
        ("expire_snapshots", jt_java2.payload(now_ms=now, time_retained_ms=HOUR_MS, retain_min=1, max_deletes=50)),
        ("expire_snapshots", jt_java.payload(now_ms=NOW, time_retained_ms=HOUR_MS, retain_min=1,
                                             max_deletes=k - 1)),
        ("snapshots", jt_java.payload())])
    assert java_own["expired"] == k and java_own["earliest"] == k + 1
    assert len(rel_files(a2)) < len(rel_files(b))
    assert expired["expired"] == k - 1 and snaps["earliest"] == k
    assert rel_files(a) == rel_files(b)
    assert check["missing"] == []


def test_orphan_removal_same_as_java(java_tables, tmp_path):
    """Plant orphans (old data file, manifest, index file, statistics file, temp snapshot file; one young orphan)
    after an expiry; Java's remove_orphans and ours delete the same files."""
    name = "dv"
    a, b, jt_java, jt_ours = _copies(java_tables, tmp_path, name)
    args = dict(retain_min=2, retain_max=1000, max_deletes=50)
    po.Table(FileStoreTable(b)).maintenance.expire_snapshots(now=NOW, min_age=dt.timedelta(hours=1), **args).execute()
    jh.run("expire_snapshots", jt_java.payload(now_ms=NOW, time_retained_ms=HOUR_MS, **args))
    planted = ["pt=a/bucket-0/data-orphan-1.parquet", "manifest/manifest-orphan-1", "index/index-orphan-1",
               "statistics/stat-orphan-1", "snapshot/.snapshot-99.0c6e.tmp", "pt=b/bucket-0/young-orphan"]
    for root in (a, b):
        age_files(root, 3 * 86400)
        for p in planted:
            os.makedirs(os.path.dirname(os.path.join(root, p)), exist_ok=True)
            with open(os.path.join(root, p), "wb") as f:
                f.write(b"junk")
        old = time.time() - 3 * 86400
        for p in planted[:-1]:
            os.utime(os.path.join(root, p), (old, old))
    now = int(time.time() * 1000)
    threshold = now - 2 * DAY_MS
    java_deleted = jt_java.remove_orphans(older_than_ms=threshold)
    report = po.Table(FileStoreTable(b)).maintenance.remove_orphans(min_age=dt.timedelta(days=2), now=now).execute()
    ours = sorted(os.path.relpath(f.path, b) for f in report.files if f.kind != "directory")
    assert ours == sorted(os.path.relpath(p, a) for p in java_deleted)
    assert set(ours) == set(planted[:-1])
    assert rel_files(a) == rel_files(b)
    (check,) = _check_after(java_tables, name, b, jt_ours)
    assert check["missing"] == []


def test_spark_placement_same_as_in_process_and_java(java_tables, spark, tmp_path):
    """Expiry, then orphan removal, on three copies of Java's pk table: Java 0.9, ours in-process, ours placed on
    Spark (local[2]: deltas decoded and referenced names joined on executors, deletes there through the deleter).
    The two reports of ours are identical, all three copies keep the same files, and Java reads every retained
    snapshot and tag of the Spark copy with the rows it read before, its check_files finding nothing missing."""
    from paimon_ops.execution.runner import LocalRunner, SparkRunner
    from tests.lifecycle.test_spark_placement import comparable, expire_snapshots, remove_orphans
    name = "pk"
    a, b, jt_java, _ = _copies(java_tables, tmp_path, name)
    c = copy_table(os.path.join(java_tables["wh"], "db.db", name), str(tmp_path / "spark"), "db", name)
    jt_spark = JavaTable(tmp_path / "spark", "db", name)
    args = dict(retain_min=2, retain_max=1000, max_deletes=50)
    spark_runner = SparkRunner(spark)
    r_local = expire_snapshots(FileStoreTable(b), now_millis=NOW, time_retained=dt.timedelta(hours=1), runner=LocalRunner(),
                               **args)
    r_spark = expire_snapshots(FileStoreTable(c), now_millis=NOW, time_retained=dt.timedelta(hours=1), runner=spark_runner,
                               parallel_threshold=1, **args)
    assert r_spark.runner["where"].startswith("Spark") and r_local.deleted["data"] > 0
    assert comparable(r_local, b) == comparable(r_spark, c)
    jh.run("expire_snapshots", jt_java.payload(now_ms=NOW, time_retained_ms=HOUR_MS, **args))
    assert rel_files(a) == rel_files(b) == rel_files(c)
    planted = ["pt=a/bucket-0/data-orphan-1.parquet", "manifest/manifest-orphan-1", "snapshot/.snapshot-99.tmp"]
    for root in (a, b, c):
        for p in planted:
            with open(os.path.join(root, p), "wb") as f:
                f.write(b"junk")
        age_files(root, 3 * 86400)
    now = int(time.time() * 1000)
    java_deleted = jt_java.remove_orphans(older_than_ms=now - 2 * DAY_MS)
    o_local = remove_orphans(FileStoreTable(b), older_than=dt.timedelta(days=2), now_millis=now, runner=LocalRunner())
    o_spark = remove_orphans(FileStoreTable(c), older_than=dt.timedelta(days=2), now_millis=now, runner=spark_runner,
                             parallel_threshold=1)
    assert comparable(o_local, b) == comparable(o_spark, c)
    assert sorted(os.path.relpath(f.path, c) for f in o_spark.files if f.kind != "directory") ==\
        sorted(os.path.relpath(p, a) for p in java_deleted) == sorted(planted)
    assert rel_files(a) == rel_files(b) == rel_files(c)
    (check,) = _check_after(java_tables, name, c, jt_spark)
    assert check["missing"] == []
