"""The table assets: the tables of a warehouse as `AssetSpec`s in a few subsettable multi-assets — one per kind of
table (primary-key, append, fixed-bucket append; and one for tables that could not be loaded), whatever the number
of tables, the way dagster-dbt holds a project's models. Each table is `skippable` (never materialised here —
writers materialise it; we observe it); the tables' checks are the check specs of an op of their own per kind. A run
selects the tables it maintains (sensors and the schedule: one per run); the op does exactly the selected tables.

Per selected table the op holds the table's pool slot (`instance.table_slot`: `paimon/<db>.<table>`, limit 1) and
runs the maintenance operations its run config asks for (the sections the paimon_* jobs fill, `jobs.job_config`).
A run naming none — "Materialize" on the asset page — does what the table needs now: the operations its health
signals make due (`due.needs`: the checks' and sensors' measurements), each with the section its sensor would request
(compaction of the over-threshold buckets, snapshot expiry by the table's own retention options, manifest compaction,
partition expiry), else (nothing due, or `observe_only`) observes it and says why. Per operation it plans first
(metadata only), then — unless a dry run — gets a runner only when the plan has work, and executes. It then records
ONE observation on the table: the table's figures after the run, bytes reclaimed by the run and in total, what was
due and why, per-operation figures and the reports (dry runs: `would_*` keys and the plans).
The table's checks then evaluate the new state (in the checks' op, after this one; in a run of a whole paimon_* job,
which holds no checks, in this op). A run over several tables goes on past a table that fails and fails at the end,
naming each.

The config class of an op is its kind's (`operations.CONFIG_BY_KIND`), built once per op.
"""
# No `from __future__ import annotations`: Dagster reads the op's config and resource types from the annotations.
import logging
from functools import partial
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Sequence

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckKey,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetExecutionContext,
    AssetKey,
    AssetMaterialization,
    AssetObservation,
    AssetsDefinition,
    AssetSpec,
    Failure,
    MetadataValue,
    Out,
    multi_asset,
    op,
)
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus
from pydantic import ValidationError

import paimon_ops as po
import paimon_ops.dagster.checks as checks_mod
import paimon_ops.dagster.due as due
from paimon_ops.api import health_signals
from paimon_ops.dagster.instance import PRIORITY_TAG, table_slot
from paimon_ops.dagster.jobs import JOBS
from paimon_ops.dagster.metadata import (
    md_table,
    plan_markdown,
    plan_metadata,
    report_line,
    report_markdown,
    report_metadata,
)
from paimon_ops.dagster.observe import RECLAIMED_TOTAL, reclaimed_total, reclaimed_totals, table_state
from paimon_ops.dagster.operations import (
    CONFIG_BY_KIND,
    CREATE_TAGS,
    DAGSTER_OPERATIONS,
    EXPIRE_SNAPSHOTS,
    applies,
    now_millis,
    operations_of,
    section_class,
)
from paimon_ops.dagster.operations import (
    plan as plan_operation,
)
from paimon_ops.dagster.progress import RunProgress, placement, plan_event
from paimon_ops.dagster.refs import DEFAULT_NAMES, Names, TableRef
from paimon_ops.dagster.resources import PaimonSpark, PaimonWarehouse, plan_has_work, runner_for
from paimon_ops.dagster.spec import APPEND, APPEND_FIXED, PRIMARY_KEY, TableSpec, partition_key_of
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
    except OSError as e:
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


OP_DESCRIPTIONS = {
    PRIMARY_KEY: "primary-key tables",
    APPEND: "append tables (unaware-bucket)",
    APPEND_FIXED: "fixed-bucket append tables",
    None: "tables that could not be loaded (running one fails with its error)",
}


