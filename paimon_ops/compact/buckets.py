"""What compaction reads of a bucket and how it groups the bucket's files into tasks — shared by the compaction
planner (compact/planner.py), the postpone compaction (compact/postpone.py) and rescale (compact/rescale.py):

* `file_infos`: a bucket's live files with their deletion-vector cardinalities, as task inputs;
* `LsmPlanner`: per primary-key bucket, Paimon's pick (minor) or the full unit, its sections and steps (compact.levels);
* `bin_pack`: the append bin-pack (AppendCompactCoordinator, maintenance.md §7.1);
* `task_params`: what every rewrite task of a plan is given (how output files are written, the memory budget).
"""
from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

import paimon_ops.compact.levels as lv
from paimon_ops.compact.model import (
    LSM,
    REWRITE,
    InputFile,
    index_entry_to_json,
    meta_to_json,
)
from paimon_ops.compact.rolling import WriteParams
from paimon_ops.errors import InvalidArgumentError, arg
from paimon_ops.format.binary_row import deserialize_row
from paimon_ops.format.datafile import VALUE_KIND
from paimon_ops.options import (
    COMPACTION_DV_RATIO_THRESHOLD,
    COMPACTION_FORCE_UP_LEVEL_0,
    COMPACTION_INCREMENTAL_SIZE_THRESHOLD,
    COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT,
    COMPACTION_OFFPEAK_END_HOUR,
    COMPACTION_OFFPEAK_RATIO,
    COMPACTION_OFFPEAK_START_HOUR,
    COMPACTION_OPTIMIZATION_INTERVAL,
    COMPACTION_SIZE_RATIO,
    COMPACTION_TOTAL_SIZE_THRESHOLD,
    LOOKUP_COMPACT,
    LOOKUP_COMPACT_MAX_INTERVAL,
    NUM_SORTED_RUN_COMPACTION_TRIGGER,
    TARGET_FILE_ROW_NUM,
)
from paimon_ops.table.reader import iter_file_batches
from paimon_ops.table.scan import DELETION_VECTORS, LiveFile, ScanResult, TableScanner
from paimon_ops.table.table import FileStoreTable
from paimon_ops.table.writer import DataFileWriteSpec

log = logging.getLogger(__name__)

LONG_MAX = 9223372036854775807
DEFAULT_ROW_GROUP_BYTES = 128 << 20


@dataclass(frozen=True)
class FileInfo:
    file: LiveFile
    input: InputFile
    deleted: int          # DV cardinality (0 without DV)

    @property
    def ratio(self) -> float:
        return self.deleted / self.file.meta.row_count if self.file.meta.row_count else 0.0

def open_table(table: FileStoreTable | str) -> FileStoreTable:
    return table if isinstance(table, FileStoreTable) else FileStoreTable(str(table))


def dv_ratio_threshold(table: FileStoreTable, threshold: float | None) -> float:
    if threshold is not None:
        t = float(threshold)
        if not 0.0 <= t <= 1.0:
            raise InvalidArgumentError(f"{arg('threshold')} must be within [0, 1], got {t}")
        return t
    return table.options.get(COMPACTION_DV_RATIO_THRESHOLD)


def file_infos(scanner: TableScanner, result: ScanResult, files: list[LiveFile]) -> list[FileInfo]:
    out = []
    for f in files:
        hit = result.dv_of(f)
        deleted = 0
        dv_path = offset = length = None
        if hit is not None:
            ie, r = hit
            dv_path, offset, length = scanner.index_file_path(ie), r.offset, r.length
            # _CARDINALITY (1.0+) when present; 0.9 index manifests lack it: decode the vector (index file only).
            deleted = r.cardinality if r.cardinality is not None else scanner.deletion_vector(ie, r).cardinality
        m = f.meta
        out.append(FileInfo(f, InputFile(m.file_name, f.path, m.level, m.row_count, m.file_size,
                                          deleted if hit else None, dv_path, offset, length, meta_to_json(m)),
                             deleted))
    return out

