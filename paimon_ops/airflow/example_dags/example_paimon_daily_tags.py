"""Daily tags of one table, on Airflow's clock: the DAG runs at the table's `tag.create-time` in its
`tag.create-time-zone` (read from the table), and each run creates the tag of its own day — DST-correct, idempotent.
Missing days are filled by a backfill: `airflow backfill create --dag-id paimon_daily_tags --from-date 2026-11-01
--to-date 2026-11-05` (or Trigger → Backfill in the UI).

Settings (environment): PAIMON_CONN_ID (default paimon_default), PAIMON_TAGS_TABLE (default shop.orders).
"""
from __future__ import annotations

import os

import pendulum
from airflow.sdk import DAG

from paimon_ops.airflow.assets import paimon_table_asset
from paimon_ops.airflow.operators import PaimonCreateAutoTagsOperator
from paimon_ops.airflow.tags import daily_tag_timetable, tag_period_macro

CONN_ID = os.environ.get("PAIMON_CONN_ID", "paimon_default")
TABLE = os.environ.get("PAIMON_TAGS_TABLE", "shop.orders")

with DAG(
    dag_id="paimon_daily_tags",
    schedule=daily_tag_timetable(CONN_ID, TABLE),
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,                # a backfill fills missing days on request
    max_active_runs=3,            # the table's pool still runs one at a time
    user_defined_macros={"paimon_tag_period": tag_period_macro(CONN_ID, TABLE)},
    tags=["paimon"],
    doc_md=__doc__,
):
    PaimonCreateAutoTagsOperator(
        task_id="create_tag",
        table=TABLE,
        conn_id=CONN_ID,
        periods=["{{ paimon_tag_period(logical_date) }}"],
        outlets=[paimon_table_asset(TABLE, CONN_ID)],
    )