def build_table_assets(op_name: str, kind: str | None, members: Sequence[tuple[TableRef, AssetSpec]],
                       names: Names = DEFAULT_NAMES) -> tuple[AssetsDefinition, AssetChecksDefinition]:
    """The multi-asset holding the tables `members` (all of `kind`; None: broken tables), and the checks of those
    tables: check specs of an op of their own, `<op>_checks`.

    Why apart: Dagster resolves every job over every output of the ops it holds, and a check spec is an output — 5,000
    tables have 30,000 checks, and 9 jobs over them cost more than everything else together. The paimon_* jobs hold
    the tables' ops only; a run of one selecting tables (what the sensors and the schedule launch) gets their checks
    added by Dagster, and a run of a whole job evaluates them itself (`run_tables`). The checks' op takes no inputs
    (one per table would make Dagster's job building quadratic in the number of checks): in a run of both, it runs
    after the tables' op by its lower priority.

    `names`: the build's resource keys and job names (see `refs.Names`)."""
    refs = {ref.key: ref for ref, _ in members}
    job_names = {names(job): job for job in JOBS}  # this build's job names -> the jobs' own names
    order = {ref.key: i for i, (ref, _) in enumerate(members)}
    cfg_cls = CONFIG_BY_KIND[kind]

    @multi_asset(specs=[s for _, s in members], name=op_name, can_subset=True,
                 description=f"Paimon {OP_DESCRIPTIONS[kind]}: observes and maintains the selected tables, each in "
                             "its own pool (paimon/<db>.<table>).",
                 required_resource_keys={names.warehouse_key, names.spark_key})
    def _tables(context: AssetExecutionContext, config: cfg_cls) -> Iterator[Any]:  # type: ignore[valid-type]
        paimon, spark = names.resources(context)
        yield from run_tables(context, refs, order, job_defaults(context.job_name, job_names, kind, config), paimon,
                              spark, job_names)

    specs = {spec.get_python_identifier(): spec for ref, _ in members
             for spec in checks_mod.check_specs(ref.spec, ref.key, checks_mod.table_check_names(ref.spec))}

    out = Out(dagster_type=None, is_required=False)  # one (immutable) Out for every check: 30,000 cost a second

    @op(name=f"{op_name}_checks", out=dict.fromkeys(specs, out),
        tags={PRIORITY_TAG: "-1"},  # after the tables' op when a run holds both
        description=f"Checks of the Paimon {OP_DESCRIPTIONS[kind]} (read-only, metadata only), each table in its "
                    "pool.", required_resource_keys={names.warehouse_key})
    def _checks(context: AssetCheckExecutionContext) -> Iterator[AssetCheckResult]:
        paimon: PaimonWarehouse = getattr(context.resources, names.warehouse_key)
        by_table: dict[AssetKey, set[str]] = {}
        for ck in context.selected_asset_check_keys:
            by_table.setdefault(ck.asset_key, set()).add(ck.name)

        def one(ref: TableRef) -> Iterator[AssetCheckResult]:
            wanted = [n for n in checks_mod.evaluated_names(ref.spec) if n in by_table[ref.key]]
            for outcome in checks_mod.evaluate(ref.spec, lambda: paimon.get_table(ref.ident), wanted, now_millis()):
                yield outcome.result(ref.key)

        yield from run_each(context, refs, sorted(by_table, key=order.__getitem__), one)

    return _tables, AssetChecksDefinition.create(keys_by_input_name={}, node_def=_checks,
                                                 check_specs_by_output_name=specs, can_subset=True)


def selected_tables(context: AssetExecutionContext, refs: Mapping[Any, TableRef], order: Mapping[Any, int]
                    ) -> tuple[list[Any], set[Any], dict[Any, set[str]]]:
    """(the tables the run touches, in definition order; those whose asset it selected; the names of the checks it
    selected, by asset)."""
    assets = {k for k in context.selected_asset_keys if k in refs}
    checks: dict[Any, set[str]] = {}
    for ck in context.selected_asset_check_keys:
        if ck.asset_key in refs:
            checks.setdefault(ck.asset_key, set()).add(ck.name)
    return sorted(assets | set(checks), key=order.__getitem__), assets, checks


