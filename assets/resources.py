"""Resources of the Paimon code location: the warehouse and Spark.

* `PaimonWarehouse` — where the tables are (`uri`), which of them this code location maintains
  (`include` / `exclude`, fnmatch patterns on `db.table`) and option overrides applied on top of every table's
  own options (`options_override`) or of one table's (`table_options_override`).
* Spark is dagster-pyspark's `LazyPySparkResource` (the session starts only when an op needs it): `spark_resource`
  builds one for the embedded `local[*]` default, any master URL, or a Spark Connect remote (`sc://host:port`).
* `spark_runner(pyspark)` hands the engine a `SparkRunner`; it checks first that the master / Connect server
  answers, so a bad Spark configuration fails the run *before* the engine plans or deletes anything.
"""
from __future__ import annotations

import fnmatch
import logging
from typing import Any, Mapping, Sequence

from dagster import ConfigurableResource, Failure
from dagster_pyspark import LazyPySparkResource
from pydantic import Field

from paimon_ops.errors import PaimonOpsError, UnreachableError
from paimon_ops.runner import LOCAL_SPARK_DEFAULTS, SPARK_DEFAULTS, SparkRunner, check_spark_reachable
from paimon_ops.table.table import Catalog, Table

log = logging.getLogger("paimon_ops.dagster")

DEFAULT_MASTER = "local[*]"


def matches(identifier: str, include: Sequence[str] | None, exclude: Sequence[str] | None) -> bool:
    """fnmatch on `db.table`: included (no include list means all) and not excluded."""
    if include and not any(fnmatch.fnmatchcase(identifier, p) for p in include):
        return False
    return not (exclude and any(fnmatch.fnmatchcase(identifier, p) for p in exclude))


class PaimonWarehouse(ConfigurableResource):
    """A Paimon filesystem warehouse (`<uri>/<db>.db/<table>`): local path, `file://`, `s3://`, `gs://`, `hdfs://`."""

    uri: str = Field(description="Warehouse location, e.g. ./demo-warehouse or s3://bucket/warehouse")
    include: list[str] = Field(default_factory=list,
                               description="fnmatch patterns on 'db.table' to maintain (empty: every table)")
    exclude: list[str] = Field(default_factory=list, description="fnmatch patterns on 'db.table' to leave alone")
    options_override: dict[str, str] = Field(
        default_factory=dict, description="Table options applied on top of every table's own options")
    table_options_override: dict[str, dict[str, str]] = Field(
        default_factory=dict, description="Per table ('db.table') options applied on top of options_override")

    # ------------------------------------------------------------------ engine access (raise PaimonOpsError)
    def catalog(self) -> Catalog:
        return Catalog(self.uri)

    def selected(self, identifier: str) -> bool:
        return matches(identifier, self.include, self.exclude)

    def table_identifiers(self) -> list[str]:
        return [t for t in self.catalog().all_tables() if self.selected(t)]

    def overrides_for(self, identifier: str) -> dict[str, str]:
        return {**self.options_override, **self.table_options_override.get(identifier, {})}

    def get_table(self, identifier: str) -> Table:
        """The table with this code location's option overrides (TableNotFoundError names the known tables)."""
        return self.catalog().get_table(identifier, options_override=self.overrides_for(identifier))

    # ------------------------------------------------------------------ for ops: errors become clear failures
    def open_table(self, identifier: str) -> Table:
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
        except (OSError, ValueError) as e:  # file system / credentials / unknown scheme (pyarrow: ArrowInvalid)
            raise Failure(
                description=f"cannot reach warehouse {self.uri} for table {identifier}: {type(e).__name__}: {e}",
                metadata={"table": identifier, "warehouse": self.uri, "error": str(e)},
                allow_retries=False,
            ) from e


# ---------------------------------------------------------------------------------------------- Spark
def spark_config(master: str | None = None, remote: str | None = None,
                 conf: Mapping[str, str] | None = None) -> dict[str, str]:
    """The `spark_config` of the pyspark resource: a Spark Connect remote wins over a master URL."""
    if remote:
        return {"spark.remote": remote, **(conf or {})}
    master = master or DEFAULT_MASTER
    out = {"spark.master": master, "spark.app.name": "paimon-ops", **SPARK_DEFAULTS}
    if master.startswith("local"):
        out.update(LOCAL_SPARK_DEFAULTS)
    out.update(conf or {})
    return out


def spark_resource(master: str | None = None, remote: str | None = None,
                   conf: Mapping[str, str] | None = None) -> LazyPySparkResource:
    """dagster-pyspark's lazy resource for `local[*]` (default), any master URL or an `sc://` Connect remote."""
    return LazyPySparkResource(spark_config=spark_config(master, remote, conf))


def check_reachable(url: str, timeout_s: float = 3.0) -> None:
    """Raise Failure unless at least one endpoint of a `spark://` / `sc://` / `k8s://` URL accepts a TCP connection."""
    try:
        check_spark_reachable(url, timeout_s)
    except UnreachableError as e:
        raise Failure(
            description=f"{e} Check the pyspark resource's spark_config "
                        "(PAIMON_OPS_SPARK_MASTER / PAIMON_OPS_SPARK_REMOTE).",
            metadata={"spark_url": url, "error": e.detail},
            allow_retries=False,
        ) from None


def spark_session(pyspark: Any) -> Any:
    """The SparkSession of a dagster-pyspark resource (or a bare SparkSession), reachability checked first."""
    conf = dict(getattr(pyspark, "spark_config", None) or {})
    url = conf.get("spark.remote") or conf.get("spark.master") or ""
    if url:
        check_reachable(url)
    try:
        # a dagster-pyspark resource (property on its class), else assume a SparkSession was passed
        session = pyspark.spark_session if isinstance(getattr(type(pyspark), "spark_session", None), property) \
            else pyspark
    except Exception as e:  # noqa: BLE001 - any start-up error: say which Spark, stop before the engine runs
        raise Failure(description=f"could not start Spark session ({url or 'default'}): {type(e).__name__}: {e}",
                      metadata={"spark_url": url, "error": str(e)}, allow_retries=False) from e
    if url and not url.startswith("sc://"):
        try:
            actual = session.sparkContext.master
        except Exception:  # noqa: BLE001 - Spark Connect sessions have no SparkContext
            actual = None
        if actual and actual != url:
            log.warning("asked for Spark master %s but this process already runs a session on %s; using it",
                        url, actual)
    return session


def spark_runner(pyspark: Any) -> SparkRunner:
    """A SparkRunner on the resource's session. Call it before the engine so bad Spark config fails early."""
    return SparkRunner(spark_session(pyspark))
