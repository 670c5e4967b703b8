"""Object stores (S3 and S3-compatible servers) behind the `FileIO` interface.

Why a separate client: `pyarrow.fs` has no conditional put and no bulk delete. Metadata operations go through
obstore (Rust `object_store`, measured in benchmarks/compare_s3_clients.py):

* create-if-absent is one `PUT` with `If-None-Match: *` (S3 since 2024; the server answers 412 to the loser), so
  of two concurrent committers of `snapshot-<N>` exactly one wins and the other retries with N+1;
* deletes go 1,000 keys per `DeleteObjects` request, several requests in flight (`s3.delete.concurrency`), and
  object_store retries throttling (503 SlowDown) and 5xx with exponential back-off; keys a request could not
  delete are retried here with back-off before the phase fails;
* listings are paginated (1,000 keys per request) and carry each object's last-modified time (orphan age check).

Parquet/ORC data streams stay on `pyarrow.fs.S3FileSystem`, configured from the same settings.

Configuration: the standard AWS variables (`AWS_ENDPOINT_URL[_S3]`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
`AWS_SESSION_TOKEN`, `AWS_REGION`/`AWS_DEFAULT_REGION`), overridden by warehouse/table options with Paimon's names
(`s3.endpoint`, `s3.access-key`, `s3.secret-key`, `s3.session-token`, `s3.region`, `s3.path.style.access`; the
Hadoop `fs.s3a.*` spellings are accepted too). The resolved settings ship with every Spark task
(`FileIO.task_options`), so executors never depend on their own environment; secrets never appear in a repr, a log
line, an error or a report.

Nothing touches the network when a FileIO is built: the first request checks that credentials are configured (no
silent fall-back to the EC2 instance-metadata endpoint unless `s3.credentials.instance-metadata=true`) and probes
the store once, with short timeouts, so an unreachable endpoint is a one-line `ObjectStoreError` within seconds.
"""
from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from datetime import timedelta
from typing import Any, Iterator, Mapping, Sequence
from urllib.parse import urlparse

from paimon_ops.errors import InvalidOptionError, ObjectStoreError, UnsafeOperationError
from paimon_ops.options import COMMIT_OBJECT_STORE_UNSAFE_LOCK, parse_duration
from paimon_ops.table.fileio import DeleteOutcome, FaultHook, FileIO, FileStatus, register_opener

log = logging.getLogger(__name__)

S3_SCHEMES = ("s3", "s3a", "s3n")
MAX_DELETE_KEYS = 1000  # DeleteObjects limit
UNSAFE_LOCK_OPTION = COMMIT_OBJECT_STORE_UNSAFE_LOCK.key

# option name -> (config field, aliases); aliases are the Hadoop S3A spellings Paimon mirrors to
_OPTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "s3.endpoint": ("endpoint", ("fs.s3a.endpoint",)),
    "s3.region": ("region", ("fs.s3a.endpoint.region", "fs.s3a.region")),
    "s3.access-key": ("access_key", ("fs.s3a.access.key", "s3.access.key")),
    "s3.secret-key": ("secret_key", ("fs.s3a.secret.key", "s3.secret.key")),
    "s3.session-token": ("session_token", ("fs.s3a.session.token", "s3.session.token")),
    "s3.path.style.access": ("path_style", ("fs.s3a.path.style.access",)),
    "s3.anonymous": ("anonymous", ()),
    "s3.credentials.instance-metadata": ("instance_credentials", ()),
    "s3.connect-timeout": ("connect_timeout_s", ()),
    "s3.request-timeout": ("request_timeout_s", ()),
    "s3.probe-timeout": ("probe_timeout_s", ()),
    "s3.max-retries": ("max_retries", ()),
    "s3.delete.concurrency": ("delete_concurrency", ()),
    "s3.conditional-put": ("conditional_put", ()),
    UNSAFE_LOCK_OPTION: ("unsafe_lock", ()),
}
SECRET_OPTIONS = ("s3.secret-key", "s3.session-token", "fs.s3a.secret.key", "fs.s3a.session.token",
                  "s3.secret.key", "s3.session.token")