def run_each(context: Any, refs: Mapping[AssetKey, TableRef], keys: Sequence[AssetKey],
             body: Callable[[TableRef], Optional[Iterable[Any]]],
             on_failure: Optional[Callable[[TableRef, Failure], None]] = None) -> Iterator[Any]:
    """`body` for each table in its pool slot. One table: its failure is the run's. Several: a failing table does not
    stop the others. Without `on_failure` (assets a run materialises: a failed run leaves exactly the assets it did
    not materialise failed) the run fails at the end naming each. With it (the table assets, which maintenance
    observes and never materialises, so a failed run would mark every table it selected failed) `on_failure` records
    the failure on the table's own asset, and the run ends without failing, naming the failed tables in its log and
    its tags (`paimon/failed_tables`, `paimon/failed_count`)."""
    failures: list[tuple[str, str]] = []
    for key in keys:
        ref = refs[key]
        with table_slot(context, ref.pool, ref.ident):
            try:
                yield from body(ref) or ()
            except Failure as e:
                if len(keys) == 1:
                    raise
                failures.append((ref.ident, e.description or ""))
                context.log.error(f"{ref.ident}: {e.description}")
                if on_failure is not None:
                    on_failure(ref, e)
    if not failures:
        return
    summary = (f"{len(failures)} of {len(keys)} tables failed: " + "; ".join(f"{t}: {d}" for t, d in failures[:10])
               + (f" … (+{len(failures) - 10})" if len(failures) > 10 else ""))
    if on_failure is None:
        raise Failure(description=summary, metadata={"failed_tables": MetadataValue.json([t for t, _ in failures])},
                      allow_retries=False)
    context.log.error(f"{summary}; the other {len(keys) - len(failures)} are done")
    failed = ",".join(t for t, _ in failures)
    try:
        context.instance.add_run_tags(context.run_id, {
            FAILED_TABLES_TAG: failed if len(failed) <= MAX_TAG_LEN else failed[:MAX_TAG_LEN - 1] + "…",
            FAILED_COUNT_TAG: str(len(failures))})
    except Exception as e:  # noqa: BLE001 - the run's log names them in any case
        log.warning("paimon: cannot tag run %s with its failed tables: %s", context.run_id, e)


QUIET_OVER = 10  # tables in a run over which the lines about each table go to the step's output, not the event log
FAILED_TABLES_TAG = "paimon/failed_tables"
FAILED_COUNT_TAG = "paimon/failed_count"
MAX_TAG_LEN = 200


class RunLog:
    """Where the lines about one table go. A run of one table: the run's log, every line an event of the run. A batch
    (many tables in one run): Python's logging — the step's captured output, the run's stdout/stderr — so that a table
    costs one observation in the instance's storage rather than a dozen events (each a write); its observation
    carries its report either way. Events go to the run at once."""

    def __init__(self, context: Any, quiet: bool):
        self.context, self.quiet = context, quiet
        self.log = log if quiet else context.log

    def event(self, event: Any) -> None:
        self.context.log_event(event)


class KnownChecks:
    """What the instance last recorded of a batch's tables — each check's outcome and each table's
    `bytes_reclaimed_total` — fetched once (two queries, not two per table), so that a batch records a check
    evaluation only where it changes what Dagster shows."""

    def __init__(self, instance: Any, refs: Sequence[TableRef]):
        self.passed: dict[AssetCheckKey, bool] = {}
        self.unknown = False
        keys = [AssetCheckKey(r.key, n) for r in refs for n in checks_mod.table_check_names(r.spec)]
        try:
            summaries = instance.event_log_storage.get_asset_check_summary_records(keys)
        except Exception as e:  # noqa: BLE001 - a storage that cannot tell: record every evaluation
            log.warning("paimon: latest check outcomes unavailable (%s); recording every evaluation", e)
            self.unknown = True
            summaries = {}
        for key, summary in summaries.items():
            record = summary.last_completed_check_execution_record if summary is not None else None
            if record is not None:
                self.passed[key] = record.status == AssetCheckExecutionRecordStatus.SUCCEEDED
        self.totals = reclaimed_totals(instance, [r.key for r in refs])

    def changed(self, key: AssetKey, outcome: checks_mod.Outcome) -> bool:
        return self.unknown or self.passed.get(AssetCheckKey(key, outcome.name)) is not outcome.passed

    def was_failed(self, key: AssetKey, name: str) -> bool:
        return self.unknown or self.passed.get(AssetCheckKey(key, name)) is False


