"""Manifest compaction (the smallest operation: the example to copy)."""
from paimon_ops.features import MANIFEST_REWRITES
from paimon_ops.operations import METADATA, Health, Operation

OPERATION = Operation(
    stage=70,
    name="compact_manifests", title="manifest compaction",
    summary="merge the latest snapshot's manifests into few (a COMPACT snapshot; data unchanged)",
    facade="maintenance.compact_manifests", plan_module="paimon_ops.lifecycle.manifest_compaction",
    plan_types=("compact_manifests",), placement=METADATA, handles=MANIFEST_REWRITES,
    dagster_job="paimon_compact_manifests", reclaims=False,
    health=(Health("manifest_count", "paimon_manifest_sensor"),),
)
