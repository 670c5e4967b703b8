"""A client of Paimon's REST catalog protocol (`docs/static/rest-catalog-open-api.yaml` in apache/paimon; Java
`RESTApi`, pypaimon `api/rest_api.py`): the endpoints maintenance needs, bearer and DLF-signed requests, timeouts,
and one-line errors naming the endpoint.

Wire format (JSON, camelCase keys) and paths are the spec's: `/v1/config?warehouse=…` first (its `defaults` and
`overrides` merge with the caller's options: defaults < caller < overrides; `prefix` comes from there), then
`/v1/{prefix}/databases/{db}/tables/{table}/…`, every name encoded as Java's `URLEncoder` does (one path segment).

Authentication (`token.provider`):

* `bear` — `Authorization: Bearer <token>` (option `token`);
* `dlf` — Alibaba DLF's `DLF4-HMAC-SHA256` signature (Java `DLFDefaultSigner`): options `dlf.access-key-id`,
  `dlf.access-key-secret`, optional `dlf.security-token`, and `dlf.region` (else parsed from the URI as Paimon
  does). Only the default signer is implemented; `dlf.signing-algorithm=openapi` is refused in one line.

Timeouts: connecting may take `connect_timeout_s` (the CLI's `--connect-timeout`), an answer `read_timeout_s`;
nothing is retried blindly (a commit that reached the server must not be sent twice). Every failure is one line that
names the server and the endpoint (`GET /v1/…/snapshot`), never a secret.
"""
from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import hmac
import http.client
import json
import logging
import re
import socket
import ssl
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping
from urllib.parse import quote_plus, urlencode, urlsplit

import paimon_ops.options as o
from paimon_ops.errors import CatalogError, InvalidOptionError, PaimonOpsError, UnreachableError

log = logging.getLogger(__name__)

DEFAULT_CONNECT_TIMEOUT_S = 10.0
DEFAULT_READ_TIMEOUT_S = 60.0
# Java's RESTTokenFileIO and DLFAuthProvider refresh a token once less than this remains (TOKEN_EXPIRATION_SAFE_TIME)
TOKEN_REFRESH_MARGIN_MS = 3_600_000

# Paimon's catalog option names (RESTCatalogOptions, CatalogOptions), as the options catalogue declares them; the
# client reads raw string maps (the server's /v1/config merged with ours), so it keys them by name
URI = o.CATALOG_URI.key
WAREHOUSE = o.CATALOG_WAREHOUSE.key
PREFIX = "prefix"  # a key of the server's /v1/config answer, not an option
TOKEN_PROVIDER = o.TOKEN_PROVIDER.key
TOKEN = o.TOKEN.key
DLF_REGION = o.DLF_REGION.key
DLF_ACCESS_KEY_ID = o.DLF_ACCESS_KEY_ID.key
DLF_ACCESS_KEY_SECRET = o.DLF_ACCESS_KEY_SECRET.key
DLF_SECURITY_TOKEN = o.DLF_SECURITY_TOKEN.key
DLF_SIGNING_ALGORITHM = "dlf.signing-algorithm"
DATA_TOKEN_ENABLED = o.DATA_TOKEN_ENABLED.key
HEADER_PREFIX = "header."
SECRET_OPTIONS = (TOKEN, DLF_ACCESS_KEY_SECRET, DLF_SECURITY_TOKEN)


# ---------------------------------------------------------------------------------------------- errors
class RestCatalogError(CatalogError):
    """The REST catalog refused or failed a request. One line: the server, the endpoint, the server's message."""

    def __init__(self, endpoint: str, status: int | None, message: str, resource_type: str | None = None,
                 resource_name: str | None = None) -> None:
        self.status = status
        self.resource_type = resource_type
        self.resource_name = resource_name
        self.endpoint = endpoint
        self.detail = f"HTTP {status}: {message}" if status else message
        PaimonOpsError.__init__(self, f"REST catalog {endpoint}: {self.detail}")


