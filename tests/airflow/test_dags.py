"""`airflow dags test` runs the example DAGs (and a stale-plan DAG) in a real Airflow 3 against tables Java Paimon
0.9 wrote; Java then reads the result: the nightly maintenance (snapshot / tag / partition expiry, orphans), a dry
run reviewed and applied, a stale plan refused, the daily tag of one day. The connection carries a secret key that
must appear in no log, XCom or plan."""
from __future__ import annotations

import datetime as dt
import json
import os
import time
from zoneinfo import ZoneInfo

import pytest

from tests.airflow.conftest import EXAMPLE_DAGS, TEST_DAGS, java_or_fail, make_home
from tests.interop import java_harness as jh

SECRET = "sekrit-never-shown-4711"
# the connection's table options (Java's own writer would expire snapshots itself if the tables had them)
RETENTION = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "3"}
DAYS = 86_400


def _schema(fields, pk=(), parts=(), **opts) -> dict:
    return {"fields": [{"name": n, "type": t} for n, t in fields], "partition_keys": list(parts),
            "primary_keys": list(pk), "options": {k: str(v) for k, v in opts.items()}}


def _t(wh: str, name: str, **extra) -> dict:
    return {"warehouse": wh, "database": "shop", "table": name, **extra}


@pytest.fixture(scope="module")
def java_wh(tmp_path_factory) -> str:
    """Tables written by Java Paimon 0.9 (one JVM): orders (PK, 6 commits, a tag past its retention, an old orphan
    file), events (partitioned append, partition.expiration-time 1 d, one partition of 2020), review and stale."""
    from tests.airflow.conftest import java_or_fail
    java_or_fail()
    wh = str(tmp_path_factory.mktemp("airflow-java") / "wh")
    kv = [("k", "INT NOT NULL"), ("v", "STRING")]
    cmds = [
        ("create_table", _t(wh, "orders", schema=_schema(kv, pk=["k"], bucket=1))),
        ("write", _t(wh, "orders", batches=[{"rows": [[k, f"v{i}"] for k in range(i, i + 5)]} for i in range(6)])),
        ("create_tag", _t(wh, "orders", tag="short_lived", snapshot_id=1, time_retained_ms=1)),
        ("create_table", _t(wh, "events", schema=_schema([("dt", "STRING"), ("id", "BIGINT")], parts=["dt"],
                                                          bucket=-1, **{"partition.expiration-time": "1 d"}))),
        ("write", _t(wh, "events", batches=[{"rows": [["2020-01-01", 1], ["2999-01-01", 2]]},
                                            {"rows": [["2999-01-01", 3]]}])),
        ("create_table", _t(wh, "review", schema=_schema(kv, pk=["k"], bucket=1))),
        ("write", _t(wh, "review", batches=[{"rows": [[i, "r"]]} for i in range(5)])),
        ("create_table", _t(wh, "stale", schema=_schema(kv, pk=["k"], bucket=1))),
        ("write", _t(wh, "stale", batches=[{"rows": [[1, "a"]]}, {"rows": [[2, "b"]]}])),
    ]
    jh.run_many(cmds)
    orphan = os.path.join(wh, "shop.db", "orders", "bucket-0", "data-00000000-orphan-0.parquet")
    with open(orphan, "wb") as f:
        f.write(b"not referenced by anything")
    old = time.time() - 10 * DAYS
    os.utime(orphan, (old, old))
    return wh


@pytest.fixture(scope="module")
def home(airflow_bin, java_wh, tmp_path_factory):
    dags = [EXAMPLE_DAGS / "example_paimon_nightly.py", EXAMPLE_DAGS / "example_paimon_review.py",
            TEST_DAGS / "paimon_stale_plan.py"]
    ah = make_home(airflow_bin, tmp_path_factory.mktemp("af"), java_wh, dags)
    ah.extra_env.update({
        "AIRFLOW_CONN_PAIMON_DEFAULT": json.dumps({"conn_type": "paimon", "host": java_wh, "login": "AKIDEXAMPLE",
                                                  "password": SECRET, "extra": {"placement": "local", "options": RETENTION}}),
        "PAIMON_NIGHTLY_TABLES": "shop.[eo]*",  # orders and events; review and stale are for the next tests
        "PAIMON_REVIEW_TABLE": "shop.review", "PAIMON_STALE_TABLE": "shop.stale"})
    return ah


