"""`PaimonTranslator`: how a Paimon table becomes Dagster definitions — subclass it to change asset keys, groups,
tags, owners, descriptions, metadata, upstream dependencies or pools (the model is dagster-dbt's
`DagsterDbtTranslator.get_asset_spec`).

Two `AssetSpec`s per table (held by a few multi-assets: `get_op_name` / `get_tags_op_name` say which):

* `get_asset_spec(table)` — the table itself, `paimon/<db>/<table>` by default (kinds `paimon` and `spark`,
  `dagster/table_name`, `dagster/column_schema`, `dagster/uri`). Give it `deps` on the assets that write the table
  (a Flink job, a Spark or dbt asset) so lineage links them; readers depend on its key.
* `get_tags_asset_spec(table)` — the table's daily tags, `paimon/<db>/<table>/tags` by default (only for tables
  with automatic tags: `tag.create-time` or `tag.automatic-creation`).

Example:

    class MyTranslator(PaimonTranslator):
        def get_asset_spec(self, table):
            spec = super().get_asset_spec(table)
            return spec.replace_attributes(key=AssetKey(["lake", table.database, table.table]),
                                           group_name="lake", deps=[AssetKey(["flink", table.table])])
"""
from __future__ import annotations

import re
from typing import Mapping, Optional

from dagster import AssetKey, AssetSpec, TableColumn, TableColumnConstraints, TableSchema

from paimon_ops.dagster.spec import APPEND, APPEND_FIXED, PRIMARY_KEY, TableSpec

KINDS = {"paimon", "spark"}
OP_NAMES = {PRIMARY_KEY: "paimon_primary_key_tables", APPEND: "paimon_append_tables",
            APPEND_FIXED: "paimon_fixed_bucket_append_tables"}

TABLE_DESCRIPTION = (
    "Paimon table {ident} ({kind}{pk}{parts}). Observed (rows, bytes, files, level-0 files, snapshots, tags, "
    "deleted-row ratio) by the observation sensor and after every maintenance run; maintenance (compaction, "
    "snapshot / tag expiry, orphan removal) runs through the paimon_* jobs and records its reports here as "
    "observations. Executing this asset directly observes it and runs its checks; it never materialises it."
)
BROKEN_DESCRIPTION = ("Paimon table {ident}, which could not be loaded: {error}. Its metadata_readable check fails "
                      "with the error; fix the table (or its options) and reload the code location.")
TAGS_DESCRIPTION = ("Tags of {ident}: each daily partition is the tag of that day ({zone}); materialising a "
                    "partition creates the tag idempotently, a backfill fills missing tags, and tags that already "
                    "exist in the table (made by Java / Flink, or before this code location) are reported as "
                    "materialised by the observation sensor (metadata synced_from_table).")
TAGS_PERIODIC_DESCRIPTION = ("Tags of {ident} ({period} periods): materialising creates every tag that is due.")


