"""Executing one LSM compaction unit of a bucket (task kind ``lsm``; maintenance.md §5.7, §5.10, §5.11, §6.7).

The driver planned the unit's steps in key order (compact.levels). Per step:

* ``upgrade``: nothing to do here — a metadata-only level change the driver commits;
* ``rewrite``: the step's files are merged by the streaming k-way merge (bounded memory, task_context.merge_slices) and
  written as new files at the output level (a new rolling writer per step, so outputs never overlap the files
  upgraded between steps);
* ``read``: one level-0 file is read through the lookup / changelog wrapper; its rows are rewritten, or the file is
  upgraded unchanged (``write`` false) after its lookups and changelog.

Merging per slice follows the step's wrapper:
* ``merge`` — ReducerMergeFunctionWrapper (a key with one record passes unchanged);
* ``lookup`` — LookupChangelogMergeFunctionWrapper: the keys with no input record above level 0 are looked up in
  the levels above the output level (compact.lookup); with deletion vectors the found row's position is marked in
  its file's vector; the found record joins the merge (when its value matters: changelog, engines other than
  deduplicate, sequence fields — otherwise only its position is read, like Java's position-only processor);
  every key goes through the merge function; changelog for keys with level-0 records (compact.changelog).
  First-row: keys found above are dropped (FirstRowMergeFunctionWrapper's contains-check);
* ``full-changelog`` — FullChangelogMergeFunctionWrapper: changelog against the input's max-level record.

Deletion vectors: the bucket's vectors at plan time, minus those of the files this task compacts away, plus the new
positions, are written as ONE new DV index file (BucketedDvMaintainer.writeDeletionVectorsIndex); the task returns
its entry and the entries it replaces; the driver commits them with the data files. A failure deletes every file
the task wrote.

Differences from Java (all proven harmless against Java 0.9 in tests/compact/test_minor_java.py):
* when a bucket's last vector goes away, Java 0.9 writes an index file with no vectors; we drop the entry;
* a Java writer's ``compact(partition, bucket, false)`` picks again while preparing its commit (a second unit on the
  new layout); a run of ours is one pick per bucket — the next run continues;
* like Java, when only positions are needed (deduplicate without sequence field, no changelog) the looked-up
  record does not join the merge: level 0 wins;
* changelog files share Java's naming, level and stats, with their own UUID rather than the data files'.
"""
from __future__ import annotations

import functools
import logging
import uuid
from typing import Any

import numpy as np
import pyarrow as pa

import paimon_ops.compact.changelog as cl
from paimon_ops.compact.dv import dv_index_path, write_dv_index
from paimon_ops.compact.levels import FIRST_ROW, FULL_MERGE, LOOKUP_MERGE, READ, REWRITE, UPGRADE, UnitStep
from paimon_ops.compact.lookup import HigherLevels
from paimon_ops.compact.model import InputFile, index_entry_from_json, index_entry_to_json
from paimon_ops.compact.task_context import TaskContext, merge_slices
from paimon_ops.format.datafile import SEQUENCE_NUMBER, VALUE_KIND
from paimon_ops.format.deletion_vectors import DeletionVector
from paimon_ops.merge.merge import merge_records
from paimon_ops.merge.spec import MergeSpec
from paimon_ops.options import CHANGELOG_PRODUCER_ROW_DEDUPLICATE, CHANGELOG_PRODUCER_ROW_DEDUPLICATE_IGNORE_FIELDS

log = logging.getLogger(__name__)

LEVEL = "_LEVEL"


