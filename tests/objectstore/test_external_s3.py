"""External data paths on the S3 server: pypaimon 2.1.0 writes a table on moto_server whose data files go
to `s3://<bucket>/ext`; compaction reads them there and writes its outputs there, expiry reclaims them, orphan
removal scans the external root; pypaimon 2.1.0 and pypaimon-rust 0.4.0 read the same rows from S3."""
from __future__ import annotations

import pyarrow as pa

import paimon_ops as po
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import FileSystemCatalog
from tests import pypaimon_util as pu
from tests.objectstore.conftest import ACCESS_KEY, REGION, SECRET_KEY

S = pa.schema([("pt", pa.string()), ("id", pa.int32()), ("a", pa.int64())])
COLS = ["pt", "id", "a"]


def _readers(server, bucket: str):
    from pypaimon import CatalogFactory
    py = CatalogFactory.create({"warehouse": f"s3://{bucket}/wh", "fs.s3.endpoint": server.endpoint,
                                "fs.s3.accessKeyId": ACCESS_KEY, "fs.s3.accessKeySecret": SECRET_KEY,
                                "fs.s3.region": REGION})
    import pypaimon_rust as pr
    rust = pr.datafusion.PaimonCatalog({"warehouse": f"s3://{bucket}/wh", "s3.endpoint": server.endpoint,
                                        "s3.access-key": ACCESS_KEY, "s3.secret-key": SECRET_KEY,
                                        "s3.region": REGION, "s3.path-style-access": "true"})

    def rows() -> list[tuple]:
        rb = py.get_table("db.t").new_read_builder()
        a = pu.multiset(rb.new_read().to_arrow(rb.new_scan().plan().splits()), COLS)
        rb2 = rust.get_table("db.t").new_read_builder()
        b = pu.multiset(pa.Table.from_batches(rb2.new_read().read(rb2.new_scan().plan().splits())), COLS)
        assert a == b
        return a
    return py, rows


def _write(t, data) -> None:
    wb = t.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(pa.Table.from_pydict(data, schema=S))
    c.commit(w.prepare_commit())
    w.close()
    c.close()


def test_external_paths_on_s3(s3_server):
    from pypaimon import Schema
    bucket = s3_server.new_bucket()
    py, rows = _readers(s3_server, bucket)
    py.create_database("db", True)
    py.create_table("db.t", Schema.from_pyarrow_schema(
        S, partition_keys=["pt"], primary_keys=["pt", "id"],
        options={"bucket": "1", "data-file.external-paths": f"s3://{bucket}/ext",
                 "data-file.external-paths.strategy": "round-robin"}), False)
    _write(py.get_table("db.t"), {"pt": ["x", "x", "y"], "id": [1, 2, 3], "a": [1, 2, 3]})
    _write(py.get_table("db.t"), {"pt": ["x"], "id": [1], "a": [10]})
    expected = rows()
    assert expected == [("x", 1, 10), ("x", 2, 2), ("y", 3, 3)]
    pypaimon_files = {k for k in s3_server.keys(bucket, "ext/") if k.endswith(".parquet")}

    table = FileSystemCatalog(f"s3://{bucket}/wh", options=s3_server.options).get_table("db.t")
    r = po.Table(table).maintenance.compact().execute()
    assert r.snapshot_id == 3
    live = TableScanner(table.refresh()).scan_latest().files
    assert all(f.meta.external_path.startswith(f"s3://{bucket}/ext/") for f in live)
    new = {k for k in s3_server.keys(bucket, "ext/") if k.endswith(".parquet")} - pypaimon_files
    assert new and not [k for k in s3_server.keys(bucket, "wh/") if "/data-" in k]
    assert rows() == expected

    r = po.Table(table.refresh()).maintenance.expire_snapshots(retain_min=1, retain_max=1, now=2 ** 45).execute()
    gone = {f.path for f in r.files if f.kind == "data"}
    assert gone and all(p.startswith(f"{bucket}/ext/") for p in gone)
    left = set(s3_server.keys(bucket, "ext/"))
    assert not {p[len(bucket) + 1:] for p in gone} & left
    assert rows() == expected

    s3_server.put_many(bucket, ["ext/pt=x/bucket-0/data-stray-0.parquet"])
    r = po.Table(table.refresh()).maintenance.remove_orphans(older_than=2 ** 45 - 10 * 86_400_000, now=2 ** 45).execute()
    assert [f.path for f in r.files if f.kind == "orphan"] == [f"{bucket}/ext/pt=x/bucket-0/data-stray-0.parquet"]
    assert rows() == expected
    _write(py.get_table("db.t"), {"pt": ["y"], "id": [4], "a": [4]})
    assert rows() == expected + [("y", 4, 4)]
