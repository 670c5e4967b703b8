"""`PaimonTranslator`: how Paimon tables map to Dagster names — subclass it to rename asset keys, change groups,
tags, descriptions, owners or pools (the model is dagster-dbt's `DagsterDbtTranslator`).

Every method takes the table's `TableSpec` (identifier, database, table, options, keys, ...) and, for asset-level
hooks, the asset kind (one of `KINDS`). Example:

    class MyTranslator(PaimonTranslator):
        def get_asset_key(self, spec, kind):
            return AssetKey(["lake", spec.database, spec.table, kind])
        def get_group_name(self, spec):
            return "lake_maintenance"
"""
from __future__ import annotations

import re
from typing import Mapping

from dagster import AssetKey

from assets.spec import TableSpec

COMPACTION = "compaction"
TAGS = "tags"
SNAPSHOT_EXPIRY = "snapshot_expiry"
TAG_EXPIRY = "tag_expiry"
ORPHAN_CLEANUP = "orphan_cleanup"
UNAVAILABLE = "unavailable"
KINDS = (COMPACTION, TAGS, SNAPSHOT_EXPIRY, TAG_EXPIRY, ORPHAN_CLEANUP)

_DESCRIPTIONS = {
    COMPACTION: "Compaction of {ident}: rewrites level-0 runs, small files and files with many deleted rows "
                "(config: mode minor | full | dv-ratio | sort | small-files, partitions, dry_run).",
    TAGS: "Tags of {ident}: each daily partition is the tag of that day; materialising a partition creates the "
          "tag idempotently, a backfill fills missing tags.",
    SNAPSHOT_EXPIRY: "Snapshot expiry of {ident} by its retention options (snapshot.num-retained.min/max, "
                     "snapshot.time-retained), reclaiming files nothing retained references.",
    TAG_EXPIRY: "Tag expiry of {ident} (tag.num-retained-max, tag retention times), with file reclamation.",
    ORPHAN_CLEANUP: "Orphan-file removal for {ident}: files no snapshot, tag, branch or changelog references.",
    UNAVAILABLE: "Placeholder for {ident}, which could not be loaded: {error}. Its 'loadable' check fails with "
                 "the error; fix the table (or its options) and reload the code location.",
}

_NAME_BAD = re.compile(r"[^A-Za-z0-9_]")
_TAG_BAD = re.compile(r"[^A-Za-z0-9_.-]")


def safe_name(text: str) -> str:
    """A Dagster name (`^[A-Za-z0-9_]+$`) from any text."""
    return _NAME_BAD.sub("_", text) or "_"


def safe_tag_value(text: str) -> str:
    return _TAG_BAD.sub("_", text)[:63]


class PaimonTranslator:
    """Default naming: assets under `paimon/<db>/<table>/<kind>`, one group per table, one pool per table."""

    def get_asset_key(self, spec: TableSpec, kind: str) -> AssetKey:
        return AssetKey(["paimon", spec.database, spec.table, kind])

    def get_group_name(self, spec: TableSpec) -> str:
        return safe_name(f"paimon_{spec.database}_{spec.table}")

    def get_description(self, spec: TableSpec, kind: str) -> str:
        return _DESCRIPTIONS[kind].format(ident=spec.identifier, error=spec.error or "")

    def get_tags(self, spec: TableSpec, kind: str) -> Mapping[str, str]:
        return {"paimon/database": safe_tag_value(spec.database), "paimon/table": safe_tag_value(spec.table),
                "paimon/operation": kind}

    def get_metadata(self, spec: TableSpec, kind: str) -> Mapping[str, object]:
        out: dict[str, object] = {"paimon/table": spec.identifier, "paimon/location": spec.location}
        if spec.primary_keys:
            out["paimon/primary_keys"] = ", ".join(spec.primary_keys)
        if spec.partition_keys:
            out["paimon/partition_keys"] = ", ".join(spec.partition_keys)
        if spec.error:
            out["paimon/error"] = spec.error
        if spec.tag_timing is not None:
            out["paimon/tag_create_time"] = f"{spec.tag_timing.hh_mm} {spec.tag_timing.zone}"
        return out

    def get_owners(self, spec: TableSpec, kind: str) -> list[str]:
        return []

    def get_pool(self, spec: TableSpec) -> str:
        """Concurrency pool shared by every maintenance op of the table; give it limit 1 (see README)."""
        return f"paimon/{spec.identifier}"

    def get_name_prefix(self, spec: TableSpec) -> str:
        """Prefix of the table's job, schedule and sensor names."""
        return safe_name(f"paimon__{spec.database}__{spec.table}")
