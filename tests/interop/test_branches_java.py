"""Branches and consumers proven against Java Paimon 0.9 on twin tables: one history written by Java, copied; ours
runs on one copy, Java's own procedure on the other. Java reads every branch, tag and snapshot that should remain
with identical rows, Java's check_files passes on every branch, and the files left equal what Java leaves — for
create_branch (from a tag), delete_branch (Java's delete_branch removes the directory only: its twin is followed by
Java's remove_orphan_files), fast_forward, reset_consumer and, on a branch named `t$branch_b`, compaction, snapshot
expiry, tag creation and deletion and orphan removal. What 0.9 lacks (rename_branch, create_branch from a snapshot,
clear_consumers) is proven by Java 0.9, pypaimon 2.1.0 and pypaimon-rust 0.4.0 reading the result."""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

import paimon_ops as po
from paimon_ops.cli import main as cli_main
from tests import pypaimon_util as pu
from tests.interop import java_harness as jh
from tests.interop.java_harness import JavaTable

pytestmark = [
    pytest.mark.java,
    pytest.mark.skipif(not jh.java_available(), reason=jh.skip_reason() or "java not available"),
]

FIELDS = [("pt", "STRING NOT NULL"), ("k", "INT NOT NULL"), ("v", "STRING")]
HINTS = ("EARLIEST", "LATEST")


def _rows(pt: str, ks, tag: str) -> list[list]:
    return [[pt, k, f"{tag}{k}"] for k in ks]


def _build(wh: str, options: dict | None = None) -> JavaTable:
    """Java writes main: snapshots 1..2, tag t1 at 2, then more writes and a full compaction (main moves on)."""
    j = JavaTable(wh, "db", "t")
    j.create(FIELDS, partition_keys=["pt"], primary_keys=["pt", "k"], options={"bucket": 2, **(options or {})})
    jh.run_many([
        ("write", j.payload(batches=[{"rows": _rows("a", range(6), "m")}, {"rows": _rows("b", range(4), "m")}])),
        ("create_tag", j.payload(tag="t1", snapshot_id=2)),
        ("write", j.payload(batches=[{"rows": _rows("a", range(3, 9), "n"), "compact": True}])),
    ])
    return j


def _branch_writes(j: JavaTable, name: str = "b", compact: bool = True) -> None:
    """Java writes on the branch (created from t1): two batches, the second compacted."""
    jb = j.branch(name)
    jh.run_many([("write", jb.payload(batches=[{"rows": _rows("a", range(20, 24), "x")},
                                               {"rows": _rows("c", range(3), "x"), "compact": compact}]))])


def _twin(src: str, dst: str) -> JavaTable:
    shutil.copytree(src, dst)
    return JavaTable(dst, "db", "t")


def _files(j: JavaTable, hints: bool = True) -> set[str]:
    out = set()
    for d, _, names in os.walk(j.path):
        for n in names:
            rel = os.path.relpath(os.path.join(d, n), j.path)
            if rel.startswith(".paimon-ops") or (not hints and n in HINTS):
                continue
            out.add(rel)
    return out


def _bytes(j: JavaTable, rel: str) -> bytes:
    return (j.path / rel).read_bytes()


def _everything_read(j: JavaTable) -> dict:
    """What Java reads of every branch: each snapshot and tag (rows; a branch's tags through the branch's own tag
    manager: 0.9's scan.tag-name looks them up in main), and check_files (nothing missing)."""
    branches = [None] + j.branches()
    snaps = jh.run_many([("snapshots", (j if b is None else j.branch(b)).payload()) for b in branches])
    cmds, keys = [], []
    out = {}
    for b, s in zip(branches, snaps):
        t = j if b is None else j.branch(b)
        for snap in s["snapshots"]:
            cmds.append(("read", t.payload(snapshot_id=snap["id"])))
            keys.append((b, "snapshot", snap["id"]))
        for name in s["tags"]:
            cmds.append(("read", t.payload(tag=name, tag_snapshot=b is not None or None)))
            keys.append((b, "tag", name))
        cmds.append(("check_files", t.payload()))
        keys.append((b, "check", None))
    for key, res in zip(keys, jh.run_many(cmds)):
        if key[1] == "check":
            assert res["missing"] == [], (key, res["missing"])
            ident = "db.t" if key[0] is None else f"db.t$branch_{key[0]}"
            assert cli_main(["files", j.base["warehouse"], ident, "--check"]) == 0, ident  # ours agrees
        else:
            out[key] = sorted(res["rows"], key=json.dumps)
    return out


