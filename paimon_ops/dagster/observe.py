"""What an observation of a table records (metadata: snapshot JSON, manifests, the index manifest, tag names):
rows, bytes, files, level-0 files, snapshots, tags and the deleted-row ratio — plotted by Dagster over time — plus
`bytes_reclaimed_total`, carried from observation to observation so the cumulative curve never drops.

`dagster/row_count` is recorded only when it is exact (`paimon_ops.rowcount`): from the file layout, or — in runs,
never in sensor ticks, which read metadata only — by merging the buckets whose sorted runs overlap, within a byte
budget. Primary-key tables also get `rows_before_merge` (file rows minus deleted rows, level-0 duplicates
included), which is not a row count and is never recorded under that name."""
from __future__ import annotations

import datetime as _dt
from typing import Any

from dagster import AssetKey, MetadataValue

import paimon_ops.health as health
from paimon_ops.dagster.metadata import md_table
from paimon_ops.execution.plan import human_bytes
from paimon_ops.lifecycle.manifest_compaction import manifest_count
from paimon_ops.rowcount import MERGE_BUDGET_BYTES, count_rows
from paimon_ops.table.table import FileStoreTable

RECLAIMED_TOTAL = "bytes_reclaimed_total"


def table_state(table: FileStoreTable, files: health.FileHealth | None = None,
                merge_budget: int = MERGE_BUDGET_BYTES) -> dict[str, Any]:
    """The chartable figures of a table's latest snapshot (`files`: its measurement, if already made;
    `merge_budget`: data bytes an exact row count may read, 0 for metadata only)."""
    h = files or health.measure_files(table)
    deleted = sum(b.deleted_rows for b in h.buckets)
    nbytes = sum(b.bytes for b in h.buckets)
    snapshots = table.snapshots.list_ids()
    tags = table.tags.names()
    md: dict[str, Any] = {}
    if h.snapshot_id is None:
        md["dagster/row_count"] = MetadataValue.int(0)
    else:
        count = count_rows(table, snapshot_id=h.snapshot_id, merge_budget=merge_budget)
        if count.exact is not None:
            md["dagster/row_count"] = MetadataValue.int(count.exact)
        if table.is_primary_key:
            md["rows_before_merge"] = MetadataValue.int(count.rows_before_merge)
            md["row_count_basis"] = count.how
    md.update({
        "bytes": MetadataValue.int(nbytes),
        "files": MetadataValue.int(h.total_files),
        "level0_files": MetadataValue.int(sum(b.level0_files for b in h.buckets)),
        "small_files": MetadataValue.int(sum(b.small_files for b in h.buckets)),
        "buckets": MetadataValue.int(len(h.buckets)),
        "snapshots": MetadataValue.int(len(snapshots)),
        "manifests": MetadataValue.int(manifest_count(table)),
        "tags": MetadataValue.int(len(tags)),
        "deleted_rows": MetadataValue.int(deleted),
        "dv_ratio": MetadataValue.float(round(h.total_dv_ratio, 6)),
        "max_file_dv_ratio": MetadataValue.float(round(h.max_dv_ratio, 6)),
        "snapshot_id": MetadataValue.int(h.snapshot_id if h.snapshot_id is not None else 0),
        "size": human_bytes(nbytes),
    })
    if tags:
        md["latest_tags"] = ", ".join(tags[-5:])
    if h.buckets:
        worst = sorted(h.buckets, key=lambda b: (-h.small_count(b), -b.max_file_dv_ratio))[:10]
        md["worst_buckets"] = MetadataValue.md(md_table(
            ["bucket", "files", h.small_files_label, "rows", "deleted rows", "size"],
            [(b.label, b.files, h.small_count(b), b.rows, b.deleted_rows, human_bytes(b.bytes)) for b in worst]))
    return md


def state_key(table: FileStoreTable) -> str:
    """Changes whenever an observation would: the latest snapshot and the tag set."""
    tags = table.tags.names()
    return f"{table.snapshots.latest_id()}:{len(tags)}:{tags[-1] if tags else ''}"


