"""Test-only bridge to Java Paimon 0.9 (see ``tests/interop/java/PaimonHarness.java``).

Nothing binary is committed. On first use :func:`ensure_built`

* downloads the ``pypaimon==0.2.0`` sdist with pip (``--no-binary :all: --no-deps``) and extracts
  ``deps/jars/paimon-python-java-bridge-0.9.0.jar`` (Paimon 0.9.0 core, shaded) from it,
* takes ``hadoop-client-api`` / ``hadoop-client-runtime`` from the installed pyspark's ``jars/``,
* compiles the harness with ``javac`` into ``build-<hash>/paimon-harness.jar``, keyed by a hash of
  the Java sources, the library jars and the JVM version (a source change triggers a rebuild),
* records an AppCDS archive (``-XX:ArchiveClassesAtExit``) by running a short training session, which
  roughly halves the start-up cost of every later call (disable with ``PAIMON_HARNESS_CDS=0``).

Everything lives under ``$PAIMON_OPS_CACHE`` (default ``<repo>/.cache``), in ``java-harness/``.
Overrides: ``PAIMON_HARNESS_JAR`` (path to the Paimon bridge jar, skips the download),
``PAIMON_HARNESS_HADOOP_JARS`` (``os.pathsep``-separated jar list, replaces the pyspark lookup),
``JAVA_HOME`` (uses ``$JAVA_HOME/bin/java`` and ``javac``).

:func:`run` executes one command: ``java -cp <cp> PaimonHarness <command>`` with the JSON payload
on stdin; the JSON answer comes back on stdout, logs go to stderr. Within a test process the calls share one JVM
(``PaimonHarness --serve``, :class:`_Server`; calls with a catalog's client jars one JVM per test), which runs each
command exactly as a one-shot JVM would. A non-zero exit raises
:class:`JavaHarnessError` (a ``RuntimeError``) carrying the tail of stderr. :func:`run_many` runs
several commands in one JVM (command ``multi``).

Every payload names the table with ``warehouse`` + ``database`` + ``table`` (a catalog: the FileSystemCatalog, or the
one optional ``catalog_options`` name — ``metastore``, ``uri``, ``lock.enabled`` …) or with ``table_path``; optional
``dynamic_options`` (dict) are applied with ``table.copy``. A catalog's client jars (a JDBC driver, the Hive
metastore client) go on the classpath with ``extra_classpath`` (``run``, ``JavaTable``); a Hive catalog's (pyspark's
Hive 2.3 jars, ``hive_jars``) is added by ``run`` itself.

Commands (payload -> result):

* ``create_table`` {schema: {fields: [{name, type[, comment]}], partition_keys, primary_keys, options}}
  -> {table_path, schema_id, bucket_mode}. ``type`` is a Paimon type string ("INT NOT NULL",
  "DECIMAL(10, 2)", "ARRAY<INT>", "MAP<STRING, BIGINT>", "ROW<a INT, b STRING>") or a schema-JSON node.
* ``write`` {batches: [{rows, kinds?, compact?, full?=true, wait_compaction?=true, commit_identifier?, watermark?}],
  commit_user?, first_commit_identifier?=1} -> {commit_user, batches: [{commit_identifier,
  snapshot_ids}], latest_snapshot_id}. One stream writer for all batches; each batch is
  ``prepareCommit(wait_compaction, id)`` + ``commit(id)`` (with ``watermark``: a ``ManifestCommittable`` carrying
  it, as a streaming sink commits); ``compact`` calls
  ``write.compact(partition, bucket, full)`` for every bucket the batch touched.
* ``scan`` {snapshot_id? | tag?, dv_positions?=true} -> {snapshot_id, schema_id, commit_kind,
  files: [{partition, partition_path, bucket, level, file_name, file_path, row_count, file_size,
  min_seq, max_seq, delete_row_count, schema_id, total_buckets, file_source, file_format,
  creation_time_ms, extra_files, min_key, max_key}], index_files: [{partition, partition_path,
  bucket, index_type, file_name, file_size, row_count, dv_ranges: null | [{data_file, offset,
  length, cardinality, positions}]}]}. Store-level scan: every live file, level 0 included.
* ``read`` {snapshot_id? | tag?, projection?: [names], tag_snapshot?} -> {rows, row_kinds, columns, splits}.
  ``tag_snapshot``: the tag resolved by the table's own (branch-aware) TagManager and read through its snapshot
  reader — 0.9's ``scan.tag-name`` looks a branch table's tags up in main's tag directory.
* ``snapshots`` {} -> {snapshots: [snapshot JSON as Java writes it], tags: {name: id},
  tag_snapshots: {name: snapshot JSON}, earliest, latest}.
* ``create_tag`` {tag, snapshot_id?, time_retained_ms?} -> {tag, snapshot_id};
  ``delete_tag`` {tag} -> {tag, deleted}.
* ``expire_snapshots`` {retain_min?, retain_max?, time_retained_ms?, max_deletes?, now_ms?}
  (defaults: the table's options) -> {expired, earliest_before, earliest, latest}.
* ``compact`` {full?=true, partitions?: [{col: value}], commit_identifier?} -> {compacted_units,
  elapsed_ms, snapshot_ids}. Opens the table with ``write-only=false``; per bucket
  ``write.compact(partition, bucket, full)``, then one commit.
* ``audit_log`` {start, end?, scan_mode?="changelog"} -> {rows, columns, start, end}: the ``$audit_log``
  system table read with ``incremental-between=<start>,<end>`` (start exclusive; a negative start counts back
  from the latest snapshot, end defaults to the latest) and ``incremental-between-scan-mode``; every row starts
  with its row kind ("+I", "-U", "+U", "-D").
* ``check_files`` {} -> {missing: [{path, kind, referenced_by}], checked_snapshots_and_tags,
  checked_files}.
* ``remove_orphans`` {older_than_ms?, dry_run?} -> {deleted: [paths], dry_run}.
* ``expire_partitions`` {now: local date-time "YYYY-MM-DDTHH:MM[:SS]", expiration_time_ms?, strategy?,
  timestamp_formatter?, timestamp_pattern?} (unset: the table's options; a JSON null removes the option) ->
  {expired: [{key: value}], error?, snapshot_id}: 0.9's ``PartitionExpire`` with check interval 0 (what the
  ``expire_partitions`` procedure builds; in a Hive catalog with ``metastore.partitioned-table`` it drops the
  metastore partitions first and commits under the catalog lock), its package-private ``expire(now, Long.MAX_VALUE)`` called so that
  "now" is the test's; a Java exception comes back as ``error`` ("Class: message"), nothing expired.
* ``expire_tags`` {} -> {expired: [names]}: 0.9's ``TagTimeExpire`` (wall clock) with the table's tag callbacks
  (a Hive catalog's ``metastore.tag-to-partition`` drops the tags' partitions).
* ``create_tag_from`` {tag, timestamp? | watermark?, time_retained_ms?} -> {tag, snapshot_id, commit_time,
  watermark} | {error}: what the ``create_tag_from_timestamp`` / ``create_tag_from_watermark`` procedures do, with
  0.9's ``SnapshotManager.laterOrEqualTimeMills`` / ``laterOrEqualWatermark`` and the tag loop, then ``createTag``.
* ``rollback`` {snapshot_id? | tag?} -> {latest}: 0.9's ``rollbackTo`` (it deletes the newer snapshots, tags and
  changelogs and the files only they used).
* ``mark_partition_done`` {partitions: [{key: value}]} -> {partition_paths}: the ``mark_partition_done`` procedure
  of 0.9 — ``PartitionMarkDoneAction.createActions`` (the table's ``partition.mark-done-action``: ``_SUCCESS``
  files, ``.done`` partitions and LOAD_DONE events through a Hive catalog's metastore client) on each partition.
* ``success_file`` {path} -> {creationTime, modificationTime}: 0.9's ``SuccessFile.fromPath``.
* ``list_tables`` {warehouse, catalog_options?, database} -> {tables: [names], locations: {name: location}}: the
  catalog's ``listTables`` (a Hive catalog: the metastore's Paimon tables) and each table's location.
* ``partition_times`` {cases: [{keys, values, pattern?, formatter?}]} -> {results: [{time, error}]}: 0.9's
  ``PartitionTimeExtractor.extract`` per case (``time`` as ``LocalDateTime.toString()``, or the exception).
* ``create_branch`` {branch, tag?} -> {branch, created}: 0.9's ``createBranch`` on the table's branch, from a tag or
  empty; ``delete_branch`` {branch}; ``fast_forward`` {branch} (the table's branch takes ``branch``'s state);
  ``branches`` {} -> {branches: [names]}. A branch itself is named as Paimon does: ``table: "t$branch_b"``.
* ``consumers`` {} -> {consumers: {id: nextSnapshot}, min_next_snapshot}; ``reset_consumer`` {consumer_id,
  next_snapshot?, unchecked?} (no next_snapshot: delete; the snapshot must exist unless ``unchecked``), 0.9's
  ``ConsumerManager`` on the table's branch.
* ``delete_positions`` {positions: {data file name: [row positions]}} -> {snapshot_ids, index_files_added,
  index_files_deleted}: an unaware-bucket append table's rows deleted as 0.9's Spark DELETE does with deletion
  vectors (``AppendDeletionFileMaintainer.forUnawareAppend(...).persist()``: new vectors merged with the old ones,
  written rolling at ``deletion-vector.index-file.target-size``, the touched index files' other vectors rewritten).
* ``ping`` {} -> {ok, paimon_version}.

Values use the same JSON conventions both ways: numbers/bools/strings as JSON, DECIMAL as a plain
string, DATE "YYYY-MM-DD", TIME "HH:MM:SS[.fff]", TIMESTAMP "YYYY-MM-DD HH:MM:SS[.ffffff]" (no
fraction when zero), BYTES base64, ARRAY list, MAP list of [key, value] pairs (a JSON object is
accepted on input), ROW list. FLOAT values come back widened to double (0.1f -> 0.10000000149011612).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import importlib.util
import json
import os
import select
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import zipfile
from pathlib import Path
from typing import Any, Iterable, Sequence

REPO_ROOT = Path(__file__).resolve().parents[2]
JAVA_SRC_DIR = Path(__file__).resolve().parent / "java"
MAIN_CLASS = "PaimonHarness"

PYPAIMON_SDIST = "pypaimon==0.2.0"
BRIDGE_JAR_NAME = "paimon-python-java-bridge-0.9.0.jar"
BRIDGE_JAR_MEMBER = "pypaimon-0.2.0/deps/jars/" + BRIDGE_JAR_NAME
HADOOP_JAR_PREFIXES = ("hadoop-client-api-", "hadoop-client-runtime-")

# Fast JVM start for many short-lived calls; UTC so timestamps never depend on the host zone.
JVM_OPTS = [
    "-Xshare:auto",
    "-XX:TieredStopAtLevel=1",
    "-XX:+UseSerialGC",
    "-Xss4m",
    "-Duser.timezone=UTC",
    "-Dfile.encoding=UTF-8",
]

DEFAULT_TIMEOUT_S = 600

_NOISE_PREFIXES = ("SLF4J:",)

_classpath_cache: str | None = None
_cds_archive: Path | None = None


class JavaHarnessError(RuntimeError):
    """The Java harness failed (non-zero exit, bad output or a build problem)."""

    def __init__(self, message: str, *, command: str | None = None, stderr: str = "", returncode: int | None = None):
        super().__init__(message)
        self.command = command
        self.stderr = stderr
        self.returncode = returncode


# --------------------------------------------------------------------------- locating tools


def cache_dir() -> Path:
    return Path(os.environ.get("PAIMON_OPS_CACHE", str(REPO_ROOT / ".cache"))) / "java-harness"


def _java_bin(name: str) -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home:
        cand = Path(home) / "bin" / name
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    return shutil.which(name)


def java_available() -> bool:
    """True when both ``java`` and ``javac`` are on PATH (or under ``$JAVA_HOME``)."""
    return _java_bin("java") is not None and _java_bin("javac") is not None


def skip_reason() -> str | None:
    """A human readable reason why the harness cannot run here, or None when it can."""
    if _java_bin("java") is None:
        return "Java interop tests need `java` (JDK 17) on PATH or JAVA_HOME; not found"
    if _java_bin("javac") is None:
        return "Java interop tests need `javac` (a JDK, not only a JRE) on PATH or JAVA_HOME; not found"
    return None


# --------------------------------------------------------------------------- build


@contextlib.contextmanager
def _locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _bridge_jar(base: Path) -> Path:
    override = os.environ.get("PAIMON_HARNESS_JAR")
    if override:
        p = Path(override)
        if not p.is_file():
            raise JavaHarnessError(f"PAIMON_HARNESS_JAR={override} does not exist")
        return p
    jar = base / "jars" / BRIDGE_JAR_NAME
    if jar.is_file():
        return jar
    sdist_dir = base / "sdist"
    sdists = sorted(sdist_dir.glob("pypaimon-0.2.0*.tar.gz")) if sdist_dir.is_dir() else []
    if not sdists:
        sdist_dir.mkdir(parents=True, exist_ok=True)
        cmd = [
            sys.executable, "-m", "pip", "download", PYPAIMON_SDIST,
            "--no-deps", "--no-binary", ":all:", "--disable-pip-version-check", "-d", str(sdist_dir),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        sdists = sorted(sdist_dir.glob("pypaimon-0.2.0*.tar.gz"))
        if proc.returncode != 0 or not sdists:
            raise JavaHarnessError(
                f"could not download {PYPAIMON_SDIST} sdist (needed for the Paimon 0.9 jar): "
                f"{' '.join(cmd)} exited {proc.returncode}\n{_tail(proc.stdout + proc.stderr)}"
            )
    jar.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(sdists[-1], "r:gz") as tf:
        member = tf.getmember(BRIDGE_JAR_MEMBER)
        src = tf.extractfile(member)
        assert src is not None
        fd, tmp = tempfile.mkstemp(dir=jar.parent, suffix=".part")
        with os.fdopen(fd, "wb") as out, src:
            shutil.copyfileobj(src, out)
    os.replace(tmp, jar)
    return jar


def _hadoop_jars() -> list[Path]:
    override = os.environ.get("PAIMON_HARNESS_HADOOP_JARS")
    if override:
        jars = [Path(p) for p in override.split(os.pathsep) if p]
        missing = [str(j) for j in jars if not j.is_file()]
        if missing:
            raise JavaHarnessError(f"PAIMON_HARNESS_HADOOP_JARS lists missing files: {missing}")
        return jars
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise JavaHarnessError("pyspark is not installed; its jars/ dir provides the Hadoop client jars")
    jars_dir = Path(list(spec.submodule_search_locations)[0]) / "jars"
    found: list[Path] = []
    for prefix in HADOOP_JAR_PREFIXES:
        cands = sorted(jars_dir.glob(prefix + "*.jar"))
        if not cands:
            raise JavaHarnessError(f"no {prefix}*.jar in {jars_dir}")
        found.append(cands[-1])
    return found


def _sources() -> list[Path]:
    srcs = sorted(JAVA_SRC_DIR.glob("*.java"))
    if not srcs:
        raise JavaHarnessError(f"no Java sources in {JAVA_SRC_DIR}")
    return srcs


def _java_version() -> str:
    proc = subprocess.run([_java_bin("java") or "java", "-version"], capture_output=True, text=True)
    return (proc.stderr + proc.stdout).strip()


def _build_key(srcs: Sequence[Path], libs: Iterable[Path]) -> str:
    """Hash of the Java sources, the libraries (name, size, mtime: the CDS archive checks them) and the JVM."""
    h = hashlib.sha256()
    for s in srcs:
        h.update(s.name.encode() + b"\0" + s.read_bytes() + b"\0")
    for lib in libs:
        st = lib.stat()
        h.update(f"{lib.resolve()}|{st.st_size}|{int(st.st_mtime)}\0".encode())
    h.update(_java_version().encode())
    return h.hexdigest()[:16]


def _compile(srcs: Sequence[Path], libs: Sequence[Path], out_jar: Path) -> None:
    """javac the sources and pack the classes into a jar (CDS refuses directories on the classpath)."""
    with tempfile.TemporaryDirectory(prefix="javac-", dir=out_jar.parent) as tmp:
        cmd = [
            _java_bin("javac") or "javac", "-nowarn", "-encoding", "UTF-8", "-d", tmp,
            "-cp", os.pathsep.join(str(p) for p in libs), *[str(s) for s in srcs],
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise JavaHarnessError(
                f"javac failed ({proc.returncode}):\n{_tail(proc.stdout + proc.stderr, 60)}",
                stderr=proc.stderr, returncode=proc.returncode,
            )
        part = out_jar.with_suffix(".part")
        with zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nCreated-By: paimon-ops tests\n\n")
            for f in sorted(Path(tmp).rglob("*.class")):
                zf.write(f, f.relative_to(tmp).as_posix())
        os.replace(part, out_jar)


def _train_cds(cp: str, archive: Path) -> None:
    """Record a dynamic AppCDS archive of the classes a typical session loads (about 2x faster JVM calls).

    Best effort: on any failure a marker file is left and the harness runs without the archive.
    """
    failed = archive.with_suffix(".failed")
    with tempfile.TemporaryDirectory(prefix="cds-train-") as wh:
        base = {"warehouse": wh, "database": "db"}
        pk = dict(base, table="pk")
        ap = dict(base, table="ap")
        rows = [["a", i, f"v{i}", i] for i in range(20)]
        commands = [
            ("create_table", dict(pk, schema={
                "fields": [{"name": "pt", "type": "STRING NOT NULL"}, {"name": "id", "type": "INT NOT NULL"},
                           {"name": "v", "type": "STRING"}, {"name": "n", "type": "BIGINT"}],
                "partition_keys": ["pt"], "primary_keys": ["pt", "id"],
                "options": {"bucket": "1", "deletion-vectors.enabled": "true"}})),
            ("write", dict(pk, batches=[{"rows": rows}, {"rows": rows[:2], "kinds": ["+U", "-D"], "compact": True}])),
            ("scan", pk), ("read", pk), ("snapshots", pk),
            ("create_table", dict(ap, schema={
                "fields": [{"name": "k", "type": "INT"}, {"name": "d", "type": "DATE"},
                           {"name": "x", "type": "DECIMAL(10, 2)"}, {"name": "t", "type": "TIMESTAMP(6)"}],
                "partition_keys": [], "primary_keys": [], "options": {"bucket": "-1", "file.format": "orc"}})),
            ("write", dict(ap, batches=[{"rows": [[1, "2024-01-01", "1.00", "2024-01-01 00:00:00"]]}])),
            ("read", ap),
        ]
        cmd = [_java_bin("java") or "java", *JVM_OPTS, f"-XX:ArchiveClassesAtExit={archive}.part",
               "-cp", cp, MAIN_CLASS, "multi"]
        payload = json.dumps({"commands": [{"command": c, "payload": p} for c, p in commands]})
        try:
            proc = subprocess.run(cmd, input=payload, capture_output=True, text=True, timeout=300)
            ok = proc.returncode == 0 and Path(f"{archive}.part").is_file()
        except subprocess.TimeoutExpired:
            ok, proc = False, None
        if ok:
            os.replace(f"{archive}.part", archive)
        else:
            Path(f"{archive}.part").unlink(missing_ok=True)
            failed.write_text(_tail(proc.stderr) if proc is not None else "timeout")


def ensure_built() -> str:
    """Fetch the jars and compile the harness if needed; return the Java classpath string."""
    global _classpath_cache, _cds_archive
    if _classpath_cache is not None:
        return _classpath_cache
    reason = skip_reason()
    if reason:
        raise JavaHarnessError(reason)
    base = cache_dir()
    with _locked(base / ".lock"):
        bridge = _bridge_jar(base)
        libs = [bridge, *_hadoop_jars()]
        srcs = _sources()
        key = _build_key(srcs, libs)
        build = base / f"build-{key}"
        jar = build / "paimon-harness.jar"
        if not jar.is_file():
            # builds of other sources stay a week: worktrees of several branches may share one cache, and removing
            # the build another process is running from fails it
            for old in base.glob("build-*"):
                if time.time() - old.stat().st_mtime > 7 * 86_400:
                    shutil.rmtree(old, ignore_errors=True)
            build.mkdir(parents=True, exist_ok=True)
            _compile(srcs, libs, jar)
        os.utime(build)  # in use: kept by other sources' builds (above)
        cp = os.pathsep.join(str(p) for p in [jar, *libs])
        archive = build / "paimon-harness.jsa"
        if os.environ.get("PAIMON_HARNESS_CDS", "1") != "0":
            if not archive.is_file() and not archive.with_suffix(".failed").exists():
                _train_cds(cp, archive)
            _cds_archive = archive if archive.is_file() else None
    _classpath_cache = cp
    return cp


def hive_jars() -> str:
    """pyspark's ``jars/*``: the Hive 2.3 metastore client classes Java's HiveCatalog links against (unshaded in
    the bridge jar), appended after the harness' own classpath so the bridge's classes win."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise JavaHarnessError("pyspark is not installed; its jars/ dir provides the Hive metastore client")
    return str(Path(list(spec.submodule_search_locations)[0]) / "jars" / "*")