def job_defaults(job_name: str, job_names: Mapping[str, str], kind: str | None, config: Any) -> Any:
    """The op's config in a run of a paimon_* job that gave the op none (a run selecting only tables of other ops, or
    a launch without config): the job's operations with their default sections (`paimon_observe`: observe only), as
    the job's run config would set them — the job's config mapping fills only the ops its run config names, since a
    run selecting some tables holds only their ops."""
    job = job_names.get(job_name)
    if job is None or operations_of(config) or config.due_checks or config.observe_only:
        return config
    operations, _ = JOBS[job]
    if not operations:
        return config.model_copy(update={"observe_only": True})
    return config.model_copy(update={n: section_class(DAGSTER_OPERATIONS[n], kind)() for n in operations})


def run_tables(context: AssetExecutionContext, refs: Mapping[AssetKey, TableRef], order: Mapping[AssetKey, int],
               config: Any, paimon: PaimonWarehouse, spark: PaimonSpark, job_names: Iterable[str] = JOBS
               ) -> Iterator[Any]:
    names = operations_of(config)
    keys, _, _ = selected_tables(context, refs, order)
    batch = len(keys) > 1
    quiet = len(keys) > QUIET_OVER
    # The paimon_* jobs hold no checks (see build_table_assets). A run of one selecting tables has their checks
    # added by Dagster (they run in the checks' op, after this one); a run of a whole job has none: it evaluates the
    # table's checks after maintaining it and records the evaluations itself. A batch (the schedule's shards, a
    # sensor's tick: runs selecting many tables, without their checks) records the checks of the signals its work
    # addresses, where the outcome changed — a fleet's night must not be spent writing events.
    in_run = context.op_execution_context.job_def.asset_layer.asset_graph.asset_check_keys
    known = KnownChecks(context.instance, [refs[k] for k in keys]) if batch else None

    def unchecked(ref: TableRef) -> list[str]:
        if context.job_name not in job_names:  # the asset page, a job of your own: the checks it selected, as selected
            return []
        return [n for n in checks_mod.table_check_names(ref.spec)
                if n != checks_mod.MAINTAINED and AssetCheckKey(ref.key, n) not in in_run]

    def failed(ref: TableRef, e: Failure) -> None:
        """A table of a batch failed: its asset shows it (an observation saying what failed, its
        `maintenance_succeeded` check failed); the other tables' results stand."""
        description = e.description or "failed"
        total = known.totals.get(ref.key, 0) if known is not None else 0
        context.log_event(AssetObservation(asset_key=ref.key, description=f"maintenance failed: {description}",
                                           metadata={"failed": True, "error": description,
                                                     "run_tables": MetadataValue.int(len(keys)),
                                                     RECLAIMED_TOTAL: MetadataValue.int(total)}))
        if not ref.spec.broken:
            context.log_event(checks_mod.maintenance_outcome(False, description).evaluation(ref.key))

    yield from run_each(context, refs, keys,
                        lambda ref: run_table(RunLog(context, quiet=quiet), ref, names, config, paimon, spark,
                                              unchecked(ref), known),
                        failed if batch else None)


