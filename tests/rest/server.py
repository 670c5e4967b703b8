"""A reference REST catalog server for the tests — a spec server, NOT Alibaba DLF.

Written from Paimon's published OpenAPI spec (`docs/static/rest-catalog-open-api.yaml` in apache/paimon) and backed
by real files: a warehouse directory (or an S3 bucket), `<warehouse>/<db>.db/<table>` as Paimon lays it out. It
serves what table maintenance needs and nothing more:

* `GET /v1/config`; databases (list, create, get, drop); tables (list with `tableNamePattern`, create — it writes
  `schema/schema-0` itself —, get with `id`/`path`/`isExternal`/`schemaId`/`schema`, alter options, drop);
* `POST …/commit` — the server owns the table's history, as Java's `RESTCatalogServer` does: it checks `tableId`,
  compares `baseSnapshotUuid` with the uuid of **its own** latest-snapshot record (not the files) and answers
  `{"success": false}` on a mismatch, refuses a snapshot without `uuid` or with an id other than latest + 1 (400),
  checks that the per-partition statistics add up to the snapshot's `deltaRecordCount` (400), then writes
  `snapshot/snapshot-<id>` itself (create-if-absent; `success:false` if the id is taken) and the `LATEST` hint, and
  folds the statistics into its table and partition records. External tables: `/commit` and `/snapshot` are refused
  (501) — the Java test server means to do the same (its `commitSnapshot` builds that error response and drops it);
* `GET …/snapshot` (from its record; 404 SNAPSHOT when none), `GET …/snapshots/{id}`, `GET …/partitions`;
* `POST …/rollback` to a snapshot or a tag, with `fromSnapshot` (Java: 500 "Latest snapshot …"): deletes newer
  snapshot files and tags, restores a tag's expired snapshot file, rewrites `LATEST`; data files of the removed
  snapshots are left for orphan removal (Java's server deletes them with the engine's rollback);
* `GET …/token` — storage credentials with `expiresAtMillis` (Java and pypaimon read that key; the YAML says
  `expiresAt`, sent too), freshly minted per call when configured;
* tags: list (`tagNamePrefix`), create (`snapshotId`, `timeRetained`), get, delete — tag files written by the server;
* auth: `Authorization: Bearer` tokens with optional expiry, and DLF `DLF4-HMAC-SHA256` signatures, verified (key,
  date skew, Content-MD5, signature); per-table 403; errors as `ErrorResponse {message, resourceType, resourceName,
  code}` with 400/401/403/404/409/500/501.

Everything the server writes into a table is appended to `<state>/writes.jsonl` (path, sha-256, kind), every request
to `<state>/requests.jsonl`: the tests prove from these that no snapshot or hint file was written by anyone else.

Run: `python -m tests.rest.server CONFIG.json` (keys documented in `Config`); it prints `listening <port>`. One route
is not in the spec: `POST /test/config` changes `delay_ms` and `fail_after_commit` of a running server (tests only).
"""
from __future__ import annotations

import base64
import datetime as dt
import hashlib
import http.server
import json
import os
import re
import sys
import threading
import time
import traceback
import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qsl, quote, unquote_plus, urlsplit

from paimon_ops.catalog.rest_client import (
    DLF_DATE,
    DLF_SECURITY_TOKEN_HEADER,
    dlf_canonical_request,
    dlf_signature,
    encode_param,
)

SNAPSHOT_PREFIX = "snapshot-"
TAG_PREFIX = "tag-"
SCHEMA_PREFIX = "schema-"
MAX_CLOCK_SKEW_S = 15 * 60


# ---------------------------------------------------------------------------------------------- configuration
@dataclass
class Config:
    warehouse: str                                  # local directory or s3://bucket/prefix
    state_dir: str                                  # writes.jsonl, requests.jsonl, state.json, server log
    port: int = 0
    warehouse_name: str = ""                        # what clients pass as ?warehouse= (default: `warehouse`)
    prefix: str = ""                                # the `prefix` default of /v1/config
    defaults: dict[str, str] = field(default_factory=dict)
    overrides: dict[str, str] = field(default_factory=dict)
    bearer_tokens: dict[str, int | None] = field(default_factory=dict)   # token -> expires at (ms) or None
    dlf_keys: dict[str, dict[str, Any]] = field(default_factory=dict)    # AK -> {secret, security_token, expires_at}
    dlf_region: str = "cn-hangzhou"
    allow_anonymous: bool = False
    forbidden_tables: list[str] = field(default_factory=list)            # db.table answered with 403
    page_size: int = 100
    storage: dict[str, str] = field(default_factory=dict)                # s3: endpoint, access_key, secret_key, region
    data_token: dict[str, Any] | None = None          # {ttl_ms, options: {...}, mint_keys: bool}
    strict_statistics: bool = True
    delay_ms: dict[str, int] = field(default_factory=dict)               # "<METHOD> <suffix>" -> sleep (timeouts)
    fail_after_commit: int = 0                      # answer the next N successful commits with a 500 (Java's test)

    @classmethod
    def load(cls, path: str) -> Config:
        with open(path) as f:
            raw = json.load(f)
        return cls(**raw)


