"""pypaimon 2.1.0 as the independent reference implementation: create, write and read real tables."""
from __future__ import annotations

from typing import Any

import pyarrow as pa


def catalog(warehouse: str):
    from pypaimon import CatalogFactory
    return CatalogFactory.create({"warehouse": str(warehouse)})


def create_table(warehouse: str, identifier: str, pa_schema: pa.Schema, partition_keys=(), primary_keys=(),
                 options: dict[str, str] | None = None):
    from pypaimon import Schema
    cat = catalog(warehouse)
    db = identifier.split(".")[0]
    cat.create_database(db, True)
    schema = Schema.from_pyarrow_schema(pa_schema, partition_keys=list(partition_keys),
                                        primary_keys=list(primary_keys), options=dict(options or {}))
    cat.create_table(identifier, schema, False)
    return cat.get_table(identifier)


def get_table(warehouse: str, identifier: str, options: dict[str, str] | None = None):
    t = catalog(warehouse).get_table(identifier)
    return t.copy(options) if options else t


def write(table, data: pa.Table | dict[str, list[Any]]) -> None:
    """One batch write + commit through pypaimon."""
    if isinstance(data, dict):
        fields = [f for f in table_arrow_schema(table) if f.name in data]
        data = pa.Table.from_pydict(data, schema=pa.schema(fields))
    wb = table.new_batch_write_builder()
    w = wb.new_write()
    c = wb.new_commit()
    try:
        w.write_arrow(data)
        c.commit(w.prepare_commit())
    finally:
        w.close()
        c.close()


def table_arrow_schema(table) -> pa.Schema:
    from pypaimon.schema.data_types import PyarrowFieldParser
    return PyarrowFieldParser.from_paimon_schema(table.table_schema.fields)


def read(warehouse: str, identifier: str, snapshot_id: int | None = None, tag: str | None = None,
         projection: list[str] | None = None) -> pa.Table:
    """What pypaimon's batch reader returns for the latest snapshot / a snapshot / a tag (`projection` may name
    system columns such as `_ROW_ID`)."""
    opts = {}
    if snapshot_id is not None:
        opts["scan.snapshot-id"] = str(snapshot_id)
    if tag is not None:
        opts["scan.tag-name"] = tag
    t = get_table(warehouse, identifier, opts)
    rb = t.new_read_builder()
    if projection is not None:
        rb = rb.with_projection(list(projection))
    splits = rb.new_scan().plan().splits()
    return rb.new_read().to_arrow(splits)


def sorted_rows(t: pa.Table, by: list[str] | None = None) -> list[dict[str, Any]]:
    rows = t.to_pylist()
    keys = by or t.column_names
    return sorted(rows, key=lambda r: tuple((r[k] is None, r[k]) for k in keys))


def rust_read(warehouse: str, identifier: str, snapshot_id: int | None = None, tag: str | None = None,
              projection: list[str] | None = None) -> pa.Table:
    """What pypaimon-rust 0.4.0 (an independent reader, Rust core) returns for the latest snapshot / a snapshot /
    a tag."""
    import pypaimon_rust as pr
    opts: dict[str, str] = {}
    if snapshot_id is not None:
        opts["scan.snapshot-id"] = str(snapshot_id)
    if tag is not None:
        opts["scan.tag-name"] = tag
    t = pr.datafusion.PaimonCatalog({"warehouse": str(warehouse)}).get_table(identifier)
    rb = t.new_read_builder(opts or None)
    if projection is not None:
        rb = rb.with_projection(list(projection))
    batches = rb.new_read().read(rb.new_scan().plan().splits())
    if not batches:
        return pa.table({})
    return pa.Table.from_batches(batches)


def multiset(t: pa.Table, columns: list[str] | None = None) -> list[tuple]:
    """Rows as a sorted list of tuples (a multiset: duplicates kept), over `columns` (default: all)."""
    cols = columns or t.column_names
    if t.num_rows == 0:
        return []
    rows = t.select(cols).to_pylist()
    return sorted((tuple(r[c] for c in cols) for r in rows), key=lambda r: tuple((v is None, repr(v)) for v in r))


def both_read(warehouse: str, identifier: str, columns: list[str], snapshot_id: int | None = None,
              tag: str | None = None, system: bool = False) -> list[tuple]:
    """The rows pypaimon 2.1.0 and pypaimon-rust 0.4.0 read, as a multiset; they must agree. `system`: `columns`
    include system columns (`_ROW_ID`, `_SEQUENCE_NUMBER`), read through a projection."""
    proj = list(columns) if system else None
    a = multiset(read(warehouse, identifier, snapshot_id, tag, proj), columns)
    b = multiset(rust_read(warehouse, identifier, snapshot_id, tag, proj), columns)
    assert a == b, f"pypaimon and pypaimon-rust disagree on {identifier} (snapshot {snapshot_id}, tag {tag}): {a} != {b}"
    return a