# Environment variables that let the client find credentials without keys (web identity, ECS task roles).
_ROLE_ENV = ("AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
             "AWS_CONTAINER_CREDENTIALS_FULL_URI")


def is_store_option(key: str) -> bool:
    """Options that configure the store (shipped to executors next to the task, never in the task dict)."""
    return key.startswith(("s3.", "fs.s3a.")) or key == UNSAFE_LOCK_OPTION


# Store options of the task an executor is running (set by tasks.call_task, read by FileIO.resolve).
_TASK_OPTIONS: contextvars.ContextVar[Mapping[str, str] | None] = contextvars.ContextVar("paimon_ops_store_options",
                                                                                          default=None)


@contextlib.contextmanager
def task_store_options(options: Mapping[str, str]) -> Iterator[None]:
    token = _TASK_OPTIONS.set(dict(options) if options else None)
    try:
        yield
    finally:
        _TASK_OPTIONS.reset(token)


def current_task_options() -> Mapping[str, str] | None:
    return _TASK_OPTIONS.get()


def _bool(name: str, value: str | bool) -> bool:
    if isinstance(value, bool):
        return value
    v = str(value).strip().lower()
    if v in ("true", "1", "yes"):
        return True
    if v in ("false", "0", "no"):
        return False
    raise InvalidOptionError(name, value, "true or false")


def _endpoint(key: str, text: str) -> str:
    """An endpoint URL, validated before anything is opened (obstore panics on some malformed ones)."""
    ep = text.strip()
    if "://" not in ep:
        ep = "https://" + ep
    try:
        u = urlparse(ep)
        port = u.port
    except ValueError as e:
        raise InvalidOptionError(key, text, f"an endpoint URL such as http://host:9000 ({e})") from None
    host = u.hostname or ""
    if u.scheme not in ("http", "https") or not host or any(c.isspace() for c in ep) or \
            not all(c.isalnum() or c in "-._[]:" for c in host) or (port is not None and not 0 < port < 65536) \
            or u.query or u.fragment:
        raise InvalidOptionError(key, text, "an endpoint URL such as http://host:9000 or https://s3.example.com")
    return ep.rstrip("/")