def run_table(out: RunLog, ref: TableRef, names: list[str], config: Any, paimon: PaimonWarehouse, spark: PaimonSpark,
              record_checks: list[str], known: Optional[KnownChecks] = None) -> None:
    """Maintain one table (`known`: in a batch, what the instance last recorded of it), then record the checks the
    run does not evaluate itself (`record_checks`): a run of one table, all of them and its `maintenance_succeeded`; a
    batch, those of the signals its operations address and `maintenance_succeeded`, each where the outcome
    changed."""
    spec, key = ref.spec, ref.key
    if spec.broken:
        raise Failure(description=f"Paimon table {spec.identifier} could not be loaded when the code location "
                                  f"was built: {spec.error}. Fix it, then reload the code location.",
                      metadata={"table": spec.identifier, "error": spec.error or ""}, allow_retries=False)
    done = _maintain(out, spec, key, ref.tags_key, names, config, paimon, spark, known)
    outcomes: list[checks_mod.Outcome] = []
    if known is not None:
        addressed = {h.check for op, h in health_signals() if op.dagster_key in {d.split(".")[0] for d in done}}
        wanted = [n for n in record_checks if n in addressed]
        if wanted and not config.dry_run:
            outcomes = checks_mod.evaluate(spec, lambda: paimon.get_table(spec.identifier), wanted, now_millis())
        outcomes = [o for o in outcomes if known.changed(key, o)]
        if known.was_failed(key, checks_mod.MAINTAINED):
            outcomes.append(checks_mod.maintenance_outcome(True, f"maintained: {', '.join(done) or 'observed'}"))
    else:
        if record_checks:
            outcomes = checks_mod.evaluate(spec, lambda: paimon.get_table(spec.identifier), record_checks,
                                           now_millis())
        outcomes.append(checks_mod.maintenance_outcome(True, f"maintained: {', '.join(done) or 'observed'}"))
    for outcome in outcomes:
        out.event(outcome.evaluation(key))


def _due_order(name: str) -> tuple[bool, int]:
    """Due work runs in the registry's stage order (partitions expire before anything is compacted), except snapshot
    expiry, last: it then expires by the table's retention the snapshots the run itself committed too, and the table
    holds no more snapshots than its retention allows when the run ends."""
    return name == EXPIRE_SNAPSHOTS, DAGSTER_OPERATIONS[name].stage


def due_work(out: RunLog, spec: TableSpec, raw: Any, names: list[str], config: Any
             ) -> tuple[list[tuple[str, str, Any]], dict[str, Any]]:
    """What a run does on the table: (label, operation, its config section) in run order, and metadata saying why.
    The sections the config gives; none: what the table needs now — each operation its health signals make due,
    with the section its sensor would request (`due.needs`) — only the signals `due_checks` names, when it names any
    (a sensor's batch: the signal it sensed); `observe_only` (or nothing due): nothing."""
    if names:
        return [(name, name, getattr(config, name)) for name in names], {}
    if config.observe_only:
        out.log.info(f"{spec.identifier}: observe only (observe_only is set)")
        return [], {"due": "not assessed (observe_only)"}
    checks = list(getattr(config, "due_checks", None) or []) or None
    found = call_engine(spec, "assessing what is due", lambda: due.needs(spec, raw, now_millis(), checks))
    for need in found:
        out.log.info(("due: " if need.due else "not due: ") + need.figure)
    md: dict[str, Any] = {"health": MetadataValue.md(md_table(
        ["signal", "due", "figure"], [(n.check, "yes" if n.due else "no", n.figure.split(": ", 1)[-1]) for n in found],
        "lll"))} if found else {}
    work: list[tuple[str, str, Any]] = []
    not_run: list[str] = []
    for name in sorted(DAGSTER_OPERATIONS, key=_due_order):  # the engine's run order, snapshot expiry last
        sections = [s for n in found if n.due and n.operation == name for s in n.sections]
        for i, section in enumerate(sections):
            label = name if len(sections) == 1 else f"{name}.{i + 1}"
            try:
                work.append((label, name, section_class(DAGSTER_OPERATIONS[name], spec.kind)(**section)))
            except ValidationError as e:  # e.g. a mode this kind of table is not offered: its job could not run it either
                out.log.warning(f"{spec.identifier}: {label} is due but cannot run here: {e}")
                not_run.append(f"{label}: {str(e).splitlines()[0]}")
    if not any(n.due for n in found):
        out.log.info(f"{spec.identifier}: nothing due; observing it")
        md["due"] = "nothing due"
        return work, md
    md["due"] = ", ".join(f"{n.operation} ({n.check})" for n in found if n.due)
    if not_run:
        md["not_run"] = "; ".join(not_run)
    out.log.info(f"{spec.identifier}: due: {md['due']}; running "
                     + (", ".join(label for label, _, _ in work) or "nothing (see not_run)"))
    return work, md