def reclaimed_total(instance: Any, key: AssetKey) -> int:
    """`bytes_reclaimed_total` of the table's latest observation (0 when it has none)."""
    if instance is None:
        return 0
    try:
        records = instance.fetch_observations(key, limit=1).records
    except Exception:  # noqa: BLE001 - a storage without observations: start from 0
        return 0
    for r in records:
        obs = r.event_log_entry.asset_observation
        v = obs.metadata.get(RECLAIMED_TOTAL) if obs is not None else None
        if v is not None:
            return int(v.value)
    return 0


def reclaimed_totals(instance: Any, keys: list[AssetKey]) -> dict[AssetKey, int]:
    """`reclaimed_total` of many tables in one query (the latest observation of each, from its asset record)."""
    out: dict[AssetKey, int] = {}
    if instance is None or not keys:
        return out
    try:
        records = instance.get_asset_records(keys)
    except Exception:  # noqa: BLE001 - one by one then
        return {k: reclaimed_total(instance, k) for k in keys}
    for record in records:
        entry = record.asset_entry
        obs = entry.last_observation.asset_observation if entry.last_observation is not None else None
        v = obs.metadata.get(RECLAIMED_TOTAL) if obs is not None else None
        if v is not None:
            out[entry.asset_key] = int(v.value)
    return out


MAX_WALK_BACK = 100  # snapshots read to find the latest writer commit behind a run of compactions


def latest_data_snapshot(table: FileStoreTable) -> Any:
    """The latest snapshot a writer committed (not a COMPACT commit: compaction rewrites files, not data), within
    the last MAX_WALK_BACK snapshots; None if there is none."""
    latest = table.snapshots.latest()
    snap, steps = latest, 0
    while snap is not None and snap.commit_kind == "COMPACT" and steps < MAX_WALK_BACK:
        snap = table.snapshots.try_snapshot(snap.id - 1)
        steps += 1
    return snap if snap is not None and snap.commit_kind != "COMPACT" else None


NOT_FETCHED = object()


def latest_materializations(instance: Any, keys: list[AssetKey]) -> dict[AssetKey, Any]:
    """The latest materialisation event of each of `keys` (one query; {} when the instance cannot tell)."""
    if instance is None or not keys:
        return {}
    try:
        return dict(instance.get_latest_materialization_events(keys))
    except Exception:  # noqa: BLE001 - asked one by one then
        return {}


def data_materialization(instance: Any, key: AssetKey, table: FileStoreTable, last: Any = NOT_FETCHED) -> Any:
    """A materialisation of the table for its latest writer commit, unless Dagster already has it (idempotent): the
    table's own history, synced — so assets that read the table see it updated when its data changes. `last`: the
    key's latest materialisation event when already fetched (None: there is none)."""

    from dagster import AssetMaterialization

    snap = latest_data_snapshot(table)
    if snap is None:
        return None
    if instance is not None:
        if last is NOT_FETCHED:
            try:
                last = instance.get_latest_materialization_event(key)
            except Exception:  # noqa: BLE001
                last = None
        mat = last.asset_materialization if last is not None else None
        seen = mat.metadata.get("snapshot_id") if mat is not None else None
        if seen is not None and int(seen.value) >= snap.id:
            return None
    committed = _dt.datetime.fromtimestamp(snap.time_millis / 1000, tz=_dt.timezone.utc).isoformat()
    md: dict[str, Any] = {"snapshot_id": MetadataValue.int(snap.id), "commit_kind": snap.commit_kind,
                          "commit_user": snap.commit_user, "committed_at": committed, "synced_from_table": True}
    if snap.total_record_count is not None:
        md["total_record_count"] = MetadataValue.int(snap.total_record_count)
    return AssetMaterialization(asset_key=key, metadata=md,
                                description=f"{table.identifier} snapshot {snap.id} ({snap.commit_kind}) committed "
                                            f"by a writer at {committed}")
