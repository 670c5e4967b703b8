"""Executes the delete phases of a plan: in the caller's order, one phase at a time, each phase either inline
(small, or under fault injection) or in batches on a runner (Spark executors).

Every path is checked against the table's allowed roots — the real (resolved) table root and the configured
external data paths — on the driver before the first delete of the phase, and again by the executor that deletes
it; the FileIO underneath never deletes through a symlink. Deletes are quiet about missing files, so a rerun after
a crash is idempotent.
"""
from __future__ import annotations

import logging
from typing import Sequence

from paimon_ops.errors import PaimonOpsError
from paimon_ops.plan import FileAction
from paimon_ops.runner import Progress, Runner
from paimon_ops.table.fileio import FileIO, ensure_within
from paimon_ops.table.table import Table

log = logging.getLogger(__name__)

DEFAULT_BATCH = 1000
# Below this many files a Spark job costs more than it saves. On a local disk a delete takes microseconds and the
# driver beats executors at any size (benchmarks/bench_expiry.py: 70k deletes/s inline vs 5k/s on local[2]);
# on object stores and HDFS each delete is a round trip, which is what executors parallelise.
PARALLEL_THRESHOLD = 500
LOCAL_PARALLEL_THRESHOLD = 1_000_000
# Object stores with bulk deletes (1,000 keys per request, several in flight) delete ~10k files/s from the driver
# (benchmarks/bench_expiry_s3.py); executors pay off only for very large phases.
BULK_PARALLEL_THRESHOLD = 200_000
BULK_DRIVER_CHUNK = 100_000


def allowed_roots(table: Table) -> list[str]:
    """The table root plus configured external data paths on its file system (data files may legally live there),
    as real paths."""
    from paimon_ops.table.external import allowed_roots as external_roots
    return [table.root, *external_roots(table)]


def check_paths(roots: Sequence[str], paths: Sequence[str]) -> None:
    for p in paths:
        errors = []
        for r in roots:
            try:
                ensure_within(r, p)
                break
            except PaimonOpsError as e:
                errors.append(e)
        else:
            raise errors[0]


def delete_task(table_location: str, task: dict) -> dict:
    """Executor side: delete one batch of files (already checked on the driver; checked again here)."""
    io, _ = FileIO.resolve(table_location)
    io = io.with_roots(task["roots"])
    check_paths(task["roots"], task["paths"])
    if io.bulk_delete:  # object stores: bulk requests, exact per-file outcome reported back
        out = io.delete_many(task["paths"])
        return {"deleted": len(out.deleted), "missing": len(out.missing), "missing_paths": list(out.missing),
                "failed": [list(f) for f in out.failed]}
    done = io.delete_files(task["paths"])
    deleted = sum(done)
    return {"deleted": deleted, "missing": len(done) - deleted}


class Deleter:
    def __init__(self, table: Table, runner: Runner | None = None, batch_size: int = DEFAULT_BATCH,
                 parallel_threshold: int | None = None, progress: Progress | None = None):
        self.table = table
        self.runner = runner
        self.batch_size = batch_size
        if parallel_threshold is None:
            parallel_threshold = LOCAL_PARALLEL_THRESHOLD if table.io.is_local else \
                BULK_PARALLEL_THRESHOLD if table.io.bulk_delete else PARALLEL_THRESHOLD
        self.parallel_threshold = parallel_threshold
        self.progress = progress
        self.roots = allowed_roots(table)
        self.io = table.io.with_roots(self.roots[1:])

    def delete(self, actions: Sequence[FileAction]) -> tuple[list[FileAction], int]:
        """Delete one phase; returns (actually deleted actions, missing count). Raises if any delete fails."""
        if not actions:
            return [], 0
        check_paths(self.roots, [a.path for a in actions])
        use_runner = self.runner is not None and self.table.io.fault_hook is None and \
            len(actions) >= self.parallel_threshold
        if self.table.io.bulk_delete:
            return self._delete_bulk(actions, use_runner)
        if not use_runner:
            done, missing = [], 0
            step = self.batch_size
            for start in range(0, len(actions), step):
                chunk = actions[start:start + step]
                outcome = self.io.delete_files([a.path for a in chunk])
                for a, ok in zip(chunk, outcome):
                    if ok:
                        done.append(a)
                    else:
                        missing += 1
                if self.progress:
                    self.progress(min(start + step, len(actions)), len(actions))
            return done, missing
        batches = [actions[i:i + self.batch_size] for i in range(0, len(actions), self.batch_size)]
        tasks = [{"roots": self.roots, "paths": [a.path for a in b]} for b in batches]
        results = self.runner.run("paimon_ops.lifecycle.deleter.delete_task", self.table.location, tasks,  # type: ignore[union-attr]
                                  progress=self.progress)
        failed = [r["error"] for r in results if not r.get("ok")]
        if failed:
            raise PaimonOpsError(f"deleting files of {self.table.identifier} failed: {failed[0]}; "
                                 "the table stays readable, re-run to finish")
        missing = sum(r["missing"] for r in results)
        # Which individual files were missing is not reported back; counts are exact.
        return list(actions), missing

    # ---------------------------------------------------------------- object stores (issue 13)
    def _delete_bulk(self, actions: Sequence[FileAction], use_runner: bool) -> tuple[list[FileAction], int]:
        """Bulk deletes (any order within the phase) on the driver or on executors; the phase fails if any file
        could not be deleted (after retries), naming the first one. Which files were missing is exact."""
        paths = [a.path for a in actions]
        # On the driver, large chunks: the existence listing then covers each directory once per chunk.
        size = self.batch_size if use_runner else max(self.batch_size, BULK_DRIVER_CHUNK)
        batches = [paths[i:i + size] for i in range(0, len(paths), size)]
        missing: set[str] = set()
        failed: list[tuple[str, str]] = []
        if use_runner:
            tasks = [{"roots": self.roots, "paths": b} for b in batches]
            results = self.runner.run("paimon_ops.lifecycle.deleter.delete_task", self.table.location, tasks,  # type: ignore[union-attr]
                                      progress=self.progress, options=self.table.io.task_options())
            errors = [r["error"] for r in results if not r.get("ok")]
            if errors:
                raise PaimonOpsError(f"deleting files of {self.table.identifier} failed: {errors[0]}; "
                                     "the table stays readable, re-run to finish")
            for r in results:
                missing.update(r.get("missing_paths", ()))
                failed += [tuple(f) for f in r.get("failed", ())]
        else:
            done_n = 0
            for b in batches:
                out = self.io.delete_many(b)
                missing.update(out.missing)
                failed += out.failed
                done_n += len(b)
                if self.progress:
                    self.progress(done_n, len(paths))
        if failed:
            raise PaimonOpsError(f"deleting files of {self.table.identifier} failed for {len(failed)} of "
                                 f"{len(paths)} file(s), first {failed[0][0]}: {failed[0][1]}; the table stays "
                                 "readable, re-run to finish")
        return [a for a in actions if a.path not in missing], len(missing)
