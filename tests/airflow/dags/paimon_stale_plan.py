"""Test DAG: a reviewed plan goes stale — a dry run plans a rollback to snapshot 1, another writer commits, and the
apply task must refuse the plan (StalePlanError) rather than roll the new commit away, and change nothing."""
from __future__ import annotations

import os

import pendulum
from airflow.sdk import DAG, task

from paimon_ops.airflow.operators import PaimonApplyPlanOperator, PaimonRollbackOperator

TABLE = os.environ.get("PAIMON_STALE_TABLE", "shop.orders")

with DAG(dag_id="paimon_stale_plan", schedule=None, start_date=pendulum.datetime(2024, 1, 1, tz="UTC")):
    review = PaimonRollbackOperator(task_id="plan_rollback", table=TABLE, snapshot_id=1, dry_run=True)

    @task
    def another_writer_commits() -> int:
        """A commit between review and apply (our engine's writer: any writer makes the plan stale)."""
        import pyarrow as pa

        from paimon_ops.airflow.hooks import PaimonHook
        from paimon_ops.format.types import arrow_schema
        from paimon_ops.table.writer import TableWriter
        raw = PaimonHook().get_table(TABLE).raw
        schema = arrow_schema(raw.schema.row_type)
        row = {f.name: [1 if pa.types.is_integer(f.type) else "late"] for f in schema}
        w = TableWriter(raw)
        w.write(pa.Table.from_pydict(row, schema=schema))
        return w.commit().id

    apply = PaimonApplyPlanOperator(task_id="apply_rollback", table=TABLE, plan=review.output["plan"])
    review >> another_writer_commits() >> apply
