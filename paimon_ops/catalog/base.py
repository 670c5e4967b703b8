"""The catalog abstraction: what every backend provides (see the package docstring for the contract)."""
from __future__ import annotations

import contextlib
import importlib
import logging
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cached_property
from typing import Any, ClassVar, Iterator, Mapping, Sequence

from paimon_ops.errors import InvalidOptionError, UnsupportedError
from paimon_ops.format.schema import TableSchema
from paimon_ops.format.snapshot import Snapshot, Tag
from paimon_ops.options import (
    CATALOG_CONNECT_TIMEOUT,
    CATALOG_WAREHOUSE,
    LOCK_ACQUIRE_TIMEOUT,
    LOCK_CHECK_MAX_SLEEP,
    LOCK_ENABLED,
    METASTORE,
    METASTORE_ALLOW_OUT_OF_SYNC,
    METASTORE_PARTITIONED_TABLE,
    METASTORE_TAG_TO_PARTITION,
    Options,
    is_catalog_option,
    is_secret_catalog_option,
)
from paimon_ops.table.commit import PartitionStatistics, SnapshotCommit
from paimon_ops.table.fileio import FaultHook, FileIO, split_location
from paimon_ops.table.table import (
    MAIN_BRANCH,
    FileStoreTable,
    Identifier,
    branch_names,
    match_identifiers,
)

log = logging.getLogger(__name__)

# metastore -> "module:Class" of its backend, imported when a catalog of that kind is opened (a backend whose module
# is not in this build is refused naming the option).
BACKENDS: dict[str, str] = {
    "filesystem": "paimon_ops.catalog.filesystem:FileSystemCatalog",
    "jdbc": "paimon_ops.catalog.jdbc:JdbcCatalog",
    "hive": "paimon_ops.catalog.hive:HiveCatalog",
    "rest": "paimon_ops.catalog.rest:RestCatalog",
}

# Java's FileIOUtils.isObjectStore: where `lock.enabled` defaults to true (AbstractCatalog.lockEnabled).
OBJECT_STORE_SCHEMES = ("s3", "emr", "oss", "wasb", "abfs", "gs")

# What each operation would put out of step in a metastore: (table option, operations).
PARTITION_SYNC_OPERATIONS = ("expire_partitions",)
TAG_SYNC_OPERATIONS = ("create_tag", "replace_tag", "rename_tag", "delete_tags", "expire_tags", "auto_tag",
                       "fast_forward")


def is_object_store(location: str) -> bool:
    scheme = split_location(location)[0].lower()
    return any(scheme.startswith(s) for s in OBJECT_STORE_SCHEMES)


# ---------------------------------------------------------------------------------------------- commit requests
@dataclass(frozen=True)
class TableEntry:
    """A table as its catalog knows it (`Catalog.load_table`)."""

    identifier: Identifier
    location: str                                              # the table's root: a path or URI
    options: Mapping[str, str] = field(default_factory=dict)   # options the catalog adds on top of the schema's
    io_options: Mapping[str, str] = field(default_factory=dict, repr=False)  # storage settings for this table (secrets)
    external: bool = False                                     # outside the catalog's management (REST: file commits)
    uuid: str | None = None                                    # the catalog's id of the table (REST `tableId`)


