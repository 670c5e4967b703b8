"""paimon-ops maintaining tables of a real Hive Metastore that Java Paimon 0.9's HiveCatalog writes
(`lock.enabled`, `metastore.partitioned-table`, `metastore.tag-to-partition`), each result read by Java: the rows
Java reads are identical to those of a twin table Java maintains itself, and the metastore's partitions equal what
Java's own maintenance leaves on the twin."""
from __future__ import annotations

import datetime as dt
import shutil
import threading
import time

import pytest

import paimon_ops as po
from tests.hive.conftest import java_hive_options, java_hive_table
from tests.interop.java_harness import JavaTable
from tests.net import patient

pytestmark = pytest.mark.java

FIELDS = [("dt", "STRING NOT NULL"), ("id", "INT NOT NULL"), ("v", "STRING"), ("n", "BIGINT")]
DAYS = ["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04", "2024-01-05"]
NOW = dt.datetime(2024, 1, 10, tzinfo=dt.timezone.utc)  # partition times are UTC wall clock (no sink zone set)


def _batches(tag: str) -> list[dict]:
    return [{"rows": [[d, i, f"{tag}{i}", i] for d in DAYS for i in range(20)]},
            {"rows": [[d, i, f"u{i}", -i] for d in DAYS[1:] for i in range(0, 20, 3)]},
            {"rows": [[d, 100 + i, "new", i] for d in DAYS[2:] for i in range(5)]}]


def _catalog(uri: str, warehouse, **extra: str) -> po.Catalog:
    return po.Catalog(str(warehouse), options={"metastore": "hive", "uri": uri, "lock.enabled": "true",
                                               "lock-check-max-sleep": "500 ms", **extra})


def _locks(hms_client, db: str) -> list:
    return [lk for lk in hms_client.call("locks", lambda c: c.show_locks(hms_client.types.ShowLocksRequest())).locks
            or [] if lk.dbname == db]


def test_partitioned_table_maintained_like_javas_twin(hive_metastore, hms_client, hive_database, tmp_path):
    uri, db = hive_metastore.uri, hive_database
    wh = tmp_path / "wh"
    options = {"bucket": 1, "metastore.partitioned-table": "true"}
    ours = java_hive_table(wh, db, "ours", uri, **{"sync-all-properties": "true"})
    twin = java_hive_table(wh, db, "twin", uri, **{"sync-all-properties": "true"})
    for jt in (ours, twin):
        jt.create(FIELDS, partition_keys=["dt"], primary_keys=["dt", "id"], options=options)
        jt.write(_batches("v"))
    assert hms_client.partition_names(db, "ours") == [f"dt={d}" for d in DAYS]
    # a partition the metastore lost (drift): the next commit that adds files there registers it again
    hms_client.drop_partition(db, "ours", ["2024-01-05"])
    # a `.done` partition (a partition-mark-done action): dropped with its partition
    hms = hms_client.get_table(db, "ours")
    hms_client.add_partitions(db, "ours", [(["2024-01-01.done"], f"{hms.sd.location}/dt=2024-01-01.done")], hms.sd)

    with _catalog(uri, wh, **{"sync-all-properties": "true"}) as cat:
        assert cat.tables() == sorted([f"{db}.ours", f"{db}.twin"] + [t for t in cat.tables()
                                                                      if not t.startswith(f"{db}.")])
        table = cat.get_table(f"{db}.ours")
        table.maintenance.compact(mode="full").execute()
        twin.compact(full=True)
        assert ours.rows() == twin.rows()
        assert "dt=2024-01-05" in hms_client.partition_names(db, "ours")

        table.maintenance.rescale(bucket_num=2).execute()
        assert cat.get_table(f"{db}.ours").options["bucket"] == "2"
        assert hms_client.get_table(db, "ours").parameters["bucket"] == "2"  # the schema change reached the metastore
        assert ours.rows() == twin.rows()

        table = cat.get_table(f"{db}.ours")
        table.maintenance.expire_partitions(expiration_time=dt.timedelta(days=7), now=NOW).execute()
        java = twin.expire_partitions(now=NOW.strftime("%Y-%m-%dT%H:%M"), expiration_time_ms=7 * 86400_000)
        assert sorted(p["dt"] for p in java["expired"]) == ["2024-01-01", "2024-01-02"]
        assert hms_client.partition_names(db, "ours") == hms_client.partition_names(db, "twin") == \
            [f"dt={d}" for d in DAYS[2:]]

        for jt in (ours, twin):  # Java keeps writing both (ours with the new bucket count)
            jt.write([{"rows": [["2024-01-06", 1, "late", 1], ["2024-01-04", 2, "w", 2]]}])
        assert hms_client.partition_names(db, "ours") == hms_client.partition_names(db, "twin")

        cat.get_table(f"{db}.ours").maintenance.expire_snapshots(retain_min=1, retain_max=1).execute()
        twin.expire_snapshots(retain_min=1, retain_max=1)
        assert ours.snapshots()["earliest"] == ours.snapshots()["latest"]
        assert ours.rows() == twin.rows()
        assert ours.check_files() == []
    assert hms_client.partition_names(db, "ours") == hms_client.partition_names(db, "twin")
    assert _locks(hms_client, db) == []


