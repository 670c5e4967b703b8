"""Partition expiry on tables we write (the Java 0.9 proof is test_partition_expiry_java.py): plan JSON round trip,
stale plans (a write into an expiring partition), concurrent writes elsewhere, the commit's own guard, typed
partition values (DATE, TIMESTAMP, INT), update-time, the zone, partition.expiration-max-num, the check interval,
refusals, and the Dagster hooks."""
from __future__ import annotations

import dataclasses
import datetime as dt
import os
import shutil

import pytest

import paimon_ops as po
from paimon_ops.errors import (
    CommitConflictError,
    InvalidArgumentError,
    InvalidOptionError,
    StalePlanError,
)
from paimon_ops.execution.plan import Plan
from paimon_ops.format.manifest import FileKind
from paimon_ops.lifecycle.partition_expiry import (
    PartitionExpiryPlan,
    expirable_partitions,
    partition_expiry_due,
    plan_expire_partitions,
)
from paimon_ops.table.commit import CommitChanges, FileStoreCommit
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import FileStoreTable
from tests.safety.util import tree_digest
from tests.tables import make_table, write

UTC = dt.timezone.utc
NOW = int(dt.datetime(2024, 1, 10, tzinfo=UTC).timestamp() * 1000)
DAYS3 = dt.timedelta(days=3)


def _table(wh: str, name: str = "db.t", ptype: str = "STRING", pk: bool = True, **opts) -> FileStoreTable:
    return make_table(wh, name, [("dt", ptype), ("k", "INT"), ("v", "STRING")], partition_keys=["dt"],
                      primary_keys=["dt", "k"] if pk else [], options={"bucket": "2" if pk else "-1", **opts})


def _parts(t: FileStoreTable) -> list[str]:
    t = t.refresh()
    s = TableScanner(t)
    return sorted({s.partition_dir(f.partition) for f in s.scan_latest().files})


@pytest.fixture
def daily(warehouse) -> FileStoreTable:
    t = _table(warehouse)
    for day in (1, 2, 5, 8, 9):
        write(t, {"dt": [f"2024-01-0{day}"] * 3, "k": [1, 2, 3], "v": [f"d{day}"] * 3})
    return t.refresh()


def _copy(src: FileStoreTable, dst: str) -> FileStoreTable:
    shutil.copytree(src.root, os.path.join(dst, "db.db", "t"))
    return po.Catalog(dst).get_table("db.t").raw


def test_plan_lists_partitions_and_round_trips(daily, tmp_path):
    a, b = _copy(daily, str(tmp_path / "a")), _copy(daily, str(tmp_path / "b"))
    direct = plan_expire_partitions(a, now=NOW, expiration_time=DAYS3)
    assert isinstance(direct, PartitionExpiryPlan) and not direct.is_empty
    assert [p["partition"] for p in direct.details["expired_partitions"]] ==\
        [{"dt": "2024-01-01"}, {"dt": "2024-01-02"}, {"dt": "2024-01-05"}]
    assert direct.details["expire_before"] == "2024-01-07T00:00:00.000Z" and direct.details["kept"] == 2
    text = direct.summary()
    assert "expires dt=2024-01-01/: partition time 2024-01-01T00:00 is before 2024-01-07T00:00" in text
    assert all(f.kind == "data" and "snapshot expiry" in f.reason for f in direct.deletes)
    report = direct.execute()
    assert report.snapshot_id == 6 and report.details["partitions_dropped"] == 3

    plan_b = po.Catalog(str(tmp_path / "b")).get_table("db.t").maintenance.expire_partitions(
        expiration_time=DAYS3, now=NOW)
    loaded = Plan.from_json(plan_b.to_json())
    assert type(loaded) is PartitionExpiryPlan and loaded == plan_b
    applied = loaded.execute()
    assert (applied.deleted, applied.details["files_dropped"]) == (report.deleted, report.details["files_dropped"])
    assert _parts(a) == _parts(b) == ["dt=2024-01-08/", "dt=2024-01-09/"]
    snap = b.refresh().snapshots.latest()
    assert snap.commit_kind == "OVERWRITE" and snap.total_record_count == 6 and snap.delta_record_count == -9
    # data files are only dropped from the table: they stay on disk until snapshot expiry
    assert all(os.path.exists(f.path) for f in loaded.deletes)


