"""Operators: one per maintenance operation, generated from the operation table (`operations.OPERATIONS`, the facade's
own parameters), and `PaimonApplyPlanOperator`, which executes a reviewed plan.

Every operation operator takes `table` (`db.table`, templated), `conn_id` (a `paimon` connection), `dry_run`, and
the operation's own keyword arguments exactly as the facade names them (`PaimonExpireSnapshotsOperator(
retain_min=5, min_age="1 d")`; ages as Paimon durations or timedeltas, instants as ISO 8601 with an offset or epoch
ms). It plans, pushes the plan to XCom (`key="plan"`, the plan's JSON), and then

* `dry_run=True`: logs the plan — every file with its kind and the reason — and returns the dry-run report; nothing
  changes, no runner starts;
* otherwise: executes the plan on the connection's placement (in-process or Spark), logs the report's summary and
  returns the report as JSON (the CLI's `--json`); when the table changed, each `Asset` outlet gets an event with
  the report's figures as extra (no change, no event).

Pools: an operator whose table is known when the DAG is parsed runs in the table's pool (`paimon.<db>.<table>`,
`names.table_pool`) unless given another; with one slot, two DAGs never maintain one table at once. Airflow gives all
instances of a mapped task the pool of `.partial()`, so mapped operators share the pool given there.

Errors of the engine (bad argument, stale plan, unreachable store) fail the task at once with one line and no retry.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.sdk import Asset, BaseOperator
from airflow.sdk.exceptions import AirflowFailException

from paimon_ops.airflow.assets import paimon_table_asset
from paimon_ops.airflow.hooks import DEFAULT_CONN_ID, PaimonHook
from paimon_ops.airflow.names import operator_class_name, table_pool
from paimon_ops.airflow.operations import OPERATIONS, Operation, jsonable
from paimon_ops.api import load_plan
from paimon_ops.errors import PaimonOpsError
from paimon_ops.lifecycle.schedule import tag_schedule
from paimon_ops.options import PARTITION_EXPIRATION_TIME
from paimon_ops.table.table import full_name

PLAN_XCOM_KEY = "plan"


def one_line(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__


def _is_template(value: Any) -> bool:
    return not isinstance(value, str) or "{{" in value or "{%" in value


def _truthy(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no", "", "none"):
        return False
    raise AirflowFailException(f"{name}={value!r}: expected true or false")


def changed(report: Any) -> bool:
    """Whether an execution changed the table (a commit, files deleted or written, tags moved)."""
    return not report.dry_run and bool(report.snapshot_id is not None or report.total_deleted or report.written)


def asset_extra(report: Any) -> dict[str, Any]:
    """The report's figures for an asset event (without the file list)."""
    d = report.to_dict()
    keep = ("operation", "table", "snapshot_id", "duration_s", "deleted", "deleted_bytes", "written", "written_bytes",
            "total_deleted", "total_deleted_bytes", "runner", "deleted_as")
    return {k: d[k] for k in keep if d.get(k) is not None}


class _PaimonBase(BaseOperator):
    ui_color = "#e3f1fb"

    def __init__(self, *, table: str, conn_id: str = DEFAULT_CONN_ID, pool: str | None = None, **kwargs: Any) -> None:
        if pool is None and not _is_template(table):
            pool = table_pool(table)
        super().__init__(pool=pool, **kwargs)
        self.table = table
        self.conn_id = conn_id

    def on_kill(self) -> None:
        """A killed task (marked failed or cleared in the UI, a stopping worker): Airflow's task runner calls this
        from its SIGTERM handler. The operation is interrupted as the CLI's SIGTERM interrupts it — what it wrote and
        did not commit is removed, a catalog lock it holds or waits for is released, nothing is committed — instead of
        running on until the supervisor's SIGKILL, which would leave a metastore lock behind until it times out."""
        if threading.current_thread() is threading.main_thread():
            raise KeyboardInterrupt(f"Airflow task {self.task_id} was killed")

    def _execute(self, hook: PaimonHook, plan: Any, table: Any, context: Any) -> dict[str, Any]:
        runner = hook.runner_for(plan)
        report = plan.execute(table=table.raw, runner=runner)
        self.log.info("%s", report.summary())
        if changed(report):
            extra = asset_extra(report)
            outlets: list[Any] = list(self.outlets)
            for outlet in outlets:
                if isinstance(outlet, Asset):
                    context["outlet_events"][outlet].extra = extra
        else:
            self._no_asset_event("nothing changed")
        return report.to_dict()

    def _no_asset_event(self, why: str) -> None:
        """Asset outlets of a task that changed nothing get no event (Airflow records one per outlet on success)."""
        outlets: list[Any] = list(self.outlets)  # type: ignore[has-type]
        kept = [o for o in outlets if not isinstance(o, Asset)]
        if len(kept) != len(outlets):
            self.log.info("%s: no asset event", why)
            self.outlets = kept  # type: ignore[has-type]  # the runtime copy of the task, as the success message reports it