class ApiError(Exception):
    def __init__(self, status: int, message: str, resource_type: str | None = None,
                 resource_name: str | None = None, code: int | None = None) -> None:
        super().__init__(message)
        self.status, self.message = status, message
        self.resource_type, self.resource_name = resource_type, resource_name
        self.code = status if code is None else code

    def body(self) -> dict[str, Any]:
        return {"message": self.message, "resourceType": self.resource_type, "resourceName": self.resource_name,
                "code": self.code}


def not_found(kind: str, name: str, message: str | None = None) -> ApiError:
    return ApiError(404, message or f"{kind.lower()} {name} does not exist", kind, name)


# ---------------------------------------------------------------------------------------------- storage
class LocalStorage:
    """Files on the local file system; `create` is atomic create-if-absent (link, as Paimon's commit needs)."""

    def read(self, loc: str) -> bytes | None:
        try:
            with open(loc, "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def write(self, loc: str, data: bytes) -> None:
        os.makedirs(os.path.dirname(loc), exist_ok=True)
        tmp = f"{loc}.{uuid.uuid4().hex}.tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, loc)

    def create(self, loc: str, data: bytes) -> bool:
        d, name = os.path.split(loc)
        os.makedirs(d, exist_ok=True)
        tmp = os.path.join(d, f".{name}.{uuid.uuid4()}.tmp")
        with open(tmp, "wb") as f:
            f.write(data)
        try:
            os.link(tmp, loc)
            return True
        except FileExistsError:
            return False
        finally:
            os.unlink(tmp)

    def delete(self, loc: str) -> bool:
        try:
            os.unlink(loc)
            return True
        except FileNotFoundError:
            return False

    def names(self, directory: str) -> list[str]:
        try:
            return sorted(e.name for e in os.scandir(directory) if e.is_file(follow_symlinks=False))
        except FileNotFoundError:
            return []

    def mkdirs(self, loc: str) -> None:
        os.makedirs(loc, exist_ok=True)


class S3Storage:
    """Objects in an S3-compatible store (boto3); `create` is a conditional PUT (If-None-Match: *)."""

    def __init__(self, settings: dict[str, str]) -> None:
        import boto3
        self.s3 = boto3.client("s3", endpoint_url=settings["endpoint"], aws_access_key_id=settings["access_key"],
                               aws_secret_access_key=settings["secret_key"],
                               region_name=settings.get("region", "us-east-1"))

    @staticmethod
    def _split(loc: str) -> tuple[str, str]:
        rest = loc.split("://", 1)[1]
        bucket, _, key = rest.partition("/")
        return bucket, key

    def read(self, loc: str) -> bytes | None:
        bucket, key = self._split(loc)
        try:
            return self.s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        except self.s3.exceptions.NoSuchKey:
            return None

    def write(self, loc: str, data: bytes) -> None:
        bucket, key = self._split(loc)
        self.s3.put_object(Bucket=bucket, Key=key, Body=data)

    def create(self, loc: str, data: bytes) -> bool:
        from botocore.exceptions import ClientError
        bucket, key = self._split(loc)
        try:
            self.s3.put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
            return True
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") in ("PreconditionFailed", "412", "ConditionalRequestConflict"):
                return False
            raise

    def delete(self, loc: str) -> bool:
        bucket, key = self._split(loc)
        existed = self.read(loc) is not None
        self.s3.delete_object(Bucket=bucket, Key=key)
        return existed

    def names(self, directory: str) -> list[str]:
        bucket, key = self._split(directory.rstrip("/") + "/")
        out = []
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=key, Delimiter="/"):
            out += [o["Key"][len(key):] for o in page.get("Contents", [])]
        return sorted(n for n in out if n)

    def mkdirs(self, loc: str) -> None:
        pass  # no directories in an object store


# ---------------------------------------------------------------------------------------------- helpers
def like(pattern: str) -> re.Pattern[str]:
    """SQL LIKE (`%`, `_`) as a regular expression."""
    out = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
    return re.compile(f"^{out}$")