def test_write_into_an_expiring_partition_makes_the_plan_stale(daily, warehouse):
    plan = plan_expire_partitions(daily, now=NOW, expiration_time=DAYS3)
    write(daily, {"dt": ["2024-01-02"], "k": [9], "v": ["late"]})
    before = tree_digest(warehouse)
    with pytest.raises(StalePlanError, match="partition dt=2024-01-02 changed since the plan"):
        Plan.from_json(plan.to_json()).execute()
    assert tree_digest(warehouse) == before


def test_commits_to_other_partitions_do_not_stop_expiry(daily):
    plan = plan_expire_partitions(daily, now=NOW, expiration_time=DAYS3)
    write(daily, {"dt": ["2024-01-09", "2024-01-20"], "k": [7, 7], "v": ["new", "new"]})
    plan.execute()
    assert _parts(daily) == ["dt=2024-01-08/", "dt=2024-01-09/", "dt=2024-01-20/"]
    assert daily.refresh().snapshots.latest().total_record_count == 8


def test_commit_refuses_a_file_written_into_a_dropped_partition(daily):
    """The race after the precondition check: the OVERWRITE commit itself refuses to leave a partition half-dropped."""
    t = daily
    scanner = TableScanner(t)
    live = list(scanner.live_entries(t.snapshots.latest()).values())
    part = next(e.partition for e in live if scanner.partition_dir(e.partition) == "dt=2024-01-01/")
    deletes = [e.with_(kind=FileKind.DELETE) for e in live if e.partition == part]
    base = t.snapshots.latest_id()
    write(t, {"dt": ["2024-01-01"], "k": [8], "v": ["racer"]})
    with pytest.raises(CommitConflictError, match="written into a partition being dropped"):
        FileStoreCommit(t.refresh()).commit(CommitChanges(data=tuple(deletes), emptied_partitions=(part,)),
                                            "OVERWRITE", base)
    assert t.refresh().snapshots.latest_id() == base + 1


def test_typed_partitions(warehouse):
    """DATE and TIMESTAMP partitions are read as the times they are (Java 0.9 never expires them: apache/paimon#6439); INT with
    a formatter like Java."""
    d = _table(warehouse, "db.d", "DATE", pk=False)
    write(d, {"dt": [dt.date(2024, 1, 1), dt.date(2024, 1, 9)], "k": [1, 2], "v": ["a", "b"]})
    plan = plan_expire_partitions(d.refresh(), now=NOW, expiration_time=DAYS3)
    assert [(p["partition"], p["time"]) for p in plan.details["expired_partitions"]] ==\
        [({"dt": "2024-01-01"}, "2024-01-01T00:00:00.000Z")]  # the value, not the directory's day number
    plan = plan_expire_partitions(d.refresh(), now=NOW, expiration_time=DAYS3, timestamp_formatter="yyyy-MM-dd",
                                  timestamp_pattern="$dt")
    assert len(plan.details["expired_partitions"]) == 1  # the exact call of apache/paimon#6439 works
    ts = _table(warehouse, "db.ts", "TIMESTAMP(3)", pk=False)
    write(ts, {"dt": [dt.datetime(2024, 1, 6, 23, 59, 59), dt.datetime(2024, 1, 7, 0, 0, 0)], "k": [1, 2],
                "v": ["a", "b"]})
    plan = plan_expire_partitions(ts.refresh(), now=NOW, expiration_time=DAYS3)
    assert [p["time"] for p in plan.details["expired_partitions"]] == ["2024-01-06T23:59:59.000Z"]
    i = _table(warehouse, "db.i", "INT", pk=False, **{"partition.timestamp-formatter": "yyyyMMdd",
                                                      "partition.expiration-time": "3 d"})
    write(i, {"dt": [20240101, 20240109, 2024010], "k": [1, 2, 3], "v": ["a", "b", "c"]})
    plan = plan_expire_partitions(i.refresh(), now=NOW)
    assert [p["partition"] for p in plan.details["expired_partitions"]] == [{"dt": 20240101}]
    assert [p["partition"] for p in plan.details["unparseable_partitions"]] == [{"dt": 2024010}]
    assert any("never expired" in w for w in plan.warnings)


