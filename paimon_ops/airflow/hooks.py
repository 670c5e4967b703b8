"""`PaimonHook` and the `paimon` connection: where the warehouse is, how to reach its object store, where heavy work
runs.

Connection fields (the form is declared in `get_provider_info`):

* Host — the warehouse: a local path or a URI (`s3://bucket/warehouse`, `hdfs://…`);
* Login / Password — the object store's access key and secret key (`s3.access-key` / `s3.secret-key`);
* extras: `s3_endpoint`, `s3_region`, `s3_path_style_access`, `s3_session_token` (secret) — Paimon's `s3.*`
  options; `options` — more options as a JSON object: catalog options (a Hive Metastore, JDBC or REST catalog:
  `{"metastore": "jdbc", "uri": "jdbc:postgresql://host/db", "jdbc.user": "…", "jdbc.password": "…"}`, see
  `paimon_ops.catalog`), table options applied on top of every table's own, and any other store setting;
  `spark_master` / `spark_remote` (Spark Connect, `sc://host:15002`); `placement` — `auto` (in-process when a plan
  is within `execution.local.max-input-size` / `execution.local.max-tasks`, Spark beyond),
  `spark` or `local`; `connect_timeout` (seconds the catalog's server and a Spark master / Connect server may take
  to answer).

Secrets reach the engine's file system only: plans keep no store settings (`paimon_ops.execution.plan._plan_options`), reports
none, and the engine never logs them; Airflow masks the password and `s3_session_token` in task logs.
"""
from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping

from airflow.sdk import BaseHook

import paimon_ops.api as api
from paimon_ops.errors import InvalidArgumentError, PaimonOpsError
from paimon_ops.execution.placement import make_runner
from paimon_ops.lifecycle.schedule import tag_schedule
from paimon_ops.options import CATALOG_CONNECT_TIMEOUT, PARTITION_EXPIRATION_TIME, is_catalog_option
from paimon_ops.table.objectstore import is_store_option

CONN_TYPE = "paimon"
DEFAULT_CONN_ID = "paimon_default"
HOOK_NAME = "Apache Paimon (paimon-ops)"
PLACEMENTS = ("auto", "spark", "local")

# connection extra -> Paimon's object-store option
STORE_EXTRAS = {
    "s3_endpoint": "s3.endpoint",
    "s3_region": "s3.region",
    "s3_path_style_access": "s3.path.style.access",
    "s3_session_token": "s3.session-token",
}


@dataclass(frozen=True)
class PaimonSettings:
    """What a `paimon` connection says. `store_options` hold the secrets: never printed (repr=False)."""

    conn_id: str
    warehouse: str
    store_options: Mapping[str, str] = field(default_factory=dict, repr=False)
    table_options: Mapping[str, str] = field(default_factory=dict)
    spark_master: str | None = None
    spark_remote: str | None = None
    placement: str = "auto"
    connect_timeout: float | None = None
    catalog_options: Mapping[str, str] = field(default_factory=dict, repr=False)  # may hold jdbc.password, token

    @staticmethod
    def from_connection(conn: Any) -> PaimonSettings:
        conn_id = getattr(conn, "conn_id", None) or "?"
        extra = conn.extra_dejson if hasattr(conn, "extra_dejson") else dict(getattr(conn, "extra", None) or {})
        warehouse = (extra.get("warehouse") or conn.host or "").strip()
        if not warehouse:
            raise InvalidArgumentError(f"Airflow connection {conn_id!r}: no warehouse (set Host to the warehouse "
                                       "path or URI, e.g. s3://bucket/warehouse)")
        options = extra.get("options") or {}
        if isinstance(options, str):
            try:
                options = json.loads(options) if options.strip() else {}
            except ValueError as e:
                raise InvalidArgumentError(f"Airflow connection {conn_id!r}: extra 'options' is not a JSON object: "
                                           f"{e}") from None
        if not isinstance(options, Mapping):
            raise InvalidArgumentError(f"Airflow connection {conn_id!r}: extra 'options' must be a JSON object of "
                                       "option: value")
        options = {str(k): _text(v) for k, v in options.items()}
        store = {k: v for k, v in options.items() if is_store_option(k)}
        for key, option in STORE_EXTRAS.items():
            if extra.get(key) not in (None, ""):
                store[option] = _text(extra[key])
        if conn.login:
            store["s3.access-key"] = conn.login
        if conn.password:
            store["s3.secret-key"] = conn.password
        placement = (extra.get("placement") or "auto").strip().lower()
        if placement not in PLACEMENTS:
            raise InvalidArgumentError(f"Airflow connection {conn_id!r}: placement {placement!r} is not one of "
                                       + " | ".join(PLACEMENTS))
        timeout = extra.get("connect_timeout")
        try:
            timeout = float(timeout) if timeout not in (None, "") else None
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"Airflow connection {conn_id!r}: connect_timeout {timeout!r} is not a number "
                                       "of seconds") from None
        catalog = {k: v for k, v in options.items() if is_catalog_option(k)}
        if timeout is not None:
            catalog.setdefault(CATALOG_CONNECT_TIMEOUT.key, f"{int(timeout * 1000)} ms")
        return PaimonSettings(conn_id, warehouse, store,
                              {k: v for k, v in options.items() if k not in store and k not in catalog},
                              extra.get("spark_master") or None, extra.get("spark_remote") or None, placement,
                              timeout, catalog)


