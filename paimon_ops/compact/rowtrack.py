"""Compaction of row-tracking tables (`row-tracking.enabled`) and data-evolution tables (`data-evolution.enabled`).

Both are append tables with `bucket = -1`; every row has a row id, `_FIRST_ROW_ID` of its file + its position
(Java's RowTrackingCommitUtils assigns `_FIRST_ROW_ID` from the snapshot's `nextRowId` when a file is committed).
A compaction must keep every row's id, so both planners only ever join files whose row-id ranges are *adjacent*,
and every output covers one contiguous row-id range, rows in row-id order.

Data evolution (Java's DataEvolutionCompactCoordinator + DataEvolutionNormalCompactTask, 2.0):
  * normal files sharing one row-id range form a group: the first file written there and the column-update files
    (`_WRITE_COLS`) written over the same range later. A column's value comes from the newest file (highest
    `_MAX_SEQUENCE_NUMBER`) that wrote it (DataEvolutionSplitRead) — never extra rows;
  * adjacent groups are packed into bins of `target-file-size` (weight: max(file size, `source.split.open-file-cost`) per
    file); a bin is compacted into ONE file with `_FIRST_ROW_ID` = the bin's first row id and the inputs' minimum /
    maximum sequence numbers, `_FILE_SOURCE` COMPACT (Java master; 2.0 wrote APPEND — either way the commit keeps
    the first row id), `_WRITE_COLS` = the columns outside BLOB files (null when that is every column). Java
    compacts a bin holding at least `compaction.min.file-num` files (`small-files` here); `full` compacts every bin
    with more than one file. As after Java's compaction, every row of the file then reads the file's maximum
    sequence number as its `_SEQUENCE_NUMBER`;
  * every row is kept, deleted ones too: the deletion vectors of the groups' anchor files (the oldest normal file of
    a group) move to the output at their new positions (DataEvolutionCompactDeletionVectorRewriter);
  * BLOB files (`.blob`) are left as they are: they keep their own row-id ranges inside the bin's range. A bin whose
    BLOB files do not cover its whole range for some BLOB column is skipped with a warning (a reader could not line
    them up with the output any more).

Plain row tracking (no data evolution): files of one adjacent run are concatenated in row-id order. Java's append
compaction writes `_ROW_ID` and `_SEQUENCE_NUMBER` as physical columns and leaves `_FIRST_ROW_ID` null; pypaimon
2.1.0 then reads null row ids and pypaimon-rust 0.4.0 rejects the file ("Row-tracked file ... is missing
first_row_id"). We write the physical columns as Java does AND set `_FIRST_ROW_ID` to the output's first row id
(what Java's own data-evolution compaction does), with `_WRITE_COLS` null: every reader — Java (physical values
first), pypaimon and pypaimon-rust (`_FIRST_ROW_ID` + position, physical sequence numbers) — reads the same ids and
sequence numbers as before the compaction. Java's coordinator may join non-adjacent small files (their physical
`_ROW_ID` column keeps them right for Java only); we join adjacent files only.

Refused (one line, nothing changed): sort compaction (it reorders rows) and dv-ratio compaction (dropping deleted
rows changes row ids; Java re-assigns them with `data-evolution.compaction.rewrite-row-ids`); deletion vectors on a
row-tracking table without data evolution; files without `_FIRST_ROW_ID` (Java's append-compaction layout); files
storing `_ROW_ID` / `_SEQUENCE_NUMBER` through `_WRITE_COLS`; `_WRITE_COLS_SEQUENCES`; overlapping normal files
whose ranges differ; two files of a group with equal sequence numbers writing the same column (no defined winner).
"""
from __future__ import annotations

import dataclasses
import logging
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_ops.compact.model import EVOLUTION, ROWTRACK, meta_from_json
from paimon_ops.errors import CommitConflictError, PaimonOpsError, UnsupportedError
from paimon_ops.format.datafile import ROW_ID, SEQUENCE_NUMBER
from paimon_ops.format.deletion_vectors import DeletionVector
from paimon_ops.format.manifest import DataFileMeta, FileKind
from paimon_ops.format.types import to_arrow_type
from paimon_ops.options import BLOB_FIELD, DATA_EVOLUTION_ENABLED, ROW_TRACKING_ENABLED
from paimon_ops.table.commit import CommitChanges, FileStoreCommit
from paimon_ops.table.reader import iter_file_batches, read_file
from paimon_ops.table.scan import DELETION_VECTORS
from paimon_ops.table.table import FileStoreTable