def _maintain(out: RunLog, spec: TableSpec, key: AssetKey, tags_key: AssetKey | None, names: list[str], config: Any,
              paimon: PaimonWarehouse, spark: PaimonSpark, known: Optional[KnownChecks] = None) -> list[str]:
    """Maintain one table: plan each operation (metadata only), execute it unless a dry run, then record ONE
    observation of the table. Returns the operations it ran (labels)."""
    raw = paimon.open_table(spec.identifier)
    dry = bool(config.dry_run)
    run_md: dict[str, Any] = {}
    sections: list[str] = []
    done: list[str] = []
    reclaimed = deleted = written = written_bytes = 0
    work, due_md = due_work(out, spec, raw, names, config)
    for label, name, section in work:
        op = DAGSTER_OPERATIONS[name]
        if not applies(name, spec, section):
            out.log.info(f"{spec.identifier}: {op.title} does not apply to this table; skipped")
            continue
        table = po.Table(raw)
        plan = call_engine(spec, op.title, partial(plan_operation, name, table, section, now_millis()))
        done.append(label)
        if dry:
            out.log.info(f"dry run of {op.title} on {spec.identifier}:\n{plan.summary()}")
            run_md.update(plan_metadata(plan, prefix=f"{label}/"))
            sections.append(plan_markdown(plan))
            continue
        runner = runner_for(plan, spark, raw.options)
        progress = None
        if plan_has_work(plan):  # the plan before the work, then progress while it runs
            observation, line = plan_event(key, op.title, plan, placement(plan, runner, raw.options))
            out.log.info(line)
            if not out.quiet:  # a batch records the table once, when it is done
                out.event(observation)
            progress = RunProgress(out.log, f"{op.title} on {spec.identifier}", plan)
        else:
            out.log.info(f"{op.title} on {spec.identifier}: nothing to do (planned on snapshot "
                             f"{plan.base_snapshot})")
        report = call_engine(spec, op.title, partial(plan.execute, table=raw, runner=runner, progress=progress))
        out.log.info(report_line(report))
        run_md.update(report_metadata(report, prefix=f"{label}/"))
        sections.append(report_markdown(report))
        if op.reclaims:
            reclaimed += report.total_deleted_bytes
            deleted += report.total_deleted
        written += sum(report.written.values())
        written_bytes += sum(report.written_bytes.values())
        if name == CREATE_TAGS:
            for event in tag_partition_events(spec, tags_key, list(report.details.get("created", [])),
                                              {"created_by": "paimon_nightly", "synced_from_table": False}):
                out.event(event)
        raw = raw.refresh()
    try:
        state = table_state(raw)
    except (PaimonOpsError, OSError) as e:
        state = {"state_error": f"{type(e).__name__}: {e}"}
    # what the run did first (effects, then the report), then the table's figures, then per-operation figures
    md: dict[str, Any] = {"operations": ", ".join(done) or "observe", "dry_run": dry, **due_md}
    previous_total = known.totals.get(key, 0) if known is not None else reclaimed_total(out.context.instance, key)
    if dry:
        for k in ("would_delete", "would_delete_bytes", "would_write", "would_write_bytes"):
            md[k] = MetadataValue.int(sum(int(v.value) for kk, v in run_md.items() if kk.endswith("/" + k)))
    elif done:
        md.update({"files_written": MetadataValue.int(written), "bytes_written": MetadataValue.int(written_bytes),
                   "files_deleted": MetadataValue.int(deleted), "bytes_reclaimed": MetadataValue.int(reclaimed)})
    if sections:
        md["report" if not dry else "plan"] = MetadataValue.md("\n\n---\n\n".join(sections))
    md.update(state)
    md[RECLAIMED_TOTAL] = MetadataValue.int(previous_total + (0 if dry else reclaimed))
    md.update(run_md)
    what = ("dry run of " if dry else "") + (", ".join(done) or "observation") + (
        " (nothing due)" if due_md.get("due") == "nothing due" else "")
    out.event(AssetObservation(asset_key=key, metadata=md, description=f"{what} of {spec.identifier}"))
    return done