@dataclass(frozen=True)
class S3Settings:
    """Resolved S3 settings. Secrets are left out of repr(); `as_options()` carries them to executors only."""

    endpoint: str | None = None          # None: AWS' regional endpoint
    region: str = "us-east-1"
    access_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)
    path_style: bool = True
    anonymous: bool = False
    instance_credentials: bool = False
    connect_timeout_s: float = 5.0
    request_timeout_s: float = 60.0
    probe_timeout_s: float = 8.0
    max_retries: int = 3
    delete_concurrency: int = 8
    conditional_put: bool = True
    unsafe_lock: bool = False

    @staticmethod
    def resolve(options: Mapping[str, str] | None = None, env: Mapping[str, str] | None = None) -> S3Settings:
        env = os.environ if env is None else env
        options = dict(options or {})
        raw: dict[str, object] = {}
        endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
        if endpoint:
            raw["endpoint"] = endpoint
        region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
        if region:
            raw["region"] = region
        if env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
            raw["access_key"] = env["AWS_ACCESS_KEY_ID"]
            raw["secret_key"] = env["AWS_SECRET_ACCESS_KEY"]
            if env.get("AWS_SESSION_TOKEN"):
                raw["session_token"] = env["AWS_SESSION_TOKEN"]
        for name, (attr, aliases) in _OPTIONS.items():
            for key in (*aliases, name):  # Paimon's own name wins over an alias
                if key in options and options[key] is not None and str(options[key]).strip() != "":
                    raw[attr] = (key, str(options[key]).strip())
        kw: dict[str, object] = {}
        for f in fields(S3Settings):
            if f.name not in raw:
                continue
            v = raw[f.name]
            key, text = v if isinstance(v, tuple) else (f.name, v)
            if f.name in ("path_style", "anonymous", "instance_credentials", "conditional_put"):
                kw[f.name] = _bool(key, text)
            elif f.name == "unsafe_lock":
                if str(text).lower() not in ("external", "none", ""):
                    raise InvalidOptionError(key, text, "'external' (an external lock guarantees a single committer)")
                kw[f.name] = str(text).lower() == "external"
            elif f.name.endswith("_timeout_s"):
                secs = parse_duration(str(text), key).total_seconds()  # Paimon durations; a bare number is ms
                if secs <= 0:
                    raise InvalidOptionError(key, text, "a positive duration such as '10 s' or '500 ms'")
                kw[f.name] = secs
            elif f.name in ("max_retries", "delete_concurrency"):
                try:
                    n = int(text)
                except ValueError:
                    raise InvalidOptionError(key, text, "an integer") from None
                if n < (1 if f.name == "delete_concurrency" else 0):
                    raise InvalidOptionError(key, text, "a non-negative integer" if f.name == "max_retries"
                                             else "a positive integer")
                kw[f.name] = n
            elif f.name == "endpoint":
                kw[f.name] = _endpoint(key if isinstance(v, tuple) else "AWS_ENDPOINT_URL", str(text))
            else:
                kw[f.name] = str(text)
        return S3Settings(**kw)  # type: ignore[arg-type]

    @property
    def endpoint_label(self) -> str:
        return self.endpoint or f"https://s3.{self.region}.amazonaws.com"

    def has_credentials(self, env: Mapping[str, str] | None = None) -> bool:
        env = os.environ if env is None else env
        return bool(self.anonymous or self.instance_credentials or (self.access_key and self.secret_key)
                    or any(env.get(k) for k in _ROLE_ENV))

    def as_options(self) -> dict[str, str]:
        """Every setting as Paimon options: what executors receive (secrets included: never log this)."""
        out = {}
        for name, (attr, _) in _OPTIONS.items():
            v = getattr(self, attr)
            if v is None:
                continue
            if attr == "unsafe_lock":
                if v:
                    out[name] = "external"
                continue
            if attr.endswith("_timeout_s"):
                out[name] = f"{v:g} s"
            else:
                out[name] = str(v).lower() if isinstance(v, bool) else str(v)
        return out


def redact(text: str, secrets: Sequence[str | None]) -> str:
    for s in secrets:
        if s and len(s) >= 4:
            text = text.replace(s, "****")
    return text


# ---------------------------------------------------------------------------------------------- clients


