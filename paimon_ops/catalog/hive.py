"""The Hive Metastore catalog (`metastore=hive`): Paimon tables registered in a Hive Metastore, maintained the way
Java Paimon's `HiveCatalog` keeps the metastore in step.

* **Discovery.** The tables are exactly the metastore's Paimon tables — input and output format
  `org.apache.paimon.hive.mapred.PaimonInput/OutputFormat` — whose location holds a Paimon schema (Java's
  `tableExists`); plain Hive tables in the same databases are not tables here, and neither is a directory under the
  warehouse that the metastore does not list (a dropped table's leftovers).
* **Locations** come from the metastore: `paimon_location` with `location-in-properties`, else `sd.location`, else
  the database's location + `/<table>`, else `<warehouse>/<db>.db/<table>` (Java's `getTableLocation`). External
  tables and databases located elsewhere are found where they are.
* **The lock.** With `lock.enabled` (Java's default: on for object stores) every snapshot and schema commit holds the
  metastore's table lock exactly as Java's `HiveCatalogLock` takes it (`hive_client`): Java writers and paimon-ops
  then never commit the same snapshot id. It is released on every way out; a waiting lock is withdrawn.
* **`metastore.partitioned-table`.** Every commit registers the partitions it adds (`add_partitions`, if-not-exists,
  at `<table>[/<data-file.path-directory>]/<k=v…>`, Java's `createPartitions`). Partition expiry drops the expired
  partitions and their `<last key>=<value>.done` partitions from the metastore — except those another branch of the
  table still has — before its OVERWRITE commit (Java's `HiveCatalog.dropPartitions`, then the commit).
* **`metastore.tag-to-partition=<field>`.** Creating a tag adds the metastore partition `<field>=<tag>`; deleting or
  expiring it drops it; a rename does both (Java's `AddPartitionTagCallback`). Rollback's tag removals drop theirs
  too (Java 0.9's rollback makes no metastore call and leaves them behind).
* **Partitions marked done** (`mark_partition_done`): `done-partition` adds `<last key>=<value>.done` through
  `add_partitions` (Java's AddDonePartitionAction), `mark-event` reports a LOAD_DONE event (`markPartitionForEvent`,
  Java's MarkPartitionDoneEventAction); `partition_marked_done` / `metastore_partitions` read them back.
* **Schema changes** (rescale's `bucket`) are committed under the lock and then written to the metastore table
  (`alter_table`: the `hive.`-prefixed options, or every option with `sync-all-properties`), as Java's
  `alterTableImpl`; when the metastore refuses, the new schema file is removed again and the change refused in one
  line.
"""
from __future__ import annotations

import logging
import posixpath
from typing import Any, Mapping, Sequence

from paimon_ops.catalog.base import Catalog, TableEntry, lock_name
from paimon_ops.catalog.hive_client import (
    HiveMetastoreClient,
    database_location,
    is_paimon_table,
    table_location,
)
from paimon_ops.errors import CatalogError, InvalidOptionError, PaimonOpsError, TableNotFoundError
from paimon_ops.format.partition import escape_path_name, partition_spec, unescape_path_name
from paimon_ops.format.schema import TableSchema
from paimon_ops.options import (
    BUCKET_KEY,
    CATALOG_URI,
    LOCATION_IN_PROPERTIES,
    METASTORE_TAG_TO_PARTITION,
    PARTITION,
    PRIMARY_KEY,
    SYNC_ALL_PROPERTIES,
    Options,
)
from paimon_ops.table.fileio import FaultHook, FileIO
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import FileStoreTable, Identifier

log = logging.getLogger(__name__)

HIVE_OPTION_PREFIX = "hive."
DONE_SUFFIX = ".done"


def normalize_location(location: str) -> str:
    """Hadoop's `file:/x` (what the metastore stores for local tables) as `file:///x`, which FileIO opens."""
    for prefix in ("file://", "file:"):
        if location.startswith(prefix) and not location.startswith("file:///"):
            return "file:///" + location[len(prefix):].lstrip("/")
    return location