def task_params(table: FileStoreTable, scanner: TableScanner, memory_budget: int | None) -> dict[str, Any]:
    """What every rewrite task of a plan is given: how output files are written, the memory budget."""
    wspec = DataFileWriteSpec.of(table, scanner)
    target = table.options.target_file_size(table.is_primary_key)
    target_rows = table.options.get(TARGET_FILE_ROW_NUM)
    # A file can only roll at a row-group boundary: keep row groups (Arrow bytes, ~2-4x the compressed size)
    # near the target size, and within a quarter of the memory budget.
    row_group = min(DEFAULT_ROW_GROUP_BYTES, max(64 << 10, 2 * target))
    if memory_budget:
        row_group = max(64 << 10, min(row_group, memory_budget // 4))
    return {"write": WriteParams(wspec.fmt, wspec.dense_stats, wspec.legacy_key_stats, target, target_rows,
                                 row_group, wspec.thin).to_json(),
            "memory_budget": memory_budget}

class LsmPlanner:
    """Per bucket: Paimon's pick (minor) or full unit, its sections and steps (compact.levels) -> one LSM task."""

    def __init__(self, table: FileStoreTable, spec: Any, result: ScanResult, scanner: TableScanner, force_all: bool,
                 target: int, small_ratio: float, now_ms: int):
        self.table = table
        self.spec = spec
        self.result = result
        self.scanner = scanner
        opts = table.options
        self.opts = opts
        self.key_types = [f.type for f in table.schema.fields_of(table.schema.trimmed_primary_keys)]
        self.dv = opts.deletion_vectors_enabled
        producer = opts.changelog_producer
        if producer == "full-compaction":
            kind = lv.FULL_CHANGELOG
        elif spec.needs_lookup:
            kind = lv.FIRST_ROW if spec.engine == "first-row" else lv.LOOKUP
        else:
            kind = lv.PLAIN
        produce = producer == "full-compaction" or (kind in (lv.LOOKUP, lv.FIRST_ROW) and producer == "lookup")
        self.rewriter = lv.RewriterSpec(kind, self.dv, produce,
                                        spec.engine == "deduplicate" and not spec.sequence_fields, force_all)
        # Lookups are needed for first-row's contains-check, for deletion vectors, and whenever the old record's
        # value matters (changelog, engines other than deduplicate, sequence fields): LookupLevels' processors.
        self.lookup_values = kind == lv.LOOKUP and (produce or spec.engine != "deduplicate"
                                                    or bool(spec.sequence_fields))
        self.lookups = kind == lv.FIRST_ROW or (kind == lv.LOOKUP and (self.dv or self.lookup_values))
        self.min_file_size = int(target * small_ratio)
        trigger = opts.get(NUM_SORTED_RUN_COMPACTION_TRIGGER)
        gentle = opts.get(LOOKUP_COMPACT) == "gentle"
        interval = None
        if gentle:
            iv = opts.get(LOOKUP_COMPACT_MAX_INTERVAL)
            interval = max(trigger, iv if iv is not None else 2 * trigger)
        hour = (now_ms // 3_600_000) % 24  # now_ms is local wall time as UTC millis: the local hour
        self.base_cfg: dict[str, Any] = dict(
            trigger=trigger,
            max_size_amp=opts.get(COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT),
            size_ratio=opts.get(COMPACTION_SIZE_RATIO),
            offpeak_ratio=lv.offpeak_ratio(opts.get(COMPACTION_OFFPEAK_START_HOUR), opts.get(COMPACTION_OFFPEAK_END_HOUR),
                                           opts.get(COMPACTION_OFFPEAK_RATIO), hour),
            force_up_level0=spec.needs_lookup or opts.get(COMPACTION_FORCE_UP_LEVEL_0),
            gentle_interval=interval if spec.needs_lookup else None,
            full_interval_ms=_ms(opts.get(COMPACTION_OPTIMIZATION_INTERVAL)),
            total_size_threshold=opts.get(COMPACTION_TOTAL_SIZE_THRESHOLD),
            incremental_size_threshold=opts.get(COMPACTION_INCREMENTAL_SIZE_THRESHOLD),
            now_ms=now_ms,
        )
        self.units: list[dict[str, Any]] = []
        self.retracts: dict[str, bool] = {}
        self.index_by_bucket: dict[tuple[bytes, int], list] = {}
        for ie in result.index_entries:
            if ie.index_type == DELETION_VECTORS:
                self.index_by_bucket.setdefault((ie.partition, ie.bucket), []).append(ie)

    def lsm_file(self, i: FileInfo) -> lv.LsmFile:
        m = i.file.meta
        lo = tuple(deserialize_row(m.min_key, self.key_types, m.file_name))
        hi = tuple(deserialize_row(m.max_key, self.key_types, m.file_name))
        probe = functools.partial(self.has_retracts, i) if m.delete_row_count == 0 and m.level == 0 else None
        return lv.LsmFile(m.file_name, m.level, m.file_size, lo, hi, m.min_sequence_number, m.max_sequence_number,
                          m.creation_time or 0, m.delete_row_count, i.input.has_dv, probe)

    def has_retracts(self, i: FileInfo) -> bool:
        """Whether the file holds DELETE / UPDATE_BEFORE records, read from its _VALUE_KIND column — asked only
        when its writer claims none (`_DELETE_ROW_COUNT = 0`) and that claim would let it be upgraded without a
        rewrite. Writers' statistics are not trusted where a wrong count loses data: pypaimon 2.1.0 writes 0 for
        level-0 files full of deletes, and Java 0.9 upgrades such a file to a deletion-vector table's upper level,
        where readers take its records raw and the deleted keys come back as rows of NULLs."""
        name = i.file.name
        if name not in self.retracts:
            found = False
            for batch in iter_file_batches(self.scanner, i.file, None):
                kinds = batch.column(batch.schema.get_field_index(VALUE_KIND))
                if pc.any(pc.is_in(kinds, pa.array([1, 3], kinds.type))).as_py():
                    found = True
                    break
            if found:
                log.info("%s claims no delete rows but holds DELETE / UPDATE_BEFORE records: rewritten, never "
                         "upgraded as it is", i.file.path)
            self.retracts[name] = found
        return self.retracts[name]

    def bucket(self, p: bytes, b: int, infos: list[FileInfo], mode: str, task: Any, skip: Any) -> None:
        opts = self.opts
        files = [self.lsm_file(i) for i in infos]
        by_name = {i.file.name: i for i in infos}
        highest = max(f.level for f in files)
        cfg = lv.PickConfig(num_levels=max(opts.num_levels, highest + 1), **self.base_cfg)
        max_level = cfg.max_level
        runs = lv.sorted_runs(files)
        if mode == "full" and len(runs) == 1 and runs[0].level == max_level:
            # §5.6 (c): a fully compacted bucket rewrites the files that have deletion vectors, one by one.
            todo = infos if self.rewriter.force_rewrite_all else [i for i in infos if i.input.has_dv]
            if not todo:
                skip("already fully compacted")
                return
            task(REWRITE, p, b, todo, "max-level files with deletion vectors", output_level=None)
            return
        unit = lv.pick_full(runs, cfg) if mode == "full" else lv.pick_minor(runs, cfg)
        if unit is None:
            skip("already fully compacted" if mode == "full" else "nothing picked by Paimon's compaction rules")
            return
        dd = lv.drop_delete(unit.output_level, highest, self.dv)
        steps = lv.plan_steps(unit, max_level, dd, self.min_file_size, self.rewriter)
        if not steps:
            skip("nothing to rewrite or upgrade")
            return
        in_steps = [n for s in steps for n in s.files]
        lookup_files: tuple[InputFile, ...] = ()
        if self.lookups and any(s.merge == lv.LOOKUP_MERGE for s in steps):
            lookup_files = tuple(i.input for i in infos if i.file.level > unit.output_level)
        rewritten = sum(1 for s in steps if s.op == lv.REWRITE for _ in s.files)
        why = (f"{unit.reason}: {len(unit.files)} file(s) of levels {sorted({f.level for f in unit.files})} "
               f"-> level {unit.output_level}")
        self.units.append({"partition": self.scanner.partition_json(p), "bucket": b,
                           "output_level": unit.output_level, "reason": unit.reason, "files": len(unit.files),
                           "rewritten": rewritten, "drop_delete": dd})
        task(LSM, p, b, [by_name[n] for n in in_steps], why, output_level=unit.output_level, drop_delete=dd,
             steps=tuple(s.to_json() for s in steps), rewriter=self.rewriter.kind, max_level=max_level,
             lookup_files=lookup_files, lookup_values=self.lookup_values,
             dv_index=tuple(index_entry_to_json(ie) for ie in self.index_by_bucket.get((p, b), [])))



def _ms(td: timedelta | None) -> int | None:
    return None if td is None else int(td.total_seconds() * 1000)


def bin_pack(infos: list[FileInfo], target: int, small_ratio: float, min_files: int, open_cost: int,
              dv_threshold: float) -> list[tuple[list[FileInfo], str]]:
    """Append bin-pack (AppendCompactCoordinator, maintenance.md §7.1)."""
    limit = target * small_ratio
    cands = [i for i in infos if i.file.meta.file_size < limit or (i.input.has_dv and i.ratio > dv_threshold)]
    cands.sort(key=lambda i: i.file.meta.file_size)
    out: list[tuple[list[FileInfo], str]] = []
    bin_: list[FileInfo] = []
    weight = 0
    for i in cands:
        bin_.append(i)
        weight += i.file.meta.file_size + open_cost
        if len(bin_) > 1 and weight >= 2 * target:
            out.append((bin_, f"{len(bin_)} small files, {weight} bytes >= 2 x target"))
            bin_, weight = [], 0
    if bin_ and (len(bin_) >= min_files or any(i.input.has_dv for i in bin_)):
        why = f"{len(bin_)} small files (>= min {min_files})" if len(bin_) >= min_files else "files with deletion vectors"
        out.append((bin_, why))
    for group, _ in out:
        group.sort(key=lambda i: i.file.meta.min_sequence_number)
    return out


__all__ = ["FileInfo", "file_infos", "LsmPlanner", "bin_pack", "task_params", "open_table", "dv_ratio_threshold",
           "DEFAULT_ROW_GROUP_BYTES"]
