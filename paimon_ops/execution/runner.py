"""Where tasks run. A task is a JSON-serialisable dict; a task function is a module-level function
`fn(table_location: str, task: dict) -> dict` named by its dotted path, so executors import it themselves and
never depend on driver state.

SparkRunner: a DataFrame of task rows and `mapInArrow` running the function on executors — the same code works
on classic Spark (local[*] or a cluster) and on Spark Connect: `run` collects one JSON result per task, `frame`
leaves the tasks' rows in Spark (joins, aggregates), `stream` brings them to the driver a wave of tasks at a time as
Arrow. LocalRunner runs tasks in-process (small work,
and tests that are not about Spark).
"""
from __future__ import annotations

import contextlib
import contextvars
import errno
import importlib
import io
import json
import logging
import os
import re
import socket
import sys
import tempfile
import threading
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol, Sequence
from urllib.parse import urlparse

from paimon_ops.errors import (
    CancelledError,
    InvalidArgumentError,
    PaimonOpsError,
    UnreachableError,
    require_module,
)
from paimon_ops.execution.model import Workload
from paimon_ops.execution.rendering import human_bytes
from paimon_ops.options import (
    EXECUTION_LOCAL_MAX_FILES,
    EXECUTION_LOCAL_MAX_INPUT_SIZE,
    EXECUTION_LOCAL_MAX_MANIFESTS,
    EXECUTION_LOCAL_MAX_TASKS,
)
from paimon_ops.table.objectstore import is_store_option, task_store_options

log = logging.getLogger(__name__)

CONNECT_DEFAULT_PORT = 15002
SPARK_STANDALONE_DEFAULT_PORT = 7077
# How long a Spark master / Connect server may take to accept a TCP connection, and a session to become usable
# (PAIMON_OPS_CONNECT_TIMEOUT, or the caller's value): unreachable infrastructure fails fast, never hangs.
DEFAULT_CONNECT_TIMEOUT_S = float(os.environ.get("PAIMON_OPS_CONNECT_TIMEOUT", "10"))
DEFAULT_START_TIMEOUT_S = 60.0

Progress = Callable[[int, int], None]  # (done, total)


def resolve_function(dotted: str) -> Callable[[str, dict], dict]:
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


# ---------------------------------------------------------------------------------------------- cancellation
_LOCAL = threading.local()


def check_cancelled() -> None:
    """Called by task functions between batches: raises CancelledError once the run they belong to was cancelled
    (Ctrl-C, SIGTERM, a terminated Dagster run), so that a running task stops within a batch and removes what it
    wrote."""
    event = getattr(_LOCAL, "cancel", None)
    if event is not None and event.is_set():
        raise CancelledError("cancelled")


def _run_cancellable(event: threading.Event, dotted: str, table_location: str, task_json: str,
                     options_json: str) -> str:
    _LOCAL.cancel = event
    try:
        if event.is_set():
            return json.dumps({"ok": False, "error": "CancelledError: cancelled before it started",
                               "cancelled": True})
        return run_task(dotted, table_location, task_json, options_json)
    finally:
        _LOCAL.cancel = None


def call_task(dotted: str, table_location: str, task_json: str, options_json: str = "{}") -> dict:
    """Run one task function and return what it returned (it raises what it raises)."""
    fn = resolve_function(dotted)
    task = json.loads(task_json)
    opts = json.loads(options_json)
    # Object-store settings (endpoint, credentials) configure FileIO.resolve for this task only; they are not
    # put into the task dict, so no task function can echo them into a result.
    store_opts = {k: v for k, v in opts.items() if is_store_option(k)}
    opts = {k: v for k, v in opts.items() if k not in store_opts}
    if opts:
        task = {**task, "_options": opts}
    with task_store_options(store_opts):
        return fn(table_location, task)


def run_task(dotted: str, table_location: str, task_json: str, options_json: str = "{}") -> str:
    """Run one task and return its result as JSON; errors become a result with `error` set (the stack goes to the
    log at INFO, visible with `paimon-ops -v`; the driver reports the error in one line)."""
    started = time.time()
    try:
        # inside the try: an unimportable function is this task's error, not the job's
        result = {"ok": True, **call_task(dotted, table_location, task_json, options_json)}
    except Exception as e:  # report, the driver decides (fail closed)
        log.info("task failed", exc_info=True)
        result = {"ok": False, "error": f"{type(e).__name__}: {' '.join(str(e).split())}"}
        if isinstance(e, CancelledError):
            result["cancelled"] = True
    result["duration_s"] = round(time.time() - started, 3)
    return json.dumps(result)


