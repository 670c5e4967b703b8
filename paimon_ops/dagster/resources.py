"""Resources: the warehouse and Spark (both typed `ConfigurableResource`s).

* `PaimonWarehouse` — where the tables are (`uri`, and `catalog_options` for a Hive Metastore, JDBC or REST catalog:
  Paimon's `metastore`, `uri`, `lock.enabled`, … and object-store settings), which of them this code location
  maintains (`include` / `exclude`, fnmatch patterns on `db.table`) and option overrides applied on top of every
  table's own options (`options_override`) or of one table's (`table_options_override`).
* `PaimonSpark` — where heavy work runs: the embedded `local[*]` default, any master URL, or a Spark Connect
  remote (`sc://host:port`). With `placement: auto` (the default) a plan small enough for the run worker runs
  in-process and only larger ones go to Spark, as on the command line; `spark` / `local` force one side. Nothing
  starts until a plan has work: `runner_for(plan, spark, options)` is the one place that decides whether (and
  which) runner a plan gets.
"""
from __future__ import annotations

import fnmatch
import logging
from typing import Any, Literal, Optional, Sequence

from dagster import ConfigurableResource, Failure
from pydantic import Field

from paimon_ops.catalog import Catalog, open_catalog
from paimon_ops.errors import PaimonOpsError, UnreachableError
from paimon_ops.execution.placement import Placed, make_runner, place
from paimon_ops.execution.spark_session import LazySparkRunner, local_spark
from paimon_ops.table.table import FileStoreTable

log = logging.getLogger("paimon_ops.dagster")


def matches(identifier: str, include: Sequence[str] | None, exclude: Sequence[str] | None) -> bool:
    """fnmatch on `db.table`: included (no include list means all) and not excluded."""
    if include and not any(fnmatch.fnmatchcase(identifier, p) for p in include):
        return False
    return not (exclude and any(fnmatch.fnmatchcase(identifier, p) for p in exclude))


class PaimonWarehouse(ConfigurableResource):
    """A Paimon warehouse (`<uri>/<db>.db/<table>`: local path, `file://`, `s3://`, `gs://`, `hdfs://`), or the
    catalog `catalog_options` name (a Hive Metastore, a JDBC database, a REST server)."""

    uri: str = Field(description="Warehouse location, e.g. ./demo-warehouse or s3://bucket/warehouse")
    catalog_options: dict[str, str] = Field(
        default_factory=dict, description="Catalog options (metastore=hive|jdbc|rest, uri, lock.enabled, catalog-key, "
                                          "jdbc.user, token, …) and object-store settings (s3.endpoint, …)")
    include: list[str] = Field(default_factory=list,
                               description="fnmatch patterns on 'db.table' to maintain (empty: every table); "
                                           "'db.table$branch_NAME' patterns select branches")
    exclude: list[str] = Field(default_factory=list, description="fnmatch patterns on 'db.table' to leave alone")
    options_override: dict[str, str] = Field(
        default_factory=dict, description="Table options applied on top of every table's own options")
    table_options_override: dict[str, dict[str, str]] = Field(
        default_factory=dict, description="Per table ('db.table') options applied on top of options_override")

    # ------------------------------------------------------------------ engine access (raise PaimonOpsError)
    def catalog(self) -> Catalog:
        return open_catalog(self.uri, self.catalog_options)

    def selected(self, identifier: str) -> bool:
        return matches(identifier, self.include, self.exclude)

    def table_identifiers(self, catalog: Catalog | None = None) -> list[str]:
        """The tables selected; branches (`db.t$branch_b`) where an include pattern names them (`db.*$branch_wap`,
        `Catalog.matching`)."""
        catalog = catalog or self.catalog()
        found = catalog.all_tables()
        for pattern in self.include:
            if "$" in pattern:
                found += catalog.matching(pattern)
        return [t for t in dict.fromkeys(found) if self.selected(t)]

    def overrides_for(self, identifier: str) -> dict[str, str]:
        return {**self.options_override, **self.table_options_override.get(identifier, {})}

    def get_table(self, identifier: str, catalog: Catalog | None = None) -> FileStoreTable:
        """The table with this code location's option overrides (TableNotFoundError names the known tables)."""
        return (catalog or self.catalog()).get_table(identifier, options_override=self.overrides_for(identifier))

    # ------------------------------------------------------------------ for ops: errors become clear failures
    def open_table(self, identifier: str) -> FileStoreTable:
        try:
            table = self.get_table(identifier)
            table.schema  # noqa: B018 - read it now so a broken schema fails here, not mid-operation
            return table
        except PaimonOpsError as e:
            raise Failure(
                description=f"cannot open Paimon table {identifier} in warehouse {self.uri}: {e}",
                metadata={"table": identifier, "warehouse": self.uri, "error": str(e)},
                allow_retries=False,
            ) from e
        except OSError as e:  # file system / credentials (the engine words everything else: PaimonOpsError)
            raise Failure(
                description=f"cannot reach warehouse {self.uri} for table {identifier}: {type(e).__name__}: {e}",
                metadata={"table": identifier, "warehouse": self.uri, "error": str(e)},
                allow_retries=False,
            ) from e