log = logging.getLogger(__name__)


BLOB_EXTENSION = ".blob"
LONG_MAX = 9223372036854775807


def enabled(table: FileStoreTable) -> bool:
    return table.options.get(ROW_TRACKING_ENABLED)


def data_evolution(table: FileStoreTable) -> bool:
    return table.options.get(DATA_EVOLUTION_ENABLED)


def is_blob_file(name: str) -> bool:
    return name.lower().endswith(BLOB_EXTENSION)


def blob_columns(table: FileStoreTable) -> set[str]:
    """Columns stored in BLOB files: BLOB, ARRAY<BLOB> and MAP<X, BLOB> columns (and `blob-field`), Java's
    `fieldNamesInBlobFile` (descriptor / view fields are inline, and refused by the feature gate)."""
    def in_blob_file(t: Any) -> bool:
        return t.root == "BLOB" or (t.root == "ARRAY" and t.element is not None and t.element.root == "BLOB") or\
            (t.root == "MAP" and t.value is not None and t.value.root == "BLOB")
    out = {f.name for f in table.schema.fields if in_blob_file(f.type)}
    raw = table.options.get(BLOB_FIELD) or ""
    out |= {c.strip() for c in raw.split(",") if c.strip()}
    return out


def check_mode(table: FileStoreTable, mode: str) -> None:
    """Refuse, before anything is scanned, what cannot keep row ids."""
    ident = table.identifier
    if table.is_primary_key or table.options.bucket != -1:
        raise UnsupportedError(f"{ident}: compaction refused: row tracking is only defined for append tables with "
                               "bucket = -1 (as Paimon validates it); nothing was changed")
    if mode == "sort":
        raise UnsupportedError(f"{ident}: sort compaction refused: the table uses row tracking, and sorting rows "
                               "would change their row ids; nothing was changed")
    if mode == "dv-ratio":
        raise UnsupportedError(f"{ident}: dv-ratio compaction refused: the table uses row tracking, and dropping "
                               "deleted rows would change row ids (Java re-assigns them, "
                               "data-evolution.compaction.rewrite-row-ids, which paimon-ops does not do); nothing was "
                               "changed")
    if not data_evolution(table) and table.options.deletion_vectors_enabled:
        raise UnsupportedError(f"{ident}: compaction refused: deletion vectors on a row-tracking table without data "
                               "evolution are not handled by paimon-ops (Java drops the deleted rows and stores row "
                               "ids in the files, which pypaimon-rust cannot read); nothing was changed")


def check_files_without_option(table: FileStoreTable, uses: Iterable[Any]) -> None:
    """Files with row ids, column updates or BLOB files in a table whose options do not enable row tracking: the
    handled features would otherwise be compacted like plain append files, losing what the files mean."""
    for u in uses:
        if u.feature.key in ("row-tracking", "data-evolution", "blob"):
            raise _refuse(table, f"{u.evidence}, but row-tracking.enabled is not set")


def _refuse(table: FileStoreTable, what: str) -> UnsupportedError:
    return UnsupportedError(f"{table.identifier}: compaction refused: {what}; nothing was changed")


def _range(m: DataFileMeta) -> tuple[int, int]:
    """[first, end) row ids of a file."""
    assert m.first_row_id is not None
    return m.first_row_id, m.first_row_id + m.row_count


# ---------------------------------------------------------------------------------------------- planning