class _Lsm:
    def __init__(self, ctx: TaskContext, files: list[InputFile]):

        self.ctx = ctx
        task = ctx.task
        table = ctx.table
        self.spec = MergeSpec.from_schema(table.schema, table.options, f"table {table.identifier}")
        self.keys = list(self.spec.key_fields)
        self.columns = table.schema.field_names + [SEQUENCE_NUMBER, VALUE_KIND]
        self.by_name = {f.name: f for f in files}
        self.output_level = int(task["output_level"])
        self.max_level = int(task["max_level"])
        self.rewriter = task.get("rewriter")
        self.dv_enabled = table.options.deletion_vectors_enabled
        self.lookup_values = bool(task.get("lookup_values"))
        self.steps = [UnitStep.from_json(s) for s in task["steps"]]
        ignored: set[str] = set(table.options.get(CHANGELOG_PRODUCER_ROW_DEDUPLICATE_IGNORE_FIELDS))
        self.dedup_columns = ([c for c in table.schema.field_names if c not in ignored]
                              if table.options.get(CHANGELOG_PRODUCER_ROW_DEDUPLICATE) else None)
        lookup_files = [InputFile(**f) if isinstance(f, dict) else f for f in task.get("lookup_files") or []]
        self.higher: HigherLevels | None = None
        if lookup_files and any(s.merge == LOOKUP_MERGE for s in self.steps):
            self.higher = HigherLevels(ctx, [(ctx.live_file(f).meta, f.path, functools.partial(ctx.dv, f))
                                             for f in lookup_files], self.keys)
        self.marks: dict[str, list[np.ndarray]] = {}
        self._changelog: Any = None
        self.stats: dict[str, int] = {"rows_read": 0, "slices": 0, "keys_looked_up": 0, "keys_found": 0,
                                      "changelog_rows": 0, "files_upgraded": 0, "files_read_for_lookup": 0}
        self._records_schema: pa.Schema | None = None

    # ------------------------------------------------------------------ helpers
    def changelog_out(self, rows: pa.Table | None) -> None:
        if rows is None or not rows.num_rows:
            return
        if self._changelog is None:
            self._changelog = self.ctx.changelog_writer(self.output_level)
        self._changelog.write(rows)
        self.stats["changelog_rows"] += rows.num_rows

    def _found_rows(self, found_rows: pa.Table, like: pa.Table) -> pa.Table:
        t = found_rows.select(like.column_names)
        return t.cast(like.schema)

    # ------------------------------------------------------------------ a slice
    def slice(self, records: pa.Table, step: UnitStep, writer: Any) -> None:

        spec, keys = self.spec, self.keys
        changelog_rows = None
        if step.merge == LOOKUP_MERGE:
            info = cl.key_info(records, keys, self.max_level)
            need_mask = ~info.has_high
            eligible = need_mask.copy()
            if need_mask.any() and self.higher is not None and not self.higher.empty:
                need = info.keys.filter(pa.array(need_mask))
                first_row = self.rewriter == FIRST_ROW
                found = self.higher.probe(need, with_values=self.lookup_values and not first_row)
                self.stats["keys_looked_up"] += need.num_rows
                self.stats["keys_found"] += int(found.mask.sum())
                if self.dv_enabled:
                    for name, pos in found.marks.items():
                        self.marks.setdefault(name, []).append(pos)
                if found.mask.any():
                    found_keys = need.filter(pa.array(found.mask))
                    if first_row:
                        drop = cl.rows_with_keys(records, keys, found_keys)
                        records = records.filter(pa.array(~drop))
                        info = cl.key_info(records, keys, self.max_level)
                        eligible = ~info.has_high
                    elif found.rows is not None and found.rows.num_rows:
                        records = pa.concat_tables([records, self._found_rows(found.rows, records)])
                        info = cl.key_info(records, keys, self.max_level)
            merged = merge_records(records, spec, False, lookup_rewrite=True)
            if step.changelog:
                if self.rewriter == FIRST_ROW:
                    changelog_rows = cl.first_row_changelog(merged, info, eligible & info.has_l0, keys, self.columns)
                else:
                    changelog_rows = cl.lookup_changelog(records, merged, info, keys, self.columns, self.dedup_columns)
        elif step.merge == FULL_MERGE:
            merged = merge_records(records, spec, False, lookup_rewrite=False)
            info = cl.key_info(records, keys, self.max_level)
            changelog_rows = cl.full_changelog(records, merged, info, keys, self.columns, self.dedup_columns)
        else:
            merged = merge_records(records, spec, step.drop_delete, lookup_rewrite=False)
        self.changelog_out(changelog_rows)
        if writer is not None and merged.num_rows:
            if step.drop_delete:
                k = merged.column(VALUE_KIND).to_numpy()
                merged = merged.filter(pa.array((k == 0) | (k == 2)))
            if merged.num_rows:
                writer.write(merged.select(self.columns))

    # ------------------------------------------------------------------ the unit
    def run(self) -> dict[str, Any]:
        for step in self.steps:
            if step.op == UPGRADE:
                self.stats["files_upgraded"] += 1
                continue
            files = [self.by_name[n] for n in step.files]
            if step.op == READ:
                self.stats["files_read_for_lookup"] += 1
                if not step.write:
                    self.stats["files_upgraded"] += 1
            writer = self.ctx.writer(self.output_level) if step.write else None
            for records in merge_slices(self.ctx, files, self.keys, self.stats):
                self.slice(records, step, writer)
            if writer is not None:
                writer.close()
        if self._changelog is not None:
            self._changelog.close()
        out: dict[str, Any] = dict(self.stats)
        if self.higher is not None:
            out["lookup_files_indexed"] = self.higher.files_indexed
            out["lookup_rows_indexed"] = self.higher.rows_indexed
        out["dv"] = self.deletion_vectors()
        return out

    # ------------------------------------------------------------------ deletion vectors
    def deletion_vectors(self) -> dict[str, Any] | None:
        """The bucket's new DV index (one file), or None when its vectors did not change."""
        ctx = self.ctx
        entries = [index_entry_from_json(d) for d in ctx.task.get("dv_index") or []]
        gone: set[str] = set()
        for s in self.steps:
            if s.op == REWRITE or (s.op == READ and s.write):
                gone.update(s.files)
        existing: dict[str, DeletionVector] = {}
        for ie in entries:
            for r in ie.dv_ranges or ():
                existing[r.data_file] = ctx.scanner.deletion_vector(ie, r)
        dropped = [n for n in existing if n in gone]
        marked = {n: np.unique(np.concatenate(ps)) for n, ps in self.marks.items()}
        new_positions = 0
        for n, pos in marked.items():
            before = existing[n].cardinality if n in existing else 0
            dv = existing.get(n)
            if dv is None:
                dv = existing[n] = DeletionVector(bitmap64=ctx.table.options.bitmap64)
            else:
                dv = existing[n] = dv.copy()
            dv.delete_many(pos)
            new_positions += dv.cardinality - before
        if not dropped and not new_positions:
            return None
        for n in dropped:
            existing.pop(n)
        out: dict[str, Any] = {"deleted": [index_entry_to_json(ie) for ie in entries], "added": None,
                               "dropped_vectors": len(dropped), "new_positions": int(new_positions)}
        if existing:
            with_card = bool(ctx.task.get("dv_cardinality"))
            name = f"index-{getattr(ctx, 'token', None) or uuid.uuid4()}-0"
            # registered before writing: a failure halfway still deletes the partial file
            ctx.extra_paths.append(dv_index_path(ctx.table, ctx.scanner, ctx.partition, ctx.bucket, name))
            entry, _ = write_dv_index(ctx.table, ctx.scanner, ctx.partition, ctx.bucket, existing, with_card, name)
            out["added"] = index_entry_to_json(entry)
        return out


def run_lsm(ctx: TaskContext, files: list[InputFile]) -> dict[str, Any]:
    return _Lsm(ctx, files).run()


__all__ = ["run_lsm"]
