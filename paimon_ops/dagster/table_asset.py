"""The table asset: one `@multi_asset` per table whose single spec is the table (`skippable`: it is never
materialised here — writers materialise it; we observe it) and whose check specs are the table's checks.

Its op, in the table's pool, runs the maintenance operations its run asks for (run tag `paimon/operations`, set by
the paimon_* jobs; none: observe only). Per operation it plans first (metadata only), then — unless a dry run —
gets a runner only when the plan has work, and executes. It then records ONE observation on the table: the
table's figures after the run, bytes reclaimed by the run and in total, per-operation figures and the reports
(dry runs: `would_*` keys and the plans). Finally it evaluates the selected checks on the new state.
"""
# No `from __future__ import annotations`: Dagster reads the op's config and resource types from the annotations.
import logging
from functools import partial
from typing import Any, Callable, Iterator

from dagster import (
    AssetCheckResult,
    AssetExecutionContext,
    AssetKey,
    AssetMaterialization,
    AssetObservation,
    AssetsDefinition,
    Failure,
    MetadataValue,
    multi_asset,
)

import paimon_ops as po
from paimon_ops.dagster import checks as checks_mod
from paimon_ops.dagster.instance import POOL_WARNING, pool_unlimited
from paimon_ops.dagster.metadata import plan_markdown, plan_metadata, report_markdown, report_metadata
from paimon_ops.dagster.observe import RECLAIMED_TOTAL, reclaimed_total, table_state
from paimon_ops.dagster.operations import CREATE_TAGS, OPERATIONS, config_class, now_millis, operations_of
from paimon_ops.dagster.resources import PaimonSpark, PaimonWarehouse, runner_for
from paimon_ops.dagster.spec import TableSpec, partition_key_of
from paimon_ops.dagster.translator import PaimonTranslator
from paimon_ops.errors import PaimonOpsError

log = logging.getLogger("paimon_ops.dagster")


def call_engine(spec: TableSpec, what: str, fn: Callable[[], Any]) -> Any:
    """Engine errors become one clear, non-retried failure naming the table and the operation."""
    try:
        return fn()
    except Failure:
        raise
    except PaimonOpsError as e:
        raise Failure(description=f"{what} of {spec.identifier} failed: {e}",
                      metadata={"table": spec.identifier, "error": f"{type(e).__name__}: {e}"},
                      allow_retries=False) from e
    except (OSError, ValueError) as e:
        raise Failure(description=f"{what} of {spec.identifier} failed: {type(e).__name__}: {e}",
                      metadata={"table": spec.identifier, "error": f"{type(e).__name__}: {e}"},
                      allow_retries=False) from e


def tag_partition_events(spec: TableSpec, tags_key: AssetKey | None, names: list[str],
                         metadata: dict[str, Any]) -> list[AssetMaterialization]:
    """Materialisations of the daily tags partitions that `names` (tag names) stand for."""
    if tags_key is None or not spec.daily_tags:
        return []
    out = []
    for name in names:
        key = partition_key_of(spec, name)
        if key is not None and key >= spec.partitions_start:
            out.append(AssetMaterialization(asset_key=tags_key, partition=key, metadata={"tag": name, **metadata}))
    return out


def build_table_asset(spec: TableSpec, translator: PaimonTranslator, tags_key: AssetKey | None = None
                      ) -> AssetsDefinition:
    asset_spec = translator.get_asset_spec(spec)
    key = asset_spec.key
    cfg_cls = config_class(spec)
    pool = translator.get_pool(spec)

    @multi_asset(specs=[asset_spec], name=translator.get_op_name(spec), pool=pool, can_subset=True,
                 check_specs=checks_mod.check_specs(spec, key, checks_mod.table_check_names(spec)),
                 description=asset_spec.description, op_tags=dict(asset_spec.tags))
    def _table(context: AssetExecutionContext, config: cfg_cls, paimon: PaimonWarehouse,  # type: ignore[valid-type]
               spark: PaimonSpark) -> Iterator[AssetCheckResult]:
        yield from run_table(context, spec, key, tags_key, pool, config, paimon, spark)

    return _table