_ARROW_TYPES = {"string": "string", "long": "int64", "bigint": "int64", "int": "int32", "boolean": "bool",
                "binary": "binary", "double": "float64", "array<string>": "list<string>"}


def arrow_schema(ddl: str) -> Any:
    """The Arrow schema of a flat DDL schema (`name type, …` of the types in _ARROW_TYPES): what the rows of a
    `SparkRunner.frame` task must be, type for type."""
    import pyarrow as pa
    fields = []
    for col in ddl.split(","):
        name, typ = col.strip().split(None, 1)
        arrow = _ARROW_TYPES[typ.strip().lower()]
        fields.append(pa.field(name, pa.list_(pa.string()) if arrow == "list<string>" else pa.type_for_alias(arrow)))
    return pa.schema(fields)


def run_rows(dotted: str, table_location: str, task_json: str, options_json: str, schema: str) -> Any:
    """Executor side of `SparkRunner.frame`: the task's rows (the function returns {column: values}, a column
    missing is null; values may be bytes, unlike a `run` result) as one Arrow batch of `schema`; an exception
    becomes one row whose `error` says it (the stack goes to the executor's log)."""
    import pyarrow as pa
    arrow = arrow_schema(schema)
    names = arrow.names[1:]
    try:
        result = call_task(dotted, table_location, task_json, options_json)
        n_rows = max((len(result.get(n) or ()) for n in names), default=0)
        cols = [pa.array(result.get(n) or [None] * n_rows, arrow.field(n).type) for n in names]
        return pa.RecordBatch.from_arrays([pa.nulls(n_rows, pa.string()), *cols], schema=arrow)
    except Exception as e:  # noqa: BLE001 - reported as a row: the driver fails closed on it
        log.info("row task failed", exc_info=True)
        return pa.RecordBatch.from_arrays(
            [pa.array([f"{type(e).__name__}: {' '.join(str(e).split())}"], pa.string()),
             *[pa.nulls(1, arrow.field(n).type) for n in names]], schema=arrow)


_CORES: int | None = None  # a fleet worker's share of the cores (`use_cores`)


def use_cores(n: int) -> None:
    """This process uses `n` of the machine's cores (a worker of a fleet run, execution/fleet.py): its in-process
    task threads and Arrow's thread pool are sized to that share."""
    import pyarrow as pa
    global _CORES
    _CORES = max(1, n)
    pa.set_cpu_count(_CORES)


def cores() -> int:
    """The CPU cores this process's task threads use: all of the machine's, or a fleet worker's share."""
    return _CORES or max(1, os.cpu_count() or 1)


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
            futures = {pool.submit(_run_cancellable, cancel, function, table_location, json.dumps(tasks[i]), opts): i
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
            from paimon_ops.execution.runner import run_task as _run  # lazy: imported on the Spark executor
            for batch in batches:
                ids = [i for p in batch.column(0).to_pylist() for i in groups[p]]
                results = [_run(function, table_location, payloads[i], opts) for i in ids]
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
            from paimon_ops.execution.runner import run_rows as _rows  # lazy: imported on the Spark executor
            for batch in batches:
                for i in batch.column(0).to_pylist():
                    yield _rows(function, table_location, payloads[i], opts, schema)

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


# Session defaults for paimon-ops' own sessions (the CLI's and the Dagster resource's).
SPARK_DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
}
LOCAL_SPARK_DEFAULTS = {
    "spark.driver.bindAddress": "127.0.0.1",
    # workers forked from a daemon that has already imported pyarrow and the task code (spark_daemon.py)
    "spark.python.daemon.module": "paimon_ops.spark_daemon",
}