class PaimonSpark(ConfigurableResource):
    """Where plans with work run: in-process when small enough, else Spark — `local[*]` by default, a master URL, or
    a Spark Connect remote.

    A remote master / Connect server is probed before anything changes, and only when a plan is placed on it; the
    session starts only when a plan's tasks need executors (and never for an empty plan or a dry run)."""

    master: Optional[str] = Field(default=None, description="Spark master URL: local[*] (default), spark://…, yarn, k8s://…")
    remote: Optional[str] = Field(default=None, description="Spark Connect remote, e.g. sc://spark-connect:15002 "
                                                    "(wins over master)")
    conf: dict[str, str] = Field(default_factory=dict, description="Extra Spark conf for sessions paimon-ops starts")
    connect_timeout_s: float = Field(default=10.0,
                                     description="How long a master / Connect server may take to answer")
    placement: Literal["auto", "spark", "local"] = Field(
        default="auto",
        description="auto: in-process within the table's execution.local.max-input-size / execution.local.max-tasks, "
                    "Spark beyond; spark: always Spark; local: always in-process")

    @property
    def url(self) -> str:
        return self.remote or self.master or "local[*]"

    def spark_runner(self) -> LazySparkRunner:
        """A runner that probes the endpoint first and starts (or joins) a session only when tasks run."""
        if self.conf and not self.remote:
            return _ConfiguredSparkRunner(self.master, dict(self.conf), self.connect_timeout_s)
        return LazySparkRunner(master=self.master, remote=self.remote, connect_timeout_s=self.connect_timeout_s,
                               what="PaimonSpark resource")

    def runner(self) -> Any:
        """The runner `placement` asks for (Spark is probed by `runner_for`, when a plan is placed on it)."""
        return make_runner(self.placement, spark=self.spark_runner(), probe=False)


class _ConfiguredSparkRunner(LazySparkRunner):
    """LazySparkRunner whose session gets extra conf (the engine's runner takes a master only)."""

    def __init__(self, master: str | None, conf: dict[str, str], connect_timeout_s: float):
        super().__init__(master=master, connect_timeout_s=connect_timeout_s, what="PaimonSpark resource")
        self.conf = conf

    @property
    def spark(self) -> Any:
        if self._spark is None:
            self.probe()
            self._spark = local_spark(self.master, conf=self.conf)
        return self._spark


def plan_has_work(plan: Any) -> bool:
    """Whether executing `plan` touches files (compaction tasks, deletes, writes)."""
    return bool(getattr(plan, "tasks", ()) or plan.files)


def runner_for(plan: Any, spark: PaimonSpark | None, options: Any = None) -> Any:
    """Where a plan executes, decided once (`Placed`: the run logs it, the executor runs on it) — the one place to
    change when the default runner changes: none for a plan with nothing to do (Spark is not started), else the
    Spark resource's runner (without one, the engine's default) placed by the plan's work (`options`: the table's,
    for the auto thresholds). A plan placed on Spark probes the endpoint first, so an unreachable master fails the
    run before anything is deleted or written."""
    if not plan_has_work(plan):
        return None
    chosen, where = place(spark.runner() if spark is not None else None, plan.workload(), options)
    runner = Placed(chosen, where)
    if not isinstance(chosen, LazySparkRunner):
        return runner
    url = spark.url if spark is not None else chosen.remote or chosen.master or "local[*]"
    try:
        chosen.probe()
    except UnreachableError as e:
        raise Failure(
            description=f"{e} Check the Spark resource (PAIMON_OPS_SPARK_MASTER / PAIMON_OPS_SPARK_REMOTE).",
            metadata={"spark_url": url, "error": e.detail},
            allow_retries=False,
        ) from None
    except PaimonOpsError as e:  # e.g. a malformed master URL
        raise Failure(description=f"Spark resource: {e}", metadata={"spark_url": url},
                      allow_retries=False) from None
    return runner