class S3Client:
    """One bucket under one set of settings: an obstore store for metadata and a pyarrow S3FileSystem for data.
    Shared per process (connection pools); the first use checks credentials and probes the store once."""

    def __init__(self, settings: S3Settings, bucket: str):
        self.settings = settings
        self.bucket = bucket
        self._store = None
        self._fs = None
        self._ready = False
        self._lock = threading.Lock()

    # -------------------------------------------------------------- construction
    def _client_options(self, timeout_s: float, connect_s: float) -> Any:
        ep = self.settings.endpoint
        return {"allow_http": bool(ep and ep.startswith("http://")), "timeout": timedelta(seconds=timeout_s),
                "connect_timeout": timedelta(seconds=connect_s)}

    def _make_store(self, timeout_s: float, connect_s: float, retries: int, retry_timeout_s: float):
        from obstore.store import S3Store
        s = self.settings
        cfg: Any = {"region": s.region, "virtual_hosted_style_request": not s.path_style,
                                  "conditional_put": "etag"}
        if s.endpoint:
            cfg["endpoint"] = s.endpoint
        if s.anonymous:
            cfg["skip_signature"] = True
        elif s.access_key and s.secret_key:
            cfg["access_key_id"] = s.access_key
            cfg["secret_access_key"] = s.secret_key
            if s.session_token:
                cfg["session_token"] = s.session_token
        return S3Store(self.bucket, config=cfg, client_options=self._client_options(timeout_s, connect_s),
                       retry_config={"max_retries": retries, "retry_timeout": timedelta(seconds=retry_timeout_s),
                                     "backoff": {"init_backoff": timedelta(milliseconds=100),
                                                 "max_backoff": timedelta(seconds=5), "base": 2}})

    def location(self, key: str = "") -> str:
        return f"s3://{self.bucket}/{key}" if key else f"s3://{self.bucket}"

    def _ensure_ready(self, probe_key: str) -> None:
        if self._ready:
            return
        with self._lock:
            if self._ready:
                return
            s = self.settings
            where = self.location(probe_key)
            if not s.has_credentials():
                raise ObjectStoreError(
                    f"no credentials for {where} (endpoint {s.endpoint_label}): set AWS_ACCESS_KEY_ID and "
                    "AWS_SECRET_ACCESS_KEY or the options s3.access-key / s3.secret-key (or s3.anonymous=true, or "
                    "s3.credentials.instance-metadata=true on EC2)")
            probe = self._make_store(s.probe_timeout_s, min(s.connect_timeout_s, s.probe_timeout_s),
                                     min(s.max_retries, 2), s.probe_timeout_s)
            import obstore
            started = time.monotonic()
            try:
                stream = obstore.list(probe, prefix=probe_key or None, chunk_size=1)
                next(iter(stream), None)
            except Exception as e:  # noqa: BLE001 - every failure becomes one line naming the endpoint
                raise self.error(e, "cannot open", where, probe=True) from None
            log.debug("probed %s at %s in %.2fs", where, s.endpoint_label, time.monotonic() - started)
            self._store = self._make_store(s.request_timeout_s, s.connect_timeout_s, s.max_retries,
                                           max(30.0, s.request_timeout_s * (s.max_retries + 1)))
            self._ready = True

    def store(self, probe_key: str = ""):
        self._ensure_ready(probe_key)
        return self._store

    def filesystem(self):
        """pyarrow S3FileSystem on the same endpoint and credentials (built without network access)."""
        if self._fs is None:
            import pyarrow.fs as pafs
            s = self.settings
            kw: dict[str, object] = {"region": s.region, "connect_timeout": s.connect_timeout_s,
                                     "request_timeout": s.request_timeout_s,
                                     "retry_strategy": pafs.AwsStandardS3RetryStrategy(max_attempts=s.max_retries + 1),
                                     "force_virtual_addressing": not s.path_style}
            if s.endpoint:
                u = urlparse(s.endpoint)
                kw["endpoint_override"] = u.netloc + (u.path if u.path not in ("", "/") else "")
                kw["scheme"] = u.scheme or "https"
            if s.anonymous:
                kw["anonymous"] = True
            elif s.access_key and s.secret_key:
                kw.update(access_key=s.access_key, secret_key=s.secret_key, session_token=s.session_token)
            self._fs = pafs.S3FileSystem(**kw)
        return self._fs

    # -------------------------------------------------------------- errors
    def error(self, e: BaseException, what: str, where: str, probe: bool = False) -> ObjectStoreError:
        s = self.settings
        text = redact(str(e).splitlines()[0] if str(e) else type(e).__name__, [s.secret_key, s.session_token])
        name = type(e).__name__
        low = text.lower()
        if name in ("PermissionDeniedError", "UnauthenticatedError") or "403" in low or "invalidaccesskeyid" in low \
                or "signaturedoesnotmatch" in low:
            hint = "the credentials were rejected (check s3.access-key / s3.secret-key or AWS_ACCESS_KEY_ID)"
        elif "nosuchbucket" in low or ("404" in low and probe):
            hint = f"bucket {self.bucket!r} does not exist"
        elif probe:
            hint = (f"no answer within {s.probe_timeout_s:g} s (connect timeout {s.connect_timeout_s:g} s, "
                    f"{min(s.max_retries, 2)} retries; set s3.probe-timeout / s3.connect-timeout)")
        else:
            hint = "request failed"
        if len(text) > 300:
            text = text[:300] + "…"
        return ObjectStoreError(f"{what} {where} at endpoint {s.endpoint_label}: {hint}: {text}")


_CLIENTS: dict[tuple[S3Settings, str], S3Client] = {}
_CLIENTS_LOCK = threading.Lock()
_KNOWN: dict[str, dict[str, str]] = {}  # bucket -> the store options this process was last given for it