def test_update_time(warehouse):
    t = _table(warehouse, pk=False, **{"partition.expiration-strategy": "update-time"})
    write(t, {"dt": ["a", "b"], "k": [1, 2], "v": ["x", "y"]})
    t = t.refresh()
    scanner = TableScanner(t)
    created = {scanner.partition_dir(f.partition): f.meta.creation_time for f in scanner.scan_latest().files}
    newest = max(created.values())
    # creation times are local wall times; with sink.process-time-zone unset, "now" is read in UTC
    at = newest + 3 * 86_400_000
    plan = plan_expire_partitions(t, now=at, expiration_time=DAYS3)  # the newest is not *before*: kept
    assert {p["path"] for p in plan.details["expired_partitions"]} == {p for p, c in created.items() if c < newest}
    plan = plan_expire_partitions(t, now=at + 1, expiration_time=DAYS3)
    assert {p["path"] for p in plan.details["expired_partitions"]} == set(created)
    assert all("last written" in p["reason"] for p in plan.details["expired_partitions"])


def test_zone_of_now(warehouse):
    """`now` is read on the wall clock of sink.process-time-zone (else UTC), where partition values live."""
    t = _table(warehouse, pk=False)
    write(t, {"dt": ["2024-01-06", "2024-01-07"], "k": [1, 2], "v": ["a", "b"]})
    at = int(dt.datetime(2024, 1, 9, 20, tzinfo=UTC).timestamp() * 1000)  # 2024-01-10 04:00 in Shanghai
    utc = plan_expire_partitions(t.refresh(), now=at, expiration_time=DAYS3)
    assert [p["path"] for p in utc.details["expired_partitions"]] == ["dt=2024-01-06/"]
    sh = FileStoreTable(t.location, options_override={"sink.process-time-zone": "Asia/Shanghai"})
    plan = plan_expire_partitions(sh, now=at, expiration_time=DAYS3)
    assert plan.details["now_local"] == "2024-01-10T04:00:00.000+08:00" and plan.details["zone"] == "Asia/Shanghai"
    assert [p["path"] for p in plan.details["expired_partitions"]] == ["dt=2024-01-06/", "dt=2024-01-07/"]


def test_max_num_in_paimons_order(warehouse):
    t = _table(warehouse, pk=False, **{"partition.expiration-max-num": "2"})
    write(t, {"dt": ["2024-01-03", "2024-01-01", "2024-01-02", "2024-01-09"], "k": [1, 2, 3, 4], "v": list("abcd")})
    plan = plan_expire_partitions(t.refresh(), now=NOW, expiration_time=DAYS3)
    assert [p["path"] for p in plan.details["expired_partitions"]] == ["dt=2024-01-01/", "dt=2024-01-02/"]
    assert [p["path"] for p in plan.details["over_limit"]] == ["dt=2024-01-03/"]
    assert any("next run" in w for w in plan.warnings)
    assert len(plan_expire_partitions(t.refresh(), now=NOW, expiration_time=DAYS3,
                                      max_expires=5).details["expired_partitions"]) == 3
    hooks = expirable_partitions(t.refresh(), now_millis=NOW, expiration_time=DAYS3)
    assert [v.path for v in hooks] == ["dt=2024-01-01/", "dt=2024-01-02/"] and all(v.expired for v in hooks)
    facade = po.Table.open(t.location)
    assert [v.path for v in expirable_partitions(facade, now_millis=NOW, expiration_time=DAYS3)] == [v.path for v in hooks]
    assert partition_expiry_due(facade, None, NOW)