def spark_endpoints(url: str) -> list[tuple[str, int]]:
    """TCP endpoints to probe for a master / Connect URL; [] when there is nothing to probe (local[*], yarn)."""
    if url.startswith("sc://"):
        parsed = urlparse(url.split(";", 1)[0].rstrip("/"))
        return [(parsed.hostname or "localhost", parsed.port or CONNECT_DEFAULT_PORT)]
    if url.startswith("spark://"):
        out = []
        for hp in url[len("spark://"):].split(","):  # standalone HA: spark://h1:7077,h2:7077
            host, _, port = hp.strip().rstrip("/").partition(":")
            try:
                out.append((host, int(port or SPARK_STANDALONE_DEFAULT_PORT)))
            except ValueError:
                raise PaimonOpsError(f"invalid Spark master URL {url!r}: port {port!r} is not a number") from None
        return out
    if url.startswith("k8s://"):
        parsed = urlparse(url[len("k8s://"):] if "://" in url[len("k8s://"):] else "https://" + url[len("k8s://"):])
        return [(parsed.hostname or "localhost", parsed.port or (443 if parsed.scheme == "https" else 80))]
    return []


_MASTER = re.compile(r"^(local(\[(\*|\d+)(,\s*\d+)?\])?|local-cluster\[\d+,\s*\d+,\s*\d+\]|yarn|"
                     r"spark://[^\s/]+|k8s://\S+)$")
# The HTTP/2 client preface and an empty SETTINGS frame: a gRPC (Spark Connect) server answers with its own SETTINGS.
_HTTP2_HELLO = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
# A frame of length 0: Spark's RPC server (TransportFrameDecoder) refuses it and closes the connection at once.
_SPARK_RPC_HELLO = b"\x00" * 8


def check_master_url(url: str, what: str = "--spark-master") -> None:
    """Refuse, in one line, what is no Spark master URL (local[N], local[*], spark://host:port, yarn, k8s://…)."""
    if not isinstance(url, str) or not _MASTER.match(url.strip()):
        raise PaimonOpsError(f"{what} {url!r} is not a Spark master URL: use local[N], local[*], spark://host:port, "
                             "yarn or k8s://https://host:port")


def check_spark_reachable(url: str, timeout_s: float | None = None, what: str = "") -> None:
    """Raise UnreachableError unless at least one TCP endpoint of a `spark://` / `sc://` / `k8s://` URL accepts a
    connection and answers like Spark within `timeout_s` (default PAIMON_OPS_CONNECT_TIMEOUT, 10 s): a port that
    accepts connections but never says a word fails in that time too, never after Spark's own minute-long retries.
    `what` names it in the caller's words (e.g. `--spark-master`)."""
    timeout_s = DEFAULT_CONNECT_TIMEOUT_S if timeout_s is None else timeout_s
    if not timeout_s > 0:
        raise PaimonOpsError(f"--connect-timeout must be a positive number of seconds, got {timeout_s:g}")
    endpoints = spark_endpoints(url)
    if not endpoints:
        return
    errors = []
    deadline = time.monotonic() + timeout_s
    for host, port in endpoints:
        try:
            with socket.create_connection((host, port), timeout=max(0.1, deadline - time.monotonic())) as sock:
                problem = _handshake(sock, url, max(0.1, deadline - time.monotonic()), timeout_s)
                if problem is None:
                    return
                errors.append(f"{host}:{port}: {problem}")
        except socket.timeout:
            errors.append(f"{host}:{port}: no answer within {timeout_s:g} s")
        except OSError as e:
            errors.append(f"{host}:{port}: {e.strerror or e}")
    kind = "Spark Connect server" if url.startswith("sc://") else "Spark master"
    raise UnreachableError(url, "; ".join(errors), f"{kind}{' (' + what + ')' if what else ''}")


def _handshake(sock: socket.socket, url: str, timeout_s: float, said_s: float) -> str | None:
    """None if the peer answers the way a Spark Connect server (HTTP/2 SETTINGS) or a Spark master (closes the
    connection on a malformed RPC frame) does, else what it did."""
    if url.startswith("sc://"):
        if "use_ssl=true" in url.lower():
            return None  # TLS: the TCP connection is all we check without a client certificate chain
        hello, want_settings = _HTTP2_HELLO, True
    elif url.startswith("spark://"):
        hello, want_settings = _SPARK_RPC_HELLO, False
    else:
        return None
    sock.settimeout(timeout_s)
    try:
        sock.sendall(hello)
        data = sock.recv(9)
    except socket.timeout:
        return f"accepts connections but does not answer within {said_s:g} s (is it a Spark " \
               f"{'Connect server' if want_settings else 'master'}?)"
    except OSError as e:
        if not want_settings and e.errno in (errno.ECONNRESET, errno.EPIPE):
            return None  # the master dropped our malformed frame: it speaks Spark RPC
        return e.strerror or str(e)
    if want_settings:
        return None if len(data) >= 4 and data[3] == 0x04 else "answers, but not as a gRPC (Spark Connect) server"
    return None


