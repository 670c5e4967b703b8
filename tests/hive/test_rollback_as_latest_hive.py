"""rollback --as-latest is a commit through the table's catalog: on a Hive Metastore table Java Paimon 0.9 writes
(`metastore.partitioned-table`, the catalog lock on), rolling back as latest to a snapshot from before a partition
expiry commits under the metastore lock and registers the partition it puts back, as Java's commit callbacks do;
Java reads the new latest snapshot as the target and every later snapshot as before."""
from __future__ import annotations

import datetime as dt

import pytest

import paimon_ops as po
from tests.hive.conftest import java_hive_options, java_hive_table

pytestmark = pytest.mark.java

FIELDS = [("dt", "STRING NOT NULL"), ("id", "INT NOT NULL"), ("v", "STRING")]
NOW = dt.datetime(2024, 1, 10, tzinfo=dt.timezone.utc)  # the partitions' times are in their values


def test_as_latest_commits_through_the_metastore_and_registers_partitions(hive_metastore, hms_client, hive_database,
                                                                           tmp_path):
    uri, db = hive_metastore.uri, hive_database
    wh = tmp_path / "wh"
    jt = java_hive_table(wh, db, "t", uri)
    jt.create(FIELDS, partition_keys=["dt"], primary_keys=["dt", "id"],
              options={"bucket": "1", "metastore.partitioned-table": "true"})
    jt.write([{"rows": [[d, i, f"v{i}"] for d in ("2024-01-01", "2024-01-09") for i in range(3)]}])
    target = jt.snapshots()["latest"]
    want = jt.rows()
    with po.Catalog(str(wh), options=java_hive_options(uri)) as cat:
        cat.get_table(f"{db}.t").maintenance.expire_partitions(expiration_time=dt.timedelta(days=7),
                                                               now=NOW).execute()
        assert hms_client.partition_names(db, "t") == ["dt=2024-01-09"]
        history = {s["id"]: jt.rows(snapshot_id=s["id"]) for s in jt.snapshots()["snapshots"]}
        report = cat.get_table(f"{db}.t").maintenance.rollback(snapshot_id=target, as_latest=True).execute()
    assert report.snapshot_id == max(history) + 1
    assert hms_client.partition_names(db, "t") == ["dt=2024-01-01", "dt=2024-01-09"]  # put back, registered again
    assert jt.rows() == want
    for sid, rows in history.items():
        assert jt.rows(snapshot_id=sid) == rows, sid
    assert jt.check_files() == []
