"""A Hive Metastore client over Thrift: what maintaining Paimon tables registered in a metastore needs, no more.

The Thrift code is `pymetastore`'s generated client (Hive 3 IDL; the calls used here are those Hive 2.3 already
serves: get_table, get_table_objects_by_name, add_partitions_req, drop_partition, get_partition_names, lock,
check_lock, unlock, alter_table, markPartitionForEvent, isPartitionMarkedForEvent). Install it with the `[hive]` extra.

The table lock is Java Paimon's `HiveCatalogLock`, call for call: one EXCLUSIVE, table-level `LockComponent` with
the operation type unset (Java's `unsetOperationType()`), `check_lock` polled with a sleep that doubles from 100 ms up
to `lock-check-max-sleep`, given up after `lock-acquire-timeout` (a waiting lock is released then), and `unlock` when
the work is done. Ours also releases on every other way out — an error, a timeout, Ctrl-C, SIGTERM, a cancelled
Dagster run or Airflow task — and defers those signals while a `lock`/`unlock` call is on the wire, so a lock granted
by the server is never left behind by an interrupt between its grant and our bookkeeping.

Errors are one line naming the metastore endpoint (`UnreachableError`, `CatalogError`) and the table or database
(`LockTimeoutError`).
"""
from __future__ import annotations

import contextlib
import copy
import getpass
import logging
import signal
import socket
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Callable, Iterator, Mapping, Sequence, TypeVar
from urllib.parse import urlsplit

from paimon_ops.catalog.lock import wait_for_lock
from paimon_ops.errors import CatalogError, InvalidOptionError, UnreachableError, require_module

log = logging.getLogger(__name__)
T = TypeVar("T")

PAIMON_INPUT_FORMAT = "org.apache.paimon.hive.mapred.PaimonInputFormat"
PAIMON_OUTPUT_FORMAT = "org.apache.paimon.hive.mapred.PaimonOutputFormat"
# Tables created by Flink Table Store (Paimon's former name) that Java still recognises (LegacyHiveClasses).
LEGACY_INPUT_FORMAT = "org.apache.flink.table.store.mapred.TableStoreInputFormat"
LEGACY_OUTPUT_FORMAT = "org.apache.flink.table.store.mapred.TableStoreOutputFormat"
PAIMON_LOCATION_PARAM = "paimon_location"  # location-in-properties (TBPropertiesLocationHelper)
DEFAULT_PORT = 9083
TABLES_PER_CALL = 100  # get_table_objects_by_name batch (Hive's own batch size for bulk gets)

# LockState of hive_metastore.thrift
ACQUIRED, WAITING, ABORT, NOT_ACQUIRED = 1, 2, 3, 4
_STATE_NAMES = {ACQUIRED: "ACQUIRED", WAITING: "WAITING", ABORT: "ABORT", NOT_ACQUIRED: "NOT_ACQUIRED"}

# thrift's TSocket logs every failed connect at ERROR; the failure reaches the caller as one line instead
logging.getLogger("thrift.transport.TSocket").addHandler(logging.NullHandler())
logging.getLogger("thrift.transport.TSocket").propagate = False


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int

    def __str__(self) -> str:
        return f"thrift://{self.host}:{self.port}"


def parse_uris(uri: str) -> list[Endpoint]:
    """`thrift://h1:9083,thrift://h2:9083` (Hive's `hive.metastore.uris`) -> endpoints, tried in order."""
    out = []
    for part in (p.strip() for p in str(uri).split(",")):
        if not part:
            continue
        u = urlsplit(part if "://" in part else f"thrift://{part}")
        if u.scheme != "thrift" or not u.hostname:
            raise InvalidOptionError("uri", uri, "a Hive Metastore address such as thrift://host:9083 "
                                                 "(comma-separated for several)")
        try:
            port = u.port or DEFAULT_PORT
        except ValueError:
            raise InvalidOptionError("uri", uri, "a Hive Metastore address such as thrift://host:9083") from None
        out.append(Endpoint(u.hostname, port))
    if not out:
        raise InvalidOptionError("uri", uri, "a Hive Metastore address such as thrift://host:9083")
    return out


