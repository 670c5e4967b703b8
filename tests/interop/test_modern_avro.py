"""Avro data files: tables pypaimon 2.1.0 writes with `file.format=avro` (every common type) are compacted
into Avro files of our own; pypaimon 2.1.0 and pypaimon-rust 0.4.0 read the same rows before and after, every
snapshot, and pypaimon writes on. Manifest lists we write carry the row-id range when every entry has one."""
from __future__ import annotations

import datetime as dt
import decimal

import fastavro
import pyarrow as pa
import pytest

import paimon_ops as po
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import FileSystemCatalog
from tests import pypaimon_util as pu

S = pa.schema([
    ("pt", pa.string()), ("id", pa.int32()), ("l", pa.int64()), ("s", pa.string()), ("d", pa.float64()),
    ("dec", pa.decimal128(10, 2)), ("day", pa.date32()), ("ts", pa.timestamp("us")), ("flag", pa.bool_()),
    ("bin", pa.binary()), ("arr", pa.list_(pa.int64())),
])  # (no MAP: pypaimon 2.1.0 cannot write maps into Avro)
COLS = [f.name for f in S]


def _batch(ids, tag: str) -> dict:
    return {"pt": ["x" if i % 2 else "y" for i in ids], "id": list(ids), "l": [i * 10 for i in ids],
            "s": [f"{tag}{i}" for i in ids], "d": [i / 3 for i in ids],
            "dec": [decimal.Decimal(f"{i}.25") for i in ids], "day": [dt.date(2024, 1, 1 + i % 28) for i in ids],
            "ts": [dt.datetime(2024, 1, 1, 12, 0, 0, 123456) + dt.timedelta(seconds=i) for i in ids],
            "flag": [i % 3 == 0 for i in ids], "bin": [bytes([i % 256]) * 3 for i in ids],
            "arr": [[i, i + 1] for i in ids]}  # (no null elements: pypaimon 2.1.0 writes Avro items non-null)


def _hashable(rows: list[tuple]) -> list[tuple]:
    return [tuple(tuple(map(tuple, v)) if isinstance(v, list) and v and isinstance(v[0], tuple) else
                  tuple(v) if isinstance(v, list) else v for v in r) for r in rows]


@pytest.mark.parametrize("pk", [True, False], ids=["primary-key", "append"])
def test_avro_tables_compacted_into_avro(tmp_path, pk):
    wh = str(tmp_path / "wh")
    opts = {"file.format": "avro", "bucket": "2" if pk else "-1"}
    t = pu.create_table(wh, "db.t", S, partition_keys=["pt"], primary_keys=["pt", "id"] if pk else (), options=opts)
    pu.write(t, _batch(range(20), "a"))
    pu.write(t, _batch(range(5, 12), "b"))
    pu.write(t, _batch(range(30, 33), "c"))
    snaps = {i: pu.both_read(wh, "db.t", ["pt", "id", "l", "s", "d", "dec", "day", "ts", "flag", "bin"], snapshot_id=i)
             for i in (1, 2, 3)}
    full_before = _hashable(pu.both_read(wh, "db.t", COLS))
    table = FileSystemCatalog(wh).get_table("db.t")
    r = po.Table(table).maintenance.compact(mode="full").execute()
    assert r.snapshot_id == 4
    outs = [f for f in TableScanner(table.refresh()).scan_latest().files if f.meta.file_source == 1]
    assert outs and all(f.name.endswith(".avro") for f in outs)
    with open(outs[0].path, "rb") as fo:
        reader = fastavro.reader(fo)
        assert reader.metadata["avro.codec"] == "zstandard"
        assert reader.writer_schema["name"] == "org.apache.paimon.avro.generated.record"
    assert _hashable(pu.both_read(wh, "db.t", COLS)) == full_before
    for sid, rows in snaps.items():
        assert pu.both_read(wh, "db.t", ["pt", "id", "l", "s", "d", "dec", "day", "ts", "flag", "bin"],
                            snapshot_id=sid) == rows
    pu.write(pu.get_table(wh, "db.t"), _batch([40], "d"))
    assert len(pu.both_read(wh, "db.t", ["pt", "id"])) == len(full_before) + 1