class PaimonOperationOperator(_PaimonBase):
    """Runs one maintenance operation (`operation`) on one table. See the module docstring."""

    operation: ClassVar[str] = ""
    template_fields = ("table", "conn_id", "dry_run", "arguments")
    template_fields_renderers = {"arguments": "json"}

    def __init__(self, *, table: str, conn_id: str = DEFAULT_CONN_ID, dry_run: bool | str = False, **kwargs: Any):
        op = OPERATIONS[self.operation]
        names = {p.name for p in op.parameters}
        self.arguments = {k: kwargs.pop(k) for k in list(kwargs) if k in names}
        missing = [p.name for p in op.parameters if p.required and self.arguments.get(p.name) is None]
        if missing:
            raise TypeError(f"{type(self).__name__} needs {', '.join(missing)}")
        super().__init__(table=table, conn_id=conn_id, **kwargs)
        self.dry_run = dry_run

    def execute(self, context: Any) -> dict[str, Any]:
        dry_run = _truthy(self.dry_run, "dry_run")
        hook = PaimonHook(self.conn_id)
        try:
            table = hook.get_table(self.table)
            plan = OPERATIONS[self.operation].plan(table, self.arguments)
        except PaimonOpsError as e:
            raise AirflowFailException(one_line(e)) from None
        context["ti"].xcom_push(key=PLAN_XCOM_KEY, value=plan.to_json())
        if dry_run:
            self.log.info("dry run, nothing changed; apply the plan (XCom %r) with PaimonApplyPlanOperator:\n%s",
                          PLAN_XCOM_KEY, plan.summary())
            self._no_asset_event("dry run")
            return plan.dry_run_report().to_dict()
        try:
            return self._execute(hook, plan, table, context)
        except PaimonOpsError as e:
            raise AirflowFailException(one_line(e)) from None


class PaimonApplyPlanOperator(_PaimonBase):
    """Executes a plan made earlier (by an operator's dry run, `paimon-ops … --dry-run --json` or
    `plan.to_json()`): `plan` is its JSON text or a file path, typically
    `"{{ ti.xcom_pull(task_ids='review', key='plan') }}"` or `review.output["plan"]`. The plan is checked against the
    table first: if anything changed since it was made (a commit, a tag, a rollback) it is refused (StalePlanError)
    and nothing changes. `table` must be the plan's table (it also names the pool)."""

    template_fields = ("plan", "table", "conn_id")
    ui_color = "#fbe9e3"

    def __init__(self, *, plan: Any, table: str, conn_id: str = DEFAULT_CONN_ID, **kwargs: Any) -> None:
        super().__init__(table=table, conn_id=conn_id, **kwargs)
        self.plan = plan

    def execute(self, context: Any) -> dict[str, Any]:
        text = self.plan
        if not isinstance(text, str) or not text.strip() or text.strip() == "None":
            raise AirflowFailException(f"no plan to apply (plan={str(text)[:80]!r}): did the reviewed task push one?")
        hook = PaimonHook(self.conn_id)
        try:
            plan = load_plan(text)
            if self.table not in (plan.table, full_name(plan.table, plan.branch)):
                raise AirflowFailException(f"the plan is for {full_name(plan.table, plan.branch)}, this task applies "
                                           f"plans to {self.table}")
            self.log.info("applying the reviewed plan:\n%s", plan.summary())
            table = hook.get_table(plan.table, branch=plan.branch)
            return self._execute(hook, plan, table, context)
        except PaimonOpsError as e:
            raise AirflowFailException(one_line(e)) from None