def _ours(wh: str, ident: str = "db.t") -> po.Table:
    return po.Catalog(wh).get_table(ident)


# ---------------------------------------------------------------------------------------------- create / delete
def test_create_from_tag_and_delete_equal_java_twins(tmp_path):
    a = _build(str(tmp_path / "a"))
    b = _twin(str(tmp_path / "a"), str(tmp_path / "b"))
    _ours(str(tmp_path / "a")).maintenance.create_branch("b", tag="t1").execute()
    b.create_branch("b", tag="t1")
    assert _files(a) == _files(b)
    assert all(_bytes(a, f) == _bytes(b, f) for f in _files(a) if f.startswith("branch/"))
    # the branch as Java reads it: the tag's rows, on both
    assert _everything_read(a) == _everything_read(b)

    # Java writes on the branch; then the twins part again: ours deletes it, Java deletes it and removes orphans
    _branch_writes(a)
    shutil.rmtree(tmp_path / "b")
    b = _twin(str(tmp_path / "a"), str(tmp_path / "b"))
    before = _everything_read(a)
    plan = _ours(str(tmp_path / "a")).maintenance.delete_branch("b")
    assert plan.counts().get("data", 0) >= 2  # the branch's own files go with it
    plan.execute()
    b.delete_branch("b")
    b.remove_orphans(older_than_ms=int(time.time() * 1000) + 86_400_000)
    assert _files(a) == _files(b)
    after = _everything_read(a)
    assert after == {k: v for k, v in before.items() if k[0] is None} and a.branches() == []


def test_delete_keeps_what_main_and_another_branch_need(tmp_path):
    """A branch created from another branch's tag shares that branch's files; main deleted the tag the first branch
    was made from and expired: deleting the first branch must leave main and the second readable by Java."""
    a = _build(str(tmp_path / "a"))
    t = _ours(str(tmp_path / "a"))
    t.maintenance.create_branch("b", tag="t1").execute()
    _branch_writes(a)
    bt = _ours(str(tmp_path / "a"), "db.t$branch_b")
    bt.tags.create("bt").execute()
    bt.maintenance.create_branch("child", tag="bt").execute()
    t.maintenance.delete_tags(["t1"]).execute()
    t.maintenance.expire_snapshots(retain_min=1, retain_max=1, older_than=int(time.time() * 1000) + 1).execute()
    before = _everything_read(a)
    b = _twin(str(tmp_path / "a"), str(tmp_path / "b"))
    t.maintenance.delete_branch("b").execute()
    b.delete_branch("b")
    b.remove_orphans(older_than_ms=int(time.time() * 1000) + 86_400_000)
    assert _files(a) == _files(b)
    assert _everything_read(a) == {k: v for k, v in before.items() if k[0] != "b"}
    assert a.branches() == ["child"]


# ---------------------------------------------------------------------------------------------- fast-forward
def test_fast_forward_equals_the_java_twin_and_java_reads_main_as_the_branch(tmp_path):
    a = _build(str(tmp_path / "a"))
    a.create_branch("b", tag="t1")
    _branch_writes(a)
    jh.run_many([("write", a.branch("b").payload(batches=[{"rows": _rows("d", range(2), "y")}] * 2))])
    latest_main = a.snapshots()["latest"]
    a.create_tag("late", latest_main)  # a tag after the branch point: fast-forward removes it, as Java does
    b = _twin(str(tmp_path / "a"), str(tmp_path / "b"))
    branch_reads = {k[1:]: v for k, v in _everything_read(a).items() if k[0] == "b"}
    plan = _ours(str(tmp_path / "a")).maintenance.fast_forward("b")
    assert plan.details["removed_tags"] == ["late"] and plan.details["branch_point"] == 2
    plan.execute()
    b.fast_forward("b")
    # the same files; the same bytes except the EARLIEST hint, which Java copies from the branch (naming snapshot
    # 2 while snapshot 1 survives) and ours writes right
    assert _files(a) == _files(b)
    assert [f for f in _files(a) if _bytes(a, f) != _bytes(b, f)] in ([], ["snapshot/EARLIEST"])
    ours, java = a.snapshots(), b.snapshots()
    assert ours["earliest"] == 1 and ours["latest"] == java["latest"] == a.branch("b").snapshots()["latest"]
    reads = _everything_read(a)
    for (kind, key), rows in branch_reads.items():
        assert reads[(None, kind, key)] == rows, (kind, key)  # main reads exactly as the branch did
    assert reads[(None, "snapshot", 1)]  # and keeps its history before the branch point
    assert set(a.snapshots()["tags"]) == {"t1"}


