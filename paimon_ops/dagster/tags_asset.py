"""The tags asset of a table with automatic tags: daily partitions in the table's tag zone (each partition is the
tag of that day), or unpartitioned for other periods (materialising creates every due tag). In the table's pool.
The tags assets of all tables are `AssetSpec`s of a few subsettable multi-assets (daily, periodic), each spec with
its own partitions (first day, zone) and automation condition.

Daily tags are created on time by declarative automation: at `tag.create-time` in the tag zone (Dagster's cron,
DST-correct) the latest day is requested — no schedule or job per table. Tags that exist in the table without a
run (Java / Flink, or before this code location) are reported as materialised by the observation sensor.
"""
# No `from __future__ import annotations`: Dagster reads the resource types from the annotations.
import datetime
import functools
from typing import Any, Iterator, Optional, Sequence

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    AssetSpec,
    AutomationCondition,
    DailyPartitionsDefinition,
    MaterializeResult,
    MetadataValue,
    multi_asset,
)

from paimon_ops.dagster import checks as checks_mod
from paimon_ops.dagster.metadata import report_metadata
from paimon_ops.dagster.operations import now_millis
from paimon_ops.dagster.refs import TableRef
from paimon_ops.dagster.resources import PaimonWarehouse
from paimon_ops.dagster.spec import TableSpec
from paimon_ops.dagster.table_asset import call_engine, run_each, selected_tables
from paimon_ops.dagster.translator import PaimonTranslator


def tags_partitions(spec: TableSpec) -> Optional[DailyPartitionsDefinition]:
    """Daily partitions in the table's tag time zone (None for tables whose tag periods are not days)."""
    if not spec.daily_tags:
        return None
    return DailyPartitionsDefinition(start_date=spec.partitions_start, timezone=spec.tag_zone, fmt="%Y-%m-%d")


def tag_automation(spec: TableSpec) -> Optional[AutomationCondition]:
    """At `tag.create-time` (tag zone) request the latest daily partition — the day that just ended — once."""
    if spec.tag_timing is None or not spec.daily_tags:
        return None
    return _on_tag_time(spec.tag_timing.cron, spec.tag_timing.zone, spec.tag_timing.hh_mm)


@functools.lru_cache(maxsize=None)
def _on_tag_time(cron: str, zone: str, hh_mm: str) -> AutomationCondition:
    """One condition object per tag time, shared by the tables that tag at that time."""
    return AutomationCondition.on_cron(cron, zone).without(
        AutomationCondition.all_deps_updated_since_cron(cron, zone)).with_label(
        f"at {hh_mm} {zone}, tag the day that ended")


def tags_asset_spec(spec: TableSpec, translator: PaimonTranslator, automation: bool = True) -> AssetSpec:
    """The translator's spec of the table's tags asset, with its daily partitions and automation condition."""
    tags_spec = translator.get_tags_asset_spec(spec)
    return tags_spec.replace_attributes(partitions_def=tags_partitions(spec),
                                        automation_condition=tag_automation(spec) if automation else None)


def build_tags_assets(op_name: str, members: Sequence[tuple[TableRef, AssetSpec]]) -> AssetsDefinition:
    """One multi-asset holding the tags assets of `members` (each spec with its own daily partitions: a run selects
    one table's tags, or several sharing a partitions definition) and their checks."""
    refs = {ref.tags_key: ref for ref, _ in members if ref.tags_key is not None}
    order = {key: i for i, key in enumerate(refs)}
    check_specs = [c for ref, s in members
                   for c in checks_mod.check_specs(ref.spec, s.key, checks_mod.tags_check_names(ref.spec))]

    @multi_asset(specs=[s for _, s in members], name=op_name, can_subset=True, check_specs=check_specs,
                 allow_arbitrary_check_specs=True,  # ours target our specs; Dagster's check of that is O(n²)
                 description="Tags of Paimon tables: materialising a table's tags asset (a daily partition: the tag "
                             "of that day) creates its due tags, idempotently, in the table's pool.")
    def _tags(context: AssetExecutionContext, paimon: PaimonWarehouse):
        keys, assets, checks = selected_tables(context, refs, order)

        def one(ref: TableRef) -> Iterator[Any]:
            key = ref.tags_key
            assert key is not None  # every member has a tags asset
            if key in assets:
                yield _create(context, ref.spec, key, paimon)
            if checks.get(key):
                wanted = [n for n in checks_mod.tags_check_names(ref.spec) if n in checks[key]]
                for outcome in checks_mod.evaluate(ref.spec, lambda: paimon.get_table(ref.ident), wanted,
                                                   now_millis()):
                    yield outcome.result(key)

        yield from run_each(context, refs, keys, one)

    return _tags


def _create(context: AssetExecutionContext, spec: TableSpec, key: AssetKey, paimon: PaimonWarehouse
            ) -> MaterializeResult:
    from paimon_ops.lifecycle import autotag

    table = paimon.open_table(spec.identifier)
    now = now_millis()
    if context.has_partition_key:  # the tag of that day (its period), idempotently
        day = datetime.date.fromisoformat(context.partition_key)
        report = call_engine(spec, f"tagging day {day}", lambda: autotag.create_tag_for_period(table, day, now))
        status = report.details.get("status", "")
        if status not in ("create", "exists"):
            context.log.warning(f"{spec.identifier} day {day}: {status}: {report.details.get('reason', '')}")
        context.log.info(report.summary())
        return MaterializeResult(asset_key=key, metadata={
            **report_metadata(report), "tag": str(report.details.get("period", day)), "status": status,
            "tagged_snapshot": str(report.details.get("snapshot_id")), "synced_from_table": False})
    # periods that are not days (tag.create-interval > 1 d, hourly ...): every due tag since the last one
    report = call_engine(spec, "automatic tagging", lambda: autotag.create_auto_tags(table, now))
    context.log.info(report.summary())
    return MaterializeResult(asset_key=key, metadata={**report_metadata(report),
                                       "created": MetadataValue.json(list(report.details.get("created", [])))})