def run_table(context: AssetExecutionContext, spec: TableSpec, key: AssetKey, tags_key: AssetKey | None, pool: str,
              config: Any, paimon: PaimonWarehouse, spark: PaimonSpark) -> Iterator[AssetCheckResult]:
    try:
        names = operations_of(context.run.tags)
    except PaimonOpsError as e:
        raise Failure(description=str(e), allow_retries=False) from e
    if key in context.selected_asset_keys:
        if pool_unlimited(context.instance, pool):
            context.log.warning(POOL_WARNING.format(pool=pool, table=spec.identifier))
        if spec.broken:
            raise Failure(description=f"Paimon table {spec.identifier} could not be loaded when the code location "
                                      f"was built: {spec.error}. Fix it, then reload the code location.",
                          metadata={"table": spec.identifier, "error": spec.error or ""}, allow_retries=False)
        _maintain(context, spec, key, tags_key, names, config, paimon, spark)
    selected = {k.name for k in context.selected_asset_check_keys if k.asset_key == key}
    if selected:
        wanted = [n for n in checks_mod.table_check_names(spec) if n in selected]
        for outcome in checks_mod.evaluate(spec, lambda: paimon.get_table(spec.identifier), wanted, now_millis()):
            yield outcome.result(key)


def _maintain(context: AssetExecutionContext, spec: TableSpec, key: AssetKey, tags_key: AssetKey | None,
              names: list[str], config: Any, paimon: PaimonWarehouse, spark: PaimonSpark) -> None:
    raw = paimon.open_table(spec.identifier)
    dry = bool(config.dry_run)
    run_md: dict[str, Any] = {}
    sections: list[str] = []
    done: list[str] = []
    reclaimed = deleted = written = written_bytes = 0
    for name in names:
        op = OPERATIONS[name]
        if not op.applies(spec, config):
            context.log.info(f"{spec.identifier}: {op.title} does not apply to this table; skipped")
            continue
        table = po.Table(raw)
        plan = call_engine(spec, op.title, partial(op.plan, table, config, now_millis()))
        done.append(name)
        if dry:
            context.log.info(f"dry run of {op.title} on {spec.identifier}:\n{plan.summary()}")
            run_md.update(plan_metadata(plan, prefix=f"{name}/"))
            sections.append(plan_markdown(plan))
            continue
        runner = runner_for(plan, spark, raw.options)
        report = call_engine(spec, op.title, partial(plan.execute, table=raw, runner=runner))
        context.log.info(report.summary())
        run_md.update(report_metadata(report, prefix=f"{name}/"))
        sections.append(report_markdown(report))
        if op.reclaims:
            reclaimed += report.total_deleted_bytes
            deleted += report.total_deleted
        written += sum(report.written.values())
        written_bytes += sum(report.written_bytes.values())
        if name == CREATE_TAGS:
            for event in tag_partition_events(spec, tags_key, list(report.details.get("created", [])),
                                              {"created_by": "paimon_nightly", "synced_from_table": False}):
                context.log_event(event)
        raw = raw.refresh()
    try:
        state = table_state(raw)
    except (PaimonOpsError, OSError, ValueError) as e:
        state = {"state_error": f"{type(e).__name__}: {e}"}
    md: dict[str, Any] = {**state, "operations": ", ".join(done) or "observe", "dry_run": dry}
    previous_total = reclaimed_total(context.instance, key)
    if dry:
        for k in ("would_delete", "would_delete_bytes", "would_write", "would_write_bytes"):
            md[k] = MetadataValue.int(sum(int(v.value) for kk, v in run_md.items() if kk.endswith("/" + k)))
    elif done:
        md.update({"bytes_reclaimed": MetadataValue.int(reclaimed), "files_deleted": MetadataValue.int(deleted),
                   "files_written": MetadataValue.int(written), "bytes_written": MetadataValue.int(written_bytes)})
    md[RECLAIMED_TOTAL] = MetadataValue.int(previous_total + (0 if dry else reclaimed))
    md.update(run_md)
    if sections:
        md["report" if not dry else "plan"] = MetadataValue.md("\n\n---\n\n".join(sections))
    what = ("dry run of " if dry else "") + (", ".join(done) or "observation")
    context.log_event(AssetObservation(asset_key=key, metadata=md, description=f"{what} of {spec.identifier}"))