# ---------------------------------------------------------------------------------------------- the backend
class Catalog:
    """One catalog (see the package docstring). Subclasses set `metastore` and implement discovery; the history
    methods have the filesystem behaviour by default (create-if-absent under `lock()`, which is a no-op here)."""

    metastore: ClassVar[str] = ""
    # True when the catalog owns the table's history (REST): snapshots are committed, loaded and rolled back through
    # it, and paimon-ops never writes snapshot-*, LATEST or EARLIEST itself.
    supports_version_management: ClassVar[bool] = False
    # True when the backend keeps metastore partitions in step (Hive): `metastore.partitioned-table` and
    # `metastore.tag-to-partition` tables are maintained through it; other backends refuse the operations that would
    # put the metastore out of step (`check_sync`), unless `metastore.allow-out-of-sync`.
    syncs_metastore: ClassVar[bool] = False

    def __init__(self, warehouse: str | None, options: Mapping[str, str] | None = None, *,
                 fault_hook: FaultHook | None = None) -> None:
        raw = {k: str(v) for k, v in (options or {}).items()}
        if warehouse:
            raw.setdefault(CATALOG_WAREHOUSE.key, warehouse)
        self.options = Options({k: v for k, v in raw.items() if is_catalog_option(k)}, where="catalog")
        self.store_options = {k: v for k, v in raw.items() if not is_catalog_option(k)}
        self.warehouse = warehouse or self.options.get(CATALOG_WAREHOUSE)
        self.fault_hook = fault_hook
        self._closed = False

    # ------------------------------------------------------------------ identity and lifecycle
    @property
    def endpoint(self) -> str:
        """Where the catalog is, for messages (never a secret)."""
        return str(self.warehouse)

    @property
    def connect_timeout_s(self) -> float:
        return self.options.get(CATALOG_CONNECT_TIMEOUT).total_seconds()

    def recorded_options(self) -> dict[str, str]:
        """The catalog options a saved plan records to re-open its table through this catalog (`paimon-ops apply`):
        none for the filesystem catalog (the location is enough), never a secret."""
        if self.metastore == "filesystem":
            return {}
        out = {k: v for k, v in self.options.raw.items() if not is_secret_catalog_option(k)}
        out[METASTORE.key] = self.metastore
        return out

    def close(self) -> None:
        """Release connections; idempotent."""
        self._closed = True

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.endpoint!r})"

    # ------------------------------------------------------------------ discovery
    def databases(self) -> list[str]:
        raise NotImplementedError

    def tables(self, database: str) -> list[str]:
        """The Paimon tables of `database` (names, sorted)."""
        raise NotImplementedError

    def all_tables(self) -> list[str]:
        return [f"{d}.{t}" for d in self.databases() for t in self.tables(d)]

    def load_table(self, identifier: Identifier) -> TableEntry:
        """Where the table is and what the catalog says about it; TableNotFoundError when the catalog does not
        know it."""
        raise NotImplementedError

    def table_location(self, identifier: str | Identifier) -> str:
        return self.load_table(_ident(identifier)).location

    @cached_property
    def io(self) -> FileIO:
        """The warehouse's FileIO (tables elsewhere get their own, `table_io`)."""
        if not self.warehouse:
            raise InvalidOptionError(CATALOG_WAREHOUSE.key, None, "the warehouse (a path or URI)", "catalog")
        return FileIO.resolve(str(self.warehouse), self.fault_hook, self.store_options or None)[0]

    def table_files(self, identifier: str | Identifier) -> tuple[FileIO, str]:
        """(FileIO, root) of a table without opening it (fast probes of its hints)."""
        return self.table_io(self.load_table(_ident(identifier)))

    def table_io(self, entry: TableEntry) -> tuple[FileIO, str]:
        """The FileIO and root of a table (the catalog's store settings, then the table's own)."""
        options = {**self.store_options, **entry.io_options} or None
        return FileIO.resolve(entry.location, self.fault_hook, options)

    def get_table(self, identifier: str | Identifier, *, branch: str | None = None,
                  options_override: Mapping[str, str] | None = None) -> FileStoreTable:
        """The table (`db.t`) or one of its branches (`db.t$branch_b`, or `branch=`), bound to this catalog (every
        commit of it goes through `commit_snapshot`); an unknown branch raises BranchNotFoundError. The catalog
        knows tables: a branch is found in its table's directory."""
        ident = _ident(identifier)
        ident = ident.asked_for(branch)
        entry = self.load_table(ident.on_branch(MAIN_BRANCH))
        io, root = self.table_io(entry)
        overrides = {**entry.options, **(options_override or {})}
        table = FileStoreTable(root, identifier=ident.table_name, options_override=overrides, io=io, catalog=self)
        return table if ident.branch == MAIN_BRANCH else table.for_branch(ident.branch)

    def matching(self, pattern: str, exclude: Sequence[str] = ()) -> list[str]:
        """Identifiers matching a table pattern: tables, or with `$branch_…` their branches
        (`paimon_ops.table.table.match_identifiers`)."""
        return match_identifiers(self.all_tables(), pattern, exclude,
                                 lambda t: branch_names(*self.table_files(t)))

    # ------------------------------------------------------------------ history
    def owns_history(self, table: FileStoreTable) -> bool:
        """Whether this catalog owns the history of this table (loads, commits and rolls back its snapshots, keeps
        its hints): `supports_version_management`, except for tables it does not manage (REST external tables)."""
        return self.supports_version_management

    def latest_snapshot(self, table: FileStoreTable) -> Snapshot | None:
        """The latest snapshot of the table's branch. Only backends with version management override it (the table's
        SnapshotManager asks them); the others read it from the files."""
        return table.snapshots.latest_from_files()

    def commit_snapshot(self, table: FileStoreTable, commit: SnapshotCommit) -> bool:
        """Make `commit.snapshot` the table's next snapshot unless another writer took its id (False: the caller
        re-reads the latest and retries). Default: create-if-absent of `snapshot-<id>` under the table lock
        (Java's RenamingSnapshotCommit), then the metastore's partitions (`after_commit`)."""
        with self.lock(table):
            won = table.snapshots.commit(commit.snapshot, commit.tmp_token)
        if won:
            self.after_commit(table, commit)
        return won

    def after_commit(self, table: FileStoreTable, commit: SnapshotCommit) -> None:
        """After a successful snapshot commit (Java's commit callbacks): a metastore registers the added partitions
        (`add_partitions`) when the table says `metastore.partitioned-table`. Errors here are logged, not raised: the
        snapshot is committed."""
        if not self.syncs_metastore or not table.schema.partition_keys or \
                not table.options.get(METASTORE_PARTITIONED_TABLE) or not commit.added_partitions:
            return
        try:
            self.add_partitions(table, commit.added_partitions)
        except Exception as e:  # noqa: BLE001 - committed: the metastore is repaired by the next commit or repair
            log.warning("snapshot %s of %s is committed, but registering its partitions in %s failed: %s",
                        commit.snapshot.id, table.identifier, self.endpoint, e)

    def is_committed(self, table: FileStoreTable, snapshot: Snapshot) -> bool | None:
        """After a commit attempt failed part way, whether `snapshot` became the table's latest: True, False, or None
        when it cannot be told (then nothing the attempt wrote is removed). Asked only of catalogs that own the
        table's history; the others' snapshots are checked on the files (table.commit)."""
        return None

    def commit_schema(self, table: FileStoreTable, schema: TableSchema) -> bool:
        """Create `schema-<id>` unless it exists (False: another writer changed the schema), under the table lock
        (Java's `runWithLock(schemaManager.commitChanges)`); a metastore then syncs the table (`after_schema`)."""
        with self.lock(table):
            won = table.schemas.commit(schema)
        if won:
            self.after_schema(table, schema)
        return won

    def after_schema(self, table: FileStoreTable, schema: TableSchema) -> None:
        """After a schema commit: a metastore updates its copy of the table (Hive `alter_table`)."""

    def rollback_to(self, table: FileStoreTable, *, snapshot_id: int | None = None, tag: str | None = None,
                    from_snapshot: int | None = None) -> None:
        """Roll back through the catalog (backends with version management only: REST `POST …/rollback`); the others
        roll back on the files (lifecycle.rollback)."""
        raise UnsupportedError(f"{self.metastore} catalog {self.endpoint} has no rollback of its own; paimon-ops rolls "
                               "back on the table's files")

    # ------------------------------------------------------------------ metastore partitions and tags
    def add_partitions(self, table: FileStoreTable, partitions: Sequence[Mapping[str, str]]) -> None:
        """Register partitions (if not there yet) in the metastore. Only backends with `syncs_metastore`."""

    def drop_partitions(self, table: FileStoreTable, partitions: Sequence[Mapping[str, str]]) -> None:
        """Partition expiry, before its OVERWRITE commit: drop the partitions (and their `.done` partitions, keeping
        those another branch still has) from the metastore. Called only for `metastore.partitioned-table` tables and
        only on backends with `syncs_metastore`."""

    def mark_partitions_done(self, table: FileStoreTable, partitions: Sequence[Mapping[str, str]]) -> None:
        """Report each partition done to the metastore (Java's `mark-event` mark-done action: a LOAD_DONE event). Only
        backends with `syncs_metastore`; the others refuse (the planner refuses first, naming the option)."""
        raise UnsupportedError(f"the {self.metastore} catalog {self.endpoint} has no metastore to report partition "
                               "events to")

    def partition_marked_done(self, table: FileStoreTable, partition: Mapping[str, str]) -> bool:
        """Whether the metastore holds the partition's done event (readers of `mark-event`)."""
        raise UnsupportedError(f"the {self.metastore} catalog {self.endpoint} has no metastore holding partition "
                               "events")

    def metastore_partitions(self, table: FileStoreTable) -> list[dict[str, str]]:
        """The partitions the metastore registers for the table (readers of `done-partition`)."""
        raise UnsupportedError(f"the {self.metastore} catalog {self.endpoint} registers no partitions")

    def tag_created(self, table: FileStoreTable, name: str) -> None:
        """A tag was created or replaced (manual, automatic, batch, the new name of a rename): a metastore adds the
        partition `<metastore.tag-to-partition>=<name>`."""

    def tag_deleted(self, table: FileStoreTable, name: str) -> None:
        """A tag was deleted (deletion, expiry, the old name of a rename): a metastore drops its partition."""

    # ------------------------------------------------------------------ tags through the catalog (REST tag endpoints)
    def writes_tags(self, table: FileStoreTable) -> bool:
        """True when the catalog creates and deletes the table's tags itself (`write_tag` / `delete_tag`) instead of
        the executor writing and deleting tag files: a REST server that offers its tag endpoints."""
        return False

    def write_tag(self, table: FileStoreTable, name: str, tag: Tag, replace: bool) -> bool:
        """Create tag `name` (`tag`: its snapshot and retention) through the catalog; `replace`: overwrite one that
        exists. False when it exists already and `replace` is not set. Only when `writes_tags`."""
        raise NotImplementedError

    def delete_tag(self, table: FileStoreTable, name: str) -> bool:
        """Delete tag `name` through the catalog; False when it did not exist. Only when `writes_tags`."""
        raise NotImplementedError

    def check_sync(self, table: FileStoreTable, operation: str) -> None:
        """Refuse, before planning, an operation that would put the table's metastore out of step (see
        `refuse_out_of_sync`); backends with `syncs_metastore` keep it in step instead."""
        if not self.syncs_metastore:
            refuse_out_of_sync(table, operation, f"this {self.metastore} catalog",
                               bool(self.options.get(METASTORE_ALLOW_OUT_OF_SYNC)))

    # ------------------------------------------------------------------ the lock
    @property
    def lock_enabled(self) -> bool:
        """`lock.enabled`, else on for object-store warehouses (Java's AbstractCatalog.lockEnabled)."""
        value = self.options.value(LOCK_ENABLED)
        if value is not None:
            return value
        return bool(self.warehouse) and is_object_store(str(self.warehouse))

    @property
    def lock_acquire_timeout(self) -> timedelta:
        return self.options.get(LOCK_ACQUIRE_TIMEOUT)

    @property
    def lock_check_max_sleep(self) -> timedelta:
        return self.options.get(LOCK_CHECK_MAX_SLEEP)

    @contextlib.contextmanager
    def lock(self, table: FileStoreTable) -> Iterator[None]:
        """Hold the catalog's lock of the table (its branch) for the block: acquired before, released after on every
        path (errors, KeyboardInterrupt / SIGTERM, a cancelled run). No lock here; Hive and JDBC override
        `acquire_lock` / `release_lock` and take it when `lock_enabled`."""
        if not self.lock_enabled:
            yield
            return
        handle = self.acquire_lock(table)
        try:
            yield
        finally:
            self.release_lock(table, handle)

    def acquire_lock(self, table: FileStoreTable) -> Any:
        """Take the table's lock, waiting (50 ms doubling up to `lock-check-max-sleep`, giving up after
        `lock-acquire-timeout` with a LockTimeoutError naming the table); returns what `release_lock` needs."""
        raise UnsupportedError(f"{LOCK_ENABLED.key}=true: the {self.metastore} catalog has no lock; use metastore=hive "
                               "or metastore=jdbc")

    def release_lock(self, table: FileStoreTable, handle: Any) -> None:
        raise NotImplementedError


