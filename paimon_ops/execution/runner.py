"""Where tasks run (what runs inside a worker is `execution/tasks.py`).

SparkRunner: a DataFrame of task rows and `mapInArrow` running the function on executors — the same code works
on classic Spark (local[*] or a cluster) and on Spark Connect: `run` collects one JSON result per task, `frame`
leaves the tasks' rows in Spark (joins, aggregates), `stream` brings them to the driver a wave of tasks at a time as
Arrow. LocalRunner runs tasks in-process (small work, and tests that are not about Spark). Which of them an
execution uses is `execution/placement.py`; starting a Spark session, `execution/spark_session.py`.
"""
from __future__ import annotations

import io
import json
import logging
import os
import tempfile
import threading
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol, Sequence

from paimon_ops.errors import PaimonOpsError
from paimon_ops.execution.tasks import cores, run_cancellable, run_rows, run_task

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]  # (done, total)


class Runner(Protocol):
    """Where a plan's tasks run: `LocalRunner` (this process), `SparkRunner` (a given SparkSession) or
    `LazySparkRunner` (a session started only when a plan needs it). `run` applies the named task function to each
    task and returns the results in order."""

    def run(self, function: str, table_location: str, tasks: Sequence[dict], progress: Progress | None = None,
            options: dict[str, str] | None = None) -> list[dict]:
        ...


class LocalRunner:
    """Runs tasks in this process: `workers` at a time (default: one per CPU core), largest first. Task functions
    spend their time in Arrow, Parquet/ORC and numpy, which release the GIL, so threads use the cores; memory is
    bounded per task (compaction.memory-budget), so `workers` bounds the whole."""

    name = "local"
    where = "in-process"

    def __init__(self, workers: int | None = None):
        self.workers = workers if workers is not None else cores()
        if self.workers < 1:
            raise PaimonOpsError(f"LocalRunner needs at least one worker, got {self.workers}")

    def run(self, function: str, table_location: str, tasks: Sequence[dict], progress: Progress | None = None,
            options: dict[str, str] | None = None) -> list[dict]:
        opts = json.dumps(options or {})
        out: list[dict | None] = [None] * len(tasks)
        if not tasks:
            return []
        order = sorted(range(len(tasks)), key=lambda i: -task_weight(tasks[i]))
        workers = min(self.workers, len(tasks))
        # Tasks run in worker threads even one at a time: the caller's thread only waits, so an interrupt reaches it
        # at once; then no queued task starts, running ones stop at their next batch (check_cancelled) and remove
        # what they wrote, and the interrupt goes on to the caller once they have.
        cancel = threading.Event()
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="paimon-ops-task")
        try:
            futures = {pool.submit(run_cancellable, cancel, function, table_location, json.dumps(tasks[i]), opts): i
                       for i in order}
            for n, fut in enumerate(as_completed(futures)):
                out[futures[fut]] = json.loads(fut.result())
                if progress:
                    progress(n + 1, len(tasks))
        except BaseException:
            cancel.set()
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
        return out  # type: ignore[return-value]


def task_weight(task: dict) -> int:
    """How much work a task is (bytes of its input files; deletes: number of paths) — big tasks start first."""
    files = task.get("files")
    if files:
        return sum(int(f.get("file_size", 0) or 0) for f in files)
    return len(task.get("paths", ()))


# Input bytes a Spark partition should read at least: every PySpark task costs ~45 ms of Python-worker overhead
# (measured on local[2]: the command is unpickled, Arrow streams set up), about what reading 4 MB costs, so short
# tasks are packed together — never into fewer partitions than there are slots.
SPARK_PARTITION_MIN_BYTES = 256 << 20


