"""The Hive Metastore client against a real Hive 2.3 metastore: partitions, Java's lock semantics (both ways with
Java Paimon 0.9's HiveCatalogLock), and one-line errors for a metastore that is not there or does not answer."""
from __future__ import annotations

import socket
import threading
import time

import pytest

from paimon_ops.catalog.hive_client import ACQUIRED, WAITING, HiveMetastoreClient, parse_uris
from paimon_ops.errors import InvalidOptionError, LockTimeoutError, UnreachableError
from tests.net import free_port, patient


@pytest.fixture
def client(hive_metastore):
    with HiveMetastoreClient(hive_metastore.uri) as c:
        yield c


def _states(c: HiveMetastoreClient, db: str, table: str) -> list[int]:
    return [lk.state for lk in c.lock_holders(db, table)]


def _create_plain_table(c: HiveMetastoreClient, db: str, name: str, location: str, partition_keys=("dt",)):
    t = c.types
    if c.get_database(db) is None:
        c.call("db", lambda cl: cl.create_database(t.Database(name=db, locationUri=location.rsplit("/", 1)[0],
                                                                parameters={})))
    sd = t.StorageDescriptor(cols=[t.FieldSchema("v", "string", None)], location=location,
                             inputFormat="org.apache.hadoop.mapred.TextInputFormat",
                             outputFormat="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
                             serdeInfo=t.SerDeInfo(serializationLib="org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
                                                   parameters={}),
                             bucketCols=[], sortCols=[], parameters={}, numBuckets=-1, compressed=False)
    table = t.Table(tableName=name, dbName=db, owner="test", sd=sd, parameters={},
                    partitionKeys=[t.FieldSchema(k, "string", None) for k in partition_keys], tableType="MANAGED_TABLE")
    c.call("table", lambda cl: cl.create_table(table))
    return c.get_table(db, name)


def test_partitions_add_if_not_exists_and_drop(client, hive_database, tmp_path):
    loc = f"file:{tmp_path}/{hive_database}.db/t"
    table = _create_plain_table(client, hive_database, "t", loc)
    client.add_partitions(hive_database, "t", [(["2024-01-01"], f"{loc}/dt=2024-01-01"),
                                                (["2024-01-02"], f"{loc}/dt=2024-01-02")], table.sd)
    # again, with one new: the existing ones are kept as they are (if-not-exists), no error
    client.add_partitions(hive_database, "t", [(["2024-01-02"], f"{loc}/elsewhere"),
                                                (["a b/c"], f"{loc}/dt=a b%2Fc")], table.sd)
    assert client.partition_names(hive_database, "t") == ["dt=2024-01-01", "dt=2024-01-02", "dt=a b%2Fc"]
    got = client.call("p", lambda c: c.get_partition(hive_database, "t", ["2024-01-02"]))
    assert got.sd.location == f"{loc}/dt=2024-01-02" and got.sd.inputFormat == table.sd.inputFormat
    assert client.drop_partition(hive_database, "t", ["2024-01-01"]) is True
    assert client.drop_partition(hive_database, "t", ["2024-01-01"]) is False  # not there: nothing to do
    assert client.partition_names(hive_database, "t") == ["dt=2024-01-02", "dt=a b%2Fc"]
    assert tmp_path.exists()  # drop_partition never deletes data (deleteData=false)


def test_lock_is_javas_exclusive_table_lock_and_waits_for_the_holder(hive_metastore, client, hive_database):
    other = HiveMetastoreClient(hive_metastore.uri)
    held_id, state = other.lock(hive_database, "t")
    assert state == ACQUIRED
    [lk] = client.lock_holders(hive_database, "t")
    assert (lk.type, lk.dbname, lk.tablename, lk.partname) == (client.types.LockType.EXCLUSIVE, hive_database, "t", None)
    released_at = []

    def release():
        time.sleep(1.5)
        released_at.append(time.monotonic())
        other.unlock(held_id)

    threading.Thread(target=release, daemon=True).start()
    start = time.monotonic()
    with client.table_lock(hive_database, "t", acquire_timeout_s=patient(30), check_max_sleep_s=0.4) as lock_id:
        acquired_at = time.monotonic()
        assert _states(client, hive_database, "t") == [ACQUIRED]
        assert lock_id != held_id
    assert released_at and released_at[0] <= acquired_at
    assert acquired_at - start >= 1.4
    assert acquired_at - released_at[0] < 0.4 + patient(1)  # polled at most lock-check-max-sleep apart
    assert _states(client, hive_database, "t") == []  # released after the block
    other.close()


