"""The maintenance assets of one table. Each op opens the table through the warehouse resource, gets a Spark runner
first when it will delete or rewrite (so bad Spark config fails before anything changes), calls one engine
operation and turns its Report into metadata. Engine modules are imported when an op runs, so the code location
loads even while an engine module is broken or missing (the run then fails with that message)."""
import datetime
import importlib
import logging
import time
from typing import Any, Callable, Optional

from dagster import (
    AssetExecutionContext,
    AssetsDefinition,
    Config,
    DailyPartitionsDefinition,
    Failure,
    MaterializeResult,
    MetadataValue,
    asset,
)
from pydantic import Field

from paimon_ops.errors import PaimonOpsError
from paimon_ops.options import parse_duration
from paimon_ops.report import Report

from assets.metadata import report_metadata
from assets.resources import spark_runner
from assets.spec import TableSpec
from assets.translator import (
    COMPACTION,
    ORPHAN_CLEANUP,
    SNAPSHOT_EXPIRY,
    TAG_EXPIRY,
    TAGS,
    UNAVAILABLE,
    PaimonTranslator,
)

log = logging.getLogger("paimon_ops.dagster")

WAREHOUSE_KEY = "paimon_warehouse"
SPARK_KEY = "pyspark"
COMPACTION_MODES = ("auto", "minor", "full", "dv-ratio", "sort", "small-files")


def now_millis() -> int:
    """The clock of every op (tests replace it)."""
    return int(time.time() * 1000)


# ---------------------------------------------------------------------------------------------- config
class CompactionConfig(Config):
    mode: str = Field("auto", description="minor | full | dv-ratio | sort | small-files | auto (minor for "
                                          "primary-key tables: what Paimon's own compaction trigger picks, with "
                                          "lookups, deletion vectors and changelog; small-files for append tables)")
    partitions: list[dict[str, str]] = Field(default_factory=list, description="partition specs to compact, "
                                             "e.g. [{'dt': '2024-01-01'}]; empty: every partition")
    buckets: list[int] = Field(default_factory=list, description="only these buckets (of the chosen "
                                                                 "partitions); empty: every bucket")
    where: Optional[str] = Field(None, description="predicate on partition columns, e.g. dt >= '2024-01-01'")
    order_by: list[str] = Field(default_factory=list, description="sort mode: columns to sort by")
    strategy: str = Field("order", description="sort mode: order | zorder | hilbert")
    dry_run: bool = Field(False, description="plan only: report what would be rewritten, change nothing")


class ExpiryConfig(Config):
    dry_run: bool = Field(False, description="plan only: report what would be deleted and why, delete nothing")


class OrphanConfig(Config):
    older_than: Optional[str] = Field(None, description="only files older than this age ('3 d', '36 h'); "
                                                        "default: the engine's (3 days)")
    allow_short: bool = Field(False, description="allow older_than under 1 day (only when no writer can be active)")
    dry_run: bool = Field(False, description="plan only: report what would be deleted and why, delete nothing")


