"""The Airflow provider of paimon-ops (`pip install 'paimon-ops[airflow]'`, Airflow 3): the `paimon` connection and
`PaimonHook`, one operator per maintenance operation (`PaimonCompactOperator`, `PaimonExpireSnapshotsOperator`, …)
plus `PaimonApplyPlanOperator` for reviewed plans, `PaimonTableHealthSensor` (deferrable) and the triggers
`PaimonTableHealthTrigger` / `PaimonTableNeedsWorkTrigger` (for `AssetWatcher`); on partitions marked done,
`PaimonPartitionDoneSensor` (deferrable, `PaimonPartitionDoneTrigger`) and `PaimonPartitionsDoneTrigger` (for
`AssetWatcher`). Example DAGs:
`paimon_ops/airflow/example_dags/`.

Names are imported lazily, so `get_provider_info` (read by Airflow's providers manager) costs no Airflow import.
"""
from __future__ import annotations

from importlib import import_module
from typing import Any

_WHERE = {
    "PaimonHook": "hooks", "PaimonSettings": "hooks",
    "PaimonApplyPlanOperator": "operators", "PaimonOperationOperator": "operators", "OPERATORS": "operators",
    "PaimonMaintainTablesOperator": "operators",
    "PaimonTableHealthSensor": "sensors",
    "PaimonTableHealthTrigger": "triggers", "PaimonTableNeedsWorkTrigger": "triggers",
    "PaimonPartitionDoneSensor": "partition_done", "PaimonPartitionDoneTrigger": "partition_done",
    "PaimonPartitionsDoneTrigger": "partition_done",
    "OPERATIONS": "operations", "table_pool": "names", "table_asset_uri": "names",
    "paimon_table_asset": "assets",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        if name.startswith("Paimon") and name.endswith("Operator"):
            module = "operators"
        else:
            raise AttributeError(f"module 'paimon_ops.airflow' has no attribute {name!r}")
    return getattr(import_module(f"paimon_ops.airflow.{module}"), name)