class Planner:
    """Per bucket (everything of an unaware-bucket table is in bucket 0): adjacent runs / bins -> tasks."""

    def __init__(self, table: FileStoreTable, target: int, small_ratio: float, min_file_num: int, open_cost: int,
                 warnings: list[str]):
        self.table = table
        self.evolution = data_evolution(table)
        self.target = target
        self.small_ratio = small_ratio
        self.min_file_num = min_file_num
        self.open_cost = open_cost
        self.warnings = warnings
        self.blob_cols = blob_columns(table)
        self.groups_planned = 0

    def check(self, infos: Sequence[Any]) -> None:
        for i in infos:
            m = i.file.meta
            if m.first_row_id is None:
                raise _refuse(self.table, f"data file {m.file_name} has no _FIRST_ROW_ID (its row ids are stored in "
                                          "the file, as Java's append compaction writes them)")
            if m.write_cols_sequences is not None:
                raise _refuse(self.table, f"data file {m.file_name} has _WRITE_COLS_SEQUENCES")
            if m.write_cols is not None and (ROW_ID in m.write_cols or SEQUENCE_NUMBER in m.write_cols):
                raise _refuse(self.table, f"data file {m.file_name} stores {ROW_ID} / {SEQUENCE_NUMBER} columns "
                                          f"({list(m.write_cols)})")
            if not self.evolution:
                if m.write_cols is not None or is_blob_file(m.file_name):
                    raise _refuse(self.table, f"data file {m.file_name} holds only columns {m.write_cols} but "
                                              "data-evolution.enabled is not set")
                if i.input.has_dv:
                    raise _refuse(self.table, f"data file {m.file_name} has a deletion vector on a row-tracking "
                                              "table without data evolution")

    def bucket(self, p: bytes, b: int, infos: list[Any], mode: str, task: Callable[..., None],
               skip: Callable[[str], None]) -> None:
        self.check(infos)
        if self.evolution:
            self._evolution(p, b, infos, mode, task, skip)
        else:
            self._plain(p, b, infos, mode, task, skip)

    # ------------------------------------------------------------------ plain row tracking
    def _plain(self, p: bytes, b: int, infos: list[Any], mode: str, task: Callable[..., None],
               skip: Callable[[str], None]) -> None:
        infos = sorted(infos, key=lambda i: i.file.meta.first_row_id)
        runs: list[list[Any]] = []
        for i in infos:
            start, _ = _range(i.file.meta)
            if runs:
                prev_end = _range(runs[-1][-1].file.meta)[1]
                if start < prev_end:
                    raise _refuse(self.table, f"row-id ranges of {runs[-1][-1].file.name} and {i.file.name} overlap")
                if start == prev_end:
                    runs[-1].append(i)
                    continue
            runs.append([i])
        planned = False
        for run in runs:
            if mode == "full":
                groups = [run] if len(run) > 1 else []
            else:
                groups = self._small_groups(run)
            for g in groups:
                lo, hi = _range(g[0].file.meta)[0], _range(g[-1].file.meta)[1]
                task(ROWTRACK, p, b, g, f"{len(g)} files of row ids {lo}..{hi - 1}")
                planned = True
        if not planned:
            skip("no adjacent row-id ranges to join" if len(infos) > 1 else "already fully compacted")

    def _small_groups(self, run: list[Any]) -> list[list[Any]]:
        """Append bin-pack (AppendCompactCoordinator) restricted to adjacent files: segments of small files in
        row-id order, cut at 2 x target-file-size; a remainder needs compaction.min.file-num files."""
        limit = self.target * self.small_ratio
        out: list[list[Any]] = []
        seg: list[Any] = []
        weight = 0

        def flush(final: bool) -> None:
            nonlocal seg, weight
            if len(seg) > 1 and (not final or len(seg) >= self.min_file_num):
                out.append(seg)
            seg, weight = [], 0

        for i in run:
            size = i.file.meta.file_size
            if size >= limit:
                flush(True)
                continue
            seg.append(i)
            weight += size + self.open_cost
            if weight >= 2 * self.target and len(seg) > 1:
                flush(False)
        flush(True)
        return out

    # ------------------------------------------------------------------ data evolution
    def _evolution(self, p: bytes, b: int, infos: list[Any], mode: str, task: Callable[..., None],
                   skip: Callable[[str], None]) -> None:
        normal = sorted((i for i in infos if not is_blob_file(i.file.name)),
                        key=lambda i: (i.file.meta.first_row_id, i.file.meta.row_count))
        blobs = [i for i in infos if is_blob_file(i.file.name)]
        groups: list[list[Any]] = []
        for i in normal:
            r = _range(i.file.meta)
            if groups:
                last = _range(groups[-1][0].file.meta)
                if r == last:
                    groups[-1].append(i)
                    continue
                if r[0] < last[1]:
                    raise _refuse(self.table, f"row-id ranges of {groups[-1][0].file.name} {last} and {i.file.name} "
                                              f"{r} overlap without being equal")
            groups.append([i])
        # adjacent groups form chunks; bins of target-file-size inside a chunk (Java's CompactPlanner)
        bins: list[list[list[Any]]] = []
        chunk_end = None
        cur: list[list[Any]] = []
        weight = 0
        for g in groups:
            start, end = _range(g[0].file.meta)
            gw = sum(max(i.file.meta.file_size, self.open_cost) for i in g)
            if chunk_end is not None and start != chunk_end:
                bins.append(cur)
                cur, weight = [], 0
            chunk_end = end
            if gw > self.target:
                bins.append(cur)
                bins.append([g])
                cur, weight = [], 0
                continue
            cur.append(g)
            weight += gw
            if weight > self.target:
                bins.append(cur)
                cur, weight = [], 0
        bins.append(cur)
        planned = False
        need = self.min_file_num if mode == "small-files" else 2
        for bin_ in bins:
            files = [i for g in bin_ for i in g]
            if len(files) < need:
                continue
            lo, hi = _range(bin_[0][0].file.meta)[0], _range(bin_[-1][0].file.meta)[1]
            gap = self._blob_gap(blobs, lo, hi)
            if gap is not None:
                self.warnings.append(f"{self.table.identifier}: row ids {lo}..{hi - 1} skipped: {gap}")
                skip("BLOB files do not line up with the row range")
                continue
            for g in bin_:
                anchor = _anchor(g)
                stray = [i.file.name for i in g if i is not anchor and i.input.has_dv]
                if stray:  # readers only apply the anchor's vector: a vector elsewhere has no defined meaning
                    raise _refuse(self.table, f"data file {stray[0]} has a deletion vector but is not the oldest file "
                                              f"of its row range ({anchor.file.name} is)")
            row_groups = tuple({"start": _range(g[0].file.meta)[0], "rows": g[0].file.meta.row_count,
                                "files": [i.file.name for i in g], "anchor": _anchor(g).file.name} for g in bin_)
            self.groups_planned += len(bin_)
            task(EVOLUTION, p, b, files, f"{len(files)} files ({len(bin_)} row range(s)) of row ids {lo}..{hi - 1} "
                                         "merged by row id", row_groups=row_groups)
            planned = True
        if not planned:
            skip("no row ranges to merge" if normal else "only BLOB files")

    def _blob_gap(self, blobs: list[Any], lo: int, hi: int) -> str | None:
        """Why the BLOB files of [lo, hi) would not line up with one output file there, or None."""
        by_col: dict[str, list[tuple[int, int]]] = {}
        for i in blobs:
            m = i.file.meta
            s, e = _range(m)
            if e <= lo or s >= hi:
                continue
            if s < lo or e > hi:
                return f"BLOB file {m.file_name} ({s}..{e - 1}) crosses the range boundary"
            col = (m.write_cols or ("?",))[0]
            by_col.setdefault(col, []).append((s, e))
        for col, ranges in by_col.items():
            ranges.sort()
            covered = lo
            for s, e in ranges:
                if s > covered:
                    return f"BLOB column {col} has no file for row ids {covered}..{s - 1}"
                covered = max(covered, e)
            if covered < hi:
                return f"BLOB column {col} has no file for row ids {covered}..{hi - 1}"
        return None