# ---------------------------------------------------------------------------------------------- helpers
def engine(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise Failure(description=f"engine module {module} is not available in this code location: {e}",
                      allow_retries=False) from e


def call_engine(spec: TableSpec, what: str, fn: Callable[[], Report]) -> Report:
    try:
        return fn()
    except Failure:
        raise
    except PaimonOpsError as e:
        raise Failure(description=f"{what} of {spec.identifier} failed: {e}",
                      metadata={"table": spec.identifier, "error": f"{type(e).__name__}: {e}"},
                      allow_retries=False) from e


def runner_for(context: AssetExecutionContext, dry_run: bool) -> Any:
    """Spark runner for real runs (checked before the engine starts); none for dry runs (plans are local)."""
    return None if dry_run else spark_runner(getattr(context.resources, SPARK_KEY))


def result(context: AssetExecutionContext, report: Report, **extra: Any) -> MaterializeResult:
    context.log.info(report.summary())
    return MaterializeResult(metadata=report_metadata(report, **extra))


def _common(spec: TableSpec, translator: PaimonTranslator, kind: str) -> dict[str, Any]:
    return dict(
        key=translator.get_asset_key(spec, kind),
        group_name=translator.get_group_name(spec),
        description=translator.get_description(spec, kind),
        tags=dict(translator.get_tags(spec, kind)),
        metadata=dict(translator.get_metadata(spec, kind)),
        owners=list(translator.get_owners(spec, kind)) or None,
        kinds={"paimon"},
    )


def tags_partitions(spec: TableSpec) -> Optional[DailyPartitionsDefinition]:
    """Daily partitions in the table's tag time zone (None for tables whose tag periods are not days)."""
    if not spec.daily_tags:
        return None
    return DailyPartitionsDefinition(start_date=spec.partitions_start, timezone=spec.tag_zone, fmt="%Y-%m-%d")


# ---------------------------------------------------------------------------------------------- the assets
def build_table_assets(spec: TableSpec, translator: PaimonTranslator) -> dict[str, AssetsDefinition]:
    """kind -> asset for one healthy table (deps: tags → snapshot_expiry → tag_expiry → orphan_cleanup)."""
    pool = translator.get_pool(spec)
    ident = spec.identifier
    keys = {k: translator.get_asset_key(spec, k) for k in (COMPACTION, TAGS, SNAPSHOT_EXPIRY, TAG_EXPIRY,
                                                           ORPHAN_CLEANUP)}

    @asset(**_common(spec, translator, COMPACTION), pool=pool,
           required_resource_keys={WAREHOUSE_KEY, SPARK_KEY})
    def compaction(context: AssetExecutionContext, config: CompactionConfig) -> MaterializeResult:
        if config.mode not in COMPACTION_MODES:
            raise Failure(description=f"unknown compaction mode {config.mode!r} for {ident}; "
                                      f"use one of {', '.join(COMPACTION_MODES)}", allow_retries=False)
        mode = config.mode if config.mode != "auto" else ("minor" if spec.is_primary_key else "small-files")
        runner = runner_for(context, config.dry_run)
        table = getattr(context.resources, WAREHOUSE_KEY).open_table(ident)
        api = engine("paimon_ops.compact.api")
        kwargs: dict[str, Any] = dict(mode=mode, partitions=config.partitions or None, dry_run=config.dry_run,
                                      runner=runner)
        if config.buckets:
            kwargs["buckets"] = list(config.buckets)
        if config.where:
            kwargs["where"] = config.where
        if mode == "sort":
            kwargs.update(order_by=list(config.order_by), strategy=config.strategy)
        report = call_engine(spec, f"{mode} compaction", lambda: api.compact(table, **kwargs))
        return result(context, report, mode=mode,
                      partitions=MetadataValue.json(config.partitions) if config.partitions else "all",
                      buckets=MetadataValue.json(config.buckets) if config.buckets else "all")

    @asset(**_common(spec, translator, TAGS), pool=pool, partitions_def=tags_partitions(spec),
           required_resource_keys={WAREHOUSE_KEY})
    def tags(context: AssetExecutionContext) -> MaterializeResult:
        table = getattr(context.resources, WAREHOUSE_KEY).open_table(ident)
        autotag = engine("paimon_ops.lifecycle.autotag")
        now = now_millis()
        if context.has_partition_key:  # the tag of that day (its period), idempotently
            day = datetime.date.fromisoformat(context.partition_key)
            report = call_engine(spec, f"tagging day {day}", lambda: autotag.create_tag_for_period(table, day, now))
            status = report.details.get("status", "")
            if status not in ("create", "exists"):
                context.log.warning(f"{ident} day {day}: {status}: {report.details.get('reason', '')}")
            return result(context, report, tag=str(report.details.get("period", day)), status=status,
                          tagged_snapshot=str(report.details.get("snapshot_id")))
        # periods that are not days (tag.create-interval > 1 d, hourly ...): every due tag since the last one
        report = call_engine(spec, "automatic tagging", lambda: autotag.create_auto_tags(table, now))
        return result(context, report, created=MetadataValue.json(report.details.get("created", [])))

    @asset(**_common(spec, translator, SNAPSHOT_EXPIRY), pool=pool, deps=[keys[TAGS]],
           required_resource_keys={WAREHOUSE_KEY, SPARK_KEY})
    def snapshot_expiry(context: AssetExecutionContext, config: ExpiryConfig) -> MaterializeResult:
        runner = runner_for(context, config.dry_run)
        table = getattr(context.resources, WAREHOUSE_KEY).open_table(ident)
        expire = engine("paimon_ops.lifecycle.expire")
        report = call_engine(spec, "snapshot expiry", lambda: expire.expire_snapshots(
            table, now_millis=now_millis(), dry_run=config.dry_run, runner=runner))
        return result(context, report)

    @asset(**_common(spec, translator, TAG_EXPIRY), pool=pool, deps=[keys[SNAPSHOT_EXPIRY]],
           required_resource_keys={WAREHOUSE_KEY, SPARK_KEY})
    def tag_expiry(context: AssetExecutionContext, config: ExpiryConfig) -> MaterializeResult:
        runner = runner_for(context, config.dry_run)
        table = getattr(context.resources, WAREHOUSE_KEY).open_table(ident)
        tag_expiry_mod = engine("paimon_ops.lifecycle.tag_expiry")
        report = call_engine(spec, "tag expiry", lambda: tag_expiry_mod.expire_tags(
            table, now_millis=now_millis(), dry_run=config.dry_run, runner=runner))
        return result(context, report)

    @asset(**_common(spec, translator, ORPHAN_CLEANUP), pool=pool, deps=[keys[TAG_EXPIRY]],
           required_resource_keys={WAREHOUSE_KEY, SPARK_KEY})
    def orphan_cleanup(context: AssetExecutionContext, config: OrphanConfig) -> MaterializeResult:
        runner = runner_for(context, config.dry_run)
        table = getattr(context.resources, WAREHOUSE_KEY).open_table(ident)
        orphans = engine("paimon_ops.lifecycle.orphans")
        kwargs: dict[str, Any] = dict(now_millis=now_millis(), allow_short=config.allow_short,
                                      dry_run=config.dry_run, runner=runner)
        if config.older_than:
            try:
                kwargs["older_than"] = parse_duration(config.older_than, "older_than")
            except PaimonOpsError as e:
                raise Failure(description=f"orphan cleanup of {ident}: {e}", allow_retries=False) from e
        report = call_engine(spec, "orphan cleanup", lambda: orphans.remove_orphans(table, **kwargs))
        return result(context, report)

    return {COMPACTION: compaction, TAGS: tags, SNAPSHOT_EXPIRY: snapshot_expiry, TAG_EXPIRY: tag_expiry,
            ORPHAN_CLEANUP: orphan_cleanup}


def build_placeholder_asset(spec: TableSpec, translator: PaimonTranslator) -> AssetsDefinition:
    """A clearly named stand-in for a table that could not be loaded; materialising it fails with the error."""

    @asset(**_common(spec, translator, UNAVAILABLE), required_resource_keys={WAREHOUSE_KEY})
    def unavailable(context: AssetExecutionContext) -> MaterializeResult:
        raise Failure(description=f"Paimon table {spec.identifier} could not be loaded when the code location "
                                  f"was built: {spec.error}. Fix it, then reload the code location.",
                      metadata={"table": spec.identifier, "error": spec.error or ""}, allow_retries=False)

    return unavailable
