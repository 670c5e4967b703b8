"""The JDBC catalog (`metastore=jdbc`, Java's JdbcCatalog): tables are registered in a database — SQLite, PostgreSQL or
MySQL / MariaDB — in `paimon_tables(catalog_key, database_name, table_name)` (and databases in
`paimon_database_properties`), under `catalog-key` (default `jdbc`); a table's location is
`<warehouse>/<db>.db/<table>`, as in the filesystem catalog, but only registered tables are tables.

The lock (when `lock.enabled`, default on for object-store warehouses) is Java's JdbcCatalogLock: a row
`(lock_id = '<catalog-key>.<database>.<table>', acquired_at, expire_time_seconds)` in `paimon_distributed_locks`.
Taking it deletes the row if it has timed out (older than its `expire_time_seconds`), then inserts it
(`expire_time_seconds` = `lock-acquire-timeout` in seconds); a primary-key violation means another writer holds it,
so it is tried again after 50 ms, doubling up to `lock-check-max-sleep`, until `lock-acquire-timeout` (LockTimeoutError
naming the table). Releasing deletes the row — on every path, errors and interrupts included. The expiry conditions
are Java's dialects' (SQLite and MySQL in 0.9; PostgreSQL's from later releases). The lock table is created, as Java
creates it, when a lock is first taken and it does not exist.

Drivers (the `jdbc` extra): sqlite3 (standard library), psycopg 3 (PostgreSQL), PyMySQL (MySQL, MariaDB). The URI is
Java's: `jdbc:sqlite:/path/catalog.db`, `jdbc:postgresql://host:5432/db`, `jdbc:mysql://host:3306/db` (or
`jdbc:mariadb://…`); the user and password come from `jdbc.user` / `jdbc.password` (or the URI's `user` / `password`
parameters). A SQLite file that does not exist is an error (it is never created), as is a database without
`paimon_tables` (not a Paimon JDBC catalog).
"""
from __future__ import annotations

import contextlib
import importlib
import logging
import os
import sqlite3
import threading
import urllib.parse
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from paimon_ops.catalog.base import Catalog, TableEntry, lock_name
from paimon_ops.catalog.lock import wait_for_lock
from paimon_ops.errors import CatalogError, InvalidOptionError, MissingExtraError, PaimonOpsError, TableNotFoundError, UnreachableError
from paimon_ops.options import CATALOG_KEY, CATALOG_URI, JDBC_PASSWORD, JDBC_USER, LOCK_KEY_MAX_LENGTH
from paimon_ops.table import table as _tables
from paimon_ops.table.fileio import FaultHook, FileIO
from paimon_ops.table.table import FileStoreTable, Identifier

log = logging.getLogger(__name__)

TABLES = "paimon_tables"
DATABASE_PROPERTIES = "paimon_database_properties"
LOCKS = "paimon_distributed_locks"


@dataclass(frozen=True)
class Dialect:
    name: str
    module: str                 # the Python driver
    expired: str                # Java's timed-out condition on a lock row
    placeholder: str = "?"

    def sql(self, text: str) -> str:
        return text if self.placeholder == "?" else text.replace("?", self.placeholder)


SQLITE = Dialect("sqlite", "sqlite3", "strftime('%s', 'now') - strftime('%s', acquired_at) > expire_time_seconds")
POSTGRESQL = Dialect("postgresql", "psycopg", "EXTRACT(EPOCH FROM AGE(NOW(), acquired_at)) > expire_time_seconds",
                     "%s")
MYSQL = Dialect("mysql", "pymysql", "TIMESTAMPDIFF(SECOND, acquired_at, NOW()) > expire_time_seconds", "%s")
DIALECTS = {"sqlite": SQLITE, "postgresql": POSTGRESQL, "mysql": MYSQL, "mariadb": MYSQL}


