"""Placement: which runner an execution (or a planner reading manifests) uses, and why — in-process for work
this machine does well, Spark beyond the thresholds or when the caller asks for it; the one runner factory of the
CLI, Dagster and Airflow (`make_runner`).
"""
from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from paimon_ops.errors import InvalidArgumentError
from paimon_ops.execution.model import Workload
from paimon_ops.execution.rendering import human_bytes
from paimon_ops.execution.runner import LocalRunner, Progress, Runner, task_weight
from paimon_ops.execution.spark_session import LazySparkRunner
from paimon_ops.options import (
    EXECUTION_LOCAL_MAX_FILES,
    EXECUTION_LOCAL_MAX_INPUT_SIZE,
    EXECUTION_LOCAL_MAX_MANIFESTS,
    EXECUTION_LOCAL_MAX_TASKS,
)


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