def test_tag_partitions_follow_tags_like_javas_twin(hive_metastore, hms_client, hive_database, tmp_path):
    uri, db = hive_metastore.uri, hive_database
    wh = tmp_path / "wh"
    options = {"bucket": 1, "metastore.tag-to-partition": "tag_dt"}
    ours, twin = (java_hive_table(wh, db, n, uri) for n in ("ours", "twin"))
    for jt in (ours, twin):
        jt.create(FIELDS[1:], primary_keys=["id"], options=options)
        jt.write([{"rows": [[i, f"s{s}", s] for i in range(5)]} for s in range(3)])

    with _catalog(uri, wh) as cat:
        tags = cat.get_table(f"{db}.ours").tags
        tags.create("2024-01-01", snapshot_id=1).execute()
        tags.create("2024-01-02", snapshot_id=2, time_retained=dt.timedelta(milliseconds=1)).execute()
        tags.create("2024-01-03", snapshot_id=3).execute()
        for name, sid, kw in [("2024-01-01", 1, {}), ("2024-01-02", 2, {"time_retained_ms": 1}),
                              ("2024-01-03", 3, {})]:
            twin.create_tag(name, snapshot_id=sid, **kw)
        assert hms_client.partition_names(db, "ours") == hms_client.partition_names(db, "twin") == \
            ["tag_dt=2024-01-01", "tag_dt=2024-01-02", "tag_dt=2024-01-03"]

        tags.delete("2024-01-01").execute()
        twin.delete_tag("2024-01-01")
        time.sleep(0.05)
        cat.get_table(f"{db}.ours").maintenance.expire_tags().execute()
        assert twin.expire_tags() == ["2024-01-02"]
        assert hms_client.partition_names(db, "ours") == hms_client.partition_names(db, "twin") == \
            ["tag_dt=2024-01-03"]
        assert ours.rows(tag="2024-01-03") == twin.rows(tag="2024-01-03")

        tags.rename("2024-01-03", "2024-01-09").execute()
        assert hms_client.partition_names(db, "ours") == ["tag_dt=2024-01-09"]
        assert ours.rows(tag="2024-01-09") == twin.rows(tag="2024-01-03")
    assert _locks(hms_client, db) == []


