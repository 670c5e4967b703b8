"""`build_paimon_definitions`: the Dagster definitions of a Paimon warehouse, derived from each table's own
metadata and options (the model: dagster-dbt's definitions built from a dbt manifest, with a translator users
subclass).

Per table: the table asset `paimon/<db>/<table>` with its checks, and — for tables with automatic tags — its daily
tags asset `paimon/<db>/<table>/tags`, all as specs: the definitions themselves are constant in number, whatever the
number of tables — one multi-asset per kind of table (`table_asset`), one op of checks per kind, one multi-asset of
daily tags (`tags_asset`), the paimon_* jobs (one per maintenance kind, selecting tables per run, resolved once),
the nightly schedule, the observation / dv-ratio / small-files / snapshot-count / manifest / partition-expiry
sensors, and one sensor creating the daily tags on time. 5,000 tables build and resolve in seconds
(benchmarks/bench_fleet.py).

A table that cannot be read, or whose options are malformed, does not break the code location: its asset is still
defined (same key, so lineage holds), running it fails with the error, and its `metadata_readable` check fails
with it; a warning is logged. A warehouse that cannot be listed gets one such asset, `paimon/_warehouse/_catalog`.
"""
from __future__ import annotations

import functools
import gc
import logging
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, ParamSpec, Sequence, TypeVar

from dagster import (
    AssetSpec,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    Definitions,
    in_process_executor,
)

from paimon_ops.api import health_signals
from paimon_ops.dagster.jobs import JOBS, build_jobs, job_for
from paimon_ops.dagster.refs import DEFAULT_SHARD_SIZE, Member, Names, TableRef, group_by_op
from paimon_ops.dagster.resources import PaimonSpark, PaimonWarehouse
from paimon_ops.dagster.schedules import build_nightly_schedule
from paimon_ops.dagster.sensors import DEFAULT_BUDGET_S, build_sensors
from paimon_ops.dagster.spec import APPEND, APPEND_FIXED, PRIMARY_KEY, TableSpec, load_specs
from paimon_ops.dagster.state import state_specs
from paimon_ops.dagster.table_asset import build_table_assets
from paimon_ops.dagster.tags_asset import build_tag_automation_sensor, build_tags_assets, tags_asset_spec
from paimon_ops.dagster.translator import PaimonTranslator
from paimon_ops.errors import InvalidArgumentError

log = logging.getLogger("paimon_ops.dagster")

FREEZE_OVER_TABLES = 1000


@dataclass
class PaimonDefinitions:
    """The parts `build_paimon_definitions` assembles (the repository's code location imports them by kind)."""

    specs: list[TableSpec]
    refs: list[TableRef]
    assets: list[Any] = field(default_factory=list)
    asset_checks: list[Any] = field(default_factory=list)
    jobs: list[Any] = field(default_factory=list)
    schedules: list[Any] = field(default_factory=list)
    sensors: list[Any] = field(default_factory=list)
    resources: dict[str, Any] = field(default_factory=dict)

    def definitions(self) -> Definitions:
        # In-process: one Spark session per run instead of one per step, and runs of one table are serialised by
        # its pool anyway.
        return Definitions(assets=self.assets, asset_checks=self.asset_checks, jobs=self.jobs,
                           schedules=self.schedules, sensors=self.sensors, resources=self.resources,
                           executor=in_process_executor)


P = ParamSpec("P")
R = TypeVar("R")


def bulk_build(fn: Callable[P, R]) -> Callable[P, R]:
    """Run `fn` without Python's cyclic garbage collector: building thousands of specs grows the heap steadily, and
    the collector re-scans all of it again and again (a fifth of the build's time at 5,000 tables). Reference
    counting still frees everything that is not in a cycle; the collector resumes afterwards."""
    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        enabled = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if enabled:
                gc.enable()
    return wrapper


