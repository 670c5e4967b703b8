"""Nightly maintenance of every table matching a pattern, one mapped task instance per table and step: the due
automatic tags → partition expiry (tables with `partition.expiration-time`) → snapshot expiry → tag expiry → orphan
removal — the order of the Dagster integration's `paimon_nightly` job. Each step uses the table's own options
(retention, expiration time, …); tables listed when the run starts.

Airflow gives every instance of a mapped task the pool of `.partial()`: give one here (e.g. a `paimon.nightly` pool
bounding how many tables are maintained at once); the per-table pools (`paimon.<db>.<table>`) apply to operators
whose table is known when the DAG is parsed.

Settings (environment): PAIMON_CONN_ID (default paimon_default), PAIMON_NIGHTLY_TABLES (fnmatch on db.table,
default *), PAIMON_NIGHTLY_SCHEDULE (default 0 3 * * *, UTC).
"""
from __future__ import annotations

import os

import pendulum
from airflow.sdk import DAG, task

from paimon_ops.airflow.hooks import PaimonHook
from paimon_ops.airflow.operators import (
    PaimonCreateAutoTagsOperator,
    PaimonExpirePartitionsOperator,
    PaimonExpireSnapshotsOperator,
    PaimonExpireTagsOperator,
    PaimonRemoveOrphansOperator,
)

CONN_ID = os.environ.get("PAIMON_CONN_ID", "paimon_default")
PATTERN = os.environ.get("PAIMON_NIGHTLY_TABLES", "*")

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
    def tables(step: str) -> list[str]:
        """The matching tables of a step (auto tags / partition expiry only where the table asks for them)."""
        return PaimonHook(CONN_ID).maintenance_targets(PATTERN)[step]

    every_table = tables.override(task_id="tables")("all")
    tagged = tables.override(task_id="tables_with_auto_tags")("auto_tags")
    expiring = tables.override(task_id="tables_with_partition_expiry")("partition_expiry")
    # a step with no table (an empty map) is skipped; the next steps still run
    step = {"conn_id": CONN_ID, "trigger_rule": "none_failed"}
    tags = PaimonCreateAutoTagsOperator.partial(task_id="create_due_tags", **step).expand(table=tagged)
    partitions = PaimonExpirePartitionsOperator.partial(task_id="expire_partitions", **step).expand(table=expiring)
    snapshots = PaimonExpireSnapshotsOperator.partial(task_id="expire_snapshots", **step).expand(table=every_table)
    tag_expiry = PaimonExpireTagsOperator.partial(task_id="expire_tags", **step).expand(table=every_table)
    orphans = PaimonRemoveOrphansOperator.partial(task_id="remove_orphans", **step).expand(table=every_table)
    tags >> partitions >> snapshots >> tag_expiry >> orphans
