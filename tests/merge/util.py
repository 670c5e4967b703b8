"""Helpers: build a TableSchema + MergeSpec and record tables compactly."""
from __future__ import annotations

from typing import Any

import pyarrow as pa

from paimon_ops.format.schema import TableSchema
from paimon_ops.format.types import DataField, arrow_field, parse_type
from paimon_ops.merge.merge import merge_records
from paimon_ops.merge.spec import MergeSpec
from paimon_ops.options import Options

KINDS = {"+I": 0, "-U": 1, "+U": 2, "-D": 3}
NAMES = {v: k for k, v in KINDS.items()}


def schema(fields: list[tuple[str, str]], pk: list[str], options: dict[str, str] | None = None,
           partition: list[str] | None = None) -> TableSchema:
    fs = []
    for i, (n, t) in enumerate(fields):
        typ = parse_type(t)
        if n in pk:
            typ = typ.with_nullable(False)  # Paimon forces primary keys NOT NULL
        fs.append(DataField(i, n, typ))
    return TableSchema(id=0, fields=tuple(fs), partition_keys=tuple(partition or ()), primary_keys=tuple(pk),
                       options=dict(options or {}))


def spec_of(s: TableSchema) -> MergeSpec:
    return MergeSpec.from_schema(s, Options(s.options, "t"), "table default.t")


def records(s: TableSchema, rows: list[tuple]) -> pa.Table:
    """rows: (kind, seq, level, *field values) - kind as '+I'/'-U'/'+U'/'-D'."""
    cols: dict[str, list[Any]] = {f.name: [] for f in s.fields}
    seq, kind, level = [], [], []
    for r in rows:
        k, sq, lv, *vals = r
        assert len(vals) == len(s.fields), r
        for f, v in zip(s.fields, vals):
            cols[f.name].append(v)
        seq.append(sq)
        kind.append(KINDS[k])
        level.append(lv)
    arrays = [pa.array(cols[f.name], type=arrow_field(f.name, f.type).type) for f in s.fields]
    fields = [pa.field(f.name, arrow_field(f.name, f.type).type) for f in s.fields]
    arrays += [pa.array(seq, pa.int64()), pa.array(kind, pa.int8()), pa.array(level, pa.int32())]
    fields += [pa.field("_SEQUENCE_NUMBER", pa.int64()), pa.field("_VALUE_KIND", pa.int8()),
               pa.field("_LEVEL", pa.int32())]
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def merged(s: TableSchema, rows: list[tuple], drop_delete: bool = False, **kw: Any) -> list[tuple]:
    """Merge and return rows as (kind, seq, *field values)."""
    out = merge_records(records(s, rows), spec_of(s), drop_delete, **kw)
    res = []
    cols = [out.column(f.name).to_pylist() for f in s.fields]
    ks = out.column("_VALUE_KIND").to_pylist()
    sq = out.column("_SEQUENCE_NUMBER").to_pylist()
    for i in range(out.num_rows):
        res.append((NAMES[ks[i]], sq[i], *[c[i] for c in cols]))
    return res
