"""The REST catalog (`metastore=rest`, Paimon 1.1+; e.g. Alibaba DLF): the server owns each managed table's history.

* Discovery is the server's: `GET …/databases`, `GET …/databases/{db}/tables` (paged) — exactly its tables; a
  table's location, id and whether it is external come from `GET …/tables/{t}`.
* The latest snapshot is the server's `GET …/snapshot`, never the `LATEST` hint.
* Every commit is `POST …/commit` with the table's id, the base snapshot's `uuid`, the new snapshot (with a fresh
  `uuid`) and per-partition statistics; `success: false` means the base is no longer the latest: the commit loop
  re-reads the latest snapshot, re-checks its conflicts and retries or refuses, exactly as after losing a
  create-if-absent race. paimon-ops never writes `snapshot-*`, `LATEST` or `EARLIEST` of a managed table.
* Rollback is `POST …/rollback` (with `fromSnapshot`: only if nothing was committed since the plan).
* Tags go through `POST/DELETE …/tags` when the server offers them (probed once per catalog); otherwise tag files are
  written as Java's engines write them for REST tables.
* Storage credentials (`data-token.enabled=true`): the table's FileIO is built from `GET …/token` and rebuilt with a
  fresh token before the current one expires (`TokenFileIO`).
* External tables (`isExternal`) are not managed by the server (Java gives them no catalog loader): their snapshots
  are committed and read on the files, as in the filesystem catalog.

What has no endpoint (snapshot / tag / partition expiry, orphan removal) works on the files as Java clients do; a
partition expiry is an OVERWRITE commit through `/commit`. Authentication, timeouts and error wording are
`rest_client`'s.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import threading
from typing import Any, Mapping

from paimon_ops.catalog.base import PARTITION_SYNC_OPERATIONS, Catalog, TableEntry
from paimon_ops.catalog.rest_client import (
    TOKEN_REFRESH_MARGIN_MS,
    RestCatalogError,
    RestClient,
    RestNotFoundError,
    RestNotImplementedError,
    RestSettings,
)
from paimon_ops.errors import CorruptMetadataError, TableNotFoundError, UnsupportedError
from paimon_ops.format.schema import TableSchema
from paimon_ops.format.snapshot import Snapshot, Tag
from paimon_ops.options import DATA_TOKEN_ENABLED, Options
from paimon_ops.table.commit import SnapshotCommit
from paimon_ops.table.fileio import FaultHook, FileIO
from paimon_ops.table.table import FileStoreTable, Identifier

log = logging.getLogger(__name__)

# Storage-credential keys a REST server may vend (pypaimon's / DLF's spellings) -> paimon-ops' object-store options
TOKEN_KEYS = {
    "fs.s3.accessKeyId": "s3.access-key",
    "fs.s3.accessKeySecret": "s3.secret-key",
    "fs.s3.securityToken": "s3.session-token",
    "fs.s3.endpoint": "s3.endpoint",
    "fs.s3.region": "s3.region",
}


def store_options_of_token(token: Mapping[str, str]) -> dict[str, str]:
    """A data token's options as paimon-ops' object-store options: `s3.*` and the `fs.s3a.*` spellings as they are,
    pypaimon's / DLF's `fs.s3.*` spellings translated (the native ones win when both are given); keys of other stores
    are kept (a store paimon-ops cannot open is refused by its scheme)."""
    out = {TOKEN_KEYS[k]: v for k, v in token.items() if k in TOKEN_KEYS}
    out.update({k: v for k, v in token.items() if k not in TOKEN_KEYS})
    return out


class RestCatalog(Catalog):
    metastore = "rest"
    supports_version_management = True

    def __init__(self, warehouse: str | None, options: Mapping[str, str] | None = None, *,
                 fault_hook: FaultHook | None = None) -> None:
        super().__init__(warehouse, options, fault_hook=fault_hook)
        raw = dict(self.options.raw)
        self.settings = RestSettings.from_options(raw, connect_timeout_s=self.connect_timeout_s)
        self.client = RestClient(self.settings, options=raw)
        self._entries: dict[str, TableEntry] = {}
        self._attempts: dict[str, dict[str, bool]] = {}  # commit requests in flight, by snapshot uuid
        self._tags_offered: bool | None = None
        # the first request: an unreachable server or wrong credentials fail here, in one line. Its answer decides
        # data-token.enabled too (server defaults < our options < server overrides, as Paimon's clients merge them)
        merged = self.client.config()
        self.data_token = bool(Options({DATA_TOKEN_ENABLED.key: merged[DATA_TOKEN_ENABLED.key]}, where="catalog")
                               .get(DATA_TOKEN_ENABLED)) if DATA_TOKEN_ENABLED.key in merged else False

    @property
    def endpoint(self) -> str:
        return f"{self.settings.uri} (warehouse {self.settings.warehouse})"

    @property
    def lock_enabled(self) -> bool:
        return False  # the server orders commits (base-uuid check); there is no table lock to take

    # ------------------------------------------------------------------ discovery
    def databases(self) -> list[str]:
        return self.client.list_databases()

    def tables(self, database: str) -> list[str]:
        return self.client.list_tables(database)

    def load_table(self, identifier: Identifier) -> TableEntry:
        try:
            got = self.client.get_table(identifier.database, identifier.table)
        except RestNotFoundError as e:
            if (e.resource_type or "").upper() == "DATABASE":
                raise TableNotFoundError(str(identifier), self.endpoint, f"the catalog has no database "
                                         f"{identifier.database!r}; databases: {', '.join(self.databases()) or 'none'}"
                                         ) from None
            known = ", ".join(f"{identifier.database}.{t}" for t in self._tables_or_none(identifier.database))
            raise TableNotFoundError(str(identifier), self.endpoint,
                                     f"tables of database {identifier.database}: {known or 'none'}") from None
        path = got.get("path")
        if not isinstance(path, str) or not path:
            raise RestCatalogError(f"{self.settings.uri} GET table {identifier}", None,
                                   "the server's answer names no path for the table")
        entry = TableEntry(identifier, path.rstrip("/"), external=bool(got.get("isExternal")),
                           uuid=got.get("id"))
        self._entries[str(identifier)] = entry
        return entry

    def _tables_or_none(self, database: str) -> list[str]:
        try:
            return self.tables(database)
        except RestCatalogError:
            return []

    def _entry(self, table: FileStoreTable) -> TableEntry:
        entry = self._entries.get(table.identifier)
        return entry if entry is not None else self.load_table(Identifier.parse(table.identifier))

    def table_io(self, entry: TableEntry) -> tuple[FileIO, str]:
        if not self.data_token:
            return super().table_io(entry)
        io = TokenFileIO(self, entry, self.store_options, self.fault_hook)
        return io, io.root  # type: ignore[return-value]

    def get_table(self, identifier: str | Identifier, *, branch: str | None = None,
                  options_override: Mapping[str, str] | None = None) -> FileStoreTable:
        ident = identifier if isinstance(identifier, Identifier) else Identifier.parse(identifier)
        wanted = branch if branch is not None else ident.branch
        if wanted != "main":
            raise UnsupportedError(f"branch {wanted!r} of {ident.table_name}: paimon-ops maintains the main branch of "
                                   "REST catalog tables only")
        return super().get_table(ident, branch=branch, options_override=options_override)

    def check_sync(self, table: FileStoreTable, operation: str) -> None:
        """Partitions of a REST table are the server's, kept by the statistics of every commit (Java's RESTCatalog
        has no partition modification: a partition expiry is an OVERWRITE commit, `metastore.partitioned-table` or
        not); what a tag-to-partition table needs is refused as without a metastore."""
        if operation in PARTITION_SYNC_OPERATIONS:
            return
        super().check_sync(table, operation)

    # ------------------------------------------------------------------ history
    def _managed(self, table: FileStoreTable) -> TableEntry | None:
        """The table's entry when the server owns its history; None for an external table (files are the truth)."""
        if table.branch != "main":
            raise UnsupportedError(f"branch {table.branch!r} of {table.identifier}: paimon-ops maintains the main "
                                   "branch of REST catalog tables only")
        entry = self._entry(table)
        return None if entry.external else entry

    def owns_history(self, table: FileStoreTable) -> bool:
        return self._managed(table) is not None

    def latest_snapshot(self, table: FileStoreTable) -> Snapshot | None:
        entry = self._managed(table)
        if entry is None:
            return table.snapshots.latest_from_files()
        ident = entry.identifier
        got = self.client.load_snapshot(ident.database, ident.table)
        if got is None:
            return None
        where = f"{self.settings.uri} GET …/{ident}/snapshot"
        snap = got.get("snapshot")
        if not isinstance(snap, dict):
            raise CorruptMetadataError(where, "the server's TableSnapshot holds no snapshot")
        return Snapshot.from_json(json.dumps(snap), where)

    def commit_snapshot(self, table: FileStoreTable, commit: SnapshotCommit) -> bool:
        entry = self._managed(table)
        if entry is None:
            return super().commit_snapshot(table, commit)  # external: create-if-absent on the files
        ident = entry.identifier
        base = commit.base_snapshot
        body = json.loads(commit.snapshot.to_json())
        stats = [s.to_json() for s in commit.statistics]
        progress: dict[str, bool] = {}
        self._attempts[commit.snapshot.uuid or ""] = progress
        won = self.client.commit_snapshot(ident.database, ident.table, entry.uuid, base.uuid if base else None,
                                          body, stats, progress)
        self._attempts.pop(commit.snapshot.uuid or "", None)
        if not won:
            log.info("the REST catalog refused snapshot %s of %s (its base is no longer the latest)",
                     commit.snapshot.id, table.identifier)
        return won

    def commit_schema(self, table: FileStoreTable, schema: TableSchema) -> bool:
        """Rescale's option change as the server's `alterTable` (setOption / removeOption), as Java's REST catalog
        makes schema changes; the server writes the schema file. False when the schema moved on meanwhile."""
        entry = self._managed(table)
        if entry is None:
            return super().commit_schema(table, schema)
        current = table.schemas.latest()
        if current is None or current.id != schema.id - 1:
            return False
        if dataclasses.replace(current, id=schema.id, options=schema.options, time_millis=schema.time_millis) != schema:
            raise UnsupportedError(f"{table.identifier}: only option changes go through the REST catalog's alterTable; "
                                   "this schema change is not one")
        changes: list[dict[str, Any]] = [{"action": "setOption", "key": k, "value": v} for k, v in schema.options.items()
                                         if current.options.get(k) != v]
        changes += [{"action": "removeOption", "key": k} for k in current.options if k not in schema.options]
        if not changes:
            return True
        self.client.alter_table(entry.identifier.database, entry.identifier.table, changes)
        now = table.schemas.latest()
        if now is None or now.id != schema.id or any(now.options.get(c["key"]) != c.get("value") for c in changes):
            raise RestCatalogError(f"{self.settings.uri} POST …/{entry.identifier}", None,
                                   f"after alterTable the table's schema is {now.id if now else None}, not schema "
                                   f"{schema.id} with the new options; another writer changed it concurrently")
        return True

    def is_committed(self, table: FileStoreTable, snapshot: Snapshot) -> bool | None:
        """After a commit request failed: True if the server's latest snapshot is ours; False if the request never
        left (no connection) or the server answered and its latest is not ours; None — unknown — when the request
        may still be in flight on the server (no answer in time, an interrupt): then nothing may be cleaned up."""
        progress = self._attempts.pop(snapshot.uuid or "", None)
        if progress is not None and not progress.get("sent"):
            return False
        try:
            latest = self.latest_snapshot(table)
        except Exception:  # noqa: BLE001 - the server cannot be asked now: unknown
            return None
        if latest is not None and snapshot.uuid is not None and latest.uuid == snapshot.uuid:
            return True
        if progress is not None and progress.get("answered"):
            return False
        return None

    def rollback_to(self, table: FileStoreTable, *, snapshot_id: int | None = None, tag: str | None = None,
                    from_snapshot: int | None = None) -> None:
        entry = self._managed(table)
        if entry is None:
            super().rollback_to(table, snapshot_id=snapshot_id, tag=tag, from_snapshot=from_snapshot)
            return
        self.client.rollback(entry.identifier.database, entry.identifier.table, snapshot_id=snapshot_id, tag=tag,
                             from_snapshot=from_snapshot)

    # ------------------------------------------------------------------ tags through the server
    def writes_tags(self, table: FileStoreTable) -> bool:
        """Whether tags of this table are created and deleted through the server's tag endpoints (probed once)."""
        entry = self._managed(table)
        if entry is None:
            return False
        if self._tags_offered is None:
            try:
                self.client.list_tags(entry.identifier.database, entry.identifier.table)
                self._tags_offered = True
            except RestNotImplementedError:
                self._tags_offered = False
            except RestNotFoundError as e:
                if (e.resource_type or "").upper() in ("TABLE", "DATABASE"):
                    raise
                self._tags_offered = False  # no such route: a server older than the tag endpoints (Paimon 1.4)
            log.info("REST catalog %s %s tag endpoints", self.endpoint,
                     "offers" if self._tags_offered else "does not offer")
        return self._tags_offered

    def write_tag(self, table: FileStoreTable, name: str, tag: Tag, replace: bool) -> bool:
        entry = self._managed(table)
        assert entry is not None
        db, t = entry.identifier.database, entry.identifier.table
        retained = tag.tag_time_retained
        if replace and table.tags.exists(name):
            self.client.delete_tag(db, t, name)
        try:
            self.client.create_tag(db, t, name, tag.id,
                                   f"{int(retained.total_seconds())} s" if retained is not None else None)
        except RestCatalogError as e:
            if e.status == 409 and not replace:
                return False  # created concurrently by someone else: left as it is
            raise
        return True

    def delete_tag(self, table: FileStoreTable, name: str) -> bool:
        entry = self._managed(table)
        assert entry is not None
        try:
            self.client.delete_tag(entry.identifier.database, entry.identifier.table, name)
        except RestNotFoundError as e:
            if (e.resource_type or "").upper() == "TAG":
                return False
            raise
        return True


