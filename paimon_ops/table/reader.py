"""Raw reader: the live rows of each data file of a snapshot, deletion vectors applied, no merging across
files (merging is the compaction engine's job)."""
from __future__ import annotations

from typing import Iterator

import pyarrow as pa

from paimon_ops.errors import MissingFileError
from paimon_ops.format.datafile import format_of, iter_data_file_batches, read_data_file
from paimon_ops.format.deletion_vectors import DeletionVector
from paimon_ops.format.snapshot import Snapshot
from paimon_ops.options import DELETION_VECTORS_MERGE_ON_READ
from paimon_ops.table.scan import LiveFile, ScanResult, TableScanner


def _open(scanner: TableScanner, f: LiveFile):
    try:
        return scanner.table.io.open_input(f.path)
    except FileNotFoundError:
        raise MissingFileError(f.path, f"snapshot manifest (bucket {f.bucket}, level {f.level})") from None
    except OSError as e:
        if not scanner.table.io.exists(f.path):
            raise MissingFileError(f.path, f"snapshot manifest (bucket {f.bucket}, level {f.level})") from e
        raise


def read_file(scanner: TableScanner, f: LiveFile, dv: DeletionVector | None = None,
              keep_system_columns: bool = True, projection: list[str] | None = None) -> pa.Table:
    """Rows of one data file in the table's current schema (or its `projection`), with DV-deleted positions
    removed."""
    table = scanner.table
    file_schema = table.schemas.schema(f.meta.schema_id)
    with _open(scanner, f) as src:
        data = read_data_file(src, format_of(f.name), file_schema, table.schema, table.is_primary_key, f.path,
                              keep_system_columns=keep_system_columns, projection=projection)
    if dv is not None and dv.cardinality:
        data = data.filter(pa.array(dv.keep_mask(data.num_rows)))
    return data


def iter_file_batches(scanner: TableScanner, f: LiveFile, dv: DeletionVector | None = None,
                      batch_size: int = 65536, keep_system_columns: bool = True,
                      row_ids: bool = False) -> Iterator[pa.RecordBatch]:
    """Bounded-memory variant of `read_file`: batches with DV positions removed (`row_ids`: see
    `read_data_file`)."""
    table = scanner.table
    file_schema = table.schemas.schema(f.meta.schema_id)
    mask = dv.keep_mask(f.meta.row_count) if dv is not None and dv.cardinality else None
    offset = 0
    with _open(scanner, f) as src:
        for batch in iter_data_file_batches(src, format_of(f.name), file_schema, table.schema, table.is_primary_key,
                                            f.path, batch_size=batch_size, keep_system_columns=keep_system_columns,
                                            row_ids=row_ids):
            n = batch.num_rows
            if mask is not None:
                batch = batch.filter(pa.array(mask[offset:offset + n]))
            offset += n
            yield batch


def visible_files(scanner: TableScanner, result: ScanResult) -> list[LiveFile]:
    """Files a Java batch reader reads (format.md §9): DV and first-row PK tables skip level 0."""
    table = scanner.table
    opts = table.options
    if table.is_primary_key and (
        (opts.deletion_vectors_enabled and not opts.get(DELETION_VECTORS_MERGE_ON_READ))
        or opts.merge_engine == "first-row"
    ):
        return [f for f in result.files if f.level > 0]
    return list(result.files)


def read_snapshot_raw(scanner: TableScanner, snapshot: Snapshot,
                      keep_system_columns: bool = True) -> Iterator[tuple[LiveFile, pa.Table]]:
    """(file, live rows) for every live file of the snapshot, DVs applied, no merging."""
    result = scanner.scan(snapshot)
    for f in result.files:
        hit = result.dv_of(f)
        dv = scanner.deletion_vector(*hit) if hit else None
        yield f, read_file(scanner, f, dv, keep_system_columns)
