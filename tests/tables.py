"""The tests' table factory: one place to create a table in a filesystem warehouse (fields, primary keys, partition
keys, options), write rows into it with our writer (one commit per batch, optionally at a chosen commit time, with row
kinds, as a given commit user), and read its rows back — through pypaimon 2.1.0, the independent reader, unless a
test asks for ours.

    t = make_table(warehouse, "db.t", [("dt", "STRING"), ("k", "INT"), ("v", "STRING")], partition_keys=["dt"],
                   primary_keys=["dt", "k"], options={"bucket": "2"}, batches=[{"dt": ["a"], "k": [1], "v": ["x"]}])
    write(t, {"dt": ["a"], "k": [1], "v": ["y"]}, now_millis=NOW)
    assert rows(t) == [("a", 1, "y")]

Tables written by Java Paimon 0.9 come from tests/interop/java_harness.py (`JavaTable`), by pypaimon from
tests/pypaimon_util.py; this module is for the tables our own writer makes.
"""
from __future__ import annotations

import posixpath
from typing import Any, Iterable, Mapping, Sequence

import pyarrow as pa

from paimon_ops.format.snapshot import Snapshot
from paimon_ops.table.table import FileStoreTable
from paimon_ops.table.writer import TableWriter, create_table

KV_FIELDS = (("k", "INT"), ("v", "STRING"))  # the smallest useful table: a key and a value


def make_table(warehouse: str, identifier: str = "db.t", fields: Sequence = KV_FIELDS, *,
               partition_keys: Sequence[str] = (), primary_keys: Sequence[str] = (),
               options: Mapping[str, str] | None = None, batches: Iterable[Any] = ()) -> FileStoreTable:
    """Create the table (schema 0; primary-key columns become NOT NULL) and write each of `batches` as one commit."""
    table = create_table(str(warehouse), identifier, fields, partition_keys, primary_keys, dict(options or {}))
    for batch in batches:
        write(table, batch)
    return table.refresh()


def arrow(data: Any) -> pa.Table:
    """`data` as an Arrow table: columns by name, a list of row dicts, or an Arrow table as it is (the writer casts
    to the table's types, as `TableWriter.write` does for any caller)."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, Mapping):
        return pa.table(dict(data))
    return pa.Table.from_pylist(list(data))


def write(table: FileStoreTable, data: Any, kinds: Sequence[int] | None = None, *, now_millis: int | None = None,
          commit_user: str | None = None, properties: dict[str, str] | None = None) -> Snapshot | None:
    """One commit of `data` (see `arrow`) with our writer on the table's latest snapshot; returns the new snapshot
    (None when there was nothing to write)."""
    w = TableWriter(table.refresh(), commit_user)
    w.write(arrow(data), kinds)
    return w.commit(properties=properties, now_millis=now_millis)


def rows(table: FileStoreTable | str, identifier: str | None = None, *, columns: Sequence[str] | None = None,
         snapshot_id: int | None = None, tag: str | None = None) -> list[tuple]:
    """The table's rows (latest snapshot, or a snapshot / tag) as sorted tuples, read by pypaimon 2.1.0. `table` is
    a FileStoreTable, or a warehouse with `identifier`."""
    from tests import pypaimon_util as pu
    if isinstance(table, FileStoreTable):
        warehouse, identifier = location(table)
    else:
        warehouse = table
        assert identifier, "rows(warehouse, identifier)"
    data = pu.read(warehouse, identifier, snapshot_id=snapshot_id, tag=tag)
    if columns is not None:
        data = data.select(list(columns))
    return sorted((tuple(r.values()) for r in data.to_pylist()), key=_none_first)


def location(table: FileStoreTable) -> tuple[str, str]:
    """(warehouse, "db.table") of a table in a filesystem warehouse (`<warehouse>/<db>.db/<table>`)."""
    db_dir, name = posixpath.split(table.root.rstrip("/"))
    warehouse, db = posixpath.split(db_dir)
    assert db.endswith(".db"), f"{table.root} is not <warehouse>/<db>.db/<table>"
    return warehouse, f"{db[:-3]}.{name}"


def _none_first(row: tuple) -> tuple:
    return tuple((0,) if v is None else (1, v) for v in row)
