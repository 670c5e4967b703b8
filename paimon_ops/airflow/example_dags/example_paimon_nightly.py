"""Nightly maintenance of every table matching a pattern, one mapped task per shard of tables (a database, split
into shards of at most PAIMON_NIGHTLY_SHARD_SIZE tables): each task maintains its tables in one process, table by
table — the due automatic tags → partition expiry (tables with `partition.expiration-time`) → snapshot expiry → tag
expiry → orphan removal, the order of the Dagster integration's `paimon_nightly` job, each step with the table's own
options (retention, expiration time, …). Tables listed when the run starts (names only).

Per-table results: each shard task's XCom holds every table's outcome and figures; each table it changed gets an
asset event of its own (`paimon://<conn_id>/<db>.<table>`, through the asset alias `paimon-tables-<conn_id>`). A
table that fails is recorded as failed, the other tables of its shard are still maintained, and its task fails
naming it; the other shards are untouched by it.

Give `.partial()` a pool (e.g. `paimon.nightly`, sized to the workers you give maintenance) to bound how many
shards run at once.

Settings (environment): PAIMON_CONN_ID (default paimon_default), PAIMON_NIGHTLY_TABLES (fnmatch on db.table,
default *), PAIMON_NIGHTLY_SHARD_SIZE (default 500), PAIMON_NIGHTLY_SCHEDULE (default 0 3 * * *, UTC).
"""
from __future__ import annotations

import os

import pendulum
from airflow.sdk import DAG, task

from paimon_ops.airflow.hooks import PaimonHook
from paimon_ops.airflow.operators import PaimonMaintainTablesOperator

CONN_ID = os.environ.get("PAIMON_CONN_ID", "paimon_default")
PATTERN = os.environ.get("PAIMON_NIGHTLY_TABLES", "*")
SHARD_SIZE = int(os.environ.get("PAIMON_NIGHTLY_SHARD_SIZE", "500"))

with DAG(
    dag_id="paimon_nightly",
    schedule=os.environ.get("PAIMON_NIGHTLY_SCHEDULE", "0 3 * * *"),
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["paimon"],
    doc_md=__doc__,
):
    @task
    def shards() -> list[list[str]]:
        """The matching tables, by database, in shards of at most PAIMON_NIGHTLY_SHARD_SIZE."""
        return PaimonHook(CONN_ID).shards(PATTERN, size=SHARD_SIZE)

    PaimonMaintainTablesOperator.partial(task_id="maintain", conn_id=CONN_ID).expand(tables=shards())