# ---------------------------------------------------------------------------------------------- opening
def _ident(identifier: str | Identifier) -> Identifier:
    return identifier if isinstance(identifier, Identifier) else Identifier.parse(identifier)


def lock_name(table: FileStoreTable) -> tuple[str, str]:
    """(database, object) of a table's lock, the object carrying the branch as Java's does (`t$branch_b`)."""
    ident = Identifier.parse(table.identifier)
    name = ident.table if table.branch == "main" else f"{ident.table}$branch_{table.branch}"
    return ident.database, name


def backend(metastore: str) -> type[Catalog]:
    """The backend class of a `metastore` value."""
    target = BACKENDS.get(metastore)
    if target is None:
        raise InvalidOptionError(METASTORE.key, metastore, " | ".join(BACKENDS), "catalog")
    module, _, name = target.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except ModuleNotFoundError as e:
        if e.name == module:
            raise UnsupportedError(f"option {METASTORE.key}={metastore}: this build of paimon-ops has no {metastore} "
                                   "catalog") from None
        raise


def open_catalog(warehouse: str | None, options: Mapping[str, str] | None = None, *,
                 fault_hook: FaultHook | None = None) -> Catalog:
    """The catalog `options` describe (`metastore`, default filesystem) over `warehouse`. Options that are not catalog
    options (object-store settings such as s3.endpoint) configure the warehouse's file system."""
    raw = {k: str(v) for k, v in (options or {}).items()}
    metastore = Options(raw, where="catalog").get(METASTORE)
    cls = backend(metastore)
    return cls(warehouse, raw, fault_hook=fault_hook)


