"""The Hive Metastore catalog (`metastore=hive`): Paimon tables registered in a Hive Metastore, maintained the way
Java Paimon's `HiveCatalog` keeps the metastore in step.

* **Discovery.** The tables are exactly the metastore's Paimon tables — input and output format
  `org.apache.paimon.hive.mapred.PaimonInput/OutputFormat` — whose location holds a Paimon schema; plain Hive
  tables in the same databases are not tables here, and neither is a directory under the warehouse that the metastore
  does not list (a dropped table's leftovers).
* **Locations** come from the metastore: `paimon_location` with `location-in-properties`, else `sd.location`, else
  the database's location + `/<table>`, else `<warehouse>/<db>.db/<table>` (Java's `getTableLocation`). External
  tables (a custom `path`) are found where they are.
* **The lock.** With `lock.enabled` (Java's default: on for object stores) every snapshot and schema commit holds the
  metastore's table lock exactly as Java's `HiveCatalogLock` takes it (`hive_client.HiveMetastoreClient.table_lock`):
  Java writers and paimon-ops then never commit the same snapshot id.
* **`metastore.partitioned-table`.** Every commit registers the partitions it adds (`add_partitions`, if-not-exists;
  the location `<table>[/<data-file.path-directory>]/<k=v…>`). Partition expiry drops the expired partitions and their
  `<last key>=<value>.done` partitions from the metastore — except those another branch of the table still has —
  before its OVERWRITE commit (Java's `HiveCatalog.dropPartitions` then `truncatePartitions`).
* **`metastore.tag-to-partition=<field>`.** Creating a tag adds the metastore partition `<field>=<tag>`; deleting
  (or expiring) it drops it; a rename does both (Java's `AddPartitionTagCallback`).
* **Schema changes** (rescale's `bucket`) are committed under the lock and then written to the metastore table
  (`alter_table`: the `hive.`-prefixed options, or every option with `sync-all-properties`), as Java's
  `alterTableImpl`; when the metastore refuses, the new schema file is removed again and the change refused.

Rollback makes no metastore call (Java's neither).
"""
from __future__ import annotations

import contextlib
import logging
import posixpath
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping, Sequence

from paimon_ops.catalog.hive_client import (
    HiveMetastoreClient,
    MetastoreError,
    database_location,
    is_paimon_table,
    table_location,
)
from paimon_ops.errors import InvalidOptionError, PaimonOpsError, TableNotFoundError
from paimon_ops.format.binary_row import deserialize_row
from paimon_ops.format.partition import partition_spec
from paimon_ops.format.schema import TableSchema
from paimon_ops.options import METASTORE_PARTITIONED_TABLE, parse_duration
from paimon_ops.table.fileio import FaultHook, FileIO
from paimon_ops.table.table import FileStoreTable, Identifier

log = logging.getLogger(__name__)

HIVE = "hive"
TAG_TO_PARTITION = "metastore.tag-to-partition"
SYNC_ALL_PROPERTIES = "sync-all-properties"
HIVE_OPTION_PREFIX = "hive."
DONE_SUFFIX = ".done"
BRANCH_SEPARATOR = "$branch_"  # Java's Identifier object name of a branch: `<table>$branch_<name>`

# Java Paimon's defaults (CatalogOptions)
DEFAULT_LOCK_ACQUIRE_TIMEOUT = "8 min"
DEFAULT_LOCK_CHECK_MAX_SLEEP = "8 s"
DEFAULT_CONNECT_TIMEOUT_S = 10.0
DEFAULT_SOCKET_TIMEOUT = "600 s"  # hive.metastore.client.socket.timeout (Hive 2.3's default)


def _bool(options: Mapping[str, str], key: str, default: bool | None) -> bool | None:
    raw = options.get(key)
    if raw is None:
        return default
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        raise InvalidOptionError(key, raw, "true or false")
    return text == "true"


