"""Test DAG: write-audit-publish on a branch — tag main, branch from the tag, write to the branch (as a job would),
compact the branch (`TABLE$branch_wap`, Paimon's identifier), fast-forward main to it, delete the branch."""
from __future__ import annotations

import os

import pendulum
from airflow.sdk import DAG, task

from paimon_ops.airflow.operators import (
    PaimonCompactOperator,
    PaimonCreateBranchOperator,
    PaimonCreateTagOperator,
    PaimonDeleteBranchOperator,
    PaimonFastForwardOperator,
)

TABLE = os.environ.get("PAIMON_WAP_TABLE", "shop.orders")
BRANCH = f"{TABLE}$branch_wap"

with DAG(dag_id="paimon_branch_publish", schedule=None, start_date=pendulum.datetime(2024, 1, 1, tz="UTC")):
    tag = PaimonCreateTagOperator(task_id="tag_base", table=TABLE, name="base")
    branch = PaimonCreateBranchOperator(task_id="create_branch", table=TABLE, name="wap", tag="base")

    @task
    def write_to_branch() -> int:
        """The 'write' of write-audit-publish (our engine's writer: any writer commits to the branch)."""
        import pyarrow as pa

        from paimon_ops.airflow.hooks import PaimonHook
        from paimon_ops.format.types import arrow_schema
        from paimon_ops.table.writer import TableWriter
        raw = PaimonHook().get_table(BRANCH).raw
        schema = arrow_schema(raw.schema.row_type)
        w = TableWriter(raw)
        w.write(pa.Table.from_pydict({"k": [100, 101], "v": ["wap", "wap"]}, schema=schema))
        return w.commit().id

    compact = PaimonCompactOperator(task_id="compact_branch", table=BRANCH)
    publish = PaimonFastForwardOperator(task_id="publish", table=TABLE, branch="wap")
    cleanup = PaimonDeleteBranchOperator(task_id="delete_branch", table=TABLE, name="wap")
    tag >> branch >> write_to_branch() >> compact >> publish >> cleanup