NIGHTLY_STEPS = ("create_auto_tags", "expire_partitions", "expire_snapshots", "expire_tags", "remove_orphans")
TABLE_ASSETS_ALIAS = "paimon-tables-{conn_id}"  # the alias a shard task's per-table asset events go through


def table_assets_alias(conn_id: str = DEFAULT_CONN_ID) -> Any:
    """The asset alias (`paimon-tables-<conn_id>`) through which a shard task records an asset event per table."""
    from airflow.sdk import AssetAlias
    return AssetAlias(TABLE_ASSETS_ALIAS.format(conn_id=conn_id))


def _step_applies(step: str, raw: Any) -> bool:
    """Whether a nightly step applies to the table (its own options decide, as the single-table DAG's lists do)."""
    if step == "create_auto_tags":
        return tag_schedule(raw) is not None
    if step == "expire_partitions":
        return bool(raw.schema.partition_keys) and bool(raw.options.text(PARTITION_EXPIRATION_TIME))
    return True


class PaimonMaintainTablesOperator(BaseOperator):
    """Maintains a shard of tables in one task: for each table in turn, each of `steps` that applies to it (by
    default the nightly chain: the due automatic tags, partition expiry, snapshot expiry, tag expiry, orphan removal —
    each with the table's own options), planned, checked against the live table at the moment of acting and
    journalled, as the single-table operators do. Map it over shards (`.expand(tables=…)`, see
    `example_paimon_nightly`) rather than tables × steps: one task process per shard, not one per table and step.

    Per-table results: the return value (XCom) is `{"tables": [{"table", "status": done | failed, "steps": {step:
    figures}, "error"}], "done": n, "failed": [names]}`, also pushed as XCom `tables` before the task ends either
    way; each table the task changed gets an asset event of its own (`paimon://<conn_id>/<db>.<table>`, through the
    asset alias `paimon-tables-<conn_id>`, with its figures as extra). A table that fails is recorded as failed and
    the others go on; the task then fails naming the failed tables (its per-table XCom tells the rest: Airflow
    records a task's asset events only when it succeeds)."""

    template_fields = ("tables", "conn_id", "dry_run")
    ui_color = "#e3f1fb"

    @classmethod
    def partial(cls, **kwargs: Any) -> Any:
        """As `BaseOperator.partial`, with the per-table asset alias as default outlet: a mapped task's outlets are
        those of its `.partial()` — what Airflow records asset events against — never a default `__init__` sets."""
        kwargs.setdefault("outlets", [table_assets_alias(kwargs.get("conn_id", DEFAULT_CONN_ID))])
        return super().partial(**kwargs)

    def __init__(self, *, tables: Any, conn_id: str = DEFAULT_CONN_ID, steps: tuple[str, ...] | list[str] = NIGHTLY_STEPS,
                 dry_run: bool | str = False, **kwargs: Any) -> None:
        unknown = [s for s in steps if s not in OPERATIONS]
        if unknown:
            raise TypeError(f"{type(self).__name__}: unknown steps {unknown}; steps are operations: "
                            + ", ".join(OPERATIONS))
        kwargs.setdefault("outlets", [table_assets_alias(conn_id)])
        super().__init__(**kwargs)
        self.tables = tables
        self.conn_id = conn_id
        self.steps = tuple(steps)
        self.dry_run = dry_run

    def execute(self, context: Any) -> dict[str, Any]:
        from airflow.sdk import AssetAlias

        dry_run = _truthy(self.dry_run, "dry_run")
        tables = [self.tables] if isinstance(self.tables, str) else list(self.tables or [])
        hook = PaimonHook(self.conn_id)
        alias = next((o for o in self.outlets if isinstance(o, AssetAlias)), None)
        results: list[dict[str, Any]] = []
        for ident in tables:
            entry: dict[str, Any] = {"table": ident, "status": "done", "steps": {}}
            try:
                table = hook.get_table(ident)
                changed_any = False
                totals = {"deleted": 0, "deleted_bytes": 0, "written": 0}
                for step in self.steps:
                    if not _step_applies(step, table.raw):
                        continue
                    plan = OPERATIONS[step].plan(table, {})
                    if dry_run:
                        report = plan.dry_run_report()
                    else:
                        report = plan.execute(table=table.raw, runner=hook.runner_for(plan))
                        table = hook.get_table(ident)
                    entry["steps"][step] = {k: v for k, v in asset_extra(report).items() if k not in ("table",)}
                    if changed(report):
                        changed_any = True
                        totals["deleted"] += int(report.total_deleted)
                        totals["deleted_bytes"] += int(report.total_deleted_bytes)
                        totals["written"] += sum(report.written.values())
                self.log.info("%s: %s", ident, ", ".join(f"{s} {_figures(f)}" for s, f in entry["steps"].items())
                              or "nothing applies")
                if changed_any and alias is not None:
                    context["outlet_events"][alias].add(paimon_table_asset(ident, self.conn_id),
                                                        extra={"table": ident, **totals,
                                                               "steps": sorted(entry["steps"])})
            except (PaimonOpsError, OSError) as e:
                entry.update(status="failed", error=one_line(e))
                self.log.error("%s: failed: %s", ident, entry["error"])
            results.append(entry)
        failed = [r["table"] for r in results if r["status"] == "failed"]
        out = {"tables": results, "done": len(results) - len(failed), "failed": failed}
        context["ti"].xcom_push(key="tables", value=out)
        if failed:
            raise AirflowFailException(f"{len(failed)} of {len(results)} tables failed: "
                                       + "; ".join(f"{r['table']}: {r['error']}" for r in results
                                                   if r["status"] == "failed")[:2000]
                                       + f"; the other {len(results) - len(failed)} are done (XCom 'tables')")
        return out