def _anchor(group: Sequence[Any]) -> Any:
    """The group's anchor, which its deletion vector is keyed by: the oldest normal file by (max sequence number,
    file name) (DataEvolutionUtils.retrieveAnchorFile)."""
    return min(group, key=lambda i: (i.file.meta.max_sequence_number, i.file.name))


# ---------------------------------------------------------------------------------------------- executing

def rowtrack_task(ctx: Any, files: list[Any]) -> dict[str, Any]:
    """Concatenate one adjacent run in row-id order, `_ROW_ID` and `_SEQUENCE_NUMBER` kept per row."""

    w = ctx.writer(0, row_ids=True)
    rows = 0
    for f in files:
        if f.dv_index_file:
            raise PaimonOpsError(f"{f.name} has a deletion vector; a row-tracking rewrite keeps every row")
        lf = ctx.live_file(f)
        meta = lf.meta
        pos = 0
        for batch in iter_file_batches(ctx.scanner, lf, None, batch_size=ctx.batch_rows([f], 1), row_ids=True):
            t = pa.Table.from_batches([batch])
            n = t.num_rows
            ids = pc.fill_null(t.column(ROW_ID), pa.array(np.arange(meta.first_row_id + pos,
                                                                     meta.first_row_id + pos + n, dtype=np.int64)))
            seq = pc.fill_null(t.column(SEQUENCE_NUMBER), pa.scalar(meta.max_sequence_number, pa.int64()))
            t = t.set_column(t.schema.get_field_index(ROW_ID), pa.field(ROW_ID, pa.int64(), False), ids)
            t = t.set_column(t.schema.get_field_index(SEQUENCE_NUMBER), pa.field(SEQUENCE_NUMBER, pa.int64(), False),
                             seq)
            w.write(t)
            pos += n
        if pos != meta.row_count:
            raise PaimonOpsError(f"{f.name}: read {pos} rows, the manifest says {meta.row_count}")
        rows += pos
    w.close()
    return {"rows_read": rows}


