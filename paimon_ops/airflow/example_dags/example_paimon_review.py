"""Review before acting: a dry run plans snapshot expiry and pushes the plan (XCom `plan`: every file it would
delete, with its kind and the reason, also in the task log); the apply task executes exactly that plan — or refuses
it if the table changed in between (a commit, a tag, a rollback: StalePlanError, nothing changed). Put a human in
between with Airflow's `ApprovalOperator` (airflow.providers.standard.operators.hitl), or apply a plan from
another run with `plan="{{ ti.xcom_pull(dag_id=…, task_ids='plan_expiry', key='plan') }}"`.

Settings (environment): PAIMON_CONN_ID (default paimon_default), PAIMON_REVIEW_TABLE (default shop.orders).
"""
from __future__ import annotations

import os

import pendulum
from airflow.sdk import DAG

from paimon_ops.airflow.assets import paimon_table_asset
from paimon_ops.airflow.operators import PaimonApplyPlanOperator, PaimonExpireSnapshotsOperator

CONN_ID = os.environ.get("PAIMON_CONN_ID", "paimon_default")
TABLE = os.environ.get("PAIMON_REVIEW_TABLE", "shop.orders")

with DAG(dag_id="paimon_review_then_apply", schedule=None, start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
         tags=["paimon"], doc_md=__doc__):
    review = PaimonExpireSnapshotsOperator(task_id="plan_expiry", table=TABLE, conn_id=CONN_ID, dry_run=True)
    PaimonApplyPlanOperator(task_id="apply_expiry", table=TABLE, conn_id=CONN_ID, plan=review.output["plan"],
                            outlets=[paimon_table_asset(TABLE, CONN_ID)])