def _text(v: Any) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


class PaimonHook(BaseHook):
    """The warehouse of a `paimon` connection, through the engine's facade.

        table = PaimonHook("paimon_default").get_table("shop.orders")    # a paimon_ops.api.Table
        plan = table.maintenance.expire_snapshots(retain_min=5)
    """

    conn_name_attr = "paimon_conn_id"
    default_conn_name = DEFAULT_CONN_ID
    conn_type = CONN_TYPE
    hook_name = HOOK_NAME

    def __init__(self, paimon_conn_id: str = DEFAULT_CONN_ID, *, connection: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.paimon_conn_id = paimon_conn_id
        self._connection = connection

    @classmethod
    async def for_trigger(cls, conn_id: str) -> PaimonHook:
        """A hook for code running in the triggerer's event loop (the connection fetched asynchronously)."""
        return cls(conn_id, connection=await cls.aget_connection(conn_id))

    @cached_property
    def settings(self) -> PaimonSettings:
        return PaimonSettings.from_connection(self._connection or self.get_connection(self.paimon_conn_id))

    def get_conn(self) -> api.Catalog:
        s = self.settings
        return api.Catalog(s.warehouse, options={**s.table_options, **s.catalog_options, **s.store_options})

    get_catalog = get_conn

    def get_table(self, identifier: str, *, branch: str | None = None, options: Mapping[str, str] | None = None
                  ) -> api.Table:
        """The facade table `db.table` (`options`: table options for this call on top of the connection's)."""
        return self.get_conn().get_table(identifier, branch=branch, options=options)

    def tables(self, pattern: str | list[str] = "*", exclude: str | list[str] | tuple[str, ...] = ()) -> list[str]:
        """The warehouse's tables (`db.table`) matching fnmatch pattern(s) and no `exclude` pattern; a pattern with
        `$branch_…` matches branches (`db.*$branch_wap`, `db.t$branch_*`)."""
        include = [pattern] if isinstance(pattern, str) else list(pattern)
        skip = [exclude] if isinstance(exclude, str) else list(exclude)
        catalog = self.get_conn()
        found = catalog.tables() + [b for p in include if "$" in p for b in catalog.tables(p)]
        return [t for t in dict.fromkeys(found)
                if any(fnmatch.fnmatchcase(t, p) for p in include) and not any(fnmatch.fnmatchcase(t, p) for p in skip)]

    def shards(self, pattern: str | list[str] = "*", exclude: str | list[str] | tuple[str, ...] = (),
               size: int = 500) -> list[list[str]]:
        """The matching tables in shards — by database, each split into lists of at most `size` tables — for a
        task per shard (`PaimonMaintainTablesOperator.partial(…).expand(tables=hook.shards(…))`). Lists names only:
        no table is opened."""
        if size < 1:
            raise InvalidArgumentError(f"shard size must be at least 1, got {size}")
        by_db: dict[str, list[str]] = {}
        for ident in self.tables(pattern, exclude):
            by_db.setdefault(ident.partition(".")[0], []).append(ident)
        return [tables[i:i + size] for tables in by_db.values() for i in range(0, len(tables), size)]

    def maintenance_targets(self, pattern: str | list[str] = "*", exclude: str | list[str] | tuple[str, ...] = ()) -> dict[str, list[str]]:
        """The matching tables per nightly step: `all`, `auto_tags` (tables with automatic tags), `partition_expiry`
        (partitioned, with `partition.expiration-time`); tables that cannot be read are listed in `unreadable` (and
        logged) rather than failing every table's maintenance."""
        out: dict[str, list[str]] = {"all": [], "auto_tags": [], "partition_expiry": [], "unreadable": []}
        for ident in self.tables(pattern, exclude):
            try:
                raw = self.get_table(ident).raw
                auto = tag_schedule(raw) is not None
                expires = bool(raw.schema.partition_keys) and bool(raw.options.text(PARTITION_EXPIRATION_TIME))
            except (PaimonOpsError, OSError) as e:
                self.log.warning("paimon: %s cannot be maintained until fixed: %s", ident, " ".join(str(e).split()))
                out["unreadable"].append(ident)
                continue
            out["all"].append(ident)
            if auto:
                out["auto_tags"].append(ident)
            if expires:
                out["partition_expiry"].append(ident)
        return out

    def runner_for(self, plan: Any) -> Any:
        """The runner a plan executes on: none for a plan with nothing to run (Spark never starts), else by the
        connection's placement."""
        if not (getattr(plan, "tasks", ()) or plan.files):
            return None
        s = self.settings
        return make_runner(s.placement, master=s.spark_master, remote=s.spark_remote, connect_timeout_s=s.connect_timeout,
                           what=f"Airflow connection {self.paimon_conn_id!r}")

    def test_connection(self) -> tuple[bool, str]:
        """The UI's Test button: lists the warehouse."""
        try:
            tables = self.get_conn().tables()
        except Exception as e:  # noqa: BLE001 - reported to the UI as one line
            return False, " ".join(f"{type(e).__name__}: {e}".split())
        return True, f"warehouse {self.settings.warehouse}: {len(tables)} table(s)"


__all__ = ["PaimonHook", "PaimonSettings", "CONN_TYPE", "DEFAULT_CONN_ID", "HOOK_NAME", "STORE_EXTRAS", "PLACEMENTS"]