class RestAuthError(RestCatalogError):
    """401/403: credentials missing, wrong or expired, or no permission on the resource."""


class RestNotFoundError(RestCatalogError):
    """404: the database, table, snapshot or tag does not exist (resource_type / resource_name say which)."""


class RestAlreadyExistsError(RestCatalogError):
    """409: the tag (or table, database) already exists."""


class RestNotImplementedError(RestCatalogError):
    """501, or an endpoint the server does not route: the server does not offer this operation."""


# ---------------------------------------------------------------------------------------------- encoding
def encode_segment(name: str) -> str:
    """A resource name as one path segment, as Java's `URLEncoder.encode(name, UTF-8)` spells it."""
    return quote_plus(name, safe="*").replace("~", "%7E")


def encode_param(value: str) -> str:
    """A query value as `RESTAuthParameter` encodes it before signing (Java `RESTUtil.encodeString`)."""
    return encode_segment(value)


# ---------------------------------------------------------------------------------------------- DLF signing
DLF_ALGORITHM = "DLF4-HMAC-SHA256"
DLF_PRODUCT = "DlfNext"
DLF_REQUEST_TYPE = "aliyun_v4_request"
DLF_VERSION = "v1"
DLF_DATE = "x-dlf-date"
DLF_SECURITY_TOKEN_HEADER = "x-dlf-security-token"
DLF_AUTH_VERSION = "x-dlf-version"
DLF_CONTENT_SHA256 = "x-dlf-content-sha256"
DLF_UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD"
_SIGNED_HEADERS = ("content-md5", "content-type", DLF_CONTENT_SHA256, DLF_DATE, DLF_AUTH_VERSION,
                   DLF_SECURITY_TOKEN_HEADER)
_DLF_REGION_IN_URI = re.compile(r"(?:pre-)?([a-z]+-[a-z]+(?:-\d+)?)")