def client_for(settings: S3Settings, bucket: str) -> S3Client:
    with _CLIENTS_LOCK:
        c = _CLIENTS.get((settings, bucket))
        if c is None:
            c = _CLIENTS[(settings, bucket)] = S3Client(settings, bucket)
        return c


# ---------------------------------------------------------------------------------------------- FileIO


def _transient(e: BaseException) -> bool:
    text = str(e).lower()
    return any(w in text for w in ("slowdown", "slow down", "503", "500", "internalerror", "serviceunavailable",
                                   "timeout", "timed out", "connection", "throttl", "reduce your request rate"))


class ObjectStoreFileIO(FileIO):
    """FileIO on an S3 bucket. Paths are `bucket/key` (pyarrow's convention), keys have no leading '/'."""

    bulk_delete = True
    has_directories = False

    def __init__(self, client: S3Client, scheme: str, fault_hook: FaultHook | None = None):
        self.client = client
        super().__init__(_LazyFs(client), scheme, client.bucket, fault_hook)

    @staticmethod
    def open(scheme: str, bucket: str, options: Mapping[str, str] | None,
             fault_hook: FaultHook | None) -> ObjectStoreFileIO:
        """Settings: explicit store options; else those this process was last given for the bucket (a plan
        re-opens its table by location, and plans never carry secrets); else the environment alone."""
        if not bucket:
            raise ObjectStoreError(f"{scheme}:// location without a bucket name")
        store = {k: v for k, v in (options or {}).items() if is_store_option(k)}
        with _CLIENTS_LOCK:
            if store:
                _KNOWN[bucket] = store
            else:
                store = dict(_KNOWN.get(bucket, {}))
        return ObjectStoreFileIO(client_for(S3Settings.resolve(store), bucket), scheme, fault_hook)

    def task_options(self) -> dict[str, str]:
        return self.client.settings.as_options()

    @property
    def settings(self) -> S3Settings:
        return self.client.settings

    # -------------------------------------------------------------- paths
    def key(self, path: str) -> str:
        p = path.lstrip("/")
        b = self.client.bucket
        if p == b:
            return ""
        if not p.startswith(b + "/"):
            raise UnsafeOperationError(f"refusing to touch {path}: not in bucket {b}")
        return p[len(b) + 1:].strip("/")

    def _path(self, key: str) -> str:
        return f"{self.client.bucket}/{key}"

    def _store(self, path: str = ""):
        return self.client.store(self.key(path) if path else "")

    def _err(self, e: BaseException, what: str, path: str) -> ObjectStoreError:
        return self.client.error(e, what, self.client.location(self.key(path)))

    # -------------------------------------------------------------- reads
    def _head(self, path: str) -> Any:
        import obstore
        k = self.key(path)
        if not k:
            return None
        try:
            return obstore.head(self._store(path), k)
        except FileNotFoundError:
            return None
        except ObjectStoreError:
            raise
        except Exception as e:  # noqa: BLE001
            raise self._err(e, "cannot stat", path) from None

    def is_file(self, path: str) -> bool:
        return self._head(path) is not None

    def is_dir(self, path: str) -> bool:
        import obstore
        k = self.key(path)
        try:
            for chunk in obstore.list(self._store(path), prefix=(k + "/") if k else None, chunk_size=1):
                if any(m["path"] != k for m in chunk):
                    return True
        except ObjectStoreError:
            raise
        except Exception as e:  # noqa: BLE001
            raise self._err(e, "cannot list", path) from None
        return False

    def exists(self, path: str) -> bool:
        return self.is_file(path) or self.is_dir(path)

    def size(self, path: str) -> int:
        h = self._head(path)
        if h is None:
            raise FileNotFoundError(path)
        return int(h["size"])

    def read_bytes(self, path: str) -> bytes:
        import obstore
        try:
            return bytes(obstore.get(self._store(path), self.key(path)).bytes())
        except FileNotFoundError:
            raise FileNotFoundError(path) from None
        except ObjectStoreError:
            raise
        except Exception as e:  # noqa: BLE001
            raise self._err(e, "cannot read", path) from None

    def open_input(self, path: str):
        self._store(path)  # credentials + probe before pyarrow's SDK gets involved
        return self.fs.open_input_file(path)

    @staticmethod
    def _status(m: Any, bucket: str) -> FileStatus:
        p = m["path"]
        lm = m.get("last_modified")
        return FileStatus(f"{bucket}/{p}", p.rsplit("/", 1)[-1], int(m.get("size") or 0),
                          int(lm.timestamp() * 1000) if lm is not None else 0, False)

    def list_status(self, path: str, include_symlinks: bool = False, strict: bool = False) -> list[FileStatus]:
        """Direct children (one LIST per 1,000 keys, with last-modified times); [] if nothing is there. (`strict` has
        nothing to check: an object named like the directory hides none of the keys under its prefix.)"""
        import obstore
        k = self.key(path)
        try:
            res = obstore.list_with_delimiter(self._store(path), k or None)
        except ObjectStoreError:
            raise
        except Exception as e:  # noqa: BLE001
            raise self._err(e, "cannot list", path) from None
        b = self.client.bucket
        out = [self._status(m, b) for m in res["objects"] if m["path"] != k]  # a directory marker of `path`
        out += [FileStatus(f"{b}/{p}", p.rsplit("/", 1)[-1], 0, 0, True) for p in res["common_prefixes"]]
        out.sort(key=lambda s: s.path)
        return out

    def walk_files(self, path: str) -> Iterator[FileStatus]:
        import obstore
        k = self.key(path)
        prev: Any = None
        try:
            for chunk in obstore.list(self._store(path), prefix=(k + "/") if k else None, chunk_size=1000):
                for m in chunk:
                    # keys come sorted: a directory marker ('x/' listed as 'x') is followed by 'x/...'
                    if prev is not None and not m["path"].startswith(prev["path"] + "/"):
                        yield self._status(prev, self.client.bucket)
                    prev = m
        except ObjectStoreError:
            raise
        except Exception as e:  # noqa: BLE001
            raise self._err(e, "cannot list", path) from None
        if prev is not None:
            yield self._status(prev, self.client.bucket)

    # -------------------------------------------------------------- writes
    def mkdirs(self, path: str) -> None:
        """Object stores have no directories: nothing to create (no marker objects)."""

    def write_bytes(self, path: str, data: bytes) -> None:
        import obstore
        self._hook("write", path)
        try:
            obstore.put(self._store(path), self.key(path), data)
        except ObjectStoreError:
            raise
        except Exception as e:  # noqa: BLE001
            raise self._err(e, "cannot write", path) from None

    def open_output(self, path: str):
        self._hook("write", path)
        self._store(path)
        return self.fs.open_output_stream(path)

    def write_atomic_if_absent(self, path: str, data: bytes, tmp_token: str | None = None) -> bool:
        """One conditional PUT (`If-None-Match: *`): True if we created `path`, False if it already existed.

        A PUT retried after a lost response can find its own first attempt: an existing object with exactly our
        bytes is ours (snapshot, tag and schema JSON carry a commit user and time, so another writer's differs).
        """
        import obstore
        from obstore.exceptions import AlreadyExistsError, NotSupportedError, PreconditionError
        self._hook("write", path)
        self._hook("rename", path)
        s = self.client.settings
        store = self._store(path)
        k = self.key(path)
        if not s.conditional_put:
            return self._unsafe_create(path, data, "s3.conditional-put=false")
        for attempt in range(4):
            try:
                obstore.put(store, k, data, mode="create")
                return True
            except (AlreadyExistsError, PreconditionError):
                try:
                    existing = bytes(obstore.get(store, k).bytes())
                except FileNotFoundError:
                    continue  # deleted meanwhile: try again
                return existing == data
            except NotSupportedError as e:
                return self._unsafe_create(path, data, f"the store rejected the conditional put ({e})")
            except Exception as e:  # noqa: BLE001
                text = str(e)
                if "501" in text or "NotImplemented" in text:
                    return self._unsafe_create(path, data, "the store answered 501 Not Implemented to If-None-Match")
                if "409" in text or "ConditionalRequestConflict" in text:
                    time.sleep(0.05 * (attempt + 1) * (1 + random.random()))
                    continue  # a concurrent conditional write of the same key is in flight (S3 answers 409)
                raise self._err(e, "cannot commit", path) from None
        raise ObjectStoreError(f"cannot commit {self.client.location(k)} at endpoint {s.endpoint_label}: "
                               "conditional put kept conflicting")

    def _unsafe_create(self, path: str, data: bytes, why: str) -> bool:
        s = self.client.settings
        if not s.unsafe_lock:
            raise UnsafeOperationError(
                f"refusing to commit {self.client.location(self.key(path))}: {why}, so two concurrent committers "
                f"could both win and one commit would be lost. If an external lock guarantees a single committer, "
                f"set {UNSAFE_LOCK_OPTION}=external")
        log.warning("committing %s without conditional put (%s=external)", self.client.location(self.key(path)),
                    UNSAFE_LOCK_OPTION)
        if self.is_file(path):
            return False
        self.write_bytes(path, data)
        return True

    def rename(self, src: str, dst: str) -> None:
        self._hook("rename", dst)
        if self.exists(dst):
            raise FileExistsError(dst)
        self.write_bytes(dst, self.read_bytes(src))
        self.delete_file(src)

    # -------------------------------------------------------------- deletes
    def delete_file(self, path: str) -> bool:
        import obstore
        h = self._head(path)
        if h is None:
            if self.is_dir(path):
                raise UnsafeOperationError(f"refusing to delete {path}: it is not a regular file")
            return False
        self._hook("delete", path)
        try:
            obstore.delete(self._store(path), self.key(path))
        except FileNotFoundError:
            return False
        except Exception as e:  # noqa: BLE001
            raise self._err(e, "cannot delete", path) from None
        return True

    def delete_dir_if_empty(self, path: str) -> bool:
        """Directories are key prefixes: one disappears with its last object. Nothing to remove."""
        return False

    def existing(self, paths: Sequence[str]) -> set[str]:
        """Which of `paths` exist: a ranged listing per directory (1,000 keys per request, directories listed
        concurrently), HEAD requests for keys a listing would have to walk too far to reach."""
        import obstore
        by_dir: dict[str, list[str]] = {}
        for p in paths:
            k = self.key(p)
            by_dir.setdefault(k.rsplit("/", 1)[0] if "/" in k else "", []).append(k)
        store = self._store()

        def scan(item: tuple[str, list[str]]) -> tuple[set[str], list[str]]:
            d, keys = item
            keys = sorted(set(keys))
            wanted, last = set(keys), keys[-1]
            budget = 10 * len(keys) + MAX_DELETE_KEYS
            found: set[str] = set()
            seen, reached = 0, ""
            try:
                # keys > offset; a proper prefix of the first key sorts before it
                for chunk in obstore.list(store, prefix=(d + "/") if d else None, offset=keys[0][:-1],
                                          chunk_size=MAX_DELETE_KEYS):
                    for m in chunk:
                        seen += 1
                        reached = m["path"]
                        if reached > last:
                            return found, []
                        if reached in wanted:
                            found.add(reached)
                    if seen >= budget:
                        return found, [k for k in keys if k > reached]  # not reached by the listing
            except Exception as e:  # noqa: BLE001
                raise self._err(e, "cannot list", self._path(d)) from None
            return found, []

        found: set[str] = set()
        to_head: list[str] = []
        workers = max(1, min(self.client.settings.delete_concurrency, len(by_dir)))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for f, h in pool.map(scan, by_dir.items()):
                found |= f
                to_head += h
            for k, meta in zip(to_head, pool.map(lambda k: self._head(self._path(k)), to_head)):
                if meta is not None:
                    found.add(k)
        return {self._path(k) for k in found}

    def delete_files(self, paths: Sequence[str]) -> list[bool]:
        """FileIO's contract (False where already gone; raises if a file could not be deleted), in bulk."""
        out = self.delete_many(paths)
        if out.failed:
            path, error = out.failed[0]
            raise ObjectStoreError(f"{len(out.failed)} of {len(paths)} file(s) could not be deleted, first {path}: "
                                   f"{error}")
        missing = set(out.missing)
        return [p not in missing for p in paths]

    def delete_many(self, paths: Sequence[str]) -> DeleteOutcome:
        """Bulk delete: existence from listings, then DeleteObjects with up to 1,000 keys per request and
        `s3.delete.concurrency` requests in flight. Keys a request could not delete are re-checked and retried with
        back-off (throttling); per-file outcome is exact: deleted, already missing, or failed with its error."""
        paths = list(dict.fromkeys(paths))
        if not paths:
            return DeleteOutcome((), (), ())
        present = self.existing(paths)
        missing = [p for p in paths if p not in present]
        targets = [p for p in paths if p in present]
        # The fault seam: one hook call per file; a failing hook stops the deletes after those already "sent".
        sent: list[str] = []
        try:
            for p in targets:
                self._hook("delete", p)
                sent.append(p)
        except BaseException:
            self._bulk(sent)
            raise
        deleted, failed = self._bulk(targets)
        return DeleteOutcome(tuple(deleted), tuple(missing), tuple(failed))

    def _bulk(self, paths: Sequence[str]) -> tuple[list[str], list[tuple[str, str]]]:
        import obstore
        if not paths:
            return [], []
        store = self._store()
        chunks = [list(paths[i:i + MAX_DELETE_KEYS]) for i in range(0, len(paths), MAX_DELETE_KEYS)]

        def run(chunk: list[str]) -> tuple[list[str], list[tuple[str, str]]]:
            remaining = chunk
            err: BaseException | None = None
            for attempt in range(self.client.settings.max_retries + 1):
                try:
                    obstore.delete(store, [self.key(p) for p in remaining])
                    return list(chunk), []
                except Exception as e:  # noqa: BLE001 - which keys failed: look again
                    err = e
                still = self.existing(remaining)
                remaining = [p for p in remaining if p in still]
                if not remaining:
                    return list(chunk), []
                if not _transient(err):
                    break
                time.sleep(min(0.2 * 2 ** attempt, 5.0) * (1 + random.random() * 0.2))
            msg = str(self._err(err, "cannot delete", remaining[0])) if err else "not deleted"
            gone = [p for p in chunk if p not in set(remaining)]
            return gone, [(p, msg) for p in remaining]

        deleted: list[str] = []
        failed: list[tuple[str, str]] = []
        workers = max(1, min(self.client.settings.delete_concurrency, len(chunks)))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for d, f in pool.map(run, chunks):
                deleted += d
                failed += f
        return deleted, failed


class _LazyFs:
    """`FileIO.fs` for object stores: the pyarrow S3FileSystem, built on first attribute access (so resolving a
    location touches neither the network nor the AWS SDK)."""

    def __init__(self, client: S3Client):
        self._client = client

    def __getattr__(self, name: str):
        return getattr(self._client.filesystem(), name)


def _open_s3(scheme: str, rest: str, options: Mapping[str, str] | None,
             fault_hook: FaultHook | None) -> tuple[FileIO, str]:
    """FileIO.resolve's opener for s3:// (s3a, s3n): on an executor the settings shipped with the task, under any
    explicit options."""
    options = {**(current_task_options() or {}), **(options or {})}
    bucket, _, key = rest.partition("/")
    return ObjectStoreFileIO.open(scheme, bucket, options, fault_hook), f"{bucket}/{key.strip('/')}".rstrip("/")


register_opener(S3_SCHEMES, _open_s3)


__all__ = ["S3Settings", "S3Client", "ObjectStoreFileIO", "S3_SCHEMES", "UNSAFE_LOCK_OPTION", "is_store_option",
           "task_store_options", "current_task_options", "client_for", "redact", "SECRET_OPTIONS"]