def catalog_of(table: FileStoreTable) -> Catalog | None:
    """The catalog a table was opened through (None: opened by its location alone, i.e. its files are the truth)."""
    cat = getattr(table, "catalog", None)
    return cat if isinstance(cat, Catalog) else None


def commit_schema(table: FileStoreTable, schema: TableSchema) -> bool:
    """Commit a schema through the table's catalog (create-if-absent of schema-<id> for a table opened by location)."""
    cat = catalog_of(table)
    return cat.commit_schema(table, schema) if cat is not None else table.schemas.commit(schema)


def notify_tags(table: FileStoreTable, created: Sequence[str] = (), deleted: Sequence[str] = ()) -> None:
    """Tell the table's catalog which tags were created (or replaced) and deleted (its metastore partitions)."""
    cat = catalog_of(table)
    if cat is None or not (created or deleted):
        return
    for name in deleted:
        cat.tag_deleted(table, name)
    for name in created:
        cat.tag_created(table, name)


def check_sync(table: FileStoreTable, operation: str) -> None:
    """`Catalog.check_sync` of the table's catalog; a table opened by its location alone has no metastore either."""
    cat = catalog_of(table)
    if cat is not None:
        cat.check_sync(table, operation)
    else:
        refuse_out_of_sync(table, operation, "a table opened by its location (no catalog)", False)


