"""Jobs — a constant number, whatever the number of tables: one asset job per maintenance kind over every table
asset. A run selects the tables it maintains (sensors and schedules select one table per run); the job's run tag
`paimon/operations` tells the tables' op what to do, and the config of the run (typed by the kind of table) sits
under the op of the tables' kind in the launchpad (`ops: {paimon_primary_key_tables: {config: …}}`).

| job | operations (in order) |
|---|---|
| `paimon_compaction` | compact |
| `paimon_expire_snapshots` | expire_snapshots |
| `paimon_expire_tags` | expire_tags |
| `paimon_remove_orphans` | remove_orphans |
| `paimon_expire_partitions` | expire_partitions (partitioned tables with `partition.expiration-time`, or the run's config) |
| `paimon_compact_manifests` | compact_manifests |
| `paimon_nightly` | create_tags (the due tags, before anything expires), expire_partitions, expire_snapshots, expire_tags, remove_orphans |
| `paimon_observe` | — (observe the tables and run their checks) |
"""
from __future__ import annotations

import weakref
from typing import Any, Sequence

from dagster import AssetsDefinition, AssetSelection
from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition

from paimon_ops.dagster.operations import (
    COMPACT,
    COMPACT_MANIFESTS,
    CREATE_TAGS,
    EXPIRE_PARTITIONS,
    EXPIRE_SNAPSHOTS,
    EXPIRE_TAGS,
    OPERATIONS_TAG,
    REMOVE_ORPHANS,
)

IMPLICIT_ASSET_JOB_NAME = "__ASSET_JOB"  # the job Dagster builds over every asset (what the asset page launches)
COMPACTION_JOB = "paimon_compaction"
NIGHTLY_JOB = "paimon_nightly"
OBSERVE_JOB = "paimon_observe"

JOBS: dict[str, tuple[tuple[str, ...], str]] = {
    COMPACTION_JOB: ((COMPACT,), "Compaction (mode, partitions and buckets in each table's config)."),
    "paimon_expire_snapshots": ((EXPIRE_SNAPSHOTS,), "Snapshot expiry by each table's retention options, reclaiming "
                                                     "the files nothing retained references."),
    "paimon_expire_tags": ((EXPIRE_TAGS,), "Tag expiry (tag.num-retained-max, tag retention), with reclamation."),
    "paimon_remove_orphans": ((REMOVE_ORPHANS,), "Removal of files no snapshot, tag, branch or changelog references."),
    "paimon_expire_partitions": ((EXPIRE_PARTITIONS,), "Partition expiry (partition.expiration-time and the other "
                                                       "partition.expiration-* options): one OVERWRITE commit "
                                                       "dropping the expired partitions."),
    "paimon_compact_manifests": ((COMPACT_MANIFESTS,), "Manifest compaction: merge the latest snapshot's manifests "
                                                       "into few, as a COMPACT snapshot."),
    NIGHTLY_JOB: ((CREATE_TAGS, EXPIRE_PARTITIONS, EXPIRE_SNAPSHOTS, EXPIRE_TAGS, REMOVE_ORPHANS),
                  "Nightly maintenance: create the due automatic tags, expire partitions (tables with "
                  "partition.expiration-time), expire snapshots, expire tags, remove orphan files."),
    OBSERVE_JOB: ((), "Observe the tables and run their checks (changes nothing)."),
}


def job_for(operation: str) -> str:
    """The job that runs exactly `operation`."""
    return next(name for name, (ops, _) in JOBS.items() if ops == (operation,))


def build_jobs(table_assets: Sequence[AssetsDefinition]) -> list[Any]:
    """The asset jobs, one per entry of JOBS, over the multi-assets of the tables that loaded.

    Without the tables' checks (the outputs of ops of their own: Dagster resolves every job over every output of its
    ops, and 5,000 tables have 30,000 checks). A run selecting tables gets their checks added by Dagster (as the
    asset page does); a run of the whole job evaluates them in the tables' op (`table_asset.run_tables`).

    The jobs differ only in name, description and tags, so they are resolved once: Dagster resolves every asset job
    on its own (an asset graph of the job, the job's graph, its resource requirements — a quarter of a second each
    over 5,000 tables), and the others are copies of the first over the same graph (`_SharedResolution`)."""
    if not table_assets:
        return []
    selection = AssetSelection.assets(*table_assets).without_checks()
    shared = _SharedResolution()

    class _MaintenanceJob(UnresolvedAssetJobDefinition):
        def resolve(self, asset_graph: Any, default_executor_def: Any = None, resource_defs: Any = None) -> Any:
            return shared.resolve(self, asset_graph, default_executor_def, resource_defs)

    return [_MaintenanceJob(name=name, selection=selection, description=description,
                            tags={OPERATIONS_TAG: ",".join(ops)} if ops else {})
            for name, (ops, description) in JOBS.items()]


class _SharedResolution:
    """The resolution of the first of a build's jobs over an asset graph; each other job of that build, over the same
    graph, a copy of it under its own name, description and tags (Dagster's `JobDefinition._copy`, what its
    `with_*` methods use). Keyed by the asset graph, which Dagster builds once per repository."""

    def __init__(self) -> None:
        self._graph: Any = None  # weak reference to the asset graph of `_job`
        self._job: Any = None

    def resolve(self, job: UnresolvedAssetJobDefinition, asset_graph: Any, default_executor_def: Any,
                resource_defs: Any) -> Any:
        base = self._job if self._graph is not None and self._graph() is asset_graph else None
        if base is None:
            base = UnresolvedAssetJobDefinition.resolve(job, asset_graph, default_executor_def, resource_defs)
            self._graph, self._job = weakref.ref(asset_graph), base
            return base
        return base._copy(name=job.name, description=job.description, tags=job.tags, run_tags=job.run_tags,
                          metadata=job.metadata or {})
