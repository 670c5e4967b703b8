"""Compaction when a table needs it, without holding a worker while waiting:

* `paimon_compact_when_needed` — a deferrable sensor waits in the triggerer until the table has too many level-0 /
  small files or a file's deleted-row ratio passes the threshold, then compacts exactly what the assessment names
  (one mapped compaction per due signal, in the table's pool).
* `paimon_compact_on_event` — scheduled on an asset whose `AssetWatcher` runs `PaimonTableNeedsWorkTrigger` in the
  triggerer: a run starts each time a new snapshot makes compaction due.

Settings (environment): PAIMON_CONN_ID (default paimon_default), PAIMON_HEALTH_TABLE (default shop.orders),
PAIMON_HEALTH_POLL (seconds, default 60).
"""
from __future__ import annotations

import os
from typing import Any

import pendulum
from airflow.sdk import DAG, Asset, AssetWatcher, task

from paimon_ops.airflow.names import table_asset_uri, table_pool
from paimon_ops.airflow.operators import PaimonCompactOperator
from paimon_ops.airflow.sensors import PaimonTableHealthSensor
from paimon_ops.airflow.triggers import PaimonTableNeedsWorkTrigger

CONN_ID = os.environ.get("PAIMON_CONN_ID", "paimon_default")
TABLE = os.environ.get("PAIMON_HEALTH_TABLE", "shop.orders")
POLL = float(os.environ.get("PAIMON_HEALTH_POLL", "60"))
COMPACTION_SIGNALS = ["small_files", "dv_ratio"]


@task
def compactions(assessment: dict[str, Any]) -> list[dict[str, Any]]:
    """The compaction arguments of each due signal (e.g. {"mode": "minor", "buckets": [0]})."""
    return [n["arguments"] for n in assessment["needs"] if n["due"] and n["operation"] == "compact"]


with DAG(dag_id="paimon_compact_when_needed", schedule=None, start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
         max_active_runs=1, tags=["paimon"], doc_md=__doc__):
    wait = PaimonTableHealthSensor(task_id="wait_until_needed", table=TABLE, conn_id=CONN_ID,
                                   signals=COMPACTION_SIGNALS, poke_interval=POLL, timeout=7 * 24 * 3600)
    PaimonCompactOperator.partial(task_id="compact", table=TABLE, conn_id=CONN_ID, pool=table_pool(TABLE)) \
        .expand_kwargs(compactions(wait.output))


needs_compaction = Asset(
    uri=table_asset_uri(TABLE, CONN_ID) + "/needs-compaction", group="paimon",
    watchers=[AssetWatcher(name=f"{TABLE.replace('.', '_')}_needs_compaction",
                           trigger=PaimonTableNeedsWorkTrigger(table=TABLE, conn_id=CONN_ID,
                                                               signals=COMPACTION_SIGNALS, poll_interval=POLL))])

with DAG(dag_id="paimon_compact_on_event", schedule=[needs_compaction],
         start_date=pendulum.datetime(2024, 1, 1, tz="UTC"), max_active_runs=1, tags=["paimon"], doc_md=__doc__):
    @task
    def assessment_of_event(**context: Any) -> dict[str, Any]:
        """The trigger's assessment, from the asset event that started the run."""
        events = context["triggering_asset_events"][needs_compaction]
        return dict(events[-1].extra.get("payload", events[-1].extra))

    PaimonCompactOperator.partial(task_id="compact", table=TABLE, conn_id=CONN_ID, pool=table_pool(TABLE)) \
        .expand_kwargs(compactions(assessment_of_event()))
