"""Rollback by watermark (Java's rollback_to_watermark) and as latest (Java's rollback_to_as_latest), proven against
Java Paimon 0.9, which has neither procedure: on twin tables (byte copies of one table Java wrote), our rollback by
watermark leaves what 0.9's rollbackTo leaves for the snapshot Java's earlierOrEqualWatermark picks, and Java reads
it identically; after a rollback as latest, Java 0.9 (and pypaimon 2.1.0 / pypaimon-rust 0.4.0 on a table we wrote)
read the new latest snapshot exactly as the target, every later snapshot still exists and reads as before, and Java's
own commits and snapshot expiry go on without losing a file. Bad input is one line, exit 2, nothing changed."""
from __future__ import annotations

import shutil

import pyarrow as pa
import pytest

import paimon_ops as po
from tests import pypaimon_util as pu
from tests.cli.conftest import cli
from tests.interop import java_harness as jh
from tests.interop.java_harness import JavaTable
from tests.safety.util import tree_digest

W0 = 1_700_000_000_000  # event time of the first watermark (epoch ms)


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """db.t: a primary-key table with deletion vectors, written by Java 0.9 — a first write without a watermark, then
    updates (and full compactions, which delete files later snapshots no longer use) at watermarks W0 + i s; each
    write is an APPEND and a COMPACT snapshot (deletion vectors: snapshots 1-10)."""
    if not jh.java_available():
        pytest.skip(jh.skip_reason() or "java not available")
    wh = tmp_path_factory.mktemp("rollback-time") / "wh"
    java = JavaTable(wh, "db", "t")
    java.create([("id", "INT NOT NULL"), ("v", "STRING")], primary_keys=["id"],
                options={"bucket": "1", "deletion-vectors.enabled": "true"})
    java.write([{"rows": [[i, "a"] for i in range(10)]}])
    java.write([{"rows": [[i, "b"] for i in range(0, 10, 2)], "watermark": W0}])
    java.write([{"rows": [[i, "c"] for i in range(0, 10, 3)], "watermark": W0 + 1000, "compact": True}])
    java.write([{"rows": [[20, "d"]], "watermark": W0 + 2000}])
    java.write([{"rows": [[i, "e"] for i in range(5)], "watermark": W0 + 3000, "compact": True}])
    return wh


def _copy(source, dst) -> str:
    shutil.copytree(source, dst)
    return str(dst)


@pytest.mark.java
def test_rollback_by_watermark_leaves_what_java_leaves(source, tmp_path):
    ours_wh, twin_wh = _copy(source, tmp_path / "ours"), _copy(source, tmp_path / "twin")
    ours, twin = JavaTable(ours_wh, "db", "t"), JavaTable(twin_wh, "db", "t")
    snaps = ours.snapshots()["snapshots"]
    by_wm = [s["id"] for s in snaps if s.get("watermark") is not None and s["watermark"] <= W0 + 1500]
    target = by_wm[-1]  # Java's earlierOrEqualWatermark: the last snapshot whose watermark is <= W0 + 1.5 s
    want = ours.rows(snapshot_id=target)
    plan = po.Catalog(ours_wh).get_table("db.t").maintenance.rollback(watermark=W0 + 1500)
    assert plan.details["target_snapshot"] == target and plan.details["watermark"] == W0 + 1500
    plan.execute()
    twin.call("rollback", snapshot_id=target)
    ours_after, twin_after = ours.snapshots(), twin.snapshots()
    assert [s["id"] for s in ours_after["snapshots"]] == [s["id"] for s in twin_after["snapshots"]]
    assert ours_after["latest"] == twin_after["latest"] == target
    assert ours.rows() == twin.rows() == want
    assert ours.check_files() == []


@pytest.mark.java
def test_rollback_as_latest_keeps_history_and_java_goes_on(source, tmp_path):
    wh = _copy(source, tmp_path / "ours")
    java = JavaTable(wh, "db", "t")
    before = java.snapshots()
    latest = before["latest"]
    history = {s["id"]: java.rows(snapshot_id=s["id"]) for s in before["snapshots"]}
    # the target: the compaction at watermark W0, with deletion vectors (its index manifest is the new snapshot's)
    target = max(s["id"] for s in before["snapshots"] if s.get("watermark") == W0)
    assert before["snapshots"][target - 1]["indexManifest"]
    table = po.Catalog(wh).get_table("db.t")
    plan = table.maintenance.rollback(snapshot_id=target, as_latest=True)
    assert plan.operation == "rollback_to_as_latest" and plan.details["new_snapshot"] == latest + 1
    listed = {(a.kind, a.reason.split(":")[0].split(" (")[0]) for s in plan.steps for a in s.files}
    assert ("tag", f"keeps the files of snapshot {target} that the new latest snapshot uses again from snapshot "
                   "expiry") in \
        listed and ("data", "put back into the table") in listed, listed
    report = plan.execute()
    assert report.snapshot_id == latest + 1 and not report.deleted

    after = java.snapshots()
    assert after["latest"] == latest + 1 and [s["id"] for s in after["snapshots"]] == list(range(1, latest + 2))
    new = after["snapshots"][-1]
    assert new["commitKind"] == "OVERWRITE" and new["watermark"] == W0  # the target's, as Java's rollbackToAsLatest
    assert new["indexManifest"] == before["snapshots"][target - 1]["indexManifest"]
    assert java.rows() == history[target]  # the new latest reads as the target
    for sid, rows in history.items():  # every later snapshot still there, read as before
        assert java.rows(snapshot_id=sid) == rows, sid
    assert after["tags"] == {f"rollback-to-as-latest-{target}-from-{latest}": target}
    assert java.check_files() == []

    # our expiry down to the new latest, then Java's own commits (each expiring snapshots) and expiry: no file the
    # table reads is lost (the protecting tag keeps the files put back)
    po.Catalog(wh).get_table("db.t").maintenance.expire_snapshots(retain_min=1, retain_max=1).execute()
    assert java.rows() == history[target] and java.check_files() == []
    java.write([{"rows": [[30, "f"]], "watermark": W0 + 4000}, {"rows": [[1, "g"]], "compact": True}])
    java.expire_snapshots(retain_min=1, retain_max=1)
    want = sorted([r for r in history[target] if r[0] != 1] + [[30, "f"], [1, "g"]])
    assert sorted(java.rows()) == want and java.check_files() == []


