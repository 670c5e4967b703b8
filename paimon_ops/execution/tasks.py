"""What runs inside a worker (an in-process task thread or a Spark executor's Python worker). A task is a
JSON-serialisable dict; a task function is a module-level function `fn(table_location: str, task: dict) -> dict`
named by its dotted path, so workers import it themselves and never depend on driver state. Here: calling a task
function by that name (`run_task`: a JSON result, `run_rows`: an Arrow batch of rows), the cancellation a task
checks between batches, and the share of the cores this process's tasks use.
"""
from __future__ import annotations

import importlib
import json
import logging
import os
import threading
import time
from typing import Any, Callable

from paimon_ops.errors import CancelledError
from paimon_ops.table.objectstore import is_store_option, task_store_options

log = logging.getLogger(__name__)


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


def run_cancellable(event: threading.Event, dotted: str, table_location: str, task_json: str,
                    options_json: str) -> str:
    """`run_task` in an in-process task thread (LocalRunner) that `check_cancelled` stops once `event` is set."""
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
