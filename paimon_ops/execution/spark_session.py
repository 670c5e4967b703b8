"""The Spark sessions paimon-ops starts itself: the embedded local[*] (or a given master) and Spark Connect, with
our session defaults; start-up bounded in time (`LazySparkRunner`: a Spark runner whose session starts only when a
task batch needs executors, after probing the endpoint).
"""
from __future__ import annotations

import os
import sys
import threading
from typing import Any, Callable, Iterator, Sequence

from paimon_ops.errors import PaimonOpsError, UnreachableError, require_module
from paimon_ops.execution.runner import Progress, SparkRunner
from paimon_ops.execution.spark_probe import DEFAULT_CONNECT_TIMEOUT_S, check_master_url, check_spark_reachable

DEFAULT_START_TIMEOUT_S = 60.0

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