def partition_spec_of(table: FileStoreTable, scanner: Any, partition: bytes) -> dict[str, str]:
    """A partition as the metastore names it: key -> value text (Java's generatePartValues)."""
    schema = table.schema
    keys = list(schema.partition_keys)
    opts = table.options
    return partition_spec(scanner.partition_values(partition), keys, [f.type for f in schema.fields_of(keys)],
                          opts.partition_legacy_name, opts.partition_default_name)


def _spec_dir(spec: Mapping[str, str]) -> str:
    return "/".join(f"{escape_path_name(k)}={escape_path_name(v)}" for k, v in spec.items())


class HiveCatalog(Catalog):
    """See the module docstring. Catalog options: `uri` (thrift://host:9083, comma-separated for several),
    `location-in-properties`, `sync-all-properties`, `lock.enabled`, `lock-acquire-timeout`, `lock-check-max-sleep`,
    `catalog.connect-timeout`."""

    metastore = "hive"
    syncs_metastore = True

    def __init__(self, warehouse: str | None, options: Mapping[str, str] | None = None, *,
                 fault_hook: FaultHook | None = None) -> None:
        super().__init__(warehouse, options, fault_hook=fault_hook)
        uri = self.options.get(CATALOG_URI)
        if not uri:
            raise InvalidOptionError(CATALOG_URI.key, None, "the Hive Metastore's address, e.g. -o uri=thrift://HOST:9083 "
                                                            "(metastore=hive needs it)", "catalog")
        self.sync_all_properties = bool(self.options.get(SYNC_ALL_PROPERTIES))
        self.location_in_properties = bool(self.options.get(LOCATION_IN_PROPERTIES))
        self.client = HiveMetastoreClient(uri, connect_timeout_s=self.connect_timeout_s)
        self.client.databases()  # reachable, or one line naming it now (within the connect timeout)

    @property
    def endpoint(self) -> str:
        return self.client.endpoint

    def close(self) -> None:
        self.client.close()
        super().close()

    # ------------------------------------------------------------------ discovery
    def databases(self) -> list[str]:
        return self.client.databases()

    def _database(self, database: str) -> Any:
        db = self.client.get_database(database)
        if db is None:
            known = ", ".join(self.client.databases()) or "none"
            raise TableNotFoundError(f"{database}.*", self.endpoint,
                                     f"the Hive Metastore has no database {database!r} (databases: {known})")
        return db

    def tables(self, database: str) -> list[str]:
        """The database's Paimon tables (see the module docstring), sorted."""
        db = self._database(database)
        names = self.client.table_names(database)
        return sorted(t.tableName for t in self.client.get_tables(database, names)
                      if is_paimon_table(t) and self._has_schema(self._location(database, t.tableName, t, db)))

    def _has_schema(self, location: str) -> bool:
        io, root = FileIO.resolve(location, self.fault_hook, self.store_options or None)
        schema_dir = posixpath.join(root, "schema")
        try:
            return any(s.name.startswith("schema-") for s in io.list_status(schema_dir))
        except FileNotFoundError:
            return False

    def _location(self, database: str, table: str, hms_table: Any, db: Any = None) -> str:
        loc = table_location(hms_table, self.location_in_properties)
        if loc:
            return normalize_location(loc)
        db = db if db is not None else self.client.get_database(database)
        db_loc = database_location(db, self.location_in_properties) if db is not None else None
        if db_loc:
            return normalize_location(db_loc.rstrip("/") + "/" + table)
        if not self.warehouse:
            raise InvalidOptionError("warehouse", None, f"a warehouse: the Hive Metastore gives no location for table "
                                                        f"{database}.{table}", "catalog")
        return posixpath.join(str(self.warehouse).rstrip("/"), f"{database}.db", table)

    def hms_table(self, identifier: Identifier) -> Any:
        """The metastore's `Table` of a Paimon table; TableNotFoundError naming the metastore otherwise."""
        self._database(identifier.database)
        t = self.client.get_table(identifier.database, identifier.table)
        if t is None:
            known = ", ".join(self.tables(identifier.database)) or "none"
            raise TableNotFoundError(str(identifier), self.endpoint,
                                     f"the Hive Metastore has no table {identifier.table!r} in {identifier.database} "
                                     f"(its Paimon tables: {known})")
        if not is_paimon_table(t):
            fmt = t.sd.inputFormat if t.sd is not None else None
            raise TableNotFoundError(str(identifier), self.endpoint, f"it is not a Paimon table (input format {fmt})")
        return t

    def load_table(self, identifier: Identifier) -> TableEntry:
        location = self._location(identifier.database, identifier.table, self.hms_table(identifier))
        if not self._has_schema(location):
            raise TableNotFoundError(str(identifier), location, f"the Hive Metastore {self.endpoint} registers it "
                                     "there, but no Paimon schema is there (dropped or moved?)")
        return TableEntry(identifier, location)

    # ------------------------------------------------------------------ the lock
    def acquire_lock(self, table: FileStoreTable) -> int:
        """Java's HiveCatalogLock on the table (its branch: `t$branch_b`), see `HiveMetastoreClient.acquire`."""
        database, name = lock_name(table)
        return self.client.acquire(database, name, timeout=self.lock_acquire_timeout,
                                   max_sleep=self.lock_check_max_sleep)

    def release_lock(self, table: FileStoreTable, handle: Any) -> None:
        database, name = lock_name(table)
        self.client.release(int(handle), f"{database}.{name}")

    # ------------------------------------------------------------------ partitions
    def _data_root(self, table: FileStoreTable, hms: Any) -> str:
        ident = Identifier.parse(table.identifier)
        root = self._location(ident.database, ident.table, hms).rstrip("/")
        sub = table.options.data_path_directory
        return f"{root}/{sub}" if sub else root

    def add_partitions(self, table: FileStoreTable, partitions: Sequence[Mapping[str, str]]) -> None:
        """Register partitions if they are not there yet (`add_partitions(…, ifNotExists=true)`), each a copy of the
        table's storage descriptor at `<data root>/<k=v…>`."""
        if not partitions:
            return
        ident = Identifier.parse(table.identifier)
        hms = self.hms_table(ident)
        root = self._data_root(table, hms)
        self.client.add_partitions(ident.database, ident.table,
                                   [(list(s.values()), f"{root}/{_spec_dir(s)}") for s in partitions], hms.sd)
        log.info("registered %d partition(s) of %s in the Hive Metastore %s", len(partitions), ident, self.endpoint)

    def drop_partitions(self, table: FileStoreTable, partitions: Sequence[Mapping[str, str]]) -> None:
        """Drop the partitions and their `.done` partitions from the metastore, keeping those another branch of the
        table still has (Java's removePartitionsExistsInOtherBranches)."""
        if not partitions:
            return
        ident = Identifier.parse(table.identifier)
        kept = self._in_other_branches(table, partitions)
        dropping = [dict(s) for s in partitions if tuple(s.items()) not in kept]
        done = [{**s, list(s)[-1]: list(s.values())[-1] + DONE_SUFFIX} for s in partitions if s]
        dropped = sum(self.client.drop_partition(ident.database, ident.table, list(s.values()))
                      for s in dropping + done)
        log.info("dropped %d partition(s) of %s from the Hive Metastore %s (%d kept: another branch has them)",
                 dropped, ident, self.endpoint, len(kept))

    @staticmethod
    def _in_other_branches(table: FileStoreTable, specs: Sequence[Mapping[str, str]]) -> set[tuple]:
        """The specs among `specs` that another branch of the table (main included, when `table` is a branch) still
        has live files in, at its latest snapshot."""
        wanted = {tuple(s.items()) for s in specs}
        main = table if table.branch == "main" else table.for_branch("main")
        found: set[tuple] = set()
        for branch in ["main", *main.branches()]:
            if branch == table.branch:
                continue
            try:
                other = main.for_branch(branch)
                latest = other.snapshots.latest()
            except TableNotFoundError:
                continue  # a branch without a schema (Java: tableSchemaInFileSystem is empty)
            if latest is None:
                continue
            scanner = TableScanner(other)
            parts = {e.partition for e in scanner.live_entries(latest).values()}
            found |= {tuple(partition_spec_of(other, scanner, p).items()) for p in parts} & wanted
        return found

    # ------------------------------------------------------------------ partitions marked done
    def mark_partitions_done(self, table: FileStoreTable, partitions: Sequence[Mapping[str, str]]) -> None:
        """A LOAD_DONE event per partition (`markPartitionForEvent`), as Java's MarkPartitionDoneEventAction."""
        ident = Identifier.parse(table.identifier)
        for spec in partitions:
            self.client.mark_partition_done(ident.database, ident.table, spec)

    def partition_marked_done(self, table: FileStoreTable, partition: Mapping[str, str]) -> bool:
        ident = Identifier.parse(table.identifier)
        return self.client.is_partition_marked_done(ident.database, ident.table, partition)

    def metastore_partitions(self, table: FileStoreTable) -> list[dict[str, str]]:
        """Every partition the metastore registers for the table, as {key: value} (Hive's escaped names read
        back)."""
        ident = Identifier.parse(table.identifier)
        out = []
        for name in self.client.partition_names(ident.database, ident.table):
            spec = {}
            for part in name.split("/"):
                k, _, v = part.partition("=")
                spec[unescape_path_name(k)] = unescape_path_name(v)
            out.append(spec)
        return out

    # ------------------------------------------------------------------ tags
    def tag_created(self, table: FileStoreTable, name: str) -> None:
        field = table.options.get(METASTORE_TAG_TO_PARTITION)
        if field:
            self.add_partitions(table, [{field: name}])

    def tag_deleted(self, table: FileStoreTable, name: str) -> None:
        if table.options.get(METASTORE_TAG_TO_PARTITION):
            ident = Identifier.parse(table.identifier)
            self.client.drop_partition(ident.database, ident.table, [name])

    # ------------------------------------------------------------------ schema
    def commit_schema(self, table: FileStoreTable, schema: TableSchema) -> bool:
        """`schema-<id>` under the lock, then the metastore table (`after_schema`); when the metastore refuses, the
        schema file is removed again (Java's alterTableImpl) and the refusal raised: nothing changed."""
        with self.lock(table):
            if not table.schemas.commit(schema):
                return False
        try:
            self.after_schema(table, schema)
        except BaseException as e:
            path = table.schemas.path(schema.id)
            try:
                table.io.delete_file(path)
            except Exception as undo:  # noqa: BLE001 - say both
                raise CatalogError(self.endpoint, f"the Hive Metastore refused schema {schema.id} of "
                                   f"{table.identifier} ({e}) and {path} could not be removed ({undo})") from e
            if isinstance(e, PaimonOpsError):
                detail = e.detail if isinstance(e, CatalogError) else str(e)
                raise CatalogError(self.endpoint, f"the metastore's table {table.identifier} could not follow schema "
                                   f"{schema.id} ({detail}); the schema was removed again, nothing changed") from None
            raise
        return True

    def after_schema(self, table: FileStoreTable, schema: TableSchema) -> None:
        """The metastore table's parameters follow the options (Java's alterTableToHms); main branch only."""
        if table.branch != "main":
            return
        ident = Identifier.parse(table.identifier)
        hms = self.hms_table(ident)
        params = dict(hms.parameters or {})
        if self.sync_all_properties:
            params.update(schema.options)
            # Java's convertToPropertiesTableKey: the keys as options too (bucket keys: the option, else the
            # trimmed primary keys)
            bucket_keys = list(Options(schema.options).get(BUCKET_KEY)) or schema.trimmed_primary_keys
            for opt, cols in ((PRIMARY_KEY, schema.primary_keys), (PARTITION, schema.partition_keys),
                              (BUCKET_KEY, bucket_keys)):
                if cols:
                    params[opt.key] = ",".join(cols)
        else:
            params.update({k[len(HIVE_OPTION_PREFIX):]: v for k, v in schema.options.items()
                           if k.startswith(HIVE_OPTION_PREFIX)})
        hms.parameters = params
        self.client.alter_table(ident.database, ident.table, hms)


__all__ = ["HiveCatalog", "normalize_location"]