def _states(home, dag_id: str) -> dict[str, str]:
    rows = home.sql("select task_id, map_index, state from task_instance where dag_id = ?", dag_id)
    return {f"{t}[{m}]" if m >= 0 else t: s for t, m, s in rows}


def _xcoms(home, dag_id: str) -> list[tuple[str, str, str]]:
    return [(t, k, v if isinstance(v, str) else bytes(v).decode("utf-8", "replace"))
            for t, k, v in home.sql("select task_id, key, value from xcom where dag_id = ?", dag_id)]


def _asset_events(home, dag_id: str) -> dict[str, list[dict]]:
    """The asset events a DAG's tasks recorded, by asset URI (their extra)."""
    rows = home.sql("select a.uri, e.extra from asset_event e join asset a on a.id = e.asset_id "
                    "where e.source_dag_id = ?", dag_id)
    out: dict[str, list[dict]] = {}
    for uri, extra in rows:
        out.setdefault(uri, []).append(json.loads(extra) if isinstance(extra, (str, bytes)) else extra)
    return out


def _changed(entry: dict) -> bool:
    """Whether a table's nightly entry changed it (a commit, files deleted or written: the operators' `changed`)."""
    return any(f.get("snapshot_id") is not None or f.get("total_deleted") or any((f.get("written") or {}).values())
               for f in entry["steps"].values())


def test_nightly_maintenance_on_java_tables(home, java_wh):
    orders = jh.JavaTable(java_wh, "shop", "orders")
    before = orders.snapshots()
    rows = orders.rows()
    assert len(before["snapshots"]) >= 6 and "short_lived" in before["tags"]

    proc = home.run("dags", "test", "paimon_nightly", timeout=240)
    states = _states(home, "paimon_nightly")
    assert states == {"shards": "success", "maintain[0]": "success"}, states  # one shard: one task for both tables
    result = json.loads(next(v for t, k, v in _xcoms(home, "paimon_nightly") if t == "maintain" and k == "tables"))
    by_table = {r["table"]: r for r in result["tables"]}
    assert set(by_table) == {"shop.events", "shop.orders"} and result["failed"] == []
    assert list(by_table["shop.events"]["steps"]) == ["expire_partitions", "expire_snapshots", "expire_tags",
                                                      "remove_orphans"]  # no automatic tags asked for
    assert by_table["shop.orders"]["steps"]["remove_orphans"]["total_deleted"] == 1
    # each table the shard changed has an asset event of its own, with its own figures
    events = _asset_events(home, "paimon_nightly")
    changed = {t for t, r in by_table.items() if _changed(r)}
    assert "shop.orders" in changed and set(events) == {f"paimon://paimon_default/{t}" for t in changed}, events
    for t in changed:
        (extra,) = events[f"paimon://paimon_default/{t}"]
        assert extra["table"] == t and sorted(extra["steps"]) == sorted(by_table[t]["steps"]), extra
    assert events["paimon://paimon_default/shop.orders"][0]["deleted"] >= 1
    log = proc.stdout + proc.stderr
    assert "shop.orders: expire_snapshots (deleted" in log  # a line per table in the task log
    assert SECRET not in log and SECRET not in json.dumps(_xcoms(home, "paimon_nightly"))

    after, events = jh.run_many([("snapshots", _t(java_wh, "orders")), ("snapshots", _t(java_wh, "events"))])
    assert len(after["snapshots"]) == 3 and after["latest"] == before["latest"]
    assert "short_lived" not in after["tags"]
    assert not os.path.exists(os.path.join(java_wh, "shop.db", "orders", "bucket-0", "data-00000000-orphan-0.parquet"))
    assert orders.rows() == rows and orders.check_files() == []
    ev = jh.JavaTable(java_wh, "shop", "events")
    assert sorted(r[1] for r in ev.rows()) == [2, 3] and ev.check_files() == []  # 2020-01-01 dropped
    assert events["snapshots"][-1]["commitKind"] in ("OVERWRITE", "COMPACT")