def test_our_commit_waits_for_the_metastore_lock(hive_metastore, hms_client, hive_database, tmp_path):
    """A paimon-ops commit waits while the table's lock is held from outside, and commits once it is released."""
    uri, db = hive_metastore.uri, hive_database
    wh = tmp_path / "wh"
    jt = java_hive_table(wh, db, "t", uri)
    jt.create(FIELDS, partition_keys=["dt"], primary_keys=["dt", "id"], options={"bucket": 1})
    before = jt.write(_batches("a"))["latest_snapshot_id"]
    expected = jt.rows()
    done: dict = {}
    with _catalog(uri, wh) as cat:
        plan = cat.get_table(f"{db}.t").maintenance.compact(mode="full")
        with hms_client.table_lock(db, "t", acquire_timeout_s=10, check_max_sleep_s=1):
            worker = threading.Thread(target=lambda: done.setdefault("report", plan.execute()), daemon=True)
            worker.start()
            deadline = time.monotonic() + patient(60)
            while [lk.state for lk in _locks(hms_client, db)] != [1, 2]:  # ours ACQUIRED, paimon-ops WAITING
                assert worker.is_alive() and time.monotonic() < deadline
                time.sleep(0.1)
            time.sleep(1)
            assert jt.snapshots()["latest"] == before  # nothing committed while the lock is held
            released = time.time()
        worker.join(patient(120))
    assert done["report"].snapshot_id == before + 1
    assert (jt.path / "snapshot" / f"snapshot-{before + 1}").stat().st_mtime >= released - 0.01
    assert jt.rows() == expected
    assert _locks(hms_client, db) == []


def test_javas_commit_waits_while_we_hold_the_lock(hive_metastore, hms_client, hive_database, tmp_path):
    """While a paimon-ops commit holds the table's lock (held here a little longer, at the snapshot's write), Java's
    HiveCatalog commit waits for it and then takes the next snapshot id."""
    from paimon_ops.catalog import open_catalog
    uri, db = hive_metastore.uri, hive_database
    wh = tmp_path / "wh"
    jt = java_hive_table(wh, db, "t", uri)
    jt.create(FIELDS, partition_keys=["dt"], primary_keys=["dt", "id"], options={"bucket": 1})
    before = jt.write(_batches("a"))["latest_snapshot_id"]
    java: dict = {}
    holding = threading.Event()

    def slow_snapshot(op: str, path: str) -> None:
        if op == "rename" and "/snapshot/snapshot-" in path and not holding.is_set():
            holding.set()
            deadline = time.monotonic() + patient(60)
            while [lk.state for lk in _locks(hms_client, db)] != [1, 2]:  # Java's lock request waits behind ours
                assert time.monotonic() < deadline, "Java never asked for the lock"
                time.sleep(0.1)
            java["ours_released_at"] = time.time()

    def java_write():
        holding.wait(patient(120))
        java["result"] = jt.write([{"rows": [["2024-01-09", 1, "java", 1]]}])
        java["done_at"] = time.time()

    writer = threading.Thread(target=java_write, daemon=True)
    writer.start()
    with open_catalog(str(wh), java_hive_options(uri), fault_hook=slow_snapshot) as cat:
        from paimon_ops.lifecycle.manifest_compaction import plan_compact_manifests
        plan_compact_manifests(cat.get_table(f"{db}.t")).execute()
    writer.join(patient(120))
    assert java["result"]["latest_snapshot_id"] == before + 2  # ours is before + 1, Java's came after it
    snaps = {s["id"]: s for s in jt.snapshots()["snapshots"]}
    assert snaps[before + 1]["commitKind"] == "COMPACT" and snaps[before + 2]["commitKind"] == "APPEND"
    assert java["done_at"] >= java["ours_released_at"]
    assert _locks(hms_client, db) == []


