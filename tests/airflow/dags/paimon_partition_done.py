"""A DAG waiting for a partition of a Paimon table to be marked done (deferrable: the wait runs in a trigger), then
reporting the marks. Settings (environment): PAIMON_DONE_TABLE, PAIMON_DONE_PARTITION (k=v[,k2=v2])."""
from __future__ import annotations

import os
from typing import Any

import pendulum
from airflow.sdk import DAG, task

from paimon_ops.airflow.partition_done import PaimonPartitionDoneSensor

with DAG(dag_id="paimon_partition_done", schedule=None, start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
         tags=["paimon"]):
    wait = PaimonPartitionDoneSensor(task_id="wait_for_partition", table=os.environ["PAIMON_DONE_TABLE"],
                                     partition=os.environ["PAIMON_DONE_PARTITION"], poke_interval=1, timeout=600)

    @task
    def downstream(marks: dict[str, Any]) -> str:
        return f"{marks['path']} done by {','.join(m['action'] for m in marks['marks'])}"

    downstream(wait.output)