@bulk_build
def build_paimon_parts(
    warehouse: str | PaimonWarehouse,
    translator: PaimonTranslator | None = None,
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    catalog_options: Mapping[str, str] | None = None,
    options_override: Mapping[str, str] | None = None,
    table_options_override: Mapping[str, Mapping[str, str]] | None = None,
    spark: PaimonSpark | None = None,
    spark_master: str | None = None,
    spark_remote: str | None = None,
    spark_conf: Mapping[str, str] | None = None,
    spark_placement: str = "auto",
    nightly_cron: str = "0 3 * * *",
    nightly_timezone: str = "UTC",
    sensor_interval_seconds: int = 300,
    observation_interval_seconds: int = 60,
    sensor_tick_budget_seconds: float = DEFAULT_BUDGET_S,
    automation_running: bool = False,
    name: str | None = None,
    shard_size: int = DEFAULT_SHARD_SIZE,
    state_path: str | None = None,
) -> PaimonDefinitions:
    """The parts `build_paimon_definitions` assembles — table assets, checks, jobs, sensors, schedules, resources —
    before they become one `Definitions` (`.definitions()`): for code locations that combine them with their own.
    Takes the same arguments."""
    names = Names(name)
    translator = translator or PaimonTranslator(name=name)
    if not isinstance(warehouse, PaimonWarehouse):
        warehouse = PaimonWarehouse(uri=str(warehouse), include=list(include), exclude=list(exclude),
                                    catalog_options=dict(catalog_options or {}),
                                    options_override=dict(options_override or {}),
                                    table_options_override={k: dict(v) for k, v in
                                                            (table_options_override or {}).items()})
    if spark is None:
        if spark_placement not in ("auto", "spark", "local"):
            raise InvalidArgumentError(f"spark_placement must be auto, spark or local, got {spark_placement!r}")
        spark = PaimonSpark(master=spark_master, remote=spark_remote, conf=dict(spark_conf or {}),
                            placement=spark_placement)  # type: ignore[arg-type]  # checked above
    if shard_size < 1:
        raise InvalidArgumentError(f"shard_size must be at least 1, got {shard_size}")
    if state_path is None:
        specs = load_specs(warehouse)
    else:
        specs = state_specs(state_path, warehouse)
    parts = PaimonDefinitions(specs=specs, refs=[],
                              resources={names.warehouse_key: warehouse, names.spark_key: spark})
    tables: list[Member[tuple[TableRef, AssetSpec]]] = []
    tags: list[Member[tuple[TableRef, AssetSpec]]] = []
    for spec in parts.specs:
        try:
            ref, asset_spec, tags_spec, op, tags_op = _translate(spec, translator)
        except Exception as e:  # noqa: BLE001 - e.g. a user translator failing on one table
            log.warning("paimon: building definitions for %s failed: %s", spec.identifier, e)
            spec = TableSpec(identifier=spec.identifier, database=spec.database, table=spec.table,
                             location=spec.location, error=f"building definitions failed: {type(e).__name__}: {e}")
            ref, asset_spec, tags_spec, op, tags_op = _translate(
                spec, PaimonTranslator(name=name) if _broken_translator(translator, spec) else translator)
        parts.refs.append(ref)
        tables.append(Member(names(op), None if spec.broken else spec.kind, (ref, asset_spec)))
        if tags_spec is not None:
            tags.append(Member(names(tags_op), spec.daily_tags, (ref, tags_spec)))
    # a few multi-assets (per kind of table), not one per table: 5,000 tables load in seconds (dagster-io/dagster#16129)
    table_ops = group_by_op(tables, KIND_SUFFIX)
    refs_by_key = {ref.key: ref for ref in parts.refs}
    maintained = []  # the multi-assets of tables that loaded: what the jobs select
    for op_name, (kind, members) in table_ops.items():
        members = [(replace(ref, op_name=op_name), s) for ref, s in members]
        for ref, _ in members:
            refs_by_key[ref.key] = ref
        table_assets, table_checks = build_table_assets(op_name, kind, members, names)  # type: ignore[arg-type]
        parts.assets.append(table_assets)
        parts.asset_checks.append(table_checks)
        if kind is not None:
            maintained.append(table_assets)
    parts.refs = [refs_by_key[ref.key] for ref in parts.refs]
    tags_by_key = {ref.tags_key: refs_by_key[ref.key] for ref in parts.refs if ref.tags_key is not None}
    tags_assets = [build_tags_assets(op_name, [(tags_by_key[s.key], s) for _, s in members], names)
                   for op_name, (_, members) in group_by_op(tags, {True: "daily", False: "periodic"}).items()]
    parts.assets += tags_assets
    healthy = [r for r in parts.refs if not r.spec.broken]
    parts.jobs = build_jobs(maintained, names)
    if healthy:
        sensor_status = DefaultSensorStatus.RUNNING if automation_running else DefaultSensorStatus.STOPPED
        schedule_status = DefaultScheduleStatus.RUNNING if automation_running else DefaultScheduleStatus.STOPPED
        jobs = {op.name: names(job_for(op.dagster_key)) for op, _ in health_signals()}  # what the health sensors request
        parts.sensors = build_sensors(parts.refs, jobs, sensor_interval_seconds, observation_interval_seconds,
                                      sensor_status, sensor_tick_budget_seconds, names, shard_size)
        nightly = build_nightly_schedule(parts.refs, nightly_cron, nightly_timezone, schedule_status, names,
                                         shard_size)
        if nightly is not None:
            parts.schedules.append(nightly)
    tag_sensor = build_tag_automation_sensor(
        parts.refs, DefaultSensorStatus.RUNNING if automation_running else DefaultSensorStatus.STOPPED, names=names,
        shard_size=shard_size)
    if tag_sensor is not None:
        parts.sensors.append(tag_sensor)
    if len(parts.refs) >= FREEZE_OVER_TABLES:
        # A fleet's definitions live as long as the process: keep the collector from re-scanning them again and
        # again while Dagster resolves the jobs over them (a second at 5,000 tables). Garbage first, so that none is
        # kept for good.
        gc.collect()
        gc.freeze()
    return parts