def parse_uri(uri: str) -> tuple[Dialect, dict[str, Any]]:
    """(dialect, connection settings) of a Java JDBC URI."""
    if not uri.startswith("jdbc:"):
        raise InvalidOptionError(CATALOG_URI.key, uri, "a JDBC URI such as jdbc:sqlite:/path/catalog.db, "
                                 "jdbc:postgresql://host:5432/db or jdbc:mysql://host:3306/db", "catalog")
    protocol, _, rest = uri[len("jdbc:"):].partition(":")
    dialect = DIALECTS.get(protocol.lower())
    if dialect is None:
        raise InvalidOptionError(CATALOG_URI.key, uri, "a sqlite, postgresql, mysql or mariadb JDBC URI", "catalog")
    if dialect is SQLITE:
        path = rest[len("file:"):] if rest.startswith("file:") else rest
        path = path.split("?", 1)[0]
        if not path or path == ":memory:":
            raise InvalidOptionError(CATALOG_URI.key, uri, "the path of a SQLite database file", "catalog")
        return dialect, {"path": path}
    parsed = urllib.parse.urlsplit(rest)
    if not parsed.hostname:
        raise InvalidOptionError(CATALOG_URI.key, uri, f"jdbc:{protocol}://HOST[:PORT]/DATABASE", "catalog")
    params = {k: v[-1] for k, v in urllib.parse.parse_qs(parsed.query).items()}
    settings = {"host": parsed.hostname, "port": parsed.port or (5432 if dialect is POSTGRESQL else 3306),
                "database": parsed.path.lstrip("/") or None, "user": params.get("user") or parsed.username,
                "password": params.get("password") or parsed.password}
    return dialect, settings


def redacted(uri: str) -> str:
    """The URI for messages: no password (in its user info or its parameters)."""
    head, sep, query = uri.partition("?")
    if "@" in head:
        scheme, _, tail = head.partition("//")
        creds, _, host = tail.rpartition("@")
        head = f"{scheme}//{creds.split(':', 1)[0]}@{host}"
    if sep:
        kept = [p for p in query.split("&") if not p.lower().startswith("password=")]
        return head + ("?" + "&".join(kept) if kept else "")
    return head