_STUCK: list[threading.Thread] = []


def stuck_start() -> bool:
    """True when a Spark start-up was abandoned (timed out) and still blocks in a client library: the process can
    then only end with os._exit (interpreter shutdown would wait for Spark's own clients)."""
    return any(t.is_alive() for t in _STUCK)


def _within(seconds: float, fn: Callable[[], Any], url: str, what: str) -> Any:
    """Run `fn` (session start-up) in a daemon thread; UnreachableError if it does not finish in time (Spark's own
    clients retry for minutes)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            box["error"] = e

    t = threading.Thread(target=target, name="paimon-ops-spark-start", daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        _STUCK.append(t)
        raise UnreachableError(url, f"no usable Spark session within {seconds:g} s", what)
    if "error" in box:
        e = box["error"]
        text = " ".join(str(e).split()) or type(e).__name__
        if len(text) > 300:
            text = text[:297] + "..."
        raise UnreachableError(url, f"Spark did not start: {type(e).__name__}: {text}", what) from None
    return box.get("value")


def local_spark(master: str = "local[*]", app_name: str = "paimon-ops", conf: dict[str, str] | None = None):
    """The embedded default SparkSession (or a session on the given master URL)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    b = SparkSession.builder.master(master).appName(app_name)
    defaults = {**SPARK_DEFAULTS, **(LOCAL_SPARK_DEFAULTS if master.startswith("local") else {})}
    for k, v in {**defaults, **(conf or {})}.items():
        b = b.config(k, v)
    return b.getOrCreate()


def connect_spark(remote: str):
    """A Spark Connect session (`sc://host:port`); create(), because getOrCreate() refuses when this process
    already holds a classic session."""
    from pyspark.sql import SparkSession
    return SparkSession.builder.remote(remote).create()


# ---------------------------------------------------------------------------------------------- placement