def _file_columns(ctx: Any, meta: DataFileMeta) -> list[int]:
    """Field ids a (data-evolution) file holds: its schema projected to `_WRITE_COLS` (all columns when null)."""
    schema = ctx.table.schemas.schema(meta.schema_id)
    if meta.write_cols is None:
        return [f.id for f in schema.fields]
    by_name = {f.name: f.id for f in schema.fields}
    missing = [c for c in meta.write_cols if c not in by_name]
    if missing:
        raise PaimonOpsError(f"{meta.file_name}: write columns {missing} are not in schema {meta.schema_id}")
    return [by_name[c] for c in meta.write_cols]


def merge_group(ctx: Any, files: list[Any], columns: list[Any], rows: int) -> pa.Table:
    """The rows of one row-range group, each column from the newest file that wrote it (DataEvolutionSplitRead)."""

    wanted = {c.id for c in columns}
    metas = [(f, ctx.live_file(f)) for f in files]
    metas.sort(key=lambda fm: -fm[1].meta.max_sequence_number)  # stable: plan order among equals
    winner: dict[int, tuple[Any, Any]] = {}
    for f, lf in metas:
        for fid in _file_columns(ctx, lf.meta):
            if fid not in wanted:
                continue
            prev = winner.get(fid)
            if prev is None:
                winner[fid] = (f, lf)
            elif prev[1].meta.max_sequence_number == lf.meta.max_sequence_number:
                raise PaimonOpsError(f"{prev[0].name} and {f.name} both write field {fid} with sequence number "
                                     f"{lf.meta.max_sequence_number}: no defined winner")
    by_id = {c.id: c for c in columns}
    parts: dict[int, pa.ChunkedArray] = {}
    for f, lf in metas:
        mine = [fid for fid, (w, _) in winner.items() if w is f]
        if not mine:
            continue
        data = read_file(ctx.scanner, lf, None, keep_system_columns=False, projection=[by_id[i].name for i in mine])
        if data.num_rows != rows:
            raise PaimonOpsError(f"{f.name} has {data.num_rows} rows, its row range {rows}")
        for fid in mine:
            parts[fid] = data.column(by_id[fid].name)
    arrays = []
    for c in columns:
        if c.id in parts:
            arrays.append(parts[c.id])
        elif c.type.nullable:
            arrays.append(pa.chunked_array([pa.nulls(rows, to_arrow_type(c.type))]))
        else:
            raise PaimonOpsError(f"NOT NULL column {c.name} is written by no file of row ids starting at "
                                 f"{metas[0][1].meta.first_row_id}")
    return pa.Table.from_arrays(arrays, names=[c.name for c in columns])


def evolution_task(ctx: Any, files: list[Any]) -> dict[str, Any]:
    """Merge one bin of row-range groups into one file (DataEvolutionNormalCompactTask): every row kept."""

    table = ctx.table
    blob_cols = blob_columns(table)
    columns = [f for f in table.schema.fields if f.name not in blob_cols]
    write_schema = dataclasses.replace(table.schema, fields=tuple(columns))
    write_cols = tuple(c.name for c in columns) if len(columns) < len(table.schema.fields) else None
    groups = ctx.task["row_groups"]
    by_name = {f.name: f for f in files}
    start = int(groups[0]["start"])
    ctx.params = dataclasses.replace(ctx.params, target_file_size=LONG_MAX, target_rows=LONG_MAX)
    w = ctx.writer(0, write_schema=write_schema, write_cols=write_cols, first_row_id=start)
    expected = start
    rows = 0
    for g in groups:
        if int(g["start"]) != expected:
            raise PaimonOpsError(f"row ranges of the task are not adjacent at {g['start']} (expected {expected})")
        n = int(g["rows"])
        data = merge_group(ctx, [by_name[name] for name in g["files"]], columns, n)
        data = data.append_column(pa.field(SEQUENCE_NUMBER, pa.int64(), False),
                                  pa.repeat(pa.scalar(0, pa.int64()), n))  # the file's numbers are set below
        w.write(data)
        expected += n
        rows += n
    w.close()
    metas = [meta_from_json(f.meta) for f in files]
    lo = min(m.min_sequence_number for m in metas)
    hi = max(m.max_sequence_number for m in metas)
    w.files[:] = [m.with_(min_sequence_number=lo, max_sequence_number=hi) for m in w.files]
    if len(w.files) != 1 or w.files[0].row_count != rows:
        raise PaimonOpsError(f"data-evolution compaction must produce one file of {rows} rows")
    return {"rows_read": rows}