def refuse_out_of_sync(table: FileStoreTable, operation: str, without: str, allowed: bool) -> None:
    """A table whose options register its partitions (`metastore.partitioned-table`) or tags
    (`metastore.tag-to-partition`) in a metastore is refused the operations that would change those without the
    metastore: partition expiry, and creating, replacing, renaming, deleting and expiring tags. One line naming the
    option and how to give the catalog; `metastore.allow-out-of-sync=true` (a catalog option, or the table's)
    overrides."""
    opts = table.options
    if allowed or opts.get(METASTORE_ALLOW_OUT_OF_SYNC):
        return
    if operation in PARTITION_SYNC_OPERATIONS and table.schema.partition_keys and \
            opts.get(METASTORE_PARTITIONED_TABLE):
        option, value, what = METASTORE_PARTITIONED_TABLE.key, "true", "partitions"
    elif operation in TAG_SYNC_OPERATIONS and opts.get(METASTORE_TAG_TO_PARTITION):
        option, value, what = METASTORE_TAG_TO_PARTITION.key, str(opts.get(METASTORE_TAG_TO_PARTITION)), "tags"
    else:
        return
    raise UnsupportedError(
        f"{operation} refused on {table.identifier}: its option {option}={value} registers its {what} in a "
        f"metastore, which {without} cannot keep in step; give the table's catalog (catalog options "
        f"{METASTORE.key}=hive and uri=thrift://HOST:PORT), or set {METASTORE_ALLOW_OUT_OF_SYNC.key}=true to leave "
        "the metastore out of step")


__all__ = ["Catalog", "SnapshotCommit", "PartitionStatistics", "TableEntry", "open_catalog", "backend", "catalog_of",
           "check_sync", "refuse_out_of_sync", "commit_schema", "notify_tags", "lock_name", "is_object_store",
           "BACKENDS"]