def _uses_hive(payload: Any) -> bool:
    """Whether a payload (or a `multi` payload's commands) opens a Hive catalog (`catalog_options` metastore=hive):
    then `run` appends `hive_jars()` itself."""
    if not isinstance(payload, dict):
        return False
    if str((payload.get("catalog_options") or {}).get("metastore", "")).lower() == "hive":
        return True
    return any(_uses_hive(c.get("payload")) for c in payload.get("commands") or [] if isinstance(c, dict))


def jvm_command(command: str, extra_classpath: Sequence[str | os.PathLike] = ()) -> list[str]:
    """The full ``java ...`` argv for one harness command (after :func:`ensure_built`); `extra_classpath` is appended
    (a JDBC driver, the Hive client jars: the class-data archive allows appended entries)."""
    cp = os.pathsep.join([ensure_built(), *map(os.fspath, extra_classpath)])
    opts = list(JVM_OPTS)
    if _cds_archive is not None:
        opts.append(f"-XX:SharedArchiveFile={_cds_archive}")
    return [_java_bin("java") or "java", *opts, "-cp", cp, MAIN_CLASS, command]


# --------------------------------------------------------------------------- run


def _tail(text: str, lines: int = 40) -> str:
    kept = [ln for ln in text.splitlines() if not ln.startswith(_NOISE_PREFIXES)]
    return "\n".join(kept[-lines:])


