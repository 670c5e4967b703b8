"""Manifest compaction (the smallest operation: the example to copy, docs/design.md "Adding an operation")."""
from dataclasses import dataclass

from paimon_ops.features import MANIFEST_REWRITES
from paimon_ops.operations.model import METADATA, Health, Operation, Params


@dataclass(frozen=True)
class CompactManifestsParams(Params):
    """None: what is merged follows from the table (manifest.target-file-size)."""


# Its health signal (paimon_ops.health measures it).
MANIFEST_COUNT = Health("manifest_count", "paimon_manifest_sensor")

OPERATION = Operation(
    name="compact_manifests", title="manifest compaction",
    summary="merge the latest snapshot's manifests into few (a COMPACT snapshot; data unchanged)",
    doc="Merging the latest snapshot's manifests into few (Paimon's compact_manifest), committed as a COMPACT "
        "snapshot; data unchanged, old manifests left for older snapshots and tags.",
    params_type=CompactManifestsParams,
    handles=MANIFEST_REWRITES,  # a metadata-only rewrite of manifests (paimon_ops.features)
    placement=METADATA, reclaims=False, stage=40,
    dagster_job="paimon_compact_manifests", health=(MANIFEST_COUNT,),
)