def safe_name(text: str) -> str:
    """A valid Dagster name (letters, digits, underscores)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", text)


def safe_tag_value(text: str) -> str:
    """Dagster tag values: letters, digits, '-', '_', '.', at most 63 characters."""
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", text)[:63]


class PaimonTranslator:
    """Maps a table (`TableSpec`) to Dagster. Override any method; `get_asset_spec` and `get_tags_asset_spec` are
    the main hooks (their defaults are assembled from the smaller ones).

    `name`: the warehouse's name when a code location holds several (`build_paimon_definitions(…, name=…)`, the
    component's `name:`): the default keys become `paimon/<name>/<db>/<table>`, groups `paimon_<name>_<db>` and
    pools `paimon/<name>/<db>.<table>`, so two warehouses with a table of the same name do not clash."""

    name: Optional[str] = None

    def __init__(self, name: Optional[str] = None):
        self.name = name

    # ------------------------------------------------------------------ the table asset
    def get_asset_spec(self, table: TableSpec) -> AssetSpec:
        return AssetSpec(
            key=self.get_asset_key(table),
            description=self.get_description(table),
            group_name=self.get_group_name(table),
            tags=dict(self.get_tags(table)),
            owners=list(self.get_owners(table)) or None,
            kinds=set(KINDS),
            metadata=dict(self.get_metadata(table)),
            skippable=True,  # maintenance and observation never materialise the table
        )

    def get_asset_key(self, table: TableSpec) -> AssetKey:
        """`paimon/<db>/<table>`; a branch (`db.t$branch_b`) is `paimon/<db>/<table>/branch_<b>`."""
        branch = [safe_name(f"branch_{table.branch}")] if table.branch != "main" else []
        return AssetKey(["paimon", *([self.name] if self.name else []), table.database, table.table, *branch])

    def get_group_name(self, table: TableSpec) -> str:
        return safe_name(f"paimon_{self.name}_{table.database}" if self.name else f"paimon_{table.database}")

    def get_description(self, table: TableSpec) -> str:
        if table.broken:
            return BROKEN_DESCRIPTION.format(ident=table.identifier, error=table.error)
        return TABLE_DESCRIPTION.format(
            ident=table.identifier, kind=table.kind,
            pk=f", primary key {', '.join(table.primary_keys)}" if table.primary_keys else "",
            parts=f", partitioned by {', '.join(table.partition_keys)}" if table.partition_keys else "")

    def get_tags(self, table: TableSpec) -> Mapping[str, str]:
        """Asset tags; also the run tags of every run this package launches for the table."""
        return {"paimon/database": safe_tag_value(table.database), "paimon/table": safe_tag_value(table.identifier)}

    def get_owners(self, table: TableSpec) -> list[str]:
        return []

    def get_metadata(self, table: TableSpec) -> Mapping[str, object]:
        out: dict[str, object] = {"dagster/table_name": table.identifier}
        if table.location:
            out["dagster/uri"] = table.location
        if table.columns:
            out["dagster/column_schema"] = TableSchema(columns=[
                TableColumn(c.name, c.type, description=c.description,
                            constraints=None if c.nullable else TableColumnConstraints(nullable=False))
                for c in table.columns])
        if table.primary_keys:
            out["paimon/primary_keys"] = ", ".join(table.primary_keys)
        if table.partition_keys:
            out["paimon/partition_keys"] = ", ".join(table.partition_keys)
        if not table.broken:
            out["paimon/kind"] = table.kind
            out["paimon/bucket"] = table.bucket
        if table.tag_timing is not None:
            out["paimon/tag_create_time"] = f"{table.tag_timing.hh_mm} {table.tag_timing.zone}"
        if table.error:
            out["paimon/error"] = table.error
        out["paimon/pool"] = self.get_pool(table)  # claimed per table by the shared op (instance.table_slot)
        return out

    def get_pool(self, table: TableSpec) -> str:
        """Concurrency pool of everything that changes the table (its asset and its tags asset); give pools limit 1
        (the repository's dagster.yaml does) so two runs never maintain one table at once."""
        return f"paimon/{self.name}/{table.identifier}" if self.name else f"paimon/{table.identifier}"

    def get_shard(self, table: TableSpec) -> str:
        """The shard of the table: the tables of a shard are maintained together, in one run of up to the build's
        `shard_size` tables (the nightly schedule requests a run per shard, larger shards split). By default the
        table's database; return a team, a tier, a pool of your own … to run them together instead."""
        return table.database

    def get_op_name(self, table: TableSpec) -> str:
        """Name of the op of the multi-asset holding the table asset (its run config sits under
        `ops: {<name>: {config: …}}`). Tables with the same name share the op: by default one op per kind of table,
        whatever the number of tables. An op holds tables of one kind (its config is the kind's): a name given to
        tables of several kinds (per database, say) becomes one op per kind, `<name>__<kind>`."""
        if table.broken:
            return "paimon_unloadable_tables"
        return OP_NAMES[table.kind]

    def get_tags_op_name(self, table: TableSpec) -> str:
        """Name of the op of the multi-asset holding the table's tags asset (daily and periodic tags apart)."""
        return "paimon_daily_tags" if table.daily_tags else "paimon_periodic_tags"

    # ------------------------------------------------------------------ the tags asset
    def get_tags_asset_spec(self, table: TableSpec) -> AssetSpec:
        table_spec = self.get_asset_spec(table)
        description = (TAGS_DESCRIPTION.format(ident=table.identifier, zone=table.tag_zone) if table.daily_tags
                       else TAGS_PERIODIC_DESCRIPTION.format(ident=table.identifier, period=table.tag_period))
        return AssetSpec(
            key=AssetKey([*table_spec.key.path, "tags"]),
            description=description,
            group_name=table_spec.group_name,
            tags=dict(table_spec.tags),
            owners=list(table_spec.owners) or None,
            kinds={"paimon"},
            # no `deps` on the table: the table is never materialised here (it is observed), and Dagster would warn
            # on every launch that the upstream is missing; the shared dagster/table_name links the two instead
            metadata={"dagster/table_name": table.identifier, "paimon/tag_zone": table.tag_zone,
                      "paimon/tag_period": table.tag_period},
        )