# ---------------------------------------------------------------------------------------------- on a branch
def test_operations_on_a_branch_equal_java_on_t_branch_b(tmp_path):
    a = _build(str(tmp_path / "a"))
    a.create_branch("b", tag="t1")
    jb = a.branch("b")
    jh.run_many([("write", jb.payload(batches=[{"rows": _rows("a", [k], "x")} for k in range(20, 24)]))])
    base = str(tmp_path / "a")

    def twins(name: str) -> tuple[JavaTable, JavaTable]:
        return _twin(base, str(tmp_path / f"{name}-ours")), _twin(base, str(tmp_path / f"{name}-java"))

    # compaction: same rows, the same shape (files per partition, bucket and level), main untouched
    o, j = twins("compact")
    main_before = _everything_read(o)
    _ours(str(tmp_path / "compact-ours"), "db.t$branch_b").maintenance.compact(mode="full").execute()
    j.branch("b").compact(full=True)

    def shape(t: JavaTable) -> list:
        files = t.branch("b").scan()["files"]
        return sorted((f["partition_path"], f["bucket"], f["level"], f["row_count"]) for f in files)
    assert shape(o) == shape(j)
    assert o.branch("b").rows() == j.branch("b").rows()
    assert {k: v for k, v in _everything_read(o).items() if k[0] is None} ==\
        {k: v for k, v in main_before.items() if k[0] is None}

    # snapshot expiry on the branch: the same files left (0.9 protects a branch with main's tags, issue 9867;
    # the branch's only tag is t1, which main has too)
    o, j = twins("expire")
    _ours(str(tmp_path / "expire-ours"), "db.t$branch_b").maintenance.expire_snapshots(
        retain_min=1, retain_max=1, older_than=int(time.time() * 1000) + 60_000).execute()
    j.branch("b").expire_snapshots(retain_min=1, retain_max=1, time_retained_ms=0)
    assert _files(o, hints=False) == _files(j, hints=False)
    _everything_read(o)

    # a tag on the branch, then its deletion with reclamation after its snapshot expired
    o, j = twins("tags")
    sid = o.branch("b").snapshots()["latest"] - 1
    _ours(str(tmp_path / "tags-ours"), "db.t$branch_b").tags.create("bt", snapshot_id=sid).execute()
    j.branch("b").create_tag("bt", sid)
    assert sorted(o.branch("b").read(tag="bt", tag_snapshot=True)["rows"]) ==\
        sorted(j.branch("b").read(tag="bt", tag_snapshot=True)["rows"])
    # each side's own expiry: Java 0.9's branch expiry protects a branch with main's tags only (apache/paimon#9867),
    # so it deletes the manifest lists of the branch's tag bt — a history paimon-ops refuses to touch (fail closed);
    # ours keeps bt whole, and the files both leave after the tag's deletion are the same
    _ours(str(tmp_path / "tags-ours"), "db.t$branch_b").maintenance.expire_snapshots(
        retain_min=1, retain_max=1, older_than=int(time.time() * 1000) + 60_000).execute()
    j.branch("b").expire_snapshots(retain_min=1, retain_max=1, time_retained_ms=0)
    _ours(str(tmp_path / "tags-ours"), "db.t$branch_b").maintenance.delete_tags(["bt"]).execute()
    j.branch("b").delete_tag("bt")
    assert _files(o, hints=False) == _files(j, hints=False)
    _everything_read(o)

    # orphan removal named on the branch: every branch (and main) still protected, the same files left
    o, j = twins("orphans")
    old = time.time() - 4 * 86_400  # older than both thresholds (ours: 3 days by default; Java: 2 days here)
    for t in (o, j):
        for rel in ("pt=a/bucket-0/data-orphan-0.parquet", "manifest/manifest-orphan-0"):
            p = t.path / rel
            p.write_bytes(b"junk")
            os.utime(p, (old, old))
    _ours(str(tmp_path / "orphans-ours"), "db.t$branch_b").maintenance.remove_orphans().execute()
    j.branch("b").remove_orphans(older_than_ms=int((time.time() - 2 * 86_400) * 1000))
    assert _files(o) == _files(j) and "pt=a/bucket-0/data-orphan-0.parquet" not in _files(o)
    _everything_read(o)


