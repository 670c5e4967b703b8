"""Thin mode (`data-file.thin-mode`, Paimon 1.0+): primary-key files without the `_KEY_*` columns.

pypaimon 2.1.0 writes no thin files (it ignores the option), Java 0.9 neither reads nor writes them (the option
appeared in 1.0), so the proof is: pypaimon writes the table, our compactions write thin files (read back by
paimon-ops as compaction inputs, with pypaimon's non-thin files beside them), and pypaimon 2.1.0 AND pypaimon-rust
0.4.0 read every snapshot as the model of the table says, also after pypaimon writes on.
"""
from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

import paimon_ops as po
from paimon_ops.format import stats as st
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import FileSystemCatalog
from tests import pypaimon_util as pu

S = pa.schema([pa.field("id", pa.int32(), False), ("a", pa.int64()), ("b", pa.string())])
COLS = ["id", "a", "b"]
SHAPES = {
    "db.thin": {"bucket": "2", "data-file.thin-mode": "true"},
    "db.thin_orc": {"bucket": "2", "data-file.thin-mode": "true", "file.format": "orc"},
    # deletion vectors + lookup changelog: the lookups of minor compaction probe thin files
    "db.thin_dv": {"bucket": "2", "data-file.thin-mode": "true", "deletion-vectors.enabled": "true",
                   "changelog-producer": "lookup"},
}


def _expected(model: dict) -> list[tuple]:
    return sorted(model.values(), key=lambda r: tuple((v is None, repr(v)) for v in r))


def _names(path: str) -> list[str]:
    if path.endswith(".orc"):
        return list(orc.ORCFile(path).schema.names)
    return list(pq.read_schema(path).names)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    wh = str(tmp_path_factory.mktemp("thin") / "wh")
    os.makedirs(wh)
    for ident, opts in SHAPES.items():
        pu.create_table(wh, ident, S, primary_keys=["id"], options=opts)
    return wh


def _write(wh: str, ident: str, model: dict, ids: list[int], k: int) -> None:
    rows = {"id": ids, "a": [k] * len(ids), "b": [f"{k}-" + "x" * 150 + str(i) for i in ids]}  # long: truncation
    pu.write(pu.get_table(wh, ident), rows)
    for i in ids:
        model[i] = (i, k, rows["b"][ids.index(i)])


@pytest.mark.parametrize("ident", list(SHAPES))
def test_thin_mode_compaction(warehouse, ident):
    wh = warehouse
    model: dict[int, tuple] = {}
    for k in range(4):
        _write(wh, ident, model, [1, 2, 3, 10 + k], k)
    for mode in ("minor", "full"):
        po.Table(FileSystemCatalog(wh).get_table(ident)).maintenance.compact(mode=mode).execute()
        assert pu.both_read(wh, ident, COLS) == _expected(model)
    table = FileSystemCatalog(wh).get_table(ident)
    res = TableScanner(table).scan(table.snapshots.latest())
    ours = [f for f in res.files if f.meta.file_source == 1]
    assert ours and all(f.meta.level > 0 for f in ours)
    for f in ours:
        # physically thin: _SEQUENCE_NUMBER, _VALUE_KIND, the columns; key stats = the value column's
        assert _names(f.path) == ["_SEQUENCE_NUMBER", "_VALUE_KIND", *COLS], f.name
        ks = st.decode_stats(f.meta.key_stats, [table.schema.field("id").type], f.name)
        assert ks[2] == [0] and ks[0][0] <= ks[1][0]
    # pypaimon writes on (non-thin files next to ours); compaction reads both layouts
    _write(wh, ident, model, [2, 20], 9)
    po.Table(FileSystemCatalog(wh).get_table(ident)).maintenance.compact(mode="minor").execute()
    assert pu.both_read(wh, ident, COLS) == _expected(model)
    for sid in FileSystemCatalog(wh).get_table(ident).snapshots.list_ids()[-2:]:
        pu.both_read(wh, ident, COLS, snapshot_id=sid)  # the readers agree on the last snapshots too