@pytest.mark.java
def test_bad_input_is_one_line_exit_2_nothing_changed(source, tmp_path):
    wh = _copy(source, tmp_path / "ours")
    java = JavaTable(wh, "db", "t")
    first = java.snapshots()["snapshots"][0]["timeMillis"]
    java.expire_snapshots(retain_min=3, retain_max=3)  # snapshots 1-7 expire, untagged
    before = tree_digest(wh)
    cases = [
        (["rollback", wh, "db.t", "--snapshot", "1", "--as-latest"], "cannot roll back db.t to snapshot 1: it does "
                                                                    "not exist"),
        (["rollback", wh, "db.t", "--watermark", str(W0 - 1), "--yes"], "with a watermark at or before"),
        (["rollback", wh, "db.t", "--timestamp", str(first - 60_000), "--yes"], "current at"),
        (["rollback", wh, "db.t", "--watermark", "1 d", "--yes"], "is an age"),
        (["rollback", wh, "db.t", "--watermark", str(W0 + 2000), "--snapshot", "3", "--yes"], "not allowed with"),
        (["rollback", wh, "db.t", "--watermark", str(W0 + 2000)], "--yes"),  # the destructive form needs --yes
    ]
    for argv, words in cases:
        r = cli(*argv)
        assert r.code == 2 and words in r.err and len(r.err.strip().splitlines()) == 1, (argv, r.err)
    assert tree_digest(wh) == before
    r = cli("rollback", wh, "db.t", "--watermark", str(W0 + 2000), "--as-latest", "--dry-run")
    assert r.code == 0 and "+ snapshot" in r.out and "put back into the table" in r.out, r.out
    assert tree_digest(wh) == before
    r = cli("rollback", wh, "db.t", "--watermark", str(W0 + 2000), "--as-latest", "--json")  # no --yes needed
    assert r.code == 0, r.err
    assert r.json["snapshot_id"] == 11 and r.json["details"]["target_snapshot"] == 8  # the compaction at W0 + 2 s


def test_pypaimon_and_rust_read_a_rollback_as_latest_of_our_table(tmp_path):
    from paimon_ops.table.writer import TableWriter, create_table
    wh = str(tmp_path / "wh")
    t = create_table(wh, "db.t", [("k", "INT"), ("v", "STRING")], primary_keys=["k"], options={"bucket": "2"})
    for i in range(4):
        w = TableWriter(t.refresh())
        w.write(pa.table({"k": pa.array(range(i, i + 5), pa.int32()), "v": [f"r{i}"] * 5}))
        w.commit(watermark=W0 + i * 1000)
    po.Table(t.refresh()).maintenance.compact(mode="full").execute()
    reads = {sid: pu.sorted_rows(pu.read(wh, "db.t", snapshot_id=sid)) for sid in range(1, 6)}
    plan = po.Catalog(wh).get_table("db.t").maintenance.rollback(watermark=W0 + 1500, as_latest=True)
    assert plan.details["target_snapshot"] == 2
    po.load_plan(plan.to_json()).execute()  # as `apply` runs a reviewed plan: planned again, the same, executed
    assert pu.sorted_rows(pu.read(wh, "db.t")) == reads[2]
    assert pu.sorted_rows(pu.rust_read(wh, "db.t")) == pu.sorted_rows(pu.rust_read(wh, "db.t", snapshot_id=2))
    for sid, rows in reads.items():
        assert pu.sorted_rows(pu.read(wh, "db.t", snapshot_id=sid)) == rows, sid
    # a second run finds the latest holding the target's data already: nothing to do, no commit
    again = po.Catalog(wh).get_table("db.t").maintenance.rollback(snapshot_id=2, as_latest=True)
    assert again.is_empty and "already holds the data of snapshot 2" in again.warnings[0]


@pytest.mark.java
def test_the_protecting_tag_is_what_keeps_java_expiry_from_losing_files(source, tmp_path):
    """Control: the same rollback as latest with its tag file removed behind its back — Java 0.9's expiry then
    deletes data files the new latest snapshot reads (the files put back were deleted by a later snapshot, outside
    the one-interval lifetime expiry relies on), while our expiry refuses (its deleter checks every remaining
    snapshot) and deletes nothing."""
    import os
    wh = _copy(source, tmp_path / "ours")
    java = JavaTable(wh, "db", "t")
    po.Catalog(wh).get_table("db.t").maintenance.rollback(snapshot_id=4, as_latest=True).execute()
    tags = os.path.join(wh, "db.db", "t", "tag")
    for name in os.listdir(tags):
        os.remove(os.path.join(tags, name))
    before = tree_digest(wh)
    with pytest.raises(po.PaimonOpsError, match="still uses it"):
        po.Catalog(wh).get_table("db.t").maintenance.expire_snapshots(retain_min=1, retain_max=1).execute()
    assert tree_digest(wh) == before
    java.expire_snapshots(retain_min=1, retain_max=1)
    assert java.check_files(), "Java's expiry should have lost the files put back"
