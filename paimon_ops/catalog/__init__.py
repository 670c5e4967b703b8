"""Catalogs: where tables live and how their commits are made — the filesystem warehouse, a Hive Metastore, a JDBC
database, a REST catalog server. One abstraction (`Catalog`) under the facade; every snapshot and schema commit
paimon-ops makes goes through the catalog the table was opened through, with its preconditions (design anchor:
pyiceberg's `Catalog.commit_table(table, requirements, updates)`).

Opening
-------
    cat = open_catalog(warehouse, {"metastore": "jdbc", "uri": "jdbc:sqlite:/p/cat.db", ...})
    table = cat.get_table("db.t")          # a FileStoreTable bound to `cat` (table.catalog is cat)
    cat.close()                            # or `with open_catalog(...) as cat:`

Options are Paimon's own catalog options (declared in `paimon_ops.options`, section "catalog", with Paimon's
defaults): `metastore` = filesystem | hive | jdbc | rest, `uri`, `warehouse`, `lock.enabled` (default: on for
object-store warehouses, as Java's `AbstractCatalog.lockEnabled`), `lock-acquire-timeout` (8 min),
`lock-check-max-sleep` (8 s), `catalog-key` (jdbc), `lock-key-max-length`, `jdbc.*` (driver properties:
`jdbc.user`, `jdbc.password`), `location-in-properties` (hive), `token.provider`, `token`, `dlf.*`,
`data-token.enabled` (rest); ours: `catalog.connect-timeout` (10 s, the CLI's `--connect-timeout`) and
`metastore.allow-out-of-sync`. Keys that are not catalog options (object-store settings such as `s3.endpoint`) are
the catalog's `store_options`: they configure the file system of the warehouse and of every table. The faces pass
them the same way: the CLI's repeatable `-o KEY=VALUE`, `po.Catalog(warehouse, options={...})`, the Dagster
resource's / component's `catalog_options`, the Airflow connection's `options` extra (catalog options and table
options in one object; the catalog takes its own keys).

`open_catalog` dispatches on `metastore` through `BACKENDS` ("module:Class", imported on use: a backend module that
is not in this build is refused naming the option). A saved plan records `Catalog.recorded_options()` (no secrets)
so that `paimon-ops apply` re-opens its table through the same catalog.

The backend contract (subclass `Catalog`, set `metastore`, register the class in `BACKENDS`)
-------------------------------------------------------------------------------------------
Construction: `__init__(warehouse, options, *, fault_hook=None)` — call `super().__init__`, which splits `options`
into `self.options` (a typed `Options` view of the catalog options: read with `self.options.get(URI)`) and
`self.store_options`; connect within `self.connect_timeout_s`, and raise `CatalogError` / `UnreachableError` naming
`self.endpoint` (never a secret) when the server does not answer or refuses the credentials. `close()` releases
connections (idempotent).

Discovery (must implement):
* `databases() -> list[str]`, `tables(database) -> list[str]` — exactly the catalog's Paimon tables (never a bare
  directory that is not registered); `all_tables()` derives `db.table` names from them.
* `load_table(Identifier) -> TableEntry(identifier, location, options={}, io_options={}, external=False,
  uuid=None)` — the table's root as the catalog says it (Hive: `sd.location`, or `paimon_location` with
  `location-in-properties`), options the catalog adds on top of the schema file, storage settings for this table
  (`io_options`, e.g. REST data tokens), whether it is external, its catalog id. TableNotFoundError if unknown.
* `get_table(identifier, branch=, options_override=)` is derived: `table_io(entry)` opens the FileIO (override it to
  share one FileIO, as the filesystem backend does) and the table is bound to the catalog (`table.catalog`).

History (defaults are the filesystem behaviour; override what the catalog does differently):
* `latest_snapshot(table) -> Snapshot | None` — asked by `table.snapshots.latest()/latest_id()` only when the class
  sets `supports_version_management = True` (REST: the server's `GET …/snapshot`); otherwise the files say.
* `commit_snapshot(table, SnapshotCommit) -> bool` — the one way a snapshot becomes visible (table.commit calls it
  for every commit attempt). `SnapshotCommit` carries `snapshot` (id = base id + 1), `base_snapshot` (the latest it
  was built on: REST's `baseSnapshotUuid`), `delta` (the data entries), and derives, on demand, `statistics`
  (one `PartitionStatistics` per partition: record count, file size, file count, last file creation time, total
  buckets, as Java's) and `added_partitions` (specs with ADD entries). Return False when another writer took the id
  (or a server answers `success: false`): the caller re-reads the latest snapshot, re-checks conflicts and retries
  (or raises CommitConflictError). Default: `with self.lock(table): table.snapshots.commit(...)` (create-if-absent,
  Java's RenamingSnapshotCommit), then `after_commit` → `add_partitions(table, commit.added_partitions)` when the
  backend `syncs_metastore` and the table says `metastore.partitioned-table` (errors there are logged: the snapshot
  is committed). With `supports_version_management`, table.commit writes no LATEST hint; the backend must not write
  snapshot files either.
* `commit_schema(table, TableSchema) -> bool` — rescale's option change; default create-if-absent of `schema-<id>`
  under the lock, then `after_schema(table, schema)` (Hive: `alter_table`).
* `rollback_to(table, snapshot_id=|tag=, from_snapshot=)` — only with version management (REST `POST …/rollback`);
  the others roll back on the files.

Metastore sync (only backends with `syncs_metastore = True`, i.e. Hive; the others refuse what would drift):
* `add_partitions(table, specs)` (if not exists), `drop_partitions(table, specs)` — partition expiry calls it
  before its OVERWRITE commit for `metastore.partitioned-table` tables (the backend also drops the `.done`
  partitions and keeps those another branch still has);
* `tag_created(table, name)` / `tag_deleted(table, name)` — after every tag file written (create, replace, automatic,
  batch, rename's new name) or deleted (delete, expiry, rename's old name) by the executor; add/drop
  `<metastore.tag-to-partition>=<name>`.
* `check_sync(table, operation)` — called by the planners of partition expiry and of every tag operation; the
  default refuses (UnsupportedError, one line naming the option and how to give the catalog) when the backend does
  not sync the metastore and the table has `metastore.partitioned-table` / `metastore.tag-to-partition`, unless
  `metastore.allow-out-of-sync=true`.

The lock:
* `lock(table)` is a context manager holding the catalog's table lock (Java's `Lock.runWithLock`) when
  `lock_enabled` (`lock.enabled`, default on for object-store warehouses): it calls `acquire_lock(table) -> handle`
  and always `release_lock(table, handle)` — on errors, KeyboardInterrupt (the CLI turns SIGTERM into one) and a
  cancelled run alike. Implement `acquire_lock` with `lock.wait_for_lock(try_acquire, endpoint=, table=,
  timeout=self.lock_acquire_timeout, max_sleep=self.lock_check_max_sleep)`: 50 ms doubling up to
  `lock-check-max-sleep`, LockTimeoutError naming the table after `lock-acquire-timeout`. `lock_name(table)` gives
  (database, object) with the branch in the object name as Java's lock does.

What a backend cannot do is refused in one line naming the option (UnsupportedError / InvalidOptionError).
Errors: `CatalogError(endpoint, detail)`, `LockTimeoutError`, `UnreachableError` (paimon_ops.errors) — one line, no
secret, nothing changed.
"""
from __future__ import annotations

from paimon_ops.catalog.base import (
    BACKENDS,
    Catalog,
    PartitionStatistics,
    SnapshotCommit,
    TableEntry,
    backend,
    catalog_of,
    check_sync,
    commit_schema,
    is_object_store,
    lock_name,
    notify_tags,
    open_catalog,
    refuse_out_of_sync,
)
from paimon_ops.catalog.lock import wait_for_lock

__all__ = ["BACKENDS", "Catalog", "PartitionStatistics", "SnapshotCommit", "TableEntry", "backend", "catalog_of",
           "check_sync", "commit_schema", "is_object_store", "lock_name", "notify_tags", "open_catalog",
           "refuse_out_of_sync", "wait_for_lock"]