def _json_default(o: Any) -> Any:
    if isinstance(o, os.PathLike):
        return os.fspath(o)
    if isinstance(o, (bytes, bytearray)):
        import base64

        return base64.b64encode(bytes(o)).decode("ascii")
    if hasattr(o, "isoformat"):
        # datetime -> "YYYY-MM-DD HH:MM:SS[.ffffff]", date -> "YYYY-MM-DD"
        try:
            return o.isoformat(sep=" ")
        except TypeError:
            return o.isoformat()
    from decimal import Decimal

    if isinstance(o, Decimal):
        return format(o, "f")
    raise TypeError(f"cannot send {type(o).__name__} to the Java harness: {o!r}")


def run(command: str, payload: dict | None = None, *, timeout: float = DEFAULT_TIMEOUT_S,
        extra_classpath: Sequence[str | os.PathLike] = ()) -> Any:
    """Run one harness command and return its decoded JSON result.

    ``payload`` may contain ``pathlib.Path``, ``bytes`` (sent base64), ``datetime``/``date`` and
    ``Decimal`` values; they are converted to the harness' JSON conventions.
    """
    from tests import lanes
    lanes.require("java")
    if _uses_hive(payload) and hive_jars() not in map(os.fspath, extra_classpath):
        extra_classpath = [*extra_classpath, hive_jars()]
    cmd = jvm_command(command, extra_classpath)
    data = json.dumps(payload or {}, default=_json_default)
    # with a catalog's client jars (JDBC, Hive) the server lives for one test only: the connection pools and client
    # caches its commands leave behind never outlive the test whose databases and metastores they point at
    server = _Server.for_now(cmd[:-1], per_test=bool(extra_classpath))
    if server is not None:
        return server.call(command, data, timeout)
    try:
        proc = subprocess.run(cmd, input=data, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        raise JavaHarnessError(
            f"Java harness command {command!r} timed out after {timeout}s\n{_tail(err)}",
            command=command, stderr=err,
        ) from None
    if proc.returncode != 0:
        raise JavaHarnessError(
            f"Java harness command {command!r} failed (exit {proc.returncode}); stderr tail:\n{_tail(proc.stderr)}",
            command=command, stderr=proc.stderr, returncode=proc.returncode,
        )
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise JavaHarnessError(
            f"Java harness command {command!r} printed non-JSON output: {proc.stdout[:500]!r}\n{_tail(proc.stderr)}",
            command=command, stderr=proc.stderr, returncode=proc.returncode,
        ) from None


class _Server:
    """One JVM that runs harness commands one after another (`PaimonHarness --serve`), so that a test session pays a
    JVM's start and warm-up once instead of per call (about 0.5 CPU-s a call; 20 calls: 10.7 CPU-s one-shot, 1.4 in
    one JVM). Each command still builds its own catalog and table, as a one-shot JVM does. The server serves the
    process that started it, with the environment and working directory it started with; when either changed, or
    when another thread is using it, a call runs in a JVM of its own as before. PAIMON_HARNESS_SERVE=0 turns it off.

    Two servers at most: one for the plain classpath, kept for the whole process, and one for calls with a catalog's
    client jars, stopped when the test that started it ends (:func:`end_of_test`, from tests/conftest.py).
    """

    _servers: "dict[bool, _Server]" = {}
    _guard = threading.Lock()

    def __init__(self, argv: list[str], key: tuple):
        self.key = key
        self.pid = os.getpid()
        self.lock = threading.Lock()
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([*argv, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log)
        self.buffer = b""

    @classmethod
    def for_now(cls, argv: list[str], per_test: bool = False) -> "_Server | None":
        if os.environ.get("PAIMON_HARNESS_SERVE", "1") == "0":
            return None
        env = tuple(sorted((k, v) for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"))
        key = (tuple(argv), env, os.getcwd())
        with cls._guard:
            server = cls._servers.get(per_test)
            if server is not None and server.pid != os.getpid():  # a forked child: the pipes are the parent's
                del cls._servers[per_test]
                server = None
            if server is not None and (server.key != key or server.proc.poll() is not None):
                server.retire()
                del cls._servers[per_test]
                server = None
            if server is None:
                server = cls._servers[per_test] = _Server(argv, key)
                atexit.register(server.stop)
            return server if server.lock.acquire(blocking=False) else None

    @classmethod
    def end_of_test(cls) -> None:
        with cls._guard:
            server = cls._servers.pop(True, None)
        if server is not None and server.pid == os.getpid():
            with server.lock:  # (a call still running in another thread of the test finishes first)
                server.retire()

    def call(self, command: str, data: str, timeout: float) -> Any:
        """The command's result (the caller holds `lock`, from for_now); a failure raises JavaHarnessError."""
        try:
            assert self.proc.stdin is not None and self.proc.stdout is not None
            try:
                self.proc.stdin.write(f'{{"command": {json.dumps(command)}, "payload": {data}}}\n'.encode())
                self.proc.stdin.flush()
            except BrokenPipeError:
                pass  # it died: reported below with its log
            line = self._read_line(timeout)
            if not line:  # None: the deadline passed; b"": the JVM ended
                self.stop()
                log = self._log_text()
                what = f"timed out after {timeout}s" if line is None else \
                    f"ended the harness server (exit {self.proc.returncode})"
                raise JavaHarnessError(f"Java harness command {command!r} {what}; its log:\n{_tail(log)}",
                                       command=command, stderr=log, returncode=self.proc.returncode)
            answer = json.loads(line)
            if "error" in answer:
                raise JavaHarnessError(f"Java harness command {command!r} failed; stderr tail:\n"
                                       f"{_tail(answer['error'])}", command=command, stderr=answer["error"],
                                       returncode=1)
            return answer["result"]
        finally:
            self.lock.release()

    def _read_line(self, timeout: float) -> bytes | None:
        """One answer line; b"" when the JVM closed its output, None at the deadline."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    return b""
                self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def _log_text(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except Exception:  # noqa: BLE001 - it is going away either way
                self.proc.kill()
                self.proc.wait()

    def retire(self) -> None:
        """Stop it for good: its log's descriptor closed, its exit hook gone (a server per test adds up)."""
        self.stop()
        self.log.close()
        atexit.unregister(self.stop)


def end_of_test() -> None:
    """Stops the server of calls with a catalog's client jars (called after each test's teardown)."""
    _Server.end_of_test()


def run_many(commands: Sequence[tuple[str, dict]], *, timeout: float = DEFAULT_TIMEOUT_S,
             extra_classpath: Sequence[str | os.PathLike] = ()) -> list[Any]:
    """Run several commands in one JVM (saves ~0.5-1 s of start-up per command). Stops at the first failure."""
    return run(
        "multi",
        {"commands": [{"command": c, "payload": p} for c, p in commands]},
        timeout=timeout, extra_classpath=extra_classpath,
    )


# --------------------------------------------------------------------------- convenience


class JavaTable:
    """Binds a table location so tests can write ``t.write([...])`` instead of full payloads.

    Either ``JavaTable(warehouse, database, table)`` (FileSystemCatalog) or
    ``JavaTable(table_path=...)`` (table directory, no catalog).
    """

    def __init__(
        self,
        warehouse: str | os.PathLike | None = None,
        database: str = "default",
        table: str | None = None,
        *,
        table_path: str | os.PathLike | None = None,
        dynamic_options: dict[str, str] | None = None,
        catalog_options: dict[str, str] | None = None,
        extra_classpath: Sequence[str | os.PathLike] = (),
    ):
        if table_path is not None:
            self.base: dict[str, Any] = {"table_path": os.fspath(table_path)}
        else:
            if warehouse is None or table is None:
                raise ValueError("give warehouse+database+table or table_path")
            self.base = {"warehouse": os.fspath(warehouse), "database": database, "table": table}
        if dynamic_options:
            self.base["dynamic_options"] = dict(dynamic_options)
        if catalog_options:
            self.base["catalog_options"] = dict(catalog_options)
        self.extra_classpath = list(extra_classpath)

    @property
    def path(self) -> Path:
        if "table_path" in self.base:
            return Path(self.base["table_path"])
        return Path(self.base["warehouse"]) / f"{self.base['database']}.db" / self.base["table"].split("$", 1)[0]

    def payload(self, **extra: Any) -> dict:
        p = dict(self.base)
        p.update({k: v for k, v in extra.items() if v is not None})
        return p

    def call(self, command: str, **extra: Any) -> Any:
        return run(command, self.payload(**extra), extra_classpath=self.extra_classpath)

    def create(
        self,
        fields: Sequence[tuple[str, str]] | Sequence[dict],
        *,
        partition_keys: Sequence[str] = (),
        primary_keys: Sequence[str] = (),
        options: dict[str, Any] | None = None,
    ) -> dict:
        flds = [f if isinstance(f, dict) else {"name": f[0], "type": f[1]} for f in fields]
        schema = {
            "fields": flds,
            "partition_keys": list(partition_keys),
            "primary_keys": list(primary_keys),
            "options": {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in (options or {}).items()},
        }
        return self.call("create_table", schema=schema)

    def write(self, batches: Sequence[dict], **extra: Any) -> dict:
        return self.call("write", batches=list(batches), **extra)

    def scan(self, snapshot_id: int | None = None, tag: str | None = None, **extra: Any) -> dict:
        return self.call("scan", snapshot_id=snapshot_id, tag=tag, **extra)

    def read(
        self,
        snapshot_id: int | None = None,
        tag: str | None = None,
        projection: Sequence[str] | None = None,
        tag_snapshot: bool | None = None,
    ) -> dict:
        return self.call(
            "read", snapshot_id=snapshot_id, tag=tag, projection=list(projection) if projection else None,
            tag_snapshot=tag_snapshot,
        )

    def rows(self, snapshot_id: int | None = None, tag: str | None = None) -> list[list]:
        """Rows of a batch read, sorted (by their JSON encoding) for order-free comparison."""
        res = self.read(snapshot_id=snapshot_id, tag=tag)
        return sorted(res["rows"], key=lambda r: json.dumps(r, sort_keys=True))

    def snapshots(self) -> dict:
        return self.call("snapshots")

    def create_tag(self, tag: str, snapshot_id: int | None = None, time_retained_ms: int | None = None) -> dict:
        return self.call("create_tag", tag=tag, snapshot_id=snapshot_id, time_retained_ms=time_retained_ms)

    def delete_tag(self, tag: str) -> dict:
        return self.call("delete_tag", tag=tag)

    def expire_snapshots(self, **kw: Any) -> dict:
        """Java's snapshot expiry: the procedure's config from `retain_min`, `retain_max`, `time_retained_ms`,
        `max_deletes` (never decoupled), or with `table_config=True` the table's own (decoupled changelogs kept)."""
        return self.call("expire_snapshots", **kw)

    def expire_changelogs(self, **kw: Any) -> dict:
        """Java's ExpireChangelogImpl: long-lived changelogs by `retain_min`, `retain_max`, `time_retained_ms`,
        `max_deletes` (default: the table's changelog options)."""
        return self.call("expire_changelogs", **kw)

    def compact(self, full: bool = True, partitions: Sequence[dict] | None = None, **kw: Any) -> dict:
        return self.call("compact", full=full, partitions=list(partitions) if partitions else None, **kw)

    def audit_log(self, start: int, end: int | None = None, scan_mode: str = "changelog") -> list[list]:
        """Changelog rows (row kind first) between snapshots `start` (exclusive) and `end`."""
        return self.call("audit_log", start=start, end=end, scan_mode=scan_mode)["rows"]

    def check_files(self) -> list[dict]:
        return self.call("check_files")["missing"]

    def remove_orphans(self, older_than_ms: int, dry_run: bool = False) -> list[str]:
        return self.call("remove_orphans", older_than_ms=older_than_ms, dry_run=dry_run)["deleted"]

    def branch(self, name: str) -> JavaTable:
        """The same table's branch `name`, named as Paimon does (`t$branch_<name>`, through the catalog)."""
        if "table_path" in self.base:
            raise ValueError("a branch is opened through the catalog: JavaTable(warehouse, database, table)")
        return JavaTable(self.base["warehouse"], self.base["database"], f"{self.base['table']}$branch_{name}",
                         dynamic_options=self.base.get("dynamic_options"))

    def create_branch(self, branch: str, tag: str | None = None) -> dict:
        return self.call("create_branch", branch=branch, tag=tag)

    def delete_branch(self, branch: str) -> dict:
        return self.call("delete_branch", branch=branch)

    def fast_forward(self, branch: str) -> dict:
        return self.call("fast_forward", branch=branch)

    def branches(self) -> list[str]:
        return self.call("branches")["branches"]

    def consumers(self) -> dict:
        return self.call("consumers")

    def reset_consumer(self, consumer_id: str, next_snapshot: int | None = None, unchecked: bool = False) -> dict:
        return self.call("reset_consumer", consumer_id=consumer_id, next_snapshot=next_snapshot,
                         unchecked=unchecked or None)

    def expire_partitions(self, now: str, **kw: Any) -> dict:
        """Java's own partition expiry at the local date-time `now` (see the module docstring)."""
        return self.call("expire_partitions", now=now, **kw)

    def expire_tags(self) -> list[str]:
        """Java's TagTimeExpire (tags past their time retained, by the wall clock); the tags it deleted."""
        return self.call("expire_tags")["expired"]


__all__ = [
    "JavaHarnessError",
    "JavaTable",
    "cache_dir",
    "ensure_built",
    "java_available",
    "jvm_command",
    "run",
    "run_many",
    "skip_reason",
]