def _thrift() -> Any:
    require_module("pymetastore", "hive", "the Hive Metastore catalog (metastore=hive)")
    from pymetastore.hive_metastore import ThriftHiveMetastore, ttypes
    return ThriftHiveMetastore, ttypes


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold SIGINT/SIGTERM (delivered when the block ends) around a call whose interruption would leave state on a
    server we cannot find again: a lock granted before we learnt its id, an unlock cut off mid-call."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signals are handled by the main thread only; nothing to defer here
        return
    held = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


class HiveMetastoreClient:
    """One connection to a Hive Metastore (reconnected on demand). Thread-safe: calls are serialised."""

    def __init__(self, uri: str, *, connect_timeout_s: float = 10.0, socket_timeout_s: float = 600.0,
                 user: str | None = None):
        self.uri = uri
        self.endpoints = parse_uris(uri)
        self.connect_timeout_s = float(connect_timeout_s)
        self.socket_timeout_s = float(socket_timeout_s)
        self.user = user or _user()
        self.hostname = socket.gethostname()
        self._mutex = threading.RLock()
        self._transport: Any = None
        self._client: Any = None
        self._endpoint: Endpoint | None = None
        self._fresh: Any = None  # the socket of a connection that has not answered yet
        self.thrift, self.types = _thrift()

    # ------------------------------------------------------------------ connection
    @property
    def endpoint(self) -> str:
        return str(self._endpoint or self.endpoints[0]) if len(self.endpoints) == 1 or self._endpoint else self.uri

    def _connect(self) -> Any:
        from thrift.protocol import TBinaryProtocol
        from thrift.transport import TSocket, TTransport
        errors = []
        for ep in self.endpoints:
            sock = TSocket.TSocket(ep.host, ep.port)
            sock.setTimeout(self.connect_timeout_s * 1000)
            transport = TTransport.TBufferedTransport(sock)
            try:
                transport.open()
            except Exception as e:  # noqa: BLE001 - try the next one, report all
                errors.append(f"{ep}: {_reason(e)}")
                continue
            # the first call must also answer within the connect timeout (a port that accepts but never answers
            # is as unreachable as one that refuses); later calls get the socket timeout
            self._fresh = sock
            self._transport, self._endpoint = transport, ep
            self._client = self.thrift.Client(TBinaryProtocol.TBinaryProtocol(transport))
            return self._client
        detail = "; ".join(errors) if len(errors) > 1 else errors[0].split(": ", 1)[1]
        if all(e.endswith("timed out") for e in errors):
            detail += f" (no answer within {self.connect_timeout_s:g} s)"
        raise UnreachableError(self.uri, detail, what="the Hive Metastore")

    def close(self) -> None:
        with self._mutex:
            if self._transport is not None:
                with contextlib.suppress(Exception):
                    self._transport.close()
            self._transport = self._client = self._fresh = None

    def __enter__(self) -> HiveMetastoreClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def call(self, what: str, fn: Callable[[Any], T], *, retry: bool = True) -> T:
        """Run `fn(client)`; a broken connection is reopened and, for a `retry`-able (idempotent) call, tried once
        more. `what` names the call's subject for errors ("table db.t")."""
        from thrift.Thrift import TApplicationException
        from thrift.transport.TTransport import TTransportException
        with self._mutex:
            for attempt in (0, 1):
                client = self._client or self._connect()
                fresh = self._fresh is not None
                try:
                    result = fn(client)
                    if self._fresh is not None:
                        self._fresh.setTimeout(self.socket_timeout_s * 1000)
                        self._fresh = None
                    return result
                except (TTransportException, OSError, EOFError) as e:
                    self.close()
                    if attempt == 0 and retry and not fresh:  # a connection that worked broke: reconnect once
                        continue
                    raise UnreachableError(self.endpoint, f"{_reason(e)} while reading {what}",
                                           what="the Hive Metastore") from None
                except TApplicationException as e:
                    # the server failed the call (an exception on its side, or a call it does not know)
                    self.close()
                    raise CatalogError(self.endpoint, f"failed a call on {what}: "
                                         f"{e.message or _TAPP_TYPES.get(e.type, 'internal error')}") from None
            raise AssertionError("unreachable")

    # ------------------------------------------------------------------ reads
    def databases(self) -> list[str]:
        return sorted(self.call("the databases", lambda c: c.get_all_databases()))

    def get_database(self, name: str) -> Any | None:
        t = self.types
        try:
            return self.call(f"database {name}", lambda c: c.get_database(name))
        except t.NoSuchObjectException:
            return None

    def table_names(self, database: str) -> list[str]:
        t = self.types
        try:
            return sorted(self.call(f"database {database}", lambda c: c.get_all_tables(database)))
        except t.MetaException as e:
            raise CatalogError(self.endpoint, f"cannot list database {database}: "
                                 f"{e.message}") from None

    def get_table(self, database: str, table: str) -> Any | None:
        """The metastore's `Table` object, or None when it has no such table (or database)."""
        t = self.types
        try:
            return self.call(f"table {database}.{table}", lambda c: c.get_table(database, table))
        except t.NoSuchObjectException:
            return None
        except t.MetaException as e:
            raise CatalogError(self.endpoint, f"cannot read table {database}.{table}: "
                                 f"{e.message}") from None

    def get_tables(self, database: str, names: Sequence[str]) -> list[Any]:
        """`Table` objects of `names` (those that exist), a batch per call."""
        t = self.types
        out: list[Any] = []
        for i in range(0, len(names), TABLES_PER_CALL):
            batch = list(names[i:i + TABLES_PER_CALL])

            def get(c: Any, b: list[str] = batch) -> list[Any]:
                return c.get_table_objects_by_name(database, b) or []
            try:
                out.extend(self.call(f"the tables of {database}", get))
            except (t.MetaException, t.InvalidOperationException, t.UnknownDBException) as e:
                raise CatalogError(self.endpoint, f"cannot read the tables of {database}: "
                                     f"{getattr(e, 'message', e)}") from None
        return out

    def partition_names(self, database: str, table: str) -> list[str]:
        """`k1=v1/k2=v2` names of the table's partitions (escaped as Hive stores them), sorted."""
        t = self.types
        try:
            return sorted(self.call(f"the partitions of {database}.{table}",
                                    lambda c: c.get_partition_names(database, table, -1)))
        except (t.NoSuchObjectException, t.MetaException) as e:
            raise CatalogError(self.endpoint, f"cannot list the partitions of "
                                 f"{database}.{table}: {e.message}") from None

    # ------------------------------------------------------------------ partitions
    def add_partitions(self, database: str, table: str, partitions: Sequence[tuple[Sequence[str], str]],
                       template_sd: Any) -> None:
        """Register partitions (values, location) if not there yet (`add_partitions(..., ifNotExists=true)`), each
        with a copy of the table's storage descriptor at its own location, as Java's HiveCatalog does."""
        if not partitions:
            return
        t = self.types
        now = int(time.time())
        parts = []
        for values, location in partitions:
            sd = _copy(template_sd)
            sd.location = location
            parts.append(t.Partition(values=list(values), dbName=database, tableName=table, createTime=now,
                                     lastAccessTime=now, sd=sd, parameters={}))
        req = t.AddPartitionsRequest(dbName=database, tblName=table, parts=parts, ifNotExists=True, needResult=False)
        try:
            self.call(f"the partitions of {database}.{table}", lambda c: c.add_partitions_req(req))
        except (t.InvalidObjectException, t.AlreadyExistsException, t.MetaException) as e:
            raise CatalogError(self.endpoint, f"did not add partitions to {database}.{table}: "
                                 f"{e.message}") from None

    def drop_partition(self, database: str, table: str, values: Sequence[str]) -> bool:
        """Drop one partition's registration (never its data); False when it was not registered."""
        t = self.types
        try:
            return bool(self.call(f"partition {list(values)} of {database}.{table}",
                                  lambda c: c.drop_partition(database, table, list(values), False)))
        except t.NoSuchObjectException:
            return False
        except t.MetaException as e:
            raise CatalogError(self.endpoint, f"did not drop partition {list(values)} of "
                                 f"{database}.{table}: {e.message}") from None

    def mark_partition_done(self, database: str, table: str, spec: Mapping[str, str]) -> None:
        """Report the LOAD_DONE event of a partition (`markPartitionForEvent`, Java's PartitionMarkDone /
        HiveMetastoreClient.markDone); a table the metastore does not know is ignored, as Java does."""
        t = self.types
        try:
            self.call(f"partition {dict(spec)} of {database}.{table}",
                      lambda c: c.markPartitionForEvent(database, table, dict(spec), t.PartitionEventType.LOAD_DONE))
        except t.NoSuchObjectException:
            return
        except (t.MetaException, t.UnknownDBException, t.UnknownTableException, t.InvalidPartitionException,
                t.UnknownPartitionException) as e:
            raise CatalogError(self.endpoint, f"did not mark partition {dict(spec)} of {database}.{table} done: "
                                 f"{e.message}") from None

    def is_partition_marked_done(self, database: str, table: str, spec: Mapping[str, str]) -> bool:
        """Whether the metastore holds a LOAD_DONE event of the partition (`isPartitionMarkedForEvent`)."""
        t = self.types
        try:
            return bool(self.call(f"partition {dict(spec)} of {database}.{table}",
                                  lambda c: c.isPartitionMarkedForEvent(database, table, dict(spec),
                                                                        t.PartitionEventType.LOAD_DONE)))
        except (t.NoSuchObjectException, t.UnknownTableException, t.UnknownDBException):
            return False
        except (t.MetaException, t.InvalidPartitionException, t.UnknownPartitionException) as e:
            raise CatalogError(self.endpoint, f"cannot read the events of partition {dict(spec)} of "
                                 f"{database}.{table}: {e.message}") from None

    def alter_table(self, database: str, table: str, new_table: Any) -> None:
        """`alter_table_with_environment_context(..., CASCADE=true)` as Java's `alter_table(db, t, table, true)`."""
        t = self.types
        ctx = t.EnvironmentContext(properties={"CASCADE": "true"})
        try:
            self.call(f"table {database}.{table}",
                      lambda c: c.alter_table_with_environment_context(database, table, new_table, ctx))
        except (t.InvalidOperationException, t.MetaException) as e:
            raise CatalogError(self.endpoint, f"did not alter table {database}.{table}: "
                                 f"{e.message}") from None

    # ------------------------------------------------------------------ locks
    def lock(self, database: str, table: str) -> tuple[int, int]:
        """Ask for Java's lock on the table: (lock id, state)."""
        t = self.types
        comp = t.LockComponent(type=t.LockType.EXCLUSIVE, level=t.LockLevel.TABLE, dbname=database, tablename=table)
        comp.operationType = None  # Java: unsetOperationType()
        req = t.LockRequest(component=[comp], user=self.user, hostname=self.hostname)
        with signals_deferred():
            try:
                resp = self.call(f"the lock of table {database}.{table}", lambda c: c.lock(req), retry=False)
            except (t.NoSuchTxnException, t.TxnAbortedException, t.MetaException) as e:
                raise CatalogError(self.endpoint, f"refused to lock table {database}.{table}: "
                                     f"{e.message}") from None
        return resp.lockid, resp.state

    def check_lock(self, lock_id: int) -> int:
        t = self.types
        try:
            return self.call(f"lock {lock_id}", lambda c: c.check_lock(t.CheckLockRequest(lockid=lock_id))).state
        except (t.NoSuchLockException, t.TxnAbortedException, t.NoSuchTxnException) as e:
            raise CatalogError(self.endpoint, f"lost lock {lock_id}: {e.message}") from None

    def unlock(self, lock_id: int) -> None:
        """Release a lock; a lock the server no longer knows (timed out) is already released."""
        t = self.types
        with signals_deferred():
            try:
                self.call(f"lock {lock_id}", lambda c: c.unlock(t.UnlockRequest(lockid=lock_id)))
            except t.NoSuchLockException:
                log.warning("lock %s was already released by the Hive Metastore %s", lock_id, self.endpoint)

    def lock_holders(self, database: str, table: str) -> list[Any]:
        """The metastore's locks on the table (`show_locks`), for error messages and tests."""
        t = self.types
        resp = self.call("the locks", lambda c: c.show_locks(t.ShowLocksRequest(dbname=database, tablename=table)))
        return list(resp.locks or [])

    def acquire(self, database: str, table: str, *, timeout: timedelta, max_sleep: timedelta,
                sleep: Callable[[float], None] = time.sleep) -> int:
        """Java's HiveCatalogLock.lock: one lock request, then `check_lock` polled (`catalog.lock.wait_for_lock`: 100 ms
        doubling up to `max_sleep`) until ACQUIRED; LockTimeoutError naming the table after `timeout`. A lock still
        waiting when we give up — or are interrupted, or fail — is withdrawn. Returns the lock id for `release`."""
        name = f"{database}.{table}"
        pending: list[int] = []

        def try_acquire() -> int | None:
            if pending:
                state = self.check_lock(pending[0])
            else:
                lock_id, state = self.lock(database, table)
                pending.append(lock_id)
            if state == ACQUIRED:
                return pending[0]
            if state != WAITING:
                raise CatalogError(self.endpoint, f"the lock of table {name} was not granted "
                                                  f"({_STATE_NAMES.get(state, state)}); nothing was committed")
            return None

        try:
            lock_id = wait_for_lock(try_acquire, endpoint=self.endpoint, table=name, timeout=timeout,
                                    max_sleep=max_sleep, sleep=sleep,
                                    holder=lambda: self.holder(database, table, pending[0] if pending else None))
        except BaseException:
            if pending:
                self.release(pending[0], name)
            raise
        log.debug("locked %s in %s (lock %s)", name, self.endpoint, lock_id)
        return lock_id

    def release(self, lock_id: int, name: str) -> None:
        """Unlock; a failure is logged, never raised over the error that brought us here (the metastore times such a
        lock out itself: hive.txn.timeout, 300 s by default)."""
        try:
            self.unlock(lock_id)
        except Exception as e:  # noqa: BLE001 - see above
            log.error("could not release the Hive Metastore lock %s of table %s: %s", lock_id, name, e)

    @contextlib.contextmanager
    def table_lock(self, database: str, table: str, *, acquire_timeout_s: float, check_max_sleep_s: float,
                   sleep: Callable[[float], None] = time.sleep) -> Iterator[int]:
        """Hold the table's lock for the block (Java's HiveCatalogLock.runWithLock)."""
        lock_id = self.acquire(database, table, timeout=timedelta(seconds=acquire_timeout_s),
                               max_sleep=timedelta(seconds=check_max_sleep_s), sleep=sleep)
        try:
            yield lock_id
        finally:
            self.release(lock_id, f"{database}.{table}")

    def holder(self, database: str, table: str, ours: int | None) -> str:
        """Who holds the table's lock (for the timeout's message), '' when unknown."""
        try:
            for lk in self.lock_holders(database, table):
                if lk.lockid != ours and lk.state == ACQUIRED:
                    return f"held by lock {lk.lockid} of {lk.user}@{lk.hostname}"
        except Exception:  # noqa: BLE001 - only for the message
            pass
        return ""