@dataclass(frozen=True)
class HiveSettings:
    """The catalog options a Hive catalog reads (Paimon's names and defaults)."""

    uri: str
    location_in_properties: bool = False
    lock_enabled: bool | None = None  # None: Java's default, on for object stores
    lock_acquire_timeout_s: float = 480.0
    lock_check_max_sleep_s: float = 8.0
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S
    socket_timeout_s: float = 600.0
    sync_all_properties: bool = False

    @classmethod
    def from_options(cls, options: Mapping[str, str], connect_timeout_s: float | None = None) -> HiveSettings:
        uri = options.get("uri") or options.get("hive.metastore.uris")
        if not uri:
            raise InvalidOptionError("uri", None, "the Hive Metastore's address, e.g. -o uri=thrift://host:9083 "
                                                  "(metastore=hive needs it)")

        def seconds(key: str, default: str) -> float:
            return parse_duration(options.get(key) or default, key).total_seconds()

        socket_raw = options.get("hive.metastore.client.socket.timeout") or DEFAULT_SOCKET_TIMEOUT
        if str(socket_raw).strip().isdigit():  # Hive reads a bare number as seconds (Paimon's durations: ms)
            socket_raw = f"{socket_raw} s"
        return cls(
            uri=str(uri),
            location_in_properties=bool(_bool(options, "location-in-properties", False)),
            lock_enabled=_bool(options, "lock.enabled", None),
            lock_acquire_timeout_s=seconds("lock-acquire-timeout", DEFAULT_LOCK_ACQUIRE_TIMEOUT),
            lock_check_max_sleep_s=seconds("lock-check-max-sleep", DEFAULT_LOCK_CHECK_MAX_SLEEP),
            connect_timeout_s=float(connect_timeout_s) if connect_timeout_s is not None else DEFAULT_CONNECT_TIMEOUT_S,
            socket_timeout_s=parse_duration(socket_raw, "hive.metastore.client.socket.timeout").total_seconds(),
            sync_all_properties=bool(_bool(options, SYNC_ALL_PROPERTIES, False)),
        )


def normalize_location(location: str) -> str:
    """Hadoop's `file:/x` (what the metastore stores for local tables) as `file:///x`, which FileIO opens."""
    if location.startswith("file:") and not location.startswith("file://"):
        return "file:///" + location[len("file:"):].lstrip("/")
    if location.startswith("file://") and not location.startswith("file:///"):
        return "file:///" + location[len("file://"):].lstrip("/")  # file://x (no authority intended)
    return location