def dlf_sign_headers(body: str | None, now: _dt.datetime, security_token: str | None) -> dict[str, str]:
    """The headers a DLF-signed request carries besides Authorization (Java `DLFDefaultSigner.signHeaders`)."""
    headers = {DLF_DATE: now.astimezone(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ"),
               DLF_CONTENT_SHA256: DLF_UNSIGNED_PAYLOAD, DLF_AUTH_VERSION: DLF_VERSION}
    if body:
        headers["Content-Type"] = "application/json"
        headers["Content-MD5"] = base64.b64encode(hashlib.md5(body.encode("utf-8")).digest()).decode("ascii")
    if security_token is not None:
        headers[DLF_SECURITY_TOKEN_HEADER] = security_token
    return headers


def dlf_canonical_request(method: str, path: str, params: Mapping[str, str], headers: Mapping[str, str]) -> str:
    """Method, resource path, sorted `k=v` query (values encoded as `encode_param`), the signed headers (lower-case
    names, sorted, trimmed values), then the content hash marker — each on its own line."""
    query = "&".join(k.strip() + (f"={v.strip()}" if v else "") for k, v in sorted(params.items()))
    signed = sorted((k.lower(), str(v).strip()) for k, v in headers.items() if k.lower() in _SIGNED_HEADERS)
    lines = [method, path, query] + [f"{k}:{v}" for k, v in signed]
    lines.append(next((str(v) for k, v in headers.items() if k.lower() == DLF_CONTENT_SHA256), DLF_UNSIGNED_PAYLOAD))
    return "\n".join(lines)


def dlf_signature(canonical_request: str, date_time: str, region: str, access_key_secret: str) -> str:
    """Hex HMAC-SHA256 of the string to sign, keyed by the date / region / product / request-type key chain."""
    date = date_time[:8]
    to_sign = "\n".join([DLF_ALGORITHM, date_time, f"{date}/{region}/{DLF_PRODUCT}/{DLF_REQUEST_TYPE}",
                         hashlib.sha256(canonical_request.encode("utf-8")).hexdigest()])
    key = ("aliyun_v4" + access_key_secret).encode("utf-8")
    for part in (date, region, DLF_PRODUCT, DLF_REQUEST_TYPE):
        key = hmac.new(key, part.encode("utf-8"), hashlib.sha256).digest()
    return hmac.new(key, to_sign.encode("utf-8"), hashlib.sha256).hexdigest()


def dlf_authorization(method: str, path: str, params: Mapping[str, str], body: str | None, now: _dt.datetime,
                      access_key_id: str, access_key_secret: str, security_token: str | None,
                      region: str) -> dict[str, str]:
    """Every header a DLF-signed request needs, Authorization included. `params` are the raw query values."""
    headers = dlf_sign_headers(body, now, security_token)
    canonical = dlf_canonical_request(method, path, {k: encode_param(v) for k, v in params.items()}, headers)
    signature = dlf_signature(canonical, headers[DLF_DATE], region, access_key_secret)
    date = headers[DLF_DATE][:8]
    headers["Authorization"] = (f"{DLF_ALGORITHM} Credential={access_key_id}/{date}/{region}/{DLF_PRODUCT}/"
                                f"{DLF_REQUEST_TYPE},Signature={signature}")
    return headers


# ---------------------------------------------------------------------------------------------- settings
def _bool(options: Mapping[str, str], key: str, default: bool) -> bool:
    raw = options.get(key)
    if raw is None:
        return default
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        raise InvalidOptionError(key, raw, "true or false")
    return text == "true"


@dataclass(frozen=True)
class RestSettings:
    """What a REST catalog client needs, from Paimon's catalog options (secrets never in a repr)."""

    uri: str
    warehouse: str
    token_provider: str | None = None
    token: str | None = field(default=None, repr=False)
    dlf_region: str | None = None
    dlf_access_key_id: str | None = None
    dlf_access_key_secret: str | None = field(default=None, repr=False)
    dlf_security_token: str | None = field(default=None, repr=False)
    data_token_enabled: bool = False
    headers: tuple[tuple[str, str], ...] = ()
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S
    read_timeout_s: float = DEFAULT_READ_TIMEOUT_S

    @classmethod
    def from_options(cls, options: Mapping[str, str], connect_timeout_s: float | None = None,
                     read_timeout_s: float | None = None) -> RestSettings:
        uri = str(options.get(URI) or "").strip()
        if not uri:
            raise InvalidOptionError(URI, options.get(URI), "the REST catalog's URL, e.g. http://host:8080")
        if "://" not in uri:
            uri = "http://" + uri  # as Paimon's clients do
        parts = urlsplit(uri)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidOptionError(URI, options.get(URI), "an http:// or https:// URL of the REST catalog")
        warehouse = str(options.get(WAREHOUSE) or "").strip()
        if not warehouse:
            raise InvalidOptionError(WAREHOUSE, options.get(WAREHOUSE),
                                     "the warehouse name the REST catalog serves (its /v1/config?warehouse=)")
        provider = (str(options.get(TOKEN_PROVIDER)).strip().lower() or None) if options.get(TOKEN_PROVIDER) else None
        if provider not in (None, "bear", "dlf"):
            raise InvalidOptionError(TOKEN_PROVIDER, options.get(TOKEN_PROVIDER), "'bear' or 'dlf'")
        token = options.get(TOKEN)
        if provider == "bear" and not token:
            raise InvalidOptionError(TOKEN, None, "the bearer token (token.provider=bear)")
        if provider is None and token:
            provider = "bear"
        region = options.get(DLF_REGION)
        if provider == "dlf":
            algo = str(options.get(DLF_SIGNING_ALGORITHM) or "default").strip().lower()
            if algo != "default":
                raise InvalidOptionError(DLF_SIGNING_ALGORITHM, options.get(DLF_SIGNING_ALGORITHM),
                                         "'default' (the DLF4-HMAC-SHA256 signer; paimon-ops does not implement "
                                         "the openapi signers)")
            for key in (DLF_ACCESS_KEY_ID, DLF_ACCESS_KEY_SECRET):
                if not options.get(key):
                    raise InvalidOptionError(key, None, "a DLF access key (token.provider=dlf; paimon-ops reads "
                                                        "keys from options, not from token loaders)")
            if not region:
                found = _DLF_REGION_IN_URI.search(parts.hostname or "")
                if not found or found.group(1).count("-") < 1 or parts.hostname in ("127.0.0.1", "localhost"):
                    raise InvalidOptionError(DLF_REGION, None, "the DLF region (it cannot be read from the URI "
                                                               f"{uri})")
                region = found.group(1)
        timeout = DEFAULT_CONNECT_TIMEOUT_S if connect_timeout_s is None else float(connect_timeout_s)
        if not timeout > 0:
            raise InvalidOptionError("--connect-timeout", connect_timeout_s, "a positive number of seconds")
        headers = tuple(sorted((k[len(HEADER_PREFIX):], str(v)) for k, v in options.items()
                               if k.startswith(HEADER_PREFIX)))
        return cls(uri=uri.rstrip("/"), warehouse=warehouse, token_provider=provider, token=token,
                   dlf_region=region, dlf_access_key_id=options.get(DLF_ACCESS_KEY_ID),
                   dlf_access_key_secret=options.get(DLF_ACCESS_KEY_SECRET),
                   dlf_security_token=options.get(DLF_SECURITY_TOKEN),
                   data_token_enabled=_bool(options, DATA_TOKEN_ENABLED, False), headers=headers,
                   connect_timeout_s=timeout,
                   read_timeout_s=DEFAULT_READ_TIMEOUT_S if read_timeout_s is None else float(read_timeout_s))

    @property
    def secrets(self) -> tuple[str, ...]:
        return tuple(s for s in (self.token, self.dlf_access_key_secret, self.dlf_security_token) if s)


def redact(text: str, secrets: tuple[str, ...]) -> str:
    for s in secrets:
        if len(s) >= 4:
            text = text.replace(s, "****")
    return text


# ---------------------------------------------------------------------------------------------- table token
@dataclass(frozen=True)
class DataToken:
    """Storage credentials from `GET …/token`: file-system options and when they expire (epoch millis)."""

    options: Mapping[str, str] = field(repr=False)
    expires_at_millis: int | None
    fetched_at_millis: int

    def needs_refresh(self, now_millis: int) -> bool:
        """Refresh once less than Java's safety margin remains — or, for tokens that live shorter than twice that
        margin, once half their life is over (Java would refetch on every file access)."""
        if self.expires_at_millis is None:
            return False
        life = self.expires_at_millis - self.fetched_at_millis
        margin = min(TOKEN_REFRESH_MARGIN_MS, life // 2) if life > 0 else 0
        return self.expires_at_millis - now_millis <= margin


# ---------------------------------------------------------------------------------------------- the client
class RestClient:
    """One REST catalog: `config()` once, then the endpoints below. Thread-safe enough for sequential use per
    thread (each request opens its own connection: commits are rare, and a half-read connection is never reused)."""

    def __init__(self, settings: RestSettings, clock: Callable[[], float] = time.time,
                 options: Mapping[str, str] | None = None):
        """`options`: the caller's catalog options, merged with the server's `/v1/config` (see `config`)."""
        self.settings = settings
        self._ours = {str(k): str(v) for k, v in (options or {}).items()}
        self._clock = clock
        parts = urlsplit(settings.uri)
        self._https = parts.scheme == "https"
        self._host = parts.hostname or ""
        self._port = parts.port or (443 if self._https else 80)
        self._base = parts.path.rstrip("/")
        self._options: dict[str, str] | None = None
        self._prefix: str | None = None

    # ------------------------------------------------------------------ plumbing
    @property
    def server(self) -> str:
        return self.settings.uri

    def _auth_headers(self, method: str, path: str, params: Mapping[str, str], body: str | None) -> dict[str, str]:
        s = self.settings
        if s.token_provider == "bear":
            return {"Authorization": f"Bearer {s.token}"}
        if s.token_provider == "dlf":
            now = _dt.datetime.fromtimestamp(self._clock(), _dt.timezone.utc)
            return dlf_authorization(method, path, params, body, now, s.dlf_access_key_id or "",
                                     s.dlf_access_key_secret or "", s.dlf_security_token, s.dlf_region or "")
        return {}

    def request(self, method: str, path: str, params: Mapping[str, str] | None = None,
                body: Mapping[str, Any] | None = None, what: str = "", read_timeout_s: float | None = None,
                progress: dict[str, bool] | None = None) -> Any:
        """Send one request; the decoded JSON answer (None for an empty 200). Errors raise RestCatalogError
        subclasses (or UnreachableError) naming `METHOD path` on this server. `read_timeout_s`: how long the answer
        may take (default: the settings' read timeout). `progress` records how far the request got: `sent` once it
        may have reached the server, `answered` once the server answered (whatever the answer)."""
        params = {k: str(v) for k, v in (params or {}).items() if v is not None and str(v) != ""}
        text = json.dumps(body, separators=(",", ":"), ensure_ascii=False) if body is not None else None
        endpoint = f"{self.server} {method} {path}"
        headers = {"Accept": "application/json", "User-Agent": "paimon-ops"}
        headers.update(dict(self.settings.headers))
        headers.update(self._auth_headers(method, path, params, text))
        if text is not None:
            headers["Content-Type"] = "application/json"
        url = self._base + path + (("?" + urlencode(params)) if params else "")
        data = text.encode("utf-8") if text is not None else None
        status, raw, request_id = self._send(method, url, data, headers, endpoint, what,
                                             read_timeout_s or self.settings.read_timeout_s,
                                             progress if progress is not None else {})
        return self._answer(status, raw, request_id, endpoint)

    def _send(self, method: str, url: str, data: bytes | None, headers: dict[str, str], endpoint: str,
              what: str, read_timeout_s: float, progress: dict[str, bool]) -> tuple[int, bytes, str | None]:
        s = self.settings
        conn: http.client.HTTPConnection
        if self._https:
            conn = http.client.HTTPSConnection(self._host, self._port, timeout=s.connect_timeout_s,
                                               context=ssl.create_default_context())
        else:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=s.connect_timeout_s)
        try:
            try:
                conn.connect()
            except (OSError, http.client.HTTPException) as e:
                raise UnreachableError(f"REST catalog {endpoint}", _why(e, s.connect_timeout_s, "connect"),
                                       what) from None
            if conn.sock is not None:
                conn.sock.settimeout(read_timeout_s)
            try:
                progress["sent"] = True
                conn.request(method, url, body=data, headers=headers)
                resp = conn.getresponse()
                raw = resp.read()
                progress["answered"] = True
            except (OSError, http.client.HTTPException) as e:
                # The request may have reached the server: the caller decides (a commit checks what happened).
                raise UnreachableError(f"REST catalog {endpoint}", _why(e, read_timeout_s, "answer"),
                                       what) from None
            return resp.status, raw, resp.getheader("x-request-id")
        finally:
            conn.close()

    def _answer(self, status: int, raw: bytes, request_id: str | None, endpoint: str) -> Any:
        text = raw.decode("utf-8", "replace") if raw else ""
        body: Any = None
        if text.strip():
            try:
                body = json.loads(text)
            except ValueError:
                body = None
        if 200 <= status < 300:
            if text.strip() and body is None:
                raise RestCatalogError(endpoint, status, f"the answer is not JSON: {text[:120]!r}")
            return body
        err = body if isinstance(body, dict) else {}
        raw_message = err.get("message")
        message = raw_message.strip() if isinstance(raw_message, str) else ""
        message = message or (text.strip().splitlines()[0][:200] if text.strip() else "no message")
        message = redact(message, self.settings.secrets)
        code = status
        if isinstance(err.get("code"), int) and err["code"] in (400, 401, 403, 404, 409, 500, 501, 503):
            code = err["code"]
        rtype, rname = err.get("resourceType"), err.get("resourceName")
        if request_id and request_id != "unknown":
            message += f" (request id {request_id})"
        cls: type[RestCatalogError] = RestCatalogError
        if code in (401, 403):
            cls = RestAuthError
            hint = ("; check the credentials (token, dlf.access-key-id / dlf.access-key-secret) and that they have "
                    "not expired" if code == 401 else "; the credentials have no permission on it")
            message += hint
        elif code == 404:
            cls = RestNotFoundError
        elif code == 409:
            cls = RestAlreadyExistsError
        elif code == 501:
            cls = RestNotImplementedError
        raise cls(endpoint, status, message, rtype, rname)

    # ------------------------------------------------------------------ config and paths
    def config(self) -> dict[str, str]:
        """`GET /v1/config?warehouse=…`, merged with our options (server defaults < ours < server overrides); once."""
        if self._options is None:
            # the first request: a server that accepts connections but does not answer fails within the connect
            # timeout too
            answer = self.request("GET", "/v1/config", {WAREHOUSE: self.settings.warehouse},
                                  read_timeout_s=self.settings.connect_timeout_s) or {}
            merged = {str(k): str(v) for k, v in (answer.get("defaults") or {}).items() if v is not None}
            merged.update(self._ours)
            merged[WAREHOUSE] = self.settings.warehouse
            merged.update({str(k): str(v) for k, v in (answer.get("overrides") or {}).items() if v is not None})
            self._options = merged
            prefix = merged.get(PREFIX) or ""
            self._prefix = encode_segment(prefix) if prefix else ""
        return dict(self._options)

    def _path(self, *segments: str) -> str:
        self.config()
        head = f"/v1/{self._prefix}" if self._prefix else "/v1"
        return head + "".join("/" + s for s in segments)

    def _table_path(self, database: str, table: str, *rest: str) -> str:
        return self._path("databases", encode_segment(database), "tables", encode_segment(table), *rest)

    def _paged(self, path: str, key: str, params: Mapping[str, str] | None = None) -> Iterator[Any]:
        query = dict(params or {})
        seen: set[str] = set()
        while True:
            answer = self.request("GET", path, query) or {}
            yield from answer.get(key) or ()
            token = answer.get("nextPageToken")
            if not token or token in seen:  # (a server repeating a token would loop forever)
                return
            seen.add(token)
            query["pageToken"] = token

    # ------------------------------------------------------------------ catalog
    def list_databases(self) -> list[str]:
        return sorted(self._paged(self._path("databases"), "databases"))

    def get_database(self, database: str) -> dict[str, Any]:
        return self.request("GET", self._path("databases", encode_segment(database))) or {}

    def list_tables(self, database: str) -> list[str]:
        return sorted(self._paged(self._path("databases", encode_segment(database), "tables"), "tables"))

    def get_table(self, database: str, table: str) -> dict[str, Any]:
        """GetTableResponse: id (the table's uuid), path, isExternal, schemaId, schema {fields, partitionKeys,
        primaryKeys, options, comment}."""
        return self.request("GET", self._table_path(database, table)) or {}

    def alter_table(self, database: str, table: str, changes: list[dict[str, Any]]) -> None:
        self.request("POST", self._table_path(database, table), body={"changes": changes})

    # ------------------------------------------------------------------ versions
    def load_snapshot(self, database: str, table: str) -> dict[str, Any] | None:
        """The server's latest TableSnapshot {snapshot, recordCount, fileSizeInBytes, fileCount,
        lastFileCreationTime}, or None when the table has no snapshot yet."""
        try:
            answer = self.request("GET", self._table_path(database, table, "snapshot"))
        except RestNotFoundError as e:
            if (e.resource_type or "").upper() == "SNAPSHOT":
                return None
            raise
        snap = (answer or {}).get("snapshot")
        return snap if isinstance(snap, dict) and snap else None

    def commit_snapshot(self, database: str, table: str, table_id: str | None, base_snapshot_uuid: str | None,
                        snapshot: Mapping[str, Any], statistics: list[dict[str, Any]],
                        progress: dict[str, bool] | None = None) -> bool:
        """`POST …/commit`: True if the server took the snapshot, False if it refused it (its base is no longer the
        latest, or the id was taken). `progress`: see `request`."""
        body = {"tableId": table_id, "baseSnapshotUuid": base_snapshot_uuid, "snapshot": dict(snapshot),
                "statistics": statistics}
        answer = self.request("POST", self._table_path(database, table, "commit"), body=body, progress=progress) or {}
        return bool(answer.get("success"))

    def rollback(self, database: str, table: str, snapshot_id: int | None = None, tag: str | None = None,
                 from_snapshot: int | None = None) -> None:
        """`POST …/rollback` to a snapshot or a tag; `from_snapshot`: only if that is still the latest."""
        instant = {"type": "tag", "tagName": tag} if tag is not None else {"type": "snapshot",
                                                                          "snapshotId": snapshot_id}
        self.request("POST", self._table_path(database, table, "rollback"),
                     body={"instant": instant, "fromSnapshot": from_snapshot})

    def load_token(self, database: str, table: str) -> DataToken:
        answer = self.request("GET", self._table_path(database, table, "token")) or {}
        token = answer.get("token") or {}
        expires = answer.get("expiresAtMillis", answer.get("expiresAt"))
        return DataToken({str(k): str(v) for k, v in token.items()},
                         int(expires) if isinstance(expires, (int, float)) and expires > 0 else None,
                         int(self._clock() * 1000))

    # ------------------------------------------------------------------ tags
    def list_tags(self, database: str, table: str) -> list[str]:
        return sorted(self._paged(self._table_path(database, table, "tags"), "tags"))

    def get_tag(self, database: str, table: str, tag: str) -> dict[str, Any]:
        return self.request("GET", self._table_path(database, table, "tags", encode_segment(tag))) or {}

    def create_tag(self, database: str, table: str, tag: str, snapshot_id: int | None,
                   time_retained: str | None = None) -> None:
        self.request("POST", self._table_path(database, table, "tags"),
                     body={"tagName": tag, "snapshotId": snapshot_id, "timeRetained": time_retained})

    def delete_tag(self, database: str, table: str, tag: str) -> None:
        self.request("DELETE", self._table_path(database, table, "tags", encode_segment(tag)))


def _why(e: BaseException, timeout: float, phase: str) -> str:
    if isinstance(e, socket.timeout) or "timed out" in str(e):
        return f"no {'connection' if phase == 'connect' else 'answer'} within {timeout:g} s"
    if isinstance(e, ConnectionRefusedError):
        return "connection refused (is the server running, and is the port right?)"
    if isinstance(e, socket.gaierror):
        return f"the host name does not resolve ({e.strerror or e})"
    text = str(e).splitlines()[0] if str(e) else type(e).__name__
    return text


def new_snapshot_uuid() -> str:
    return str(uuid.uuid4())


__all__ = ["RestClient", "RestSettings", "DataToken", "RestCatalogError", "RestAuthError", "RestNotFoundError",
           "RestAlreadyExistsError", "RestNotImplementedError", "dlf_authorization", "dlf_canonical_request",
           "dlf_signature", "dlf_sign_headers", "encode_segment", "encode_param"]