# ---------------------------------------------------------------------------------------------- committing

def moved_deletion_vectors(scanner: Any, tasks: Iterable[Any], results: Iterable[dict],
                           index_entries: Iterable[Any]) -> dict[tuple[bytes, int], dict[str, Any]]:
    """(partition, bucket) -> {output file name: deletion vector}: the anchors' vectors of every merged group, at
    their positions in the output (DataEvolutionCompactDeletionVectorRewriter.moveDeletionVector)."""

    dv_of: dict[tuple[bytes, str], tuple[Any, Any]] = {}
    for ie in index_entries:
        if ie.index_type == DELETION_VECTORS:
            for r in ie.dv_ranges or ():
                dv_of[(ie.partition, r.data_file)] = (ie, r)
    bitmap64 = scanner.table.options.bitmap64
    out: dict[tuple[bytes, int], dict[str, Any]] = {}
    for t, r in zip(tasks, results):
        if t.kind != EVOLUTION:
            continue
        part = bytes.fromhex(t.partition)
        [meta] = r["files"]
        start = int(t.row_groups[0]["start"])
        if meta["first_row_id"] != start:
            raise PaimonOpsError(f"{meta['file_name']} starts at row id {meta['first_row_id']}, its range at {start}")
        merged = DeletionVector(bitmap64=bitmap64)
        for g in t.row_groups:
            hit = dv_of.get((part, g["anchor"]))
            if hit is None:
                continue
            old = scanner.deletion_vector(*hit)
            pos = old.positions().astype(np.int64)
            if len(pos) and (pos.min() < 0 or pos.max() >= int(g["rows"])):
                raise PaimonOpsError(f"deletion vector of {g['anchor']} has positions outside its {g['rows']} rows")
            merged.delete_many(pos + (int(g["start"]) - start))
        if merged.cardinality:
            out.setdefault((part, t.bucket), {})[meta["file_name"]] = merged
    return out


class RowRangeCommit(FileStoreCommit):
    """A COMPACT commit of a row-tracking table: besides the usual checks, no normal file committed meanwhile may
    cover a row id of our outputs (a concurrent column update written against the files we replace would no longer
    line up with the compacted file: Java's DataEvolutionConflictDetection rejects such commits too)."""

    def check_conflicts(self, changes: CommitChanges, latest: Any, base_snapshot_id: int | None, kind: str) -> None:
        super().check_conflicts(changes, latest, base_snapshot_id, kind)
        if latest is None:
            return
        ranges = sorted(_range(e.file) for e in changes.data
                        if e.kind == FileKind.ADD and e.file.first_row_id is not None and not is_blob_file(e.file.file_name))
        if not ranges:
            return
        gone = {e.identifier for e in changes.data if e.kind == FileKind.DELETE}
        starts = np.array([s for s, _ in ranges], dtype=np.int64)
        for key, e in self.scanner.live_entries(latest).items():
            m = e.file
            if key in gone or m.first_row_id is None or is_blob_file(m.file_name):
                continue
            s, end = _range(m)
            i = int(np.searchsorted(starts, end, side="left")) - 1  # last output starting before `end`
            if i >= 0 and ranges[i][1] > s:
                raise CommitConflictError(self.table.identifier, base_snapshot_id, latest.id,
                                          f"{m.file_name} (row ids {s}..{end - 1}) was committed over row ids this "
                                          "compaction rewrites")


__all__ = ["ROWTRACK", "EVOLUTION", "Planner", "check_mode", "check_files_without_option", "enabled", "data_evolution", "is_blob_file",
           "blob_columns", "rowtrack_task", "evolution_task", "moved_deletion_vectors", "RowRangeCommit"]