class TokenFileIO:
    """The FileIO of a table whose storage credentials come from the REST catalog (`GET …/token`): every use asks
    for the current FileIO, which is rebuilt from a fresh token once less than the refresh margin of the current one
    remains (Java's RESTTokenFileIO: one hour; for shorter-lived tokens, half their life). Everything else is the
    FileIO's own (attribute access is delegated)."""

    def __init__(self, catalog: RestCatalog, entry: TableEntry, store_options: Mapping[str, str],
                 fault_hook: FaultHook | None) -> None:
        self._catalog = catalog
        self._entry = entry
        self._store_options = dict(store_options)
        self._fault_hook = fault_hook
        self._lock = threading.Lock()
        self._token: Any = None
        self._io: FileIO | None = None
        self.root = ""
        self.current()  # the first token now: a server that refuses it fails the open, in one line

    def current(self) -> FileIO:
        with self._lock:
            now = int(self._catalog.client._clock() * 1000)
            if self._io is None or self._token is None or self._token.needs_refresh(now):
                ident = self._entry.identifier
                token = self._catalog.client.load_token(ident.database, ident.table)
                options = {**self._store_options, **store_options_of_token(token.options)}
                io, root = FileIO.resolve(self._entry.location, self._fault_hook, options or None)
                self._token, self._io, self.root = token, io, root
                log.info("storage credentials of %s from %s, valid until %s", ident, self._catalog.endpoint,
                         token.expires_at_millis)
            return self._io

    @property
    def expires_at_millis(self) -> int | None:
        return self._token.expires_at_millis if self._token is not None else None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.current(), name)


__all__ = ["RestCatalog", "TokenFileIO", "store_options_of_token", "TOKEN_KEYS", "TOKEN_REFRESH_MARGIN_MS"]
