"""`build_paimon_definitions`: one set of maintenance assets, checks, jobs, schedules and sensors per table of a
Paimon warehouse, derived from each table's own options (the model: dagster-dbt's definitions built from a dbt
manifest, with a translator users subclass).

A table that cannot be read or whose options are malformed does not break the code location: it gets a
placeholder asset `…/<table>/unavailable` with a failing `loadable` check carrying the error, a warning is
logged, and every other table loads. A warehouse that cannot be listed at all gets one such placeholder.

Concurrency: every maintenance op of a table runs in the pool `translator.get_pool(spec)` (`paimon/<db>.<table>`);
give pools limit 1 in the instance (dagster.yaml `concurrency: pools: default_limit: 1`, or
`dagster instance concurrency set paimon/db.table 1`) so two runs never touch one table at once.
"""
from __future__ import annotations

import logging
from typing import Any, Mapping, Sequence

from dagster import DefaultScheduleStatus, DefaultSensorStatus, Definitions, in_process_executor

from paimon_ops.errors import PaimonOpsError

from assets.checks import build_placeholder_check, build_table_checks
from assets.resources import PaimonWarehouse, spark_resource
from assets.spec import WAREHOUSE_PLACEHOLDER, TableSpec, load_spec
from assets.table_assets import SPARK_KEY, WAREHOUSE_KEY, build_placeholder_asset, build_table_assets
from assets.translator import ORPHAN_CLEANUP, SNAPSHOT_EXPIRY, TAG_EXPIRY, PaimonTranslator

log = logging.getLogger("paimon_ops.dagster")


def load_specs(warehouse: PaimonWarehouse) -> list[TableSpec]:
    """A spec per selected table; broken tables (and an unlistable warehouse) come back with `error` set."""
    try:
        identifiers = warehouse.table_identifiers()
    except (PaimonOpsError, OSError, ValueError) as e:
        log.warning("paimon: warehouse %s cannot be listed: %s", warehouse.uri, e)
        db, _, name = WAREHOUSE_PLACEHOLDER.partition(".")
        return [TableSpec(identifier=WAREHOUSE_PLACEHOLDER, database=db, table=name, location=warehouse.uri,
                          error=f"warehouse {warehouse.uri} cannot be listed: {type(e).__name__}: {e}")]
    specs = []
    for ident in identifiers:
        try:
            specs.append(load_spec(warehouse.get_table(ident)))
        except (PaimonOpsError, OSError, ValueError) as e:
            log.warning("paimon: table %s cannot be maintained until fixed: %s", ident, e)
            db, _, name = ident.partition(".")
            specs.append(TableSpec(identifier=ident, database=db, table=name, error=f"{type(e).__name__}: {e}"))
    return specs


def build_paimon_definitions(
    warehouse: str | PaimonWarehouse,
    translator: PaimonTranslator | None = None,
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    options_override: Mapping[str, str] | None = None,
    spark: Any = None,
    spark_master: str | None = None,
    spark_remote: str | None = None,
    spark_conf: Mapping[str, str] | None = None,
    expiry_cron: str = "0 3 * * *",
    expiry_timezone: str = "UTC",
    sensor_interval_seconds: int = 300,
    automation_running: bool = False,
) -> Definitions:
    """Definitions for every selected table of `warehouse` (a URI, or a configured `PaimonWarehouse`).

    `spark`: the resource under key `pyspark` (default: dagster-pyspark's `LazyPySparkResource` for
    `spark_remote` (`sc://…`) or `spark_master` (default `local[*]`)). Schedules and sensors start stopped unless
    `automation_running`.
    """
    # Local imports: jobs/ and schedules/ import from assets/, so they are resolved at call time.
    from jobs import build_nightly_expiry_job, build_table_jobs, op_name
    from schedules import build_nightly_expiry_schedule, build_tag_schedule
    from schedules.sensors import build_table_sensors

    translator = translator or PaimonTranslator()
    if not isinstance(warehouse, PaimonWarehouse):
        warehouse = PaimonWarehouse(uri=str(warehouse), include=list(include), exclude=list(exclude),
                                    options_override=dict(options_override or {}))
    if spark is None:
        spark = spark_resource(spark_master, spark_remote, spark_conf)
    schedule_status = DefaultScheduleStatus.RUNNING if automation_running else DefaultScheduleStatus.STOPPED
    sensor_status = DefaultSensorStatus.RUNNING if automation_running else DefaultSensorStatus.STOPPED

    assets: list[Any] = []
    checks: list[Any] = []
    jobs: list[Any] = []
    schedules: list[Any] = []
    sensors: list[Any] = []
    nightly_expiry_keys = []
    for spec in load_specs(warehouse):
        if spec.error is None:
            try:
                table_assets = build_table_assets(spec, translator)
                table_checks = build_table_checks(spec, translator)
                prefix = translator.get_name_prefix(spec)
                table_jobs = build_table_jobs(prefix, spec.identifier, table_assets)
                tag_schedule = build_tag_schedule(spec, prefix, table_jobs.nightly, schedule_status)
                table_sensors = build_table_sensors(
                    spec, prefix, table_jobs.compaction, op_name(table_assets["compaction"]), table_jobs.expiry,
                    table_assets[SNAPSHOT_EXPIRY].key, sensor_interval_seconds, sensor_status)
            except Exception as e:  # noqa: BLE001 - e.g. a user translator failing on one table
                log.warning("paimon: building definitions for %s failed: %s", spec.identifier, e)
                spec = TableSpec(identifier=spec.identifier, database=spec.database, table=spec.table,
                                 location=spec.location, error=f"building definitions failed: {type(e).__name__}: {e}")
            else:
                assets += table_assets.values()
                checks += table_checks
                jobs += table_jobs.all()
                sensors += table_sensors
                if tag_schedule is not None:
                    schedules.append(tag_schedule)
                else:
                    nightly_expiry_keys += [table_assets[k].key for k in (SNAPSHOT_EXPIRY, TAG_EXPIRY, ORPHAN_CLEANUP)]
                continue
        assets.append(build_placeholder_asset(spec, translator))
        checks.append(build_placeholder_check(spec, translator))

    expiry_job = build_nightly_expiry_job(nightly_expiry_keys)
    if expiry_job is not None:
        jobs.append(expiry_job)
        schedules.append(build_nightly_expiry_schedule(expiry_job, expiry_cron, expiry_timezone, schedule_status))
    # In-process: one Spark session per run instead of one per step (a process each), and runs of one table
    # are serialised by its pool anyway.
    return Definitions(assets=assets, asset_checks=checks, jobs=jobs, schedules=schedules, sensors=sensors,
                       resources={WAREHOUSE_KEY: warehouse, SPARK_KEY: spark}, executor=in_process_executor)