def test_partitions_another_branch_has_stay_registered(hive_metastore, hms_client, hive_database, tmp_path):
    """Partition expiry on main keeps the metastore partitions a branch of the table still has (Java master's
    removePartitionsExistsInOtherBranches)."""
    uri, db = hive_metastore.uri, hive_database
    wh = tmp_path / "wh"
    jt = java_hive_table(wh, db, "t", uri)
    jt.create(FIELDS, partition_keys=["dt"], primary_keys=["dt", "id"],
              options={"bucket": 1, "metastore.partitioned-table": "true"})
    jt.write(_batches("a")[:1])
    # a branch `b` made from snapshot 1 (Paimon's create_branch: the schema and the snapshot copied under branch/)
    branch = jt.path / "branch" / "branch-b"
    (branch / "schema").mkdir(parents=True)
    (branch / "snapshot").mkdir()
    shutil.copy(jt.path / "schema" / "schema-0", branch / "schema" / "schema-0")
    shutil.copy(jt.path / "snapshot" / "snapshot-1", branch / "snapshot" / "snapshot-1")
    (branch / "snapshot" / "LATEST").write_text("1")
    jt.write([{"rows": [["2024-01-02", 1, "x", 1]]}])
    with _catalog(uri, wh) as cat:
        cat.get_table(f"{db}.t").maintenance.expire_partitions(expiration_time=dt.timedelta(days=8), now=NOW).execute()
    assert {r[0] for r in jt.rows()} == set(DAYS[1:])
    # dt=2024-01-01 is gone from main's files but the branch still has it: registered; nothing else expired
    assert hms_client.partition_names(db, "t") == [f"dt={d}" for d in DAYS]


def test_automatic_tags_and_rollback_keep_tag_partitions(hive_metastore, hms_client, hive_database, tmp_path):
    """Automatic daily tags add their partitions; a rollback that removes newer tags drops theirs (Java 0.9's
    rollback leaves them in the metastore)."""
    uri, db = hive_metastore.uri, hive_database
    wh = tmp_path / "wh"
    jt = java_hive_table(wh, db, "t", uri)
    jt.create(FIELDS[1:], primary_keys=["id"], options={"bucket": 1, "metastore.tag-to-partition": "tag_dt",
                                                        "tag.create-time": "00:00"})
    jt.write([{"rows": [[i, f"s{s}", s] for i in range(3)]} for s in range(3)])
    now = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=2)
    with _catalog(uri, wh) as cat:
        table = cat.get_table(f"{db}.t")
        table.maintenance.create_auto_tags(now=now).execute()
        auto = [t.name for t in table.tags.list()]
        assert auto and hms_client.partition_names(db, "t") == sorted(f"tag_dt={n}" for n in auto)
        table.tags.create("manual-2", snapshot_id=2).execute()
        table.tags.create("manual-3", snapshot_id=3).execute()
        cat.get_table(f"{db}.t").maintenance.rollback(snapshot_id=2).execute()
        kept = sorted(t.name for t in cat.get_table(f"{db}.t").tags.list())
        assert "manual-3" not in kept and "manual-2" in kept
        assert hms_client.partition_names(db, "t") == sorted(f"tag_dt={n}" for n in kept)
    assert jt.rows() == jt.rows(snapshot_id=2)


def test_rescale_refused_when_the_metastore_cannot_follow(hive_metastore, hms_client, hive_database, tmp_path):
    """The metastore lost the table between plan and execution: rescale's schema change is removed again and the
    rescale refused in one line naming the metastore; the table is exactly as it was."""
    uri, db = hive_metastore.uri, hive_database
    wh = tmp_path / "wh"
    jt = java_hive_table(wh, db, "t", uri)
    jt.create(FIELDS, partition_keys=["dt"], primary_keys=["dt", "id"], options={"bucket": 1})
    jt.write(_batches("a"))
    before = sorted(str(p.relative_to(jt.path)) for p in jt.path.rglob("*"))
    rows = jt.rows()
    with _catalog(uri, wh) as cat:
        plan = cat.get_table(f"{db}.t").maintenance.rescale(bucket_num=2)
        hms_client.call("drop", lambda c: c.drop_table(db, "t", False))
        with pytest.raises(po.errors.CatalogError) as ei:
            plan.execute()
    msg = str(ei.value)
    assert uri in msg and "schema 1" in msg and "removed again" in msg and "\n" not in msg
    assert sorted(str(p.relative_to(jt.path)) for p in jt.path.rglob("*")) == before
    assert JavaTable(table_path=jt.path).rows() == rows  # (by its location: the metastore no longer lists it)