def _figures(f: dict[str, Any]) -> str:
    return f"(deleted {f.get('total_deleted', 0)}, written {sum((f.get('written') or {}).values())})"


def _operator_doc(op: Operation) -> str:
    lines = [op.doc or op.name, "", f"Facade: `paimon_ops.api.Table.{op.facade}`. Common parameters: `table`, "
             "`conn_id`, `dry_run` (see paimon_ops.airflow.operators).", "", "Parameters:"]
    for p in op.parameters:
        default = "required" if p.required else f"default {jsonable(p.default)!r}"
        lines.append(f"* `{p.name}` ({p.annotation}, {default})" + (f": {p.doc}" if p.doc else ""))
    return "\n".join(lines)


def _generate() -> dict[str, type[PaimonOperationOperator]]:
    out: dict[str, type[PaimonOperationOperator]] = {}
    meta: Any = type(PaimonOperationOperator)  # Airflow's operator metaclass
    for op in OPERATIONS.values():
        name = operator_class_name(op.name)
        cls = meta(name, (PaimonOperationOperator,), {
            "operation": op.name, "__module__": __name__, "__qualname__": name, "__doc__": _operator_doc(op)})
        out[op.name] = cls
    return out


OPERATORS: dict[str, type[PaimonOperationOperator]] = _generate()
globals().update({cls.__name__: cls for cls in OPERATORS.values()})

if TYPE_CHECKING:  # the generated classes (one per operation, OPERATORS) are Paimon…Operator names to type checkers
    def __getattr__(name: str) -> type[PaimonOperationOperator]: ...

__all__ = ["PaimonOperationOperator", "PaimonApplyPlanOperator", "PaimonMaintainTablesOperator", "NIGHTLY_STEPS",
           "TABLE_ASSETS_ALIAS", "table_assets_alias", "OPERATORS", "PLAN_XCOM_KEY", "operator_class_name",
           "changed", "asset_extra", *(cls.__name__ for cls in OPERATORS.values())]