def test_lock_timeout_is_one_line_naming_the_table_and_leaves_no_lock(hive_metastore, client, hive_database):
    holder = HiveMetastoreClient(hive_metastore.uri)
    held_id, _ = holder.lock(hive_database, "orders")
    start = time.monotonic()
    with pytest.raises(LockTimeoutError) as ei:
        with client.table_lock(hive_database, "orders", acquire_timeout_s=1.0, check_max_sleep_s=0.3):
            pytest.fail("must not get the lock")
    waited = time.monotonic() - start
    assert 1.0 <= waited < patient(5)
    msg = str(ei.value)
    assert "\n" not in msg and f"{hive_database}.orders" in msg and hive_metastore.uri in msg
    assert "lock-acquire-timeout" in msg and "nothing was committed" in msg and "held by lock" in msg
    assert _states(client, hive_database, "orders") == [ACQUIRED]  # only the holder's: our waiting lock is gone
    holder.unlock(held_id)
    assert _states(client, hive_database, "orders") == []


@pytest.mark.parametrize("exc", [RuntimeError("boom"), KeyboardInterrupt()])
def test_lock_released_on_error_and_interrupt(client, hive_database, exc):
    with pytest.raises(type(exc)):
        with client.table_lock(hive_database, "t", acquire_timeout_s=5, check_max_sleep_s=1):
            assert _states(client, hive_database, "t") == [ACQUIRED]
            raise exc
    assert _states(client, hive_database, "t") == []


def test_interrupt_while_waiting_releases_the_waiting_lock(hive_metastore, client, hive_database):
    holder = HiveMetastoreClient(hive_metastore.uri)
    held_id, _ = holder.lock(hive_database, "t")

    def interrupting_sleep(seconds: float) -> None:
        assert _states(client, hive_database, "t") == [ACQUIRED, WAITING]
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        with client.table_lock(hive_database, "t", acquire_timeout_s=60, check_max_sleep_s=1,
                               sleep=interrupting_sleep):
            pytest.fail("must not get the lock")
    assert [lk.lockid for lk in client.lock_holders(hive_database, "t")] == [held_id]
    holder.unlock(held_id)


@pytest.mark.java
def test_java_hive_catalog_commit_waits_for_our_lock(hive_metastore, client, hive_database, tmp_path):
    """Java Paimon 0.9's HiveCatalog (lock.enabled) commits only after we release the table's lock."""
    from tests.interop.java_harness import JavaTable
    jt = JavaTable(tmp_path / "wh", hive_database, "t", catalog_options={
        "metastore": "hive", "uri": hive_metastore.uri, "lock.enabled": "true", "lock-check-max-sleep": "500 ms"})
    jt.create([("id", "INT NOT NULL"), ("v", "STRING")], primary_keys=["id"], options={"bucket": 1})
    result: dict = {}

    def java_write():
        try:
            result["write"] = jt.write([{"rows": [[1, "a"]]}])
        except Exception as e:  # noqa: BLE001 - reported below
            result["error"] = e
        result["done_at"] = time.time()

    with client.table_lock(hive_database, "t", acquire_timeout_s=10, check_max_sleep_s=1):
        writer = threading.Thread(target=java_write, daemon=True)
        writer.start()
        deadline = time.monotonic() + patient(60)
        while _states(client, hive_database, "t") != [ACQUIRED, WAITING]:  # Java's lock request is queued
            assert writer.is_alive() and time.monotonic() < deadline, result
            time.sleep(0.2)
        time.sleep(1)
        assert not (jt.path / "snapshot" / "snapshot-1").exists()  # Java holds off while we hold the lock
        released_at = time.time()
    writer.join(patient(120))
    assert "error" not in result, result.get("error")
    assert result["done_at"] >= released_at
    snapshot_ms = int((jt.path / "snapshot" / "snapshot-1").stat().st_mtime * 1000)
    assert snapshot_ms >= int(released_at * 1000) - 5
    assert jt.rows() == [[1, "a"]]
    assert _states(client, hive_database, "t") == []


def test_unreachable_metastore_is_one_line_within_the_connect_timeout():
    port = free_port()  # nothing listens
    start = time.monotonic()
    with pytest.raises(UnreachableError) as ei:
        HiveMetastoreClient(f"thrift://127.0.0.1:{port}", connect_timeout_s=2).databases()
    assert time.monotonic() - start < patient(2)
    assert str(ei.value).startswith(f"the Hive Metastore thrift://127.0.0.1:{port} is unreachable")
    assert "\n" not in str(ei.value)


def test_silent_metastore_times_out_within_the_connect_timeout():
    """A port that accepts connections but never answers (a hung server) is unreachable after the connect timeout,
    not after the 10-minute socket timeout of an answering one."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        start = time.monotonic()
        with pytest.raises(UnreachableError) as ei:
            HiveMetastoreClient(f"thrift://127.0.0.1:{port}", connect_timeout_s=1.5).databases()
        took = time.monotonic() - start
    assert 1.4 <= took < patient(3)
    assert "timed out" in str(ei.value) and f"127.0.0.1:{port}" in str(ei.value)


def test_uris():
    assert [str(e) for e in parse_uris("thrift://a:1, thrift://b")] == ["thrift://a:1", "thrift://b:9083"]
    for bad in ("", "http://a:1", "thrift://a:x"):
        with pytest.raises(InvalidOptionError, match="'uri'"):
            parse_uris(bad)