def spark_partitions(weights: Sequence[int], slots: int | None,
                     min_bytes: int = SPARK_PARTITION_MIN_BYTES) -> list[list[int]]:
    """Task indexes per Spark partition. Large work: one task per partition, largest first, so Spark balances them
    dynamically. Short work: as many partitions as slots (or as the bytes call for), each a balanced group — the
    largest remaining task goes to the lightest group (LPT), so no slot idles while another runs two long tasks."""
    n = len(weights)
    order = sorted(range(n), key=lambda i: -weights[i])
    if not slots or slots <= 0:
        return [[i] for i in order]
    wanted = max(slots, -(-sum(weights) // min_bytes))
    if wanted >= n:
        return [[i] for i in order]
    groups: list[list[int]] = [[] for _ in range(wanted)]
    loads = [0] * wanted
    for i in order:
        g = min(range(wanted), key=lambda k: (loads[k], len(groups[k])))
        groups[g].append(i)
        loads[g] += weights[i]
    return groups


def _package_zip() -> bytes:
    """paimon_ops as a zip, shipped to cluster executors that do not have it installed."""
    root = Path(__file__).resolve().parents[1]  # the paimon_ops package (this module is paimon_ops.execution.runner)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for p in sorted(root.rglob("*")):
            if p.suffix in (".py", ".json") and "__pycache__" not in p.parts:  # code and package data (JSON Schemas)
                z.write(p, p.relative_to(root.parent).as_posix())
    return buf.getvalue()


@dataclass
class SparkRunner:
    """Runs tasks on Spark executors, one task per partition of a small DataFrame."""

    spark: Any  # pyspark.sql.SparkSession (classic or Connect)
    ship_package: bool | None = None  # None: ship when the master is not local
    wave: int | None = None  # tasks per wave of `stream` (None: one per slot, at least 2)

    name = "spark"

    @property
    def where(self) -> str:
        try:
            return f"Spark {self.spark.sparkContext.master}"
        except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext
            return "Spark Connect"

    def _slots(self) -> int | None:
        """Tasks the cluster runs at once (None when unknown, e.g. over Spark Connect)."""
        try:
            return int(self.spark.sparkContext.defaultParallelism)
        except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext
            try:
                value = self.spark.conf.get("spark.default.parallelism", None)
                return int(value) if value else None
            except Exception:  # noqa: BLE001
                return None

    def _ensure_package(self) -> None:
        if getattr(self.spark, "_paimon_ops_shipped", False):
            return
        ship = self.ship_package
        if ship is None:
            try:
                master = self.spark.sparkContext.master
                ship = not master.startswith("local")
            except Exception:  # Spark Connect has no sparkContext
                ship = True
        if ship:
            path = os.path.join(tempfile.mkdtemp(prefix="paimon-ops-"), "paimon_ops.zip")
            with open(path, "wb") as f:
                f.write(_package_zip())
            try:
                self.spark.sparkContext.addPyFile(path)
            except Exception:
                self.spark.addArtifacts(path, pyfile=True)  # Spark Connect
        try:
            self.spark._paimon_ops_shipped = True
        except Exception:
            pass

    def run(self, function: str, table_location: str, tasks: Sequence[dict], progress: Progress | None = None,
            options: dict[str, str] | None = None) -> list[dict]:
        if not tasks:
            return []
        import pyarrow as pa

        self._ensure_package()
        opts = json.dumps(options or {})
        payloads = [json.dumps(t) for t in tasks]
        groups = spark_partitions([task_weight(t) for t in tasks], self._slots())
        df = self.spark.range(0, len(groups), 1, len(groups))

        def run_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            # run_task is pickled by reference: the executor imports paimon_ops.execution.tasks itself
            for batch in batches:
                ids = [i for p in batch.column(0).to_pylist() for i in groups[p]]
                results = [run_task(function, table_location, payloads[i], opts) for i in ids]
                yield pa.RecordBatch.from_arrays([pa.array(ids, pa.int64()), pa.array(results, pa.string())],
                                                 names=["idx", "result"])

        started = time.time()
        collected = _SparkJob(self, lambda: df.mapInArrow(run_batches, "idx long, result string").collect()).result()
        log.info("ran %d %s tasks in %d Spark partitions in %.1fs", len(tasks), function.rsplit(".", 1)[-1],
                 len(groups), time.time() - started)
        out: list[dict | None] = [None] * len(tasks)
        for r in collected:
            out[r["idx"]] = json.loads(r["result"])
        if progress:
            progress(len(tasks), len(tasks))
        missing = [i for i, r in enumerate(out) if r is None]
        if missing:
            raise RuntimeError(f"Spark returned no result for tasks {missing}")
        return out  # type: ignore[return-value]

    def frame(self, function: str, table_location: str, tasks: Sequence[dict], schema: str,
              options: dict[str, str] | None = None) -> Any:
        """A DataFrame of the rows the task function returns (`fn(table_location, task) -> {column: [values]}`),
        one task per partition, for work whose result stays in Spark (joins, aggregates) rather than coming back to
        the driver. `schema` (DDL) must start with `error string`: a task that fails yields one row naming its
        error there and nothing else (the caller fails closed on it)."""
        self._ensure_package()
        opts = json.dumps(options or {})
        payloads = [json.dumps(t) for t in tasks]
        df = self.spark.range(0, len(tasks), 1, max(1, len(tasks)))

        def rows(batches: Iterator[Any]) -> Iterator[Any]:
            # run_rows is pickled by reference: the executor imports paimon_ops.execution.tasks itself
            for batch in batches:
                for i in batch.column(0).to_pylist():
                    yield run_rows(function, table_location, payloads[i], opts, schema)

        return df.mapInArrow(rows, schema)

    def stream(self, function: str, table_location: str, tasks: Sequence[dict], schema: str,
               options: dict[str, str] | None = None, wave: int | None = None) -> Iterator[tuple[int, Any]]:
        """(index of the first task, a pyarrow Table of the rows of the next tasks, in task order) for every wave of
        `wave` tasks (default: one per slot, at least 2) — the rows of `frame`, brought to the driver a wave at a
        time as Arrow, never all at once: the driver holds at most two waves (the one it consumes and the one Spark
        computes meanwhile). The same on classic Spark (local, a cluster) and Spark Connect."""
        if not tasks:
            return
        size = wave or self.wave or max(2, self._slots() or 2)
        starts = list(range(0, len(tasks), size))

        def job(start: int) -> _SparkJob:
            frame = self.frame(function, table_location, tasks[start:start + size], schema, options)
            return _SparkJob(self, frame.toArrow)

        started = time.time()
        running: _SparkJob | None = job(starts[0])
        try:
            for k, start in enumerate(starts):
                current, running = running, None
                assert current is not None
                table = current.result()  # (an interrupt while waiting cancels this job there)
                if k + 1 < len(starts):
                    running = job(starts[k + 1])  # computed while the caller consumes this wave
                yield start, table
                del table
        finally:
            if running is not None:  # the consumer stopped early (an error, a closed generator): cancel the rest
                running.abandon()
        log.info("streamed %d %s tasks in %d waves in %.1fs", len(tasks), function.rsplit(".", 1)[-1], len(starts),
                 time.time() - started)

    def cancel(self, wait_s: float = 30.0) -> None:
        """Cancel every running job of this session (classic Spark: and wait, at most `wait_s`, until none is active,
        so that no task writes after the caller's cleanup) or interrupt every operation (Spark Connect)."""
        try:
            sc = self.spark.sparkContext
            sc.cancelAllJobs()
        except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext
            sc = None
        if sc is not None:
            deadline = time.monotonic() + wait_s
            while time.monotonic() < deadline:
                try:
                    if not sc.statusTracker().getActiveJobsIds():
                        break
                except Exception:  # noqa: BLE001 - best effort
                    break
                time.sleep(0.1)
            return
        try:
            self.spark.interruptAll()
        except Exception as e:  # noqa: BLE001 - best effort: the driver cleans up what it can see anyway
            log.warning("could not cancel the Spark jobs: %s", e)


class _SparkJob:
    """A Spark action run in a helper thread while the caller's thread waits (`result`): an interrupt (Ctrl-C,
    SIGTERM, a terminated Dagster run) then reaches the caller there — not in the middle of a py4j call, which
    would break Spark's connection — and the session's jobs are cancelled, and waited for, before the caller
    removes what the tasks wrote."""

    def __init__(self, runner: SparkRunner, action: Callable[[], Any]):
        self.runner = runner
        self.box: dict[str, Any] = {}

        def target() -> None:
            try:
                self.box["value"] = action()
            except BaseException as e:  # noqa: BLE001 - handed to the waiting thread
                self.box["error"] = e

        self.thread = threading.Thread(target=target, name="paimon-ops-spark-job", daemon=True)
        self.thread.start()

    def result(self) -> Any:
        try:
            while self.thread.is_alive():
                self.thread.join(0.2)
        except BaseException:
            self.abandon()
            raise
        if "error" in self.box:
            raise self.box.pop("error")
        return self.box.pop("value")

    def abandon(self) -> None:
        if self.thread.is_alive():
            self.runner.cancel()
            self.thread.join(60)