def test_nightly_shard_with_a_failing_table(airflow_bin, tmp_path):
    """A table made to fail (a corrupt manifest) in a shard: its entry fails and the task fails naming it; the other
    tables of the shard are maintained and recorded done (Java reads them after), and another shard is untouched
    by it."""
    from paimon_ops.table.writer import create_table
    from tests.dagster.util import ms, write
    java_or_fail()
    wh = str(tmp_path / "wh")
    for ident in ("a.t1", "a.t2", "a.t3", "b.t4"):
        t = create_table(wh, ident, [("id", "BIGINT"), ("v", "STRING")],
                         options={"bucket": "-1", "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2",
                                  "snapshot.time-retained": "1 min"})
        for i in range(4):
            write(t, {"id": [i], "v": [f"v{i}"]}, ms(2026, 3, 27, 8 + i))
    for f in (tmp_path / "wh" / "a.db" / "t2" / "manifest").glob("manifest-*"):
        if not f.name.startswith("manifest-list-"):
            f.write_bytes(b"not an avro file")
    ah = make_home(airflow_bin, tmp_path, wh, [EXAMPLE_DAGS / "example_paimon_nightly.py"])
    ah.extra_env["PAIMON_NIGHTLY_SHARD_SIZE"] = "3"
    proc = ah.run("dags", "test", "paimon_nightly", timeout=300, check=False)
    states = _states(ah, "paimon_nightly")
    assert states == {"shards": "success", "maintain[0]": "failed", "maintain[1]": "success"}, states
    shard_results = [json.loads(v) for t, k, v in _xcoms(ah, "paimon_nightly") if k == "tables"]
    assert len(shard_results) == 2  # pushed by the failed task too
    (failing,) = [v for v in shard_results if v["failed"]]
    assert failing["failed"] == ["a.t2"] and failing["done"] == 2
    entry = {r["table"]: r for r in failing["tables"]}
    assert entry["a.t2"]["status"] == "failed" and "not a readable Avro manifest" in entry["a.t2"]["error"]
    assert entry["a.t1"]["status"] == entry["a.t3"]["status"] == "done"
    assert "1 of 3 tables failed: a.t2" in proc.stdout + proc.stderr
    assert [r["status"] for r in next(v for v in shard_results if not v["failed"])["tables"]] == ["done"]
    # asset events per table: b.t4's own (its shard succeeded); Airflow records none of a failed task's
    events = _asset_events(ah, "paimon_nightly")
    assert set(events) == {"paimon://paimon_default/b.t4"}, events
    assert events["paimon://paimon_default/b.t4"][0]["table"] == "b.t4"
    assert events["paimon://paimon_default/b.t4"][0]["deleted"] >= 2
    for ident in ("a.t1", "a.t3", "b.t4"):  # maintained; Java reads them
        db, name = ident.split(".")
        java = jh.JavaTable(wh, db, name)
        assert len(java.snapshots()["snapshots"]) < 4 and sorted(r[0] for r in java.rows()) == [0, 1, 2, 3]
        assert java.check_files() == []


def test_review_then_apply(home, java_wh):
    review = jh.JavaTable(java_wh, "shop", "review")
    rows = review.rows()
    proc = home.run("dags", "test", "paimon_review_then_apply", timeout=180)
    assert _states(home, "paimon_review_then_apply") == {"plan_expiry": "success", "apply_expiry": "success"}
    xcoms = _xcoms(home, "paimon_review_then_apply")
    plan = json.loads(json.loads(next(v for t, k, v in xcoms if t == "plan_expiry" and k == "plan")))
    assert plan["operation"] == "expire_snapshots" and plan["table"] == "shop.review"
    deleted = [f["path"] for s in plan["steps"] for f in s["files"]]
    assert deleted and all(not os.path.exists(p) for p in deleted)  # applied exactly the reviewed plan
    report = json.loads(next(v for t, k, v in xcoms if t == "apply_expiry" and k == "return_value"))
    assert report["operation"] == "expire_snapshots" and not report["dry_run"] and report["total_deleted"] > 0
    assert "would delete" in proc.stdout + proc.stderr  # the dry run's review text
    assert SECRET not in proc.stdout + proc.stderr + json.dumps(xcoms)
    assert len(review.snapshots()["snapshots"]) == 3 and review.rows() == rows and review.check_files() == []