def test_refusals_and_bad_options(warehouse):
    plain = make_table(warehouse, "db.plain", options={"bucket": "-1"})
    with pytest.raises(InvalidArgumentError, match="not partitioned"):
        plan_expire_partitions(plain, expiration_time=DAYS3)
    t = _table(warehouse, pk=False)
    write(t, {"dt": ["2024-01-01"], "k": [1], "v": ["a"]})
    t = t.refresh()
    with pytest.raises(InvalidArgumentError, match="expiration_time.*partition.expiration-time"):
        plan_expire_partitions(t, now=NOW)
    for opts, option in (({"partition.expiration-strategy": "newest"}, "partition.expiration-strategy"),
                         ({"partition.timestamp-formatter": "yyyy-MM-dd bb"}, "partition.timestamp-formatter"),
                         ({"partition.timestamp-formatter": "yyyyMMdd"}, "partition.timestamp-formatter"),
                         ({"partition.timestamp-pattern": "$day"}, "partition.timestamp-pattern"),
                         ({"partition.expiration-check-interval": "soon"}, "partition.expiration-check-interval"),
                         ({"partition.expiration-max-num": "0"}, "partition.expiration-max-num")):
        with pytest.raises(InvalidOptionError) as e:
            plan_expire_partitions(FileStoreTable(t.location, options_override=opts), now=NOW, expiration_time=DAYS3)
        assert e.value.name == option
    with pytest.raises(InvalidArgumentError, match="strategy='newest'"):
        plan_expire_partitions(t, now=NOW, expiration_time=DAYS3, strategy="newest")
    with pytest.raises(InvalidArgumentError, match="timestamp_formatter='yyyyMMdd'.*parses none"):
        plan_expire_partitions(t, now=NOW, expiration_time=DAYS3, timestamp_formatter="yyyyMMdd")
    facade = po.Catalog(warehouse).get_table("db.t")
    with pytest.raises(InvalidArgumentError, match="expiration_time must be an age"):
        facade.maintenance.expire_partitions(expiration_time=3)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="naive datetime"):
        facade.maintenance.expire_partitions(expiration_time=DAYS3, now=dt.datetime(2024, 1, 10))
    with pytest.raises(TypeError):
        facade.maintenance.expire_partitions(DAYS3)  # type: ignore[misc]


def test_only_null_partitions_is_not_a_bad_option(warehouse):
    t = _table(warehouse, pk=False)
    write(t, {"dt": [None], "k": [1], "v": ["a"]})
    plan = plan_expire_partitions(t.refresh(), now=NOW, expiration_time=DAYS3)
    assert plan.is_empty and plan.details["unparseable_partitions"][0]["path"] == "dt=__DEFAULT_PARTITION__/"


def test_check_interval(warehouse):
    t = _table(warehouse, pk=False)
    assert partition_expiry_due(t, None, NOW)
    assert not partition_expiry_due(t, NOW - 3_599_000, NOW)
    assert partition_expiry_due(t, NOW - 3_600_001, NOW)
    zero = FileStoreTable(t.location, options_override={"partition.expiration-check-interval": "0 s"})
    assert partition_expiry_due(zero, NOW, NOW)


def test_convenience_and_dry_run(daily):
    r = po.Table(daily).maintenance.expire_partitions(now=NOW, expiration_time=DAYS3).dry_run_report()
    assert r.dry_run and r.deleted == {"data": 6} and daily.refresh().snapshots.latest_id() == 5
    r = po.Table(daily).maintenance.expire_partitions(now=NOW, expiration_time=DAYS3).execute()
    assert not r.dry_run and r.snapshot_id == 6
    assert r.deleted_as.startswith("dropped from the table") and "dropped from the table" in r.summary()
    r = po.Table(daily).maintenance.expire_partitions(now=NOW, expiration_time=DAYS3).execute()  # nothing left to do: no commit
    assert r.snapshot_id is None and r.deleted == {} and daily.refresh().snapshots.latest_id() == 6
    assert dataclasses.asdict(expirable_partitions(daily.refresh(), now_millis=NOW + 86_400_000 * 30,
                                                   expiration_time=DAYS3)[0])["expired"]


def test_cli_speaks_flags(daily, warehouse):
    import contextlib
    import io
    import json

    from paimon_ops.cli import main

    def run(*argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(["expire-partitions", warehouse, "db.t", "--now-ms", str(NOW), *argv])
        return rc, out.getvalue(), err.getvalue()

    for argv, words, python in (
            ((), "--expiration-time", "expiration_time"),
            (("--expiration-time", "3 d", "--max-expires", "0"), "--max-expires 0", "max_expires"),
            (("--expiration-time", "3 d", "--timestamp-formatter", "yyyyMMdd"), "--timestamp-formatter yyyyMMdd",
             "timestamp_formatter"),
            (("--expiration-time", "3 d", "--timestamp-pattern", "$day"), "--timestamp-pattern $day",
             "timestamp_pattern"),
            (("--expiration-time", "soon",), "--expiration-time", "expiration_time")):
        rc, out, err = run(*argv)
        assert rc == 2 and words in err and python not in err and "Traceback" not in err, err
    rc, out, _ = run("--expiration-time", "3 d", "--dry-run")
    assert rc == 0 and "expires dt=2024-01-01/" in out and "- data" in out
    rc, out, _ = run("--expiration-time", "3 d", "--json")
    report = json.loads(out)
    assert rc == 0 and report["details"]["partitions_dropped"] == 3 and report["snapshot_id"] == 6
