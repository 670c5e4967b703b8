"""The tags asset of a table with automatic tags: daily partitions in the table's tag zone (each partition is the
tag of that day), or unpartitioned for other periods (materialising creates every due tag). In the table's pool.

Daily tags are created on time by declarative automation: at `tag.create-time` in the tag zone (Dagster's cron,
DST-correct) the latest day is requested — no schedule or job per table. Tags that exist in the table without a
run (Java / Flink, or before this code location) are reported as materialised by the observation sensor.
"""
# No `from __future__ import annotations`: Dagster reads the resource types from the annotations.
import datetime
from typing import Optional

from dagster import (
    AssetExecutionContext,
    AssetsDefinition,
    AutomationCondition,
    DailyPartitionsDefinition,
    MaterializeResult,
    MetadataValue,
    multi_asset,
)

from paimon_ops.dagster import checks as checks_mod
from paimon_ops.dagster.instance import POOL_WARNING, pool_unlimited
from paimon_ops.dagster.metadata import report_metadata
from paimon_ops.dagster.operations import now_millis
from paimon_ops.dagster.resources import PaimonWarehouse
from paimon_ops.dagster.spec import TableSpec
from paimon_ops.dagster.table_asset import call_engine
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
    cron, zone = spec.tag_timing.cron, spec.tag_timing.zone
    return AutomationCondition.on_cron(cron, zone).without(
        AutomationCondition.all_deps_updated_since_cron(cron, zone)).with_label(
        f"at {spec.tag_timing.hh_mm} {zone}, tag the day that ended")


def build_tags_asset(spec: TableSpec, translator: PaimonTranslator, automation: bool = True) -> AssetsDefinition:
    tags_spec = translator.get_tags_asset_spec(spec)
    key = tags_spec.key
    pool = translator.get_pool(spec)
    ident = spec.identifier

    if automation:
        tags_spec = tags_spec.replace_attributes(automation_condition=tag_automation(spec))

    @multi_asset(specs=[tags_spec], name=f"{translator.get_op_name(spec)}__tags", pool=pool, can_subset=True,
                 partitions_def=tags_partitions(spec), description=tags_spec.description,
                 check_specs=checks_mod.check_specs(spec, key, checks_mod.tags_check_names(spec)),
                 op_tags=dict(tags_spec.tags))
    def _tags(context: AssetExecutionContext, paimon: PaimonWarehouse):
        if key in context.selected_asset_keys:
            if pool_unlimited(context.instance, pool):
                context.log.warning(POOL_WARNING.format(pool=pool, table=ident))
            yield _create(context, spec, paimon)
        if context.selected_asset_check_keys:
            for outcome in checks_mod.evaluate(spec, lambda: paimon.get_table(ident), checks_mod.tags_check_names(spec),
                                               now_millis()):
                yield outcome.result(key)

    return _tags


def spec_key(context: AssetExecutionContext):
    return next(iter(context.selected_asset_keys))


def _create(context: AssetExecutionContext, spec: TableSpec, paimon: PaimonWarehouse) -> MaterializeResult:
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
        return MaterializeResult(asset_key=spec_key(context), metadata={
            **report_metadata(report), "tag": str(report.details.get("period", day)), "status": status,
            "tagged_snapshot": str(report.details.get("snapshot_id")), "synced_from_table": False})
    # periods that are not days (tag.create-interval > 1 d, hourly ...): every due tag since the last one
    report = call_engine(spec, "automatic tagging", lambda: autotag.create_auto_tags(table, now))
    context.log.info(report.summary())
    return MaterializeResult(asset_key=spec_key(context), metadata={**report_metadata(report),
                                       "created": MetadataValue.json(list(report.details.get("created", [])))})