class JdbcCatalog(Catalog):
    metastore = "jdbc"

    def __init__(self, warehouse: str | None, options: Mapping[str, str] | None = None, *,
                 fault_hook: FaultHook | None = None) -> None:
        super().__init__(warehouse, options, fault_hook=fault_hook)
        uri = self.options.get(CATALOG_URI)
        if not uri:
            raise InvalidOptionError(CATALOG_URI.key, None, "the catalog database's JDBC URI (metastore=jdbc)", "catalog")
        if not self.warehouse:
            raise InvalidOptionError("warehouse", None, "the warehouse the JDBC catalog's tables live in", "catalog")
        self.uri = uri
        self.dialect, self._settings = parse_uri(uri)
        self.catalog_key = self.options.get(CATALOG_KEY)
        self._mutex = threading.RLock()  # one connection, used by one thread at a time
        self._conn = self._connect()
        self._check_registry()
        self.files = _tables.FileSystemCatalog(str(self.warehouse), fault_hook, self.store_options or None)
        self.io = self.files.io

    # ------------------------------------------------------------------ connection
    @property
    def endpoint(self) -> str:
        return redacted(self.uri)

    def _connect(self) -> Any:
        timeout = max(self.connect_timeout_s, 0.1)
        s = self._settings
        user = self.options.get(JDBC_USER) or s.get("user")
        password = self.options.get(JDBC_PASSWORD) or s.get("password")
        try:
            if self.dialect is SQLITE:
                if not os.path.isfile(s["path"]):
                    raise CatalogError(self.endpoint, f"no SQLite database at {s['path']} (a JDBC catalog's "
                                                      "database is never created here)")
                conn = sqlite3.connect(f"file:{urllib.parse.quote(s['path'])}?mode=rw", uri=True, timeout=timeout,
                                       isolation_level=None, check_same_thread=False)
                conn.execute("SELECT 1").fetchall()
                return conn
            if self.dialect is POSTGRESQL:
                psycopg = _driver("psycopg", "PostgreSQL")
                return psycopg.connect(host=s["host"], port=s["port"], dbname=s["database"], user=user,
                                       password=password, connect_timeout=max(2, round(timeout)), autocommit=True,
                                       options=f"-c statement_timeout={int(max(timeout, 10) * 1000)}")
            pymysql = _driver("pymysql", "MySQL")
            return pymysql.connect(host=s["host"], port=s["port"], database=s["database"], user=user,
                                   password=password or "", connect_timeout=timeout, read_timeout=max(timeout, 10),
                                   write_timeout=max(timeout, 10), autocommit=True)
        except PaimonOpsError:
            raise
        except Exception as e:  # noqa: BLE001 - every driver's connection failure: one line naming the endpoint
            raise self._failure(e, "cannot connect") from None

    def _failure(self, e: BaseException, what: str) -> PaimonOpsError:
        detail = " ".join(str(e).split()) or type(e).__name__
        if password := self.options.get(JDBC_PASSWORD) or self._settings.get("password"):
            detail = detail.replace(password, "***")
        lowered = detail.lower()
        if any(w in lowered for w in ("timeout expired", "timed out", "connection refused", "can't connect",
                                      "could not connect", "name or service not known", "no route to host")):
            return UnreachableError(self.endpoint, detail, "JDBC catalog")
        return CatalogError(self.endpoint, f"{what}: {detail}")

    @contextlib.contextmanager
    def _cursor(self) -> Iterator[Any]:
        if self._conn is None:
            raise CatalogError(self.endpoint, "the catalog is closed")
        with self._mutex:
            cur = self._conn.cursor()
            try:
                yield cur
            finally:
                with contextlib.suppress(Exception):
                    cur.close()

    def _query(self, sql: str, *args: Any) -> list[tuple]:
        try:
            with self._cursor() as cur:
                cur.execute(self.dialect.sql(sql), args)
                return list(cur.fetchall())
        except PaimonOpsError:
            raise
        except Exception as e:  # noqa: BLE001
            raise self._failure(e, f"query failed ({sql.split()[0]} … {sql.split('FROM')[-1].split()[0]})") from None

    def _execute(self, sql: str, *args: Any) -> int:
        with self._cursor() as cur:
            cur.execute(self.dialect.sql(sql), args)
            return cur.rowcount

    def _check_registry(self) -> None:
        if not self._has_table(TABLES):
            raise CatalogError(self.endpoint, f"the database has no {TABLES} table: it is not a Paimon JDBC catalog "
                                              "(Java's JdbcCatalog creates it)")

    def _has_table(self, name: str) -> bool:
        if self.dialect is SQLITE:
            sql = "SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?"
        elif self.dialect is POSTGRESQL:
            sql = "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND " \
                  "table_name = ?"
        else:
            sql = "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?"
        return bool(self._query(sql, name))

    def close(self) -> None:
        conn, self._conn = getattr(self, "_conn", None), None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()
        super().close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    # ------------------------------------------------------------------ discovery
    def databases(self) -> list[str]:
        found = {r[0] for r in self._query(f"SELECT DISTINCT database_name FROM {TABLES} WHERE catalog_key = ?",
                                           self.catalog_key)}
        if self._has_table(DATABASE_PROPERTIES):
            found |= {r[0] for r in self._query(f"SELECT DISTINCT database_name FROM {DATABASE_PROPERTIES} WHERE "
                                                "catalog_key = ?", self.catalog_key)}
        return sorted(found)

    def tables(self, database: str) -> list[str]:
        return sorted(r[0] for r in self._query(f"SELECT table_name FROM {TABLES} WHERE catalog_key = ? AND "
                                                "database_name = ?", self.catalog_key, database))

    def all_tables(self) -> list[str]:
        rows = self._query(f"SELECT database_name, table_name FROM {TABLES} WHERE catalog_key = ?", self.catalog_key)
        return sorted(f"{d}.{t}" for d, t in rows)

    def load_table(self, identifier: Identifier) -> TableEntry:
        rows = self._query(f"SELECT table_name FROM {TABLES} WHERE catalog_key = ? AND database_name = ? AND "
                           "table_name = ?", self.catalog_key, identifier.database, identifier.table)
        if not rows:
            known = ", ".join(self.all_tables()) or "none"
            raise TableNotFoundError(str(identifier), self.endpoint,
                                     f"not registered under catalog-key {self.catalog_key!r}; tables: {known}")
        return TableEntry(identifier, self.files.table_path(identifier))

    def table_io(self, entry: TableEntry) -> tuple[FileIO, str]:
        return self.io, entry.location

    def table_files(self, identifier: str | Identifier) -> tuple[FileIO, str]:
        return self.io, self.files.table_path(identifier)

    # ------------------------------------------------------------------ the lock
    def lock_id(self, table: FileStoreTable) -> str:
        database, name = lock_name(table)
        lock_id = f"{self.catalog_key}.{database}.{name}"
        limit = self.options.get(LOCK_KEY_MAX_LENGTH)
        if len(lock_id) > limit:
            raise InvalidOptionError(LOCK_KEY_MAX_LENGTH.key, limit, f"at least {len(lock_id)}: the lock id "
                                     f"{lock_id!r} is longer", "catalog")
        return lock_id

    def _ensure_lock_table(self) -> None:
        if self._has_table(LOCKS):
            return
        ddl = (f"CREATE TABLE {LOCKS}(lock_id VARCHAR({self.options.get(LOCK_KEY_MAX_LENGTH)}) NOT NULL,"
               "acquired_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL,expire_time_seconds BIGINT DEFAULT 0 NOT NULL,"
               "PRIMARY KEY (lock_id))")
        try:
            self._execute(ddl)
        except Exception as e:  # noqa: BLE001 - another process may have created it meanwhile
            if not self._has_table(LOCKS):
                raise self._failure(e, f"cannot create {LOCKS}") from None

    def _try_lock(self, lock_id: str) -> str | None:
        """One attempt, as Java's JdbcUtils.acquire: clear the row if timed out, insert it; busy -> None."""
        expire_s = int(self.lock_acquire_timeout.total_seconds())
        try:
            self._execute(f"DELETE FROM {LOCKS} WHERE {self.dialect.expired} AND lock_id = ?", lock_id)
            self._execute(f"INSERT INTO {LOCKS} (lock_id, expire_time_seconds) VALUES (?, ?)", lock_id, expire_s)
            return lock_id
        except Exception as e:  # noqa: BLE001
            if _is_duplicate_key(e):
                return None
            raise self._failure(e, f"cannot take the lock {lock_id!r}") from None

    def _holder(self, lock_id: str) -> str:
        try:
            rows = self._query(f"SELECT acquired_at, expire_time_seconds FROM {LOCKS} WHERE lock_id = ?", lock_id)
        except CatalogError:
            return ""
        if not rows:
            return ""
        return (f"the row {lock_id!r} in {LOCKS} was taken at {rows[0][0]} (it times out {rows[0][1]} s after that; "
                "delete it if its writer is gone)")

    def acquire_lock(self, table: FileStoreTable) -> Any:
        lock_id = self.lock_id(table)
        self._ensure_lock_table()
        return wait_for_lock(lambda: self._try_lock(lock_id), endpoint=self.endpoint, table=table.identifier,
                             timeout=self.lock_acquire_timeout, max_sleep=self.lock_check_max_sleep,
                             holder=lambda: self._holder(lock_id))

    def release_lock(self, table: FileStoreTable, handle: Any) -> None:
        try:
            self._execute(f"DELETE FROM {LOCKS} WHERE lock_id = ?", handle)
        except Exception as e:  # noqa: BLE001
            raise self._failure(e, f"cannot release the lock {handle!r} (it times out after "
                                   f"{int(self.lock_acquire_timeout.total_seconds())} s)") from None


def _driver(module: str, what: str) -> Any:

    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtraError(f"a {what} JDBC catalog", "jdbc", module) from None


def _is_duplicate_key(e: BaseException) -> bool:
    """A primary-key violation of the lock row (SQLite, PostgreSQL 23505, MySQL 1062)."""
    if type(e).__name__ in ("IntegrityError", "UniqueViolation"):
        return True
    return getattr(e, "sqlstate", None) == "23505" or (bool(getattr(e, "args", None)) and e.args[0] == 1062)


__all__ = ["JdbcCatalog", "parse_uri", "redacted", "DIALECTS"]