def highest_field_id(fields: list[Any]) -> int:
    best = -1

    def walk(node: Any) -> None:
        nonlocal best
        if isinstance(node, dict):
            if isinstance(node.get("id"), int) and "name" in node and "type" in node:
                best = max(best, node["id"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(fields)
    return best


_RETAINED = re.compile(r"^\s*(\d+)\s*(d|h|m|min|s|ms)\s*$", re.IGNORECASE)


def parse_time_retained(text: str) -> float:
    """Seconds of a tag's `timeRetained` ("1d", "12h", "30m", "10s", or an ISO-8601 duration)."""
    m = _RETAINED.match(text)
    if m:
        unit = m.group(2).lower()
        return int(m.group(1)) * {"d": 86400, "h": 3600, "m": 60, "min": 60, "s": 1, "ms": 0.001}[unit]
    iso = re.match(r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$", text.strip(), re.IGNORECASE)
    if iso and text.strip().upper() != "P":
        d, h, mi, s = (float(g or 0) for g in iso.groups())
        return d * 86400 + h * 3600 + mi * 60 + s
    raise ApiError(400, f"timeRetained {text!r} is not a duration such as '1d', '12h' or '30m'")


def local_date_time_array(millis: int) -> list[int]:
    """Jackson's LocalDateTime array form (UTC wall clock), trailing zero seconds / nanos dropped."""
    t = dt.datetime.fromtimestamp(millis / 1000, dt.timezone.utc)
    out = [t.year, t.month, t.day, t.hour, t.minute, t.second, t.microsecond * 1000]
    while len(out) > 5 and out[-1] == 0:
        out.pop()
    return out


def tag_json(snapshot: dict[str, Any], create_millis: int | None, retained_s: float | None) -> bytes:
    obj = dict(snapshot)
    text = json.dumps(obj, indent=2)
    if retained_s is None:
        return text.encode()
    # tagTimeRetained is a decimal number of seconds with 9 fraction digits (Jackson's Duration)
    extra = (f',\n  "tagCreateTime" : {json.dumps(local_date_time_array(create_millis or 0))}'
             f',\n  "tagTimeRetained" : {Decimal(str(retained_s)).quantize(Decimal("0.000000001"))}\n}}')
    return (text.rstrip()[:-1].rstrip() + extra).encode()


def strip_tag_fields(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("tagCreateTime", "tagTimeRetained")}


# ---------------------------------------------------------------------------------------------- the catalog
class Catalog:
    """Databases and tables of one warehouse, with the server's own latest-snapshot record per table."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.store: LocalStorage | S3Storage = S3Storage(cfg.storage) if "://" in cfg.warehouse and \
            not cfg.warehouse.startswith("file://") else LocalStorage()
        self.root = cfg.warehouse.removeprefix("file://").rstrip("/")
        self.lock = threading.RLock()
        self.state_path = os.path.join(cfg.state_dir, "state.json")
        self.state: dict[str, Any] = {"databases": {}, "tables": {}, "latest": {}, "history": {}, "partitions": {}}
        if os.path.exists(self.state_path):
            with open(self.state_path) as f:
                self.state = json.load(f)
        if not isinstance(self.store, S3Storage):
            self.store.mkdirs(self.root)
        self.token_serial = 0

    # ------------------------------------------------------------------ bookkeeping
    def save(self) -> None:
        tmp = self.state_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.state, f)
        os.replace(tmp, self.state_path)

    def log_write(self, loc: str, data: bytes | None, kind: str, op: str = "write") -> None:
        rec = {"path": loc, "kind": kind, "op": op, "time": int(time.time() * 1000), "pid": os.getpid()}
        if data is not None:
            rec["sha256"] = hashlib.sha256(data).hexdigest()
        with open(os.path.join(self.cfg.state_dir, "writes.jsonl"), "a") as f:
            f.write(json.dumps(rec) + "\n")

    def put(self, loc: str, data: bytes, kind: str) -> None:
        self.log_write(loc, data, kind)  # before: a crash never leaves an unlogged file of ours
        self.store.write(loc, data)

    def create(self, loc: str, data: bytes, kind: str) -> bool:
        self.log_write(loc, data, kind, "create")
        return self.store.create(loc, data)

    def remove(self, loc: str, kind: str) -> bool:
        self.log_write(loc, None, kind, "delete")
        return self.store.delete(loc)

    # ------------------------------------------------------------------ resources
    def database(self, name: str) -> dict[str, Any]:
        db = self.state["databases"].get(name)
        if db is None:
            raise not_found("DATABASE", name)
        return db

    def table(self, db: str, name: str) -> dict[str, Any]:
        self.database(db)
        t = self.state["tables"].get(f"{db}.{name}")
        if t is None:
            raise not_found("TABLE", f"{db}.{name}")
        if f"{db}.{name}" in self.cfg.forbidden_tables:
            raise ApiError(403, f"no permission on table {db}.{name}")
        return t

    def schema_files(self, path: str) -> list[int]:
        ids = []
        for n in self.store.names(f"{path}/schema"):
            if n.startswith(SCHEMA_PREFIX) and n[len(SCHEMA_PREFIX):].isdigit():
                ids.append(int(n[len(SCHEMA_PREFIX):]))
        return sorted(ids)

    def latest_schema(self, t: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        ids = self.schema_files(t["path"])
        if not ids:
            raise ApiError(500, f"table {t['name']} has no schema file under {t['path']}/schema")
        raw = self.store.read(f"{t['path']}/schema/{SCHEMA_PREFIX}{ids[-1]}")
        return ids[-1], json.loads(raw or b"{}")

    def table_response(self, t: dict[str, Any]) -> dict[str, Any]:
        schema_id, schema = self.latest_schema(t)
        options = dict(schema.get("options") or {})
        if t["external"]:
            options["path"] = t["path"]
        return {"id": t["uuid"], "name": t["name"], "database": t["database"], "path": t["path"],
                "isExternal": t["external"], "schemaId": schema_id,
                "schema": {"fields": schema.get("fields", []), "partitionKeys": schema.get("partitionKeys", []),
                           "primaryKeys": schema.get("primaryKeys", []), "options": options,
                           "comment": schema.get("comment")},
                "owner": "paimon-ops-tests", "createdAt": t["created_at"], "createdBy": "spec-server",
                "updatedAt": t["created_at"], "updatedBy": "spec-server"}

    def snapshot_file(self, t: dict[str, Any], snapshot_id: int) -> dict[str, Any] | None:
        raw = self.store.read(f"{t['path']}/snapshot/{SNAPSHOT_PREFIX}{snapshot_id}")
        return json.loads(raw) if raw else None

    def snapshot_ids(self, t: dict[str, Any]) -> list[int]:
        return sorted(int(n[len(SNAPSHOT_PREFIX):]) for n in self.store.names(f"{t['path']}/snapshot")
                      if n.startswith(SNAPSHOT_PREFIX) and n[len(SNAPSHOT_PREFIX):].isdigit())

    def tags(self, t: dict[str, Any]) -> dict[str, dict[str, Any]]:
        out = {}
        for n in self.store.names(f"{t['path']}/tag"):
            if n.startswith(TAG_PREFIX):
                raw = self.store.read(f"{t['path']}/tag/{n}")
                if raw:
                    out[n[len(TAG_PREFIX):]] = json.loads(raw)
        return out

    # ------------------------------------------------------------------ databases
    def create_database(self, body: dict[str, Any]) -> None:
        name = body.get("name")
        if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
            raise ApiError(400, f"invalid database name {name!r}")
        with self.lock:
            if name in self.state["databases"]:
                raise ApiError(409, f"database {name} already exists", "DATABASE", name)
            location = f"{self.root}/{name}.db"
            self.store.mkdirs(location)
            self.state["databases"][name] = {"id": str(uuid.uuid4()), "name": name, "location": location,
                                             "options": dict(body.get("options") or {})}
            self.save()

    def drop_database(self, name: str) -> None:
        with self.lock:
            self.database(name)
            if any(t["database"] == name for t in self.state["tables"].values()):
                raise ApiError(409, f"database {name} is not empty", "DATABASE", name)
            del self.state["databases"][name]
            self.save()

    # ------------------------------------------------------------------ tables
    def create_table(self, db: str, body: dict[str, Any]) -> None:
        ident = body.get("identifier") or {}
        name = ident.get("object")
        schema = body.get("schema")
        if ident.get("database") not in (None, db) or not isinstance(name, str) or not name or "/" in name \
                or not isinstance(schema, dict):
            raise ApiError(400, "createTable needs identifier {database, object} and a schema")
        with self.lock:
            self.database(db)
            key = f"{db}.{name}"
            if key in self.state["tables"]:
                raise ApiError(409, f"table {key} already exists", "TABLE", key)
            options = dict(schema.get("options") or {})
            external = "path" in options
            path = options.pop("path").rstrip("/") if external else f"{self.root}/{db}.db/{name}"
            fields = schema.get("fields") or []
            schema_file = {"version": 3, "id": 0, "fields": fields, "highestFieldId": highest_field_id(fields),
                           "partitionKeys": schema.get("partitionKeys") or [],
                           "primaryKeys": schema.get("primaryKeys") or [], "options": options,
                           "comment": schema.get("comment"), "timeMillis": int(time.time() * 1000)}
            loc = f"{path}/schema/{SCHEMA_PREFIX}0"
            if external and self.store.read(loc) is not None:
                pass  # an external table over existing files keeps their schema
            elif not self.create(loc, json.dumps(schema_file, indent=2).encode(), "schema"):
                raise ApiError(409, f"{loc} already exists", "TABLE", key)
            self.state["tables"][key] = {"uuid": str(uuid.uuid4()), "database": db, "name": name, "path": path,
                                         "external": external, "created_at": int(time.time() * 1000)}
            self.save()

    def alter_table(self, db: str, name: str, body: dict[str, Any]) -> None:
        with self.lock:
            t = self.table(db, name)
            schema_id, schema = self.latest_schema(t)
            schema = dict(schema)
            options = dict(schema.get("options") or {})
            for change in body.get("changes") or []:
                action = change.get("action")
                if action == "setOption":
                    options[change["key"]] = change["value"]
                elif action == "removeOption":
                    options.pop(change["key"], None)
                elif action == "updateComment":
                    schema["comment"] = change.get("comment")
                else:
                    raise ApiError(501, f"schema change {action!r} is not implemented by this spec server")
            schema.update(id=schema_id + 1, options=options, timeMillis=int(time.time() * 1000))
            if not self.create(f"{t['path']}/schema/{SCHEMA_PREFIX}{schema_id + 1}",
                               json.dumps(schema, indent=2).encode(), "schema"):
                raise ApiError(409, f"schema {schema_id + 1} of {db}.{name} was created concurrently", "TABLE",
                               f"{db}.{name}")

    def drop_table(self, db: str, name: str) -> None:
        """Forget the table; its files stay where they are (an unpurged drop)."""
        with self.lock:
            self.table(db, name)
            key = f"{db}.{name}"
            for store in ("tables", "latest", "history", "partitions"):
                self.state[store].pop(key, None)
            self.save()

    # ------------------------------------------------------------------ versions
    def commit(self, db: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            t = self.table(db, name)
            key = f"{db}.{name}"
            if t["external"]:
                raise ApiError(501, "external paimon table does not support commit in rest server", "TABLE", key)
            if body.get("tableId") != t["uuid"]:
                raise not_found("TABLE", key, f"table {key} has id {t['uuid']}, not {body.get('tableId')}")
            snap = body.get("snapshot")
            stats = body.get("statistics")
            if not isinstance(snap, dict) or not isinstance(stats, list):
                raise ApiError(400, "commitTable needs a snapshot and statistics")
            if not isinstance(snap.get("uuid"), str) or not snap["uuid"]:
                raise ApiError(400, "the snapshot has no uuid; the next commit could not name it as its base")
            current = self.state["latest"].get(key)
            current_uuid = current["snapshot"].get("uuid") if current else None
            if body.get("baseSnapshotUuid") != current_uuid:
                return {"success": False}
            expected_id = (current["snapshot"]["id"] + 1) if current else 1
            if snap.get("id") != expected_id:
                raise ApiError(400, f"snapshot id {snap.get('id')} does not follow the latest snapshot "
                                    f"({expected_id - 1})")
            delta = sum(int(s.get("recordCount", 0)) for s in stats)
            if self.cfg.strict_statistics and delta != snap.get("deltaRecordCount"):
                raise ApiError(400, f"the statistics add up to {delta} records, but the snapshot's deltaRecordCount "
                                    f"is {snap.get('deltaRecordCount')}")
            loc = f"{t['path']}/snapshot/{SNAPSHOT_PREFIX}{snap['id']}"
            if not self.create(loc, json.dumps(snap, indent=2).encode(), "snapshot"):
                return {"success": False}
            self.put(f"{t['path']}/snapshot/LATEST", str(snap["id"]).encode(), "hint")
            totals = {"recordCount": 0, "fileSizeInBytes": 0, "fileCount": 0, "lastFileCreationTime": 0}
            if current:
                totals = {k: current[k] for k in totals}
            for s in stats:
                for k in ("recordCount", "fileSizeInBytes", "fileCount"):
                    totals[k] += int(s.get(k, 0))
                totals["lastFileCreationTime"] = max(totals["lastFileCreationTime"],
                                                     int(s.get("lastFileCreationTime", 0)))
            record = {"snapshot": snap, **totals}
            self.state["latest"][key] = record
            self.state["history"].setdefault(key, {})[str(snap["id"])] = record
            parts = self.state["partitions"].setdefault(key, {})
            for s in stats:
                spec = s.get("spec") or {}
                pk = json.dumps(spec, sort_keys=True)
                p = parts.setdefault(pk, {"spec": spec, "recordCount": 0, "fileSizeInBytes": 0, "fileCount": 0,
                                          "lastFileCreationTime": 0, "totalBuckets": 0, "done": False})
                for k in ("recordCount", "fileSizeInBytes", "fileCount"):
                    p[k] += int(s.get(k, 0))
                p["lastFileCreationTime"] = max(p["lastFileCreationTime"], int(s.get("lastFileCreationTime", 0)))
                p["totalBuckets"] = s.get("totalBuckets", p["totalBuckets"])
                if p["recordCount"] <= 0 and p["fileCount"] <= 0 and p["fileSizeInBytes"] <= 0:
                    del parts[pk]
            self.save()
            if self.cfg.fail_after_commit > 0:  # committed, but the answer says otherwise (Java's server can too)
                self.cfg.fail_after_commit -= 1
                raise ApiError(500, "Service Failure", "TABLE", key)
            return {"success": True}

    def latest(self, db: str, name: str) -> dict[str, Any]:
        t = self.table(db, name)
        key = f"{db}.{name}"
        if t["external"]:
            raise ApiError(404, "external paimon table does not support get table snapshot in rest server",
                           "TABLE", key, 501)
        record = self.state["latest"].get(key)
        if record is None:
            raise not_found("SNAPSHOT", key, f"table {key} has no snapshot")
        return {"snapshot": record}

    def version(self, db: str, name: str, version: str) -> dict[str, Any]:
        t = self.table(db, name)
        if version.lower() == "latest":
            return {"snapshot": self.latest(db, name)["snapshot"]["snapshot"]}
        if not version.isdigit():
            raise ApiError(400, f"version {version!r} is neither a snapshot id nor 'latest'")
        snap = self.snapshot_file(t, int(version))
        if snap is None:
            raise not_found("SNAPSHOT", version)
        return {"snapshot": snap}

    def rollback(self, db: str, name: str, body: dict[str, Any]) -> None:
        with self.lock:
            t = self.table(db, name)
            key = f"{db}.{name}"
            if t["external"]:
                raise ApiError(501, "external paimon table does not support rollback in rest server", "TABLE", key)
            instant = body.get("instant") or {}
            current = self.state["latest"].get(key)
            latest_id = current["snapshot"]["id"] if current else None
            from_snapshot = body.get("fromSnapshot")
            if from_snapshot is not None and from_snapshot != latest_id:
                raise ApiError(500, f"Latest snapshot {latest_id} is not {from_snapshot}")
            kind = str(instant.get("type", "")).lower()
            if kind == "snapshot":
                target_id = instant.get("snapshotId")
                target = self.snapshot_file(t, target_id) if isinstance(target_id, int) else None
                if target is None or latest_id is None or target_id > latest_id:
                    raise not_found("SNAPSHOT", str(target_id))
            elif kind == "tag":
                tag_name = str(instant.get("tagName"))
                raw = self.store.read(f"{t['path']}/tag/{TAG_PREFIX}{tag_name}")
                if raw is None:
                    raise not_found("TAG", tag_name)
                target = strip_tag_fields(json.loads(raw))
                target_id = target["id"]
                if self.snapshot_file(t, target_id) is None:  # expired: restore it from the tag, as Java does
                    self.create(f"{t['path']}/snapshot/{SNAPSHOT_PREFIX}{target_id}",
                                json.dumps(target, indent=2).encode(), "snapshot")
                    self.put(f"{t['path']}/snapshot/EARLIEST", str(target_id).encode(), "hint")
            else:
                raise ApiError(400, f"unknown rollback instant {instant!r}")
            # newest first, then tags created after the target, then the hint
            for sid in reversed([i for i in self.snapshot_ids(t) if i > target_id]):
                self.remove(f"{t['path']}/snapshot/{SNAPSHOT_PREFIX}{sid}", "snapshot")
            for tag_name, tag in self.tags(t).items():
                if tag.get("id", 0) > target_id:
                    self.remove(f"{t['path']}/tag/{TAG_PREFIX}{tag_name}", "tag")
            self.put(f"{t['path']}/snapshot/LATEST", str(target_id).encode(), "hint")
            history = self.state["history"].setdefault(key, {})
            record = history.get(str(target_id)) or {"snapshot": target,
                                                     "recordCount": target.get("totalRecordCount") or 0,
                                                     "fileSizeInBytes": 0, "fileCount": 0, "lastFileCreationTime": 0}
            record = {**record, "snapshot": target}
            self.state["latest"][key] = record
            for sid in [s for s in history if int(s) > target_id]:
                del history[sid]
            self.save()

    def token(self, db: str, name: str) -> dict[str, Any]:
        t = self.table(db, name)
        spec = self.cfg.data_token
        if spec is None:
            raise ApiError(501, "this spec server vends no data tokens (data-token.enabled is not offered)")
        with self.lock:
            self.token_serial += 1
            serial = self.token_serial
        options = {k: str(v) for k, v in (spec.get("options") or {}).items()}
        if spec.get("mint_keys"):
            ak, sk = f"REST-AK-{os.getpid()}-{serial}", f"rest-secret-{uuid.uuid4().hex}"
            for k in ("s3.access-key", "fs.s3.accessKeyId"):
                options[k] = ak
            for k in ("s3.secret-key", "fs.s3.accessKeySecret"):
                options[k] = sk
        expires = int(time.time() * 1000) + int(spec.get("ttl_ms", 3_600_000 * 4))
        with open(os.path.join(self.cfg.state_dir, "tokens.jsonl"), "a") as f:
            f.write(json.dumps({"table": f"{db}.{name}", "serial": serial, "expiresAtMillis": expires,
                                "accessKey": options.get("s3.access-key"), "path": t["path"]}) + "\n")
        return {"token": options, "expiresAtMillis": expires, "expiresAt": expires}

    # ------------------------------------------------------------------ tags
    def create_tag(self, db: str, name: str, body: dict[str, Any]) -> None:
        with self.lock:
            t = self.table(db, name)
            tag = body.get("tagName")
            if not isinstance(tag, str) or not tag.strip() or "/" in tag or tag.isdigit():
                raise ApiError(400, f"invalid tag name {tag!r}")
            sid = body.get("snapshotId")
            if sid is None:
                record = self.state["latest"].get(f"{db}.{name}")
                if record is None:
                    raise not_found("SNAPSHOT", "latest", f"table {db}.{name} has no snapshot to tag")
                sid = record["snapshot"]["id"]
            snap = self.snapshot_file(t, sid)
            if snap is None:
                raise not_found("SNAPSHOT", str(sid))
            retained = body.get("timeRetained")
            data = tag_json(snap, int(time.time() * 1000), parse_time_retained(retained) if retained else None)
            if not self.create(f"{t['path']}/tag/{TAG_PREFIX}{tag}", data, "tag"):
                raise ApiError(409, f"tag {tag} already exists", "TAG", tag)

    def get_tag(self, db: str, name: str, tag: str) -> dict[str, Any]:
        t = self.table(db, name)
        raw = self.store.read(f"{t['path']}/tag/{TAG_PREFIX}{tag}")
        if raw is None:
            raise not_found("TAG", tag)
        obj = json.loads(raw)
        created = obj.get("tagCreateTime")
        millis = None
        if isinstance(created, list) and len(created) >= 5:
            parts = list(created) + [0] * (7 - len(created))
            millis = int(dt.datetime(*parts[:6], parts[6] // 1000, tzinfo=dt.timezone.utc).timestamp() * 1000)
        retained = obj.get("tagTimeRetained")
        return {"tagName": tag, "snapshot": strip_tag_fields(obj), "tagCreateTime": millis,
                "tagTimeRetained": f"PT{retained}S" if retained is not None else None}

    def delete_tag(self, db: str, name: str, tag: str) -> None:
        with self.lock:
            t = self.table(db, name)
            if not self.remove(f"{t['path']}/tag/{TAG_PREFIX}{tag}", "tag"):
                raise not_found("TAG", tag)


# ---------------------------------------------------------------------------------------------- authentication
class Auth:
    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg

    def check(self, method: str, raw_path: str, query: list[tuple[str, str]], headers: Any, body: bytes) -> str:
        """Who is calling ('bearer' / 'dlf:<AK>' / 'anonymous'), or ApiError 401."""
        auth = headers.get("Authorization") or ""
        now_ms = int(time.time() * 1000)
        if auth.startswith("Bearer "):
            token = auth[len("Bearer "):].strip()
            if token not in self.cfg.bearer_tokens:
                raise ApiError(401, "the bearer token is not known to this server")
            expires = self.cfg.bearer_tokens[token]
            if expires is not None and expires <= now_ms:
                raise ApiError(401, f"the bearer token expired at {expires}")
            return "bearer"
        if auth.startswith("DLF4-HMAC-SHA256 "):
            return self._dlf(method, raw_path, query, headers, body, auth, now_ms)
        if self.cfg.allow_anonymous:
            return "anonymous"
        raise ApiError(401, "no credentials (Authorization header missing)")

    def _dlf(self, method: str, raw_path: str, query: list[tuple[str, str]], headers: Any, body: bytes,
             auth: str, now_ms: int) -> str:
        m = re.fullmatch(r"DLF4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/DlfNext/aliyun_v4_request,"
                         r"Signature=([0-9a-f]{64})", auth.strip())
        if not m:
            raise ApiError(401, "malformed DLF Authorization header")
        ak, date, region, signature = m.groups()
        key = self.cfg.dlf_keys.get(ak)
        if key is None:
            raise ApiError(401, f"access key {ak} is not known to this server")
        if region != self.cfg.dlf_region:
            raise ApiError(401, f"the request is signed for region {region}, this server is {self.cfg.dlf_region}")
        if key.get("expires_at") is not None and key["expires_at"] <= now_ms:
            raise ApiError(401, f"the credentials of access key {ak} expired at {key['expires_at']}")
        if key.get("security_token") is not None and headers.get(DLF_SECURITY_TOKEN_HEADER) != key["security_token"]:
            raise ApiError(401, f"access key {ak} needs its security token")
        date_time = headers.get(DLF_DATE) or ""
        try:
            signed_at = dt.datetime.strptime(date_time, "%Y%m%dT%H%M%SZ").replace(tzinfo=dt.timezone.utc)
        except ValueError:
            raise ApiError(401, f"bad {DLF_DATE} header {date_time!r}") from None
        if abs(signed_at.timestamp() - now_ms / 1000) > MAX_CLOCK_SKEW_S or date_time[:8] != date:
            raise ApiError(401, f"the request was signed at {date_time}, too far from the server's clock")
        if body:
            md5 = base64.b64encode(hashlib.md5(body).digest()).decode()
            if headers.get("Content-MD5") != md5:
                raise ApiError(401, "Content-MD5 does not match the body")
        signed = {k: v for k, v in headers.items()}
        # Java encodes query values with URLEncoder before signing, pypaimon with quote(safe=''): accept either
        for encode in (encode_param, lambda v: quote(v, safe="")):
            canonical = dlf_canonical_request(method, raw_path, {k: encode(v) for k, v in query}, signed)
            if dlf_signature(canonical, date_time, region, key["secret"]) == signature:
                return f"dlf:{ak}"
        raise ApiError(401, "the request signature does not match")


# ---------------------------------------------------------------------------------------------- routing
class Server:
    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.catalog = Catalog(cfg)
        self.auth = Auth(cfg)
        self.requests_log = os.path.join(cfg.state_dir, "requests.jsonl")
        self.log_lock = threading.Lock()

    def config(self, query: dict[str, str]) -> dict[str, Any]:
        wanted = query.get("warehouse")
        names = {self.cfg.warehouse_name or self.cfg.warehouse, self.cfg.warehouse}
        if wanted not in names:
            raise ApiError(404, f"warehouse {wanted!r} is not served here (this server serves "
                                f"{self.cfg.warehouse_name or self.cfg.warehouse!r})", "UNKNOWN", wanted)
        defaults = dict(self.cfg.defaults)
        if self.cfg.prefix:
            defaults["prefix"] = self.cfg.prefix
        return {"defaults": defaults, "overrides": dict(self.cfg.overrides)}

    def page(self, names: list[str], query: dict[str, str], key: str) -> dict[str, Any]:
        size = int(query.get("maxResults") or self.cfg.page_size)
        token = query.get("pageToken")
        names = sorted(names)
        if token:
            names = [n for n in names if n > token]
        chunk = names[:size]
        return {key: chunk, "nextPageToken": chunk[-1] if len(names) > size else None}

    def route(self, method: str, raw_path: str, query: dict[str, str], body: Any) -> tuple[int, Any]:
        if raw_path == "/test/config" and method == "POST":  # not in the spec: the tests change delays and faults
            for k in ("delay_ms", "fail_after_commit"):
                if k in (body or {}):
                    setattr(self.cfg, k, body[k])
            return 200, None
        segs = [unquote_plus(s) for s in raw_path.strip("/").split("/")]
        if segs[:2] == ["v1", "config"] and method == "GET":
            return 200, self.config(query)
        if not segs or segs[0] != "v1":
            raise ApiError(404, f"no such endpoint {raw_path}")
        segs = segs[1:]
        if self.cfg.prefix:
            if not segs or segs[0] != self.cfg.prefix:
                raise ApiError(404, f"no such endpoint {raw_path} (prefix {self.cfg.prefix!r} expected)")
            segs = segs[1:]
        c = self.catalog
        n = len(segs)
        if n >= 1 and segs[0] == "databases":
            if n == 1:
                if method == "GET":
                    names = list(c.state["databases"])
                    if query.get("databaseNamePattern"):
                        rx = like(query["databaseNamePattern"])
                        names = [x for x in names if rx.match(x)]
                    return 200, self.page(names, query, "databases")
                if method == "POST":
                    c.create_database(body or {})
                    return 200, None
            db = segs[1] if n >= 2 else ""
            if n == 2:
                if method == "GET":
                    d = c.database(db)
                    return 200, {**d, "owner": "paimon-ops-tests"}
                if method == "DELETE":
                    c.drop_database(db)
                    return 200, None
            if n >= 3 and segs[2] == "tables":
                if n == 3:
                    c.database(db)
                    if method == "GET":
                        names = [t["name"] for t in c.state["tables"].values() if t["database"] == db]
                        if query.get("tableNamePattern"):
                            rx = like(query["tableNamePattern"])
                            names = [x for x in names if rx.match(x)]
                        return 200, self.page(names, query, "tables")
                    if method == "POST":
                        c.create_table(db, body or {})
                        return 200, None
                table = segs[3] if n >= 4 else ""
                if n == 4:
                    if method == "GET":
                        return 200, c.table_response(c.table(db, table))
                    if method == "POST":
                        c.alter_table(db, table, body or {})
                        return 200, None
                    if method == "DELETE":
                        c.drop_table(db, table)
                        return 200, None
                if n == 5:
                    what = segs[4]
                    if what == "commit" and method == "POST":
                        return 200, c.commit(db, table, body or {})
                    if what == "snapshot" and method == "GET":
                        return 200, c.latest(db, table)
                    if what == "rollback" and method == "POST":
                        c.rollback(db, table, body or {})
                        return 200, None
                    if what == "token" and method == "GET":
                        return 200, c.token(db, table)
                    if what == "tags" and method == "GET":
                        names = list(c.tags(c.table(db, table)))
                        prefix = query.get("tagNamePrefix")
                        if prefix:
                            names = [x for x in names if x.startswith(prefix)]
                        return 200, self.page(names, query, "tags")
                    if what == "tags" and method == "POST":
                        c.create_tag(db, table, body or {})
                        return 200, None
                    if what == "partitions" and method == "GET":
                        c.table(db, table)
                        parts = list(c.state["partitions"].get(f"{db}.{table}", {}).values())
                        return 200, {"partitions": parts, "nextPageToken": None}
                if n == 6 and segs[4] == "tags":
                    if method == "GET":
                        return 200, c.get_tag(db, table, segs[5])
                    if method == "DELETE":
                        c.delete_tag(db, table, segs[5])
                        return 200, None
                if n == 6 and segs[4] == "snapshots" and method == "GET":
                    return 200, c.version(db, table, segs[5])
        raise ApiError(501, f"{method} {raw_path} is not implemented by this spec server")

    def handle(self, method: str, target: str, headers: Any, raw_body: bytes) -> tuple[int, Any]:
        parts = urlsplit(target)
        query_list = parse_qsl(parts.query, keep_blank_values=True)
        query = dict(query_list)
        started = time.time()
        who, status, outcome = "-", 500, None
        try:
            for key, ms in self.cfg.delay_ms.items():
                m, _, suffix = key.partition(" ")
                if m == method and parts.path.endswith(suffix):
                    time.sleep(ms / 1000)
            who = self.auth.check(method, parts.path, query_list, headers, raw_body)
            try:
                body = json.loads(raw_body) if raw_body.strip() else None
            except ValueError:
                raise ApiError(400, "the request body is not JSON") from None
            status, answer = self.route(method, parts.path, query, body)
            if isinstance(answer, dict) and "success" in answer:
                outcome = answer["success"]
            return status, answer
        except ApiError as e:
            status = e.status
            return e.status, e.body()
        except Exception as e:  # noqa: BLE001 - a bug here is a 500 with its message, and the log has the trace
            traceback.print_exc()
            status = 500
            return 500, ApiError(500, f"{type(e).__name__}: {e}").body()
        finally:
            with self.log_lock, open(self.requests_log, "a") as f:
                f.write(json.dumps({"method": method, "path": parts.path, "query": query, "status": status,
                                    "who": who, "success": outcome, "ms": int((time.time() - started) * 1000),
                                    "time": int(time.time() * 1000)}) + "\n")


def make_handler(server: Server) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            status, answer = server.handle(self.command, self.path, self.headers, raw)
            data = json.dumps(answer).encode() if answer is not None else b""
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("x-request-id", str(uuid.uuid4()))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_DELETE = _serve

        def log_message(self, fmt: str, *args: Any) -> None:
            sys.stderr.write("%s %s\n" % (self.address_string(), fmt % args))

    return Handler


def main(argv: list[str]) -> int:
    cfg = Config.load(argv[1])
    os.makedirs(cfg.state_dir, exist_ok=True)
    server = Server(cfg)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", cfg.port), make_handler(server))
    httpd.daemon_threads = True
    print(f"listening {httpd.server_address[1]}", flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