class AutoRunner:
    """The default runner: in-process when the plan is small enough for this machine, Spark otherwise (the embedded
    `local[*]`, or the master / Connect server given). Spark is not even started for plans that have no tasks.

    Thresholds (table options in our dotted style, or the constructor): `execution.local.max-input-size` (bytes
    the tasks read, default 8 GiB) and `execution.local.max-tasks` (default 1024); for expiry and orphan removal
    (no tasks) `execution.local.max-manifests` (manifests planning reads, default 10,000) and
    `execution.local.max-files` (files listed or deleted, default 2,000,000). In-process runs one task per CPU
    core at a time, each bounded by compaction.memory-budget; on one machine Spark local[*] gains nothing over that
    but costs its start-up, so it is chosen only for plans beyond the thresholds or when a cluster is configured
    (`--spark-master` / `--spark-remote` force Spark, `--local` forces in-process)."""

    name = "auto"

    def __init__(self, master: str | None = None, remote: str | None = None, *, max_local_bytes: int | None = None,
                 max_local_tasks: int | None = None, workers: int | None = None,
                 connect_timeout_s: float | None = None, what: str = "", max_local_manifests: int | None = None,
                 max_local_files: int | None = None, spark: LazySparkRunner | None = None):
        self.max_local_bytes = max_local_bytes
        self.max_local_tasks = max_local_tasks
        self.max_local_manifests = max_local_manifests
        self.max_local_files = max_local_files
        self.local = LocalRunner(workers)
        self.spark = spark or LazySparkRunner(master, remote, connect_timeout_s=connect_timeout_s, what=what)

    def place(self, work: Workload, options: Any = None) -> tuple[Runner, dict[str, str]]:
        """(the runner for this work, {where, why}) — the report says both."""
        def limit(own: int | None, option: Any) -> int:  # the constructor's, else the table's option, else its default
            if own is not None:
                return own
            return options.get(option) if options is not None else option.default
        max_bytes = limit(self.max_local_bytes, EXECUTION_LOCAL_MAX_INPUT_SIZE)
        max_tasks = limit(self.max_local_tasks, EXECUTION_LOCAL_MAX_TASKS)
        if work.tasks == 0 and (work.manifests or work.files):
            max_manifests = limit(self.max_local_manifests, EXECUTION_LOCAL_MAX_MANIFESTS)
            max_files = limit(self.max_local_files, EXECUTION_LOCAL_MAX_FILES)
            size = f"{work.manifests} manifest(s), {work.files} file(s)"
            limits = f"execution.local.max-manifests {max_manifests} or execution.local.max-files {max_files}"
            if work.manifests > max_manifests or work.files > max_files:
                target = self.spark.remote or self.spark.master
                return self.spark, {"where": f"Spark {target}", "why": f"{size}: beyond {limits}"}
            why = f"{size}: within {limits}, batched on the driver"
            return self.local, {"where": self.local.where, "why": why}
        if work.tasks == 0:
            why = "no tasks: metadata and file deletes only, batched on the driver" if work.deletes else "nothing to run"
            return self.local, {"where": self.local.where, "why": why}
        size = f"{work.tasks} task(s) reading {human_bytes(work.input_bytes)}"
        if work.input_bytes <= max_bytes and work.tasks <= max_tasks:
            return self.local, {"where": f"{self.local.where} ({min(self.local.workers, work.tasks)} at a time)",
                                "why": f"{size}: within execution.local.max-input-size {human_bytes(max_bytes)} and "
                                       f"execution.local.max-tasks {max_tasks}"}
        target = self.spark.remote or self.spark.master
        return self.spark, {"where": f"Spark {target}",
                            "why": f"{size}: beyond execution.local.max-input-size {human_bytes(max_bytes)} or "
                                   f"execution.local.max-tasks {max_tasks}"}

    def run(self, function: str, table_location: str, tasks: Sequence[dict], progress: Progress | None = None,
            options: dict[str, str] | None = None) -> list[dict]:
        runner, _ = self.place(Workload(len(tasks), sum(task_weight(t) for t in tasks)))
        return runner.run(function, table_location, tasks, progress, options)


def make_runner(placement: str = "auto", *, master: str | None = None, remote: str | None = None,
                connect_timeout_s: float | None = None, what: str = "", spark: LazySparkRunner | None = None,
                probe: bool = True) -> Any:
    """The runner a placement asks for — the one factory of the CLI, Dagster and Airflow: "local" in-process;
    "spark" that Spark (`master` / `remote`, or the embedded local[*]; probed now unless `probe` is False, so an
    unreachable endpoint fails before anything is planned or changed); "auto" in-process unless the plan is large,
    then that Spark. `spark`: a Spark runner configured by the caller."""
    if placement == "local":
        return LocalRunner()
    spark = spark or LazySparkRunner(master, remote, connect_timeout_s=connect_timeout_s, what=what)
    if placement == "spark":
        if probe:
            spark.probe()
        return spark
    if placement == "auto":
        return AutoRunner(spark=spark)
    raise InvalidArgumentError(f"placement {placement!r}: expected auto, spark or local")


@dataclass(frozen=True)
class Placed:
    """A placement already decided (`place` once, then show it and execute on it: `plan.execute(runner=placed)`)."""

    runner: Any
    placement: dict[str, str]


def place(runner: Any, work: Workload, options: Any = None) -> tuple[Any, dict[str, str]]:
    """The runner an execution uses and why: an AutoRunner (or None = the default) decides by the work; a `Placed`
    was decided before; any other runner was chosen by the caller."""
    if isinstance(runner, Placed):
        return runner.runner, dict(runner.placement)
    if runner is None:
        runner = AutoRunner()
    if hasattr(runner, "place"):
        return runner.place(work, options)
    return runner, {"where": getattr(runner, "where", getattr(runner, "name", type(runner).__name__)),
                    "why": "chosen by the caller (--local / --spark-master / --spark-remote, or runner=)"}