# ---------------------------------------------------------------------------------------------- table facts
def is_paimon_table(table: Any) -> bool:
    """Java's HiveCatalog.isPaimonTable: the storage descriptor names Paimon's input and output formats."""
    sd = getattr(table, "sd", None)
    if sd is None:
        return False
    formats = (sd.inputFormat, sd.outputFormat)
    return formats in ((PAIMON_INPUT_FORMAT, PAIMON_OUTPUT_FORMAT), (LEGACY_INPUT_FORMAT, LEGACY_OUTPUT_FORMAT))


def table_location(table: Any, location_in_properties: bool) -> str | None:
    """Where the table's files are: `paimon_location` (with location-in-properties) else `sd.location`."""
    params: Mapping[str, str] = table.parameters or {}
    if location_in_properties and params.get(PAIMON_LOCATION_PARAM):
        return params[PAIMON_LOCATION_PARAM]
    sd = getattr(table, "sd", None)
    return sd.location if sd is not None and sd.location else None


def database_location(database: Any, location_in_properties: bool) -> str | None:
    params: Mapping[str, str] = database.parameters or {}
    if location_in_properties and params.get(PAIMON_LOCATION_PARAM):
        return params[PAIMON_LOCATION_PARAM]
    return database.locationUri or None


# ---------------------------------------------------------------------------------------------- helpers
def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name in this environment
        return "paimon-ops"


def _copy(struct: Any) -> Any:
    return copy.deepcopy(struct)


def _reason(e: BaseException) -> str:
    text = str(getattr(e, "message", None) or e) or type(e).__name__
    if isinstance(e, socket.timeout) or "timed out" in text:
        return "timed out"
    inner = getattr(e, "inner", None)
    if inner is not None and str(inner):
        return str(inner)
    return text.replace("Could not connect to any of ", "could not connect to ")


_TAPP_TYPES = {1: "unknown method", 5: "internal error", 6: "protocol error", 7: "invalid transform"}


__all__ = [
    "ACQUIRED", "WAITING", "HiveMetastoreClient", "PAIMON_INPUT_FORMAT",
    "PAIMON_OUTPUT_FORMAT", "database_location", "is_paimon_table", "parse_uris", "signals_deferred",
    "table_location",
]