KIND_SUFFIX: dict[Any, str] = {PRIMARY_KEY: "primary_key", APPEND: "append", APPEND_FIXED: "fixed_bucket_append",
                               None: "unloadable"}


def _translate(spec: TableSpec, translator: PaimonTranslator
               ) -> tuple[TableRef, AssetSpec, AssetSpec | None, str, str]:
    """What the definitions hold of one table: its ref (op name filled in once the ops are grouped), its asset spec,
    its tags asset spec (tables with automatic tags) and the ops the translator puts them in."""
    asset_spec = translator.get_asset_spec(spec)
    tags_spec = tags_asset_spec(spec, translator) if spec.has_expected_tags and not spec.broken else None
    ref = TableRef(spec=spec, key=asset_spec.key, op_name="", tags_key=tags_spec.key if tags_spec else None,
                   tags=dict(translator.get_tags(spec)), pool=translator.get_pool(spec),
                   shard=translator.get_shard(spec))
    return (ref, asset_spec, tags_spec, translator.get_op_name(spec),
            translator.get_tags_op_name(spec) if tags_spec is not None else "")


def _broken_translator(translator: PaimonTranslator, spec: TableSpec) -> bool:
    try:
        translator.get_asset_spec(spec)
        translator.get_tags(spec)
        return False
    except Exception:  # noqa: BLE001
        return True


def build_paimon_definitions(warehouse: str | PaimonWarehouse, translator: PaimonTranslator | None = None,
                             **kwargs: Any) -> Definitions:
    """Definitions for every selected table of `warehouse` (a URI, or a configured `PaimonWarehouse`).

    Keyword arguments: `include` / `exclude` (fnmatch on db.table), `catalog_options` (a Hive / JDBC / REST
    catalog: metastore, uri, …), `options_override`, `table_options_override`,
    `spark` (a `PaimonSpark`) or `spark_master` / `spark_remote` / `spark_conf` / `spark_placement` (auto: in-process
    within the tables' execution.local.* thresholds, Spark beyond; spark; local), `nightly_cron` /
    `nightly_timezone`, `shard_size` (tables per run of the nightly schedule and of a sensor's tick, per shard: the
    translator's `get_shard`, the database by default), `state_path` (build from the warehouse description written
    there by `paimon_ops.dagster.state` — no storage read at load — instead of reading every table's metadata),
    `sensor_interval_seconds`, `observation_interval_seconds`, `sensor_tick_budget_seconds`
    (time a sensor tick spends measuring tables before leaving the rest to the next tick), `automation_running` (start
    sensors, the nightly schedule and the daily tag automation; default stopped), `name` (several warehouses in one
    code location: each build but one named, so resource keys, ops, jobs, sensors and schedules do not clash —
    `paimon_<name>`, `paimon_<name>_compaction` …; the default translator puts the name in the asset keys too,
    `paimon/<name>/<db>/<table>`)."""
    return build_paimon_parts(warehouse, translator, **kwargs).definitions()


__all__ = ["build_paimon_definitions", "build_paimon_parts", "load_specs", "PaimonDefinitions", "JOBS"]