class LazySparkRunner:
    """Starts (or connects to) Spark only when a task batch actually needs executors. A remote master or Connect
    server is probed first, and start-up is bounded by `start_timeout_s`: unreachable Spark is a clear
    UnreachableError naming it (`what`: the caller's flag), never a hang or a JVM stack trace."""

    name = "spark"

    def __init__(self, master: str | None = None, remote: str | None = None, spark: Any = None,
                 connect_timeout_s: float | None = None, start_timeout_s: float | None = None,
                 what: str = ""):
        self.master = master or "local[*]"
        self.remote = remote
        self._spark = spark
        self._runner: SparkRunner | None = None
        self.connect_timeout_s = DEFAULT_CONNECT_TIMEOUT_S if connect_timeout_s is None else connect_timeout_s
        self.start_timeout_s = DEFAULT_START_TIMEOUT_S if start_timeout_s is None else start_timeout_s
        self.what = what

    @property
    def where(self) -> str:
        return f"Spark {self.remote or self.master}"

    def probe(self) -> None:
        """Fail fast (within the connect timeout) if the configured master / Connect server does not answer — or,
        first, if PySpark is not installed (one line naming the extra)."""
        require_module("pyspark", "spark",
                       self.what or ("--spark-remote" if self.remote else f"Spark (master {self.master})"))
        if not self.remote:
            check_master_url(self.master, self.what or "--spark-master")
        elif not self.remote.startswith("sc://"):
            raise PaimonOpsError(f"{self.what or '--spark-remote'} {self.remote!r} is not a Spark Connect URL "
                                 "(sc://host:port)")
        check_spark_reachable(self.remote or self.master, self.connect_timeout_s, self.what)

    @property
    def spark(self) -> Any:
        if self._spark is None:
            url = self.remote or self.master
            self.probe()
            remote = self.remote
            if remote:
                def start() -> Any:
                    s = connect_spark(remote)
                    s.version  # noqa: B018 - one round trip: the server really is a Connect server
                    return s
                limit = self.connect_timeout_s * 3
            else:
                def start() -> Any:
                    return local_spark(self.master)
                # a local JVM start is no network wait; a cluster must register us within the limit
                limit = self.start_timeout_s if self.master.startswith("local") else \
                    max(self.connect_timeout_s * 3, 20.0)
            kind = "Spark Connect server" if self.remote else "Spark master"
            self._spark = _within(limit, start, url, f"{kind}{' (' + self.what + ')' if self.what else ''}")
        return self._spark

    def run(self, function: str, table_location: str, tasks: Sequence[dict], progress: Progress | None = None,
            options: dict[str, str] | None = None) -> list[dict]:
        return self._started().run(function, table_location, tasks, progress, options)

    def _started(self) -> SparkRunner:
        if self._runner is None:
            self._runner = SparkRunner(self.spark)
        return self._runner

    def frame(self, function: str, table_location: str, tasks: Sequence[dict], schema: str,
              options: dict[str, str] | None = None) -> Any:
        return self._started().frame(function, table_location, tasks, schema, options)

    def stream(self, function: str, table_location: str, tasks: Sequence[dict], schema: str,
               options: dict[str, str] | None = None, wave: int | None = None) -> Iterator[tuple[int, Any]]:
        return self._started().stream(function, table_location, tasks, schema, options, wave)

    @property
    def started(self) -> bool:
        return self._spark is not None


# ---------------------------------------------------------------------------------------------- planning
# The runner the caller gave for the operation being planned (the CLI's --local / --spark-master / default): planners
# that can read manifests on Spark (expiry, orphan removal) place their reading by it, as execution places the rest.
_PLANNING_RUNNER: contextvars.ContextVar[Any] = contextvars.ContextVar("paimon_ops_planning_runner", default=None)


@contextlib.contextmanager
def planning_on(runner: Any) -> Iterator[None]:
    token = _PLANNING_RUNNER.set(runner)
    try:
        yield
    finally:
        _PLANNING_RUNNER.reset(token)


def planning_runner() -> Any:
    return _PLANNING_RUNNER.get()


def spark_placed(runner: Any, work: Workload, options: Any = None) -> tuple[Any, dict[str, str]]:
    """(a runner with `frame` when `work` goes to Spark, else None; {where, why}) — the same decision execution
    makes (`place`), for planners that read manifests. No runner given: the default AutoRunner decides."""
    if runner is None:
        runner = planning_runner()
    chosen, info = place(runner, work, options)
    return (chosen if getattr(chosen, "name", "") == "spark" else None), info