# ---------------------------------------------------------------------------------------------- consumers
def test_consumers_reset_and_clear_as_java_reads_them(tmp_path):
    a = _build(str(tmp_path / "a"))
    latest = a.snapshots()["latest"]
    for cid, n in (("flink-1", 1), ("flink-2", 2), ("spark-keep", 2)):
        a.reset_consumer(cid, n)
    ours = _ours(str(tmp_path / "a"))
    assert {c.consumer: c.next_snapshot for c in ours.consumers()} == a.consumers()["consumers"]
    b = _twin(str(tmp_path / "a"), str(tmp_path / "b"))
    ours.maintenance.reset_consumer("flink-1", snapshot_id=latest).execute()
    b.reset_consumer("flink-1", latest)
    assert _bytes(a, "consumer/consumer-flink-1") == _bytes(b, "consumer/consumer-flink-1")
    ours.maintenance.reset_consumer("flink-2", delete=True).execute()
    b.reset_consumer("flink-2")
    assert _files(a) == _files(b)
    seen = a.consumers()
    assert seen == {"consumers": {"flink-1": latest, "spark-keep": 2}, "min_next_snapshot": 2}
    # Java's own expiry honours what ours left: snapshot 2 (spark-keep) stays
    a.expire_snapshots(retain_min=1, retain_max=1, time_retained_ms=0)
    assert a.snapshots()["earliest"] == 2
    # clear_consumers (not in 0.9): what remains is what Java 0.9 and pypaimon 2.1.0 read
    ours.maintenance.clear_consumers(including=".*", excluding="spark-.*").execute()
    assert a.consumers() == {"consumers": {"spark-keep": 2}, "min_next_snapshot": 2}
    cm = pu.get_table(str(tmp_path / "a"), "db.t").consumer_manager()
    assert cm.consumers() == {"spark-keep": 2} and cm.min_next_snapshot() == 2


# ---------------------------------------------------------------------------------------------- not in 0.9
def test_rename_and_create_from_snapshot_are_read_by_java_pypaimon_and_rust(tmp_path):
    """Written by pypaimon 2.1.0 (which reads only manifests of Paimon >= 1.0, so not 0.9-written tables): a branch
    from a tag with its own writes, renamed; a branch from a snapshot. Java 0.9, pypaimon and pypaimon-rust read
    them with the same rows as before."""
    import pyarrow as pa
    wh = str(tmp_path / "wh")
    schema = pa.schema([pa.field("pt", pa.string(), False), pa.field("k", pa.int32(), False), ("v", pa.string())])
    pt = pu.create_table(wh, "db.t", schema, ["pt"], ["pt", "k"], {"bucket": "2"})
    for i in range(3):
        pu.write(pt, {"pt": ["a", "b"], "k": [i, i], "v": [f"m{i}", f"n{i}"]})
    t = _ours(wh)
    t.tags.create("t1", snapshot_id=2).execute()
    t.maintenance.create_branch("b", tag="t1").execute()
    pu.write(pu.get_table(wh, "db.t$branch_b"), {"pt": ["c"], "k": [9], "v": ["x"]})
    cols = ["pt", "k", "v"]
    j = JavaTable(wh, "db", "t")
    before = {"latest": pu.both_read(wh, "db.t$branch_b", cols), "t1": pu.both_read(wh, "db.t$branch_b", cols, tag="t1")}
    t.maintenance.rename_branch("b", "prod").execute()
    assert j.branches() == ["prod"] and pu.get_table(wh, "db.t").branch_manager().branches() == ["prod"]
    assert pu.both_read(wh, "db.t$branch_prod", cols) == before["latest"]
    assert pu.both_read(wh, "db.t$branch_prod", cols, tag="t1") == before["t1"]
    reads = _everything_read(j)
    assert sorted(map(tuple, reads[("prod", "snapshot", j.branch("prod").snapshots()["latest"])])) == before["latest"]
    assert sorted(map(tuple, reads[("prod", "tag", "t1")])) == before["t1"]
    # from a snapshot (0.9 removed it): Java and both Python readers read the snapshot's rows on the branch
    sid = j.snapshots()["latest"]
    t.maintenance.create_branch("snap", snapshot_id=sid).execute()
    want = pu.both_read(wh, "db.t", cols, snapshot_id=sid)
    assert pu.both_read(wh, "db.t$branch_snap", cols) == want
    assert sorted(map(tuple, j.branch("snap").rows())) == want
    _everything_read(j)
    assert Path(j.path / "branch" / "branch-snap" / "snapshot" / f"snapshot-{sid}").read_bytes() ==\
        Path(j.path / "snapshot" / f"snapshot-{sid}").read_bytes()