def test_stale_plan_is_refused(home, java_wh):
    stale = jh.JavaTable(java_wh, "shop", "stale")
    proc = home.run("dags", "test", "paimon_stale_plan", timeout=180, check=False)
    states = _states(home, "paimon_stale_plan")
    assert states == {"plan_rollback": "success", "another_writer_commits": "success", "apply_rollback": "failed"},\
        states
    log = proc.stdout + proc.stderr
    assert "the rollback plan for shop.stale is stale: the latest snapshot is now 3, the plan was made on 2" in log
    assert stale.snapshots()["latest"] == 3  # nothing rolled back
    assert sorted(stale.rows()) == [[1, "late"], [2, "b"]]  # Java reads the other writer's commit


def test_daily_tag_of_one_day(airflow_bin, tmp_path):
    """The daily-tags DAG, scheduled at the sample table's tag.create-time (00:30 Europe/Berlin), run for one
    logical date: it creates the tag of the day before, on the snapshot current at that day's deadline; Java reads
    the tag."""
    from paimon_ops.sample import build_sample_warehouse
    from paimon_ops.table.table import FileSystemCatalog
    wh = str(tmp_path / "sample")
    build_sample_warehouse(wh, rounds=3)
    ah = make_home(airflow_bin, tmp_path, wh, [EXAMPLE_DAGS / "example_paimon_daily_tags.py"])
    ah.extra_env["PAIMON_TAGS_TABLE"] = "shop.orders"
    berlin = ZoneInfo("Europe/Berlin")
    today = dt.datetime.now(berlin).date()
    run = dt.datetime.combine(today - dt.timedelta(days=1), dt.time(0, 30), berlin)
    before = {n for n, _ in FileSystemCatalog(wh).get_table("shop.orders").tags.tags()}
    ah.run("dags", "test", "paimon_daily_tags", run.isoformat(), timeout=180)
    day = (today - dt.timedelta(days=2)).isoformat()
    table = FileSystemCatalog(wh).get_table("shop.orders")
    tags = dict(table.tags.tags())
    assert set(tags) - before == {day}
    deadline = int(dt.datetime.combine(today - dt.timedelta(days=1), dt.time(0, 30), berlin).timestamp() * 1000)
    snaps = [table.snapshots.snapshot(i) for i in table.snapshots.list_ids()]
    expected = max(s.id for s in snaps if s.time_millis <= deadline)
    assert tags[day].id == expected
    java = jh.JavaTable(wh, "shop", "orders")
    assert java.snapshots()["tags"][day] == expected and java.read(tag=day)["rows"]


def test_write_audit_publish_on_a_branch(airflow_bin, tmp_path):
    """A branch's whole life in one DAG run of a real Airflow on a table Java Paimon 0.9 wrote; Java reads main
    afterwards: the branch's write published, the branch gone, nothing referenced missing."""
    from tests.airflow.conftest import java_or_fail
    java_or_fail()
    wh = str(tmp_path / "wh")
    wap = jh.JavaTable(wh, "shop", "wap")
    wap.create([("k", "INT NOT NULL"), ("v", "STRING")], primary_keys=["k"], options={"bucket": 1})
    wap.write([{"rows": [[k, f"v{i}"] for k in range(i, i + 3)]} for i in range(3)])
    rows = wap.rows()
    ah = make_home(airflow_bin, tmp_path / "af", wh, [TEST_DAGS / "paimon_branch_publish.py"])
    ah.extra_env["PAIMON_WAP_TABLE"] = "shop.wap"
    ah.run("dags", "test", "paimon_branch_publish", timeout=300)
    states = _states(ah, "paimon_branch_publish")
    assert set(states.values()) == {"success"} and len(states) == 6, states
    assert sorted(wap.rows()) == sorted(rows + [[100, "wap"], [101, "wap"]])
    assert wap.branches() == [] and wap.check_files() == [] and set(wap.snapshots()["tags"]) == {"base"}

