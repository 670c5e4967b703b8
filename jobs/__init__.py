"""Jobs of the Paimon code location.

Per table (names start with the translator's prefix, `paimon__<db>__<table>` by default):
* `<prefix>__nightly_job`: tags → snapshot_expiry → tag_expiry → orphan_cleanup (partitioned by the tags' days; the
  expiry assets are unpartitioned and run once per run);
* `<prefix>__compaction_job`: the compaction asset (and its checks);
* `<prefix>__expiry_job`: snapshot_expiry → tag_expiry → orphan_cleanup (what the snapshot-count sensor requests).

Across tables: `paimon_nightly_expiry`, the expiry assets of every table without a tag schedule (tables with one
get their expiry from their own nightly job).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from dagster import AssetKey, AssetSelection, AssetsDefinition, define_asset_job
from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition

NIGHTLY_EXPIRY_JOB = "paimon_nightly_expiry"


@dataclass(frozen=True)
class TableJobs:
    nightly: UnresolvedAssetJobDefinition
    compaction: UnresolvedAssetJobDefinition
    expiry: UnresolvedAssetJobDefinition

    def all(self) -> list[UnresolvedAssetJobDefinition]:
        return [self.nightly, self.compaction, self.expiry]


def build_table_jobs(prefix: str, identifier: str, assets: Mapping[str, AssetsDefinition]) -> TableJobs:
    tags = {"paimon/table": identifier}
    expiry = [assets["snapshot_expiry"], assets["tag_expiry"], assets["orphan_cleanup"]]
    return TableJobs(
        nightly=define_asset_job(
            f"{prefix}__nightly_job", selection=AssetSelection.assets(assets["tags"], *expiry), tags=tags,
            description=f"Nightly maintenance of {identifier}: tag the day that ended, expire snapshots, "
                        "expire tags, remove orphan files."),
        compaction=define_asset_job(
            f"{prefix}__compaction_job", selection=AssetSelection.assets(assets["compaction"]), tags=tags,
            description=f"Compaction of {identifier} (mode and partitions in the run config)."),
        expiry=define_asset_job(
            f"{prefix}__expiry_job", selection=AssetSelection.assets(*expiry), tags=tags,
            description=f"Snapshot expiry, tag expiry and orphan removal of {identifier}."),
    )


def build_nightly_expiry_job(keys: Sequence[AssetKey]) -> UnresolvedAssetJobDefinition | None:
    if not keys:
        return None
    return define_asset_job(NIGHTLY_EXPIRY_JOB, selection=AssetSelection.assets(*keys),
                            description="Nightly snapshot expiry, tag expiry and orphan removal of every table "
                                        "without a tag schedule (each table in its own pool).")


def op_name(asset: AssetsDefinition) -> str:
    """The op whose config a run request sets for this asset."""
    return asset.node_def.name