class HiveCatalog:
    """Tables of a Hive Metastore; see the module docstring. `options` are the catalog options (`uri`,
    `location-in-properties`, `lock.enabled`, `lock-acquire-timeout`, `lock-check-max-sleep`, the storage's own
    options such as `s3.*`)."""

    name = HIVE

    def __init__(self, warehouse: str | None, options: Mapping[str, str], fault_hook: FaultHook | None = None,
                 connect_timeout_s: float | None = None, client: HiveMetastoreClient | None = None):
        self.options = {str(k): str(v) for k, v in options.items()}
        self.settings = HiveSettings.from_options(self.options, connect_timeout_s)
        self.warehouse = warehouse
        self.fault_hook = fault_hook
        self.client = client or HiveMetastoreClient(self.settings.uri, connect_timeout_s=self.settings.connect_timeout_s,
                                                    socket_timeout_s=self.settings.socket_timeout_s)

    @property
    def endpoint(self) -> str:
        return self.client.endpoint

    def close(self) -> None:
        self.client.close()

    # ------------------------------------------------------------------ discovery
    def databases(self) -> list[str]:
        return self.client.databases()

    def _require_database(self, database: str) -> Any:
        db = self.client.get_database(database)
        if db is None:
            known = ", ".join(self.client.databases()) or "none"
            raise TableNotFoundError(f"{database}.*", self.endpoint,
                                     f"the Hive Metastore has no database {database!r} (databases: {known})")
        return db

    def tables(self, database: str) -> list[str]:
        """The database's Paimon tables (see the module docstring), sorted."""
        db = self._require_database(database)
        names = self.client.table_names(database)
        out = []
        for t in self.client.get_tables(database, names):
            if is_paimon_table(t) and self._has_schema(self._location(database, t.tableName, t, db)):
                out.append(t.tableName)
        return sorted(out)

    def all_tables(self) -> list[str]:
        return [f"{d}.{t}" for d in self.databases() for t in self.tables(d)]

    def _has_schema(self, location: str) -> bool:
        io, root = self._resolve(location)
        try:
            return io.is_dir(posixpath.join(root, "schema")) and bool(
                [s for s in io.list_status(posixpath.join(root, "schema")) if s.name.startswith("schema-")])
        except FileNotFoundError:
            return False

    # ------------------------------------------------------------------ locations and tables
    def _location(self, database: str, table: str, hms_table: Any, db: Any = None) -> str:
        loc = table_location(hms_table, self.settings.location_in_properties) if hms_table is not None else None
        if loc:
            return normalize_location(loc)
        db = db if db is not None else self.client.get_database(database)
        db_loc = database_location(db, self.settings.location_in_properties) if db is not None else None
        if db_loc:
            return normalize_location(db_loc.rstrip("/") + "/" + table)
        if not self.warehouse:
            raise InvalidOptionError("warehouse", None, f"a warehouse: the Hive Metastore gives no location for table "
                                                        f"{database}.{table}")
        return posixpath.join(self.warehouse.rstrip("/"), f"{database}.db", table)

    def hms_table(self, identifier: str | Identifier) -> Any:
        """The metastore's `Table` of a Paimon table; TableNotFoundError naming the metastore otherwise."""
        ident = identifier if isinstance(identifier, Identifier) else Identifier.parse(identifier)
        self._require_database(ident.database)
        t = self.client.get_table(ident.database, ident.table)
        if t is None:
            known = ", ".join(self.tables(ident.database)) or "none"
            raise TableNotFoundError(str(ident), self.endpoint,
                                     f"the Hive Metastore has no table {ident.table!r} in {ident.database} "
                                     f"(its Paimon tables: {known})")
        if not is_paimon_table(t):
            fmt = t.sd.inputFormat if t.sd is not None else None
            raise TableNotFoundError(str(ident), self.endpoint, f"it is not a Paimon table (input format {fmt})")
        return t

    def table_path(self, identifier: str | Identifier) -> str:
        ident = identifier if isinstance(identifier, Identifier) else Identifier.parse(identifier)
        return self._location(ident.database, ident.table, self.hms_table(ident))

    def _resolve(self, location: str) -> tuple[FileIO, str]:
        """(FileIO, root) of a table location, opened with the catalog's storage options (`s3.*`); a local FileIO is
        confined to that table's root (object-store clients are shared per bucket by FileIO itself)."""
        return FileIO.resolve(location, self.fault_hook, self.options)

    def get_table(self, identifier: str | Identifier, **kw: Any) -> FileStoreTable:
        ident = identifier if isinstance(identifier, Identifier) else Identifier.parse(identifier)
        io, root = self._resolve(self.table_path(ident))
        return FileStoreTable(root, identifier=str(ident), io=io, **kw)

    # ------------------------------------------------------------------ the lock
    def lock_enabled(self, table: FileStoreTable) -> bool:
        if self.settings.lock_enabled is not None:
            return self.settings.lock_enabled
        return not table.io.has_directories  # Java: on by default for object stores

    @contextlib.contextmanager
    def commit_lock(self, table: FileStoreTable) -> Iterator[None]:
        """Hold the metastore's lock on the table (Java's lock name: the branch's object name) while committing."""
        if not self.lock_enabled(table):
            yield
            return
        ident = Identifier.parse(table.identifier)
        name = ident.table if table.branch == "main" else f"{ident.table}{BRANCH_SEPARATOR}{table.branch}"
        with self.client.table_lock(ident.database, name, acquire_timeout_s=self.settings.lock_acquire_timeout_s,
                                    check_max_sleep_s=self.settings.lock_check_max_sleep_s):
            yield

    # ------------------------------------------------------------------ partitions
    @staticmethod
    def partitioned_in_metastore(table: FileStoreTable) -> bool:
        return bool(table.schema.partition_keys) and bool(table.options.get(METASTORE_PARTITIONED_TABLE))

    def _specs(self, table: FileStoreTable, partitions: Iterable[bytes]) -> list[dict[str, str]]:
        schema = table.schema
        keys = list(schema.partition_keys)
        types = [f.type for f in schema.fields_of(keys)]
        opts = table.options
        out = []
        for p in partitions:
            values = deserialize_row(p, [t.with_nullable(True) for t in types], "partition")
            out.append(partition_spec(values, keys, types, opts.partition_legacy_name, opts.partition_default_name))
        return out

    def _data_root(self, table: FileStoreTable, hms: Any) -> str:
        ident = Identifier.parse(table.identifier)
        root = self._location(ident.database, ident.table, hms).rstrip("/")
        sub = table.options.data_path_directory
        return f"{root}/{sub}" if sub else root

    def _add(self, table: FileStoreTable, specs: Sequence[Mapping[str, str]]) -> None:
        if not specs:
            return
        ident = Identifier.parse(table.identifier)
        hms = self.hms_table(ident)
        root = self._data_root(table, hms)
        parts = [(list(s.values()), f"{root}/{_spec_dir(s)}") for s in specs]
        self.client.add_partitions(ident.database, ident.table, parts, hms.sd)
        log.info("registered %d partition(s) of %s in the Hive Metastore", len(parts), ident)

    def partitions_added(self, table: FileStoreTable, partitions: Iterable[bytes]) -> None:
        """After a commit: register the partitions its ADD entries went into (Java's AddPartitionCommitCallback)."""
        if not self.partitioned_in_metastore(table):
            return
        self._add(table, self._specs(table, sorted(set(partitions))))

    def drop_partitions(self, table: FileStoreTable, partitions: Sequence[bytes]) -> list[dict[str, str]]:
        """Before partition expiry's OVERWRITE commit: drop the partitions and their `.done` partitions from the
        metastore, keeping those another branch of the table still has. Returns the specs dropped."""
        if not self.partitioned_in_metastore(table) or not partitions:
            return []
        specs = self._specs(table, partitions)
        done = [dict(list(s.items())[:-1] + [(list(s)[-1], list(s.values())[-1] + DONE_SUFFIX)]) for s in specs]
        keep = self._in_other_branches(table, specs)
        ident = Identifier.parse(table.identifier)
        dropped = []
        for spec in [s for s in specs if tuple(s.items()) not in keep] + done:
            if self.client.drop_partition(ident.database, ident.table, list(spec.values())):
                dropped.append(spec)
        log.info("dropped %d partition(s) of %s from the Hive Metastore (%d kept: another branch has them)",
                 len(dropped), ident, len(specs) - len([s for s in specs if tuple(s.items()) not in keep]))
        return dropped

    def _in_other_branches(self, table: FileStoreTable, specs: Sequence[Mapping[str, str]]) -> set[tuple]:
        from paimon_ops.table.scan import TableScanner
        wanted = {tuple(s.items()) for s in specs}
        main = table if table.branch == "main" else table.for_branch("main")
        found: set[tuple] = set()
        for branch in ["main", *main.branches()]:
            if branch == table.branch:
                continue
            try:
                other = main.for_branch(branch)
            except TableNotFoundError:
                continue  # a branch without a schema (Java: tableSchemaInFileSystem is empty)
            latest = other.snapshots.latest()
            if latest is None:
                continue
            parts = {e.partition for e in TableScanner(other).live_entries(latest).values()}
            found |= {tuple(s.items()) for s in self._specs(other, parts)} & wanted
        return found

    # ------------------------------------------------------------------ tags
    @staticmethod
    def tag_partition_field(table: FileStoreTable) -> str | None:
        return table.options.raw.get(TAG_TO_PARTITION) or None

    def tag_created(self, table: FileStoreTable, name: str) -> None:
        field = self.tag_partition_field(table)
        if field:
            self._add(table, [{field: name}])

    def tag_deleted(self, table: FileStoreTable, name: str) -> None:
        field = self.tag_partition_field(table)
        if field:
            ident = Identifier.parse(table.identifier)
            self.client.drop_partition(ident.database, ident.table, [name])

    def tag_renamed(self, table: FileStoreTable, old: str, new: str) -> None:
        self.tag_created(table, new)
        self.tag_deleted(table, old)

    # ------------------------------------------------------------------ schema
    def schema_committed(self, table: FileStoreTable, schema: TableSchema) -> None:
        """After a schema commit on the main branch: the metastore table's parameters follow the options (Java's
        alterTableToHms); raises MetastoreError when the metastore refuses."""
        if table.branch != "main":
            return  # Java: only the main branch's schema is in the metastore
        ident = Identifier.parse(table.identifier)
        hms = self.hms_table(ident)
        params = dict(hms.parameters or {})
        if self.settings.sync_all_properties:
            params.update(schema.options)
            for key, cols in (("primary-key", schema.primary_keys), ("partition", schema.partition_keys)):
                if cols:
                    params[key] = ",".join(cols)
        else:
            params.update({k[len(HIVE_OPTION_PREFIX):]: v for k, v in schema.options.items()
                           if k.startswith(HIVE_OPTION_PREFIX)})
        hms.parameters = params
        self.client.alter_table(ident.database, ident.table, hms)

    def commit_schema(self, table: FileStoreTable, schema: TableSchema) -> bool:
        """Create `schema-<id>` under the lock and sync the metastore; when the metastore refuses, the schema file is
        removed again (Java's alterTableImpl) and the refusal raised. False when the id was taken concurrently."""
        with self.commit_lock(table):
            if not table.schemas.commit(schema):
                return False
            try:
                self.schema_committed(table, schema)
            except BaseException as e:
                try:
                    table.io.delete_file(table.schemas.path(schema.id))
                except Exception as undo:  # noqa: BLE001 - report both
                    raise PaimonOpsError(f"{table.identifier}: the Hive Metastore {self.endpoint} refused schema "
                                         f"{schema.id} ({e}) and its file could not be removed ({undo})") from e
                if isinstance(e, MetastoreError):
                    raise MetastoreError(f"{e}; schema {schema.id} of {table.identifier} was not committed") from None
                raise
        return True


def _spec_dir(spec: Mapping[str, str]) -> str:
    from paimon_ops.format.partition import escape_path_name
    return "/".join(f"{escape_path_name(k)}={escape_path_name(v)}" for k, v in spec.items())


__all__ = ["HIVE", "HiveCatalog", "HiveSettings", "normalize_location"]
