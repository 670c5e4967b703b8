"""Snapshot expiration and decoupled changelog expiration (maintenance.md §2).

    plan_expire_snapshots(table, retain_min=None, retain_max=None, older_than=None, min_age=None, max_deletes=None,
                          now=None) -> ExpireSnapshotsPlan

The plan requires the tag set, the snapshot kept at the window's end, and no consumer inside the window; a reviewed
plan executed later (`paimon-ops apply`) is refused with StalePlanError when any of that changed.

Window (§2.2, the 2.0+ successor rule): snapshot `id` may expire only when its successor `id+1` was committed
before `now - time_retained`; everything below `latest - retain_max + 1` expires by count; `retain_min` newest,
consumers' `nextSnapshot` and `snapshot.expire.limit` cap the window. Files (§2.3) are planned per snapshot delta
in entry order keyed by file path, protected by the nearest tag below (data, compared by partition/bucket/name) and
by the window's neighbours (manifests, index files, statistics); files another branch references are never deleted
(Java ignores other branches, apache/paimon#6272). Execution order: snapshot files oldest first -> EARLIEST (then, when
decoupled, the expired long-lived changelogs) -> data -> changelog files -> empty dirs -> manifests, index and
statistics -> manifest lists and index manifests. Java deletes the snapshot files last (§2.4), so that a rerun can
rediscover what is left; a crash then leaves listed snapshots whose files are partly gone. Here the snapshots go
first and the executor records the files still to delete in a journal before (lifecycle.journal): a crash leaves no
unreadable snapshot, only unreferenced files, which the next run reclaims.
Every unreadable piece of metadata makes us delete less; arguments and snapshot `end` are validated before anything
is planned (apache/paimon#10088).

Decoupled changelog lifecycle (§2.8, decided by the table's options, never by one call's arguments): expired
snapshots are kept as `changelog/changelog-<id>` and a changelog stage, planned on the state the snapshot stage
leaves, expires them by `changelog.num-retained.*` / `changelog.time-retained` (own commit time) in the same run.

A branch is expired against its own tags and consumers (`Table.for_branch(b)`), not main's (apache/paimon#9867).
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import logging
import posixpath
import time
from dataclasses import asdict, dataclass, replace
from types import SimpleNamespace
from typing import Any, Callable, ClassVar, Iterable, Iterator, Sequence

import pyarrow.compute as pc

import paimon_ops.format.manifest as mf
import paimon_ops.table.hints as hints
from paimon_ops.catalog import catalog_of
from paimon_ops.errors import (
    CorruptMetadataError,
    InvalidArgumentError,
    InvalidOptionError,
    MissingFileError,
    PreflightError,
    UnsafeNameError,
    arg,
)
from paimon_ops.execution.executor import Execution, register_check, register_step
from paimon_ops.execution.journal import plan_pending
from paimon_ops.execution.placement import spark_placed
from paimon_ops.execution.plan import (
    CHANGELOG,
    DATA,
    DELETE_DIRS,
    DELETE_FILES,
    ENSURE_HINTS,
    EXTRA,
    HINT,
    LONG_CHANGELOG,
    SNAPSHOT,
    EarliestSnapshotIs,
    FileAction,
    Plan,
    PlanBuilder,
    Precondition,
    SnapshotIs,
    Step,
    Workload,
    declare_step_action,
    planner,
)
from paimon_ops.execution.runner import Runner
from paimon_ops.format.snapshot import Snapshot
from paimon_ops.lifecycle.protection import (
    STORE_CAPACITY,
    DataSkipper,
    OtherBranches,
    TagsAre,
    manifest_skipping_set,
    nearest_tag_below,
    other_branches,
    read_tags,
    skipping_tags,
    tag_set,
)
from paimon_ops.lifecycle.reclaim import (
    empty_dir_actions,
    extra_file_path,
    file_size,
    plan_index_and_stats,
    plan_manifest_list,
)
from paimon_ops.operations.expire_changelogs import OPERATION as EXPIRE_CHANGELOGS
from paimon_ops.operations.expire_snapshots import OPERATION as EXPIRE_SNAPSHOTS
from paimon_ops.operations.model import InstantMs
from paimon_ops.options import (
    CHANGELOG_NUM_RETAINED_MAX,
    CHANGELOG_NUM_RETAINED_MIN,
    CHANGELOG_TIME_RETAINED,
    CONSUMER_CHANGELOG_ONLY,
    CONSUMER_EXPIRATION_TIME,
    SNAPSHOT_CLEAN_EMPTY_DIRECTORIES,
    SNAPSHOT_EXPIRE_LIMIT,
    SNAPSHOT_NUM_RETAINED_MAX,
    SNAPSHOT_NUM_RETAINED_MIN,
    SNAPSHOT_TIME_RETAINED,
    parse_duration,
)
from paimon_ops.table.consistency import check_history
from paimon_ops.table.scan import ManifestStore, TableScanner
from paimon_ops.table.table import EARLIEST, LATEST, FileStoreTable
from paimon_ops.timeutil import iso

log = logging.getLogger(__name__)

INT_MAX = 2**31 - 1
# Steps of their own: snapshot files go oldest first (each first copied to changelog/ when the changelog lifecycle
# is decoupled), then the EARLIEST hint; long-lived changelog files likewise.
EXPIRE_SNAPSHOT_FILES = "expire-snapshot-files"
EXPIRE_CHANGELOG_FILES = "expire-changelog-files"
declare_step_action(EXPIRE_SNAPSHOT_FILES, deletes=True)
declare_step_action(EXPIRE_CHANGELOG_FILES, deletes=True)


class ExpireSnapshotsPlan(Plan):
    """Expiring snapshots (and, when decoupled, long-lived changelogs) with their files."""

    operation = "expire_snapshots"
    op = EXPIRE_SNAPSHOTS  # its operation (the feature gate, the planner's parameters)

    def workload(self) -> Any:
        d = self.details if isinstance(self.details, dict) else {}
        n = sum(len(s.files) for s in self.steps if s.deletes)
        return Workload(deletes=n, manifests=int(d.get("manifest_dir_files") or 0), files=n)

    @property
    def expired_snapshots(self) -> list[int]:
        return list(self.details.get("expired_snapshots", []))


@dataclass(frozen=True)
class NoConsumerBefore(Precondition):
    """No live consumer reads a snapshot inside the expiry window (`end` is the first snapshot kept)."""

    kind: ClassVar[str] = "no-consumer-before"
    end: int
    consumer_expiration_ms: int | None = None

    def check(self, table: Any) -> str | None:
        now = int(time.time() * 1000)
        for cid, (c, mtime) in sorted(table.consumers.consumers().items()):
            if self.consumer_expiration_ms is not None and mtime < now - self.consumer_expiration_ms:
                continue
            if c.next_snapshot < self.end:
                return f"consumer {cid} now reads snapshot {c.next_snapshot}, inside the planned window"
        return None

    def describe(self) -> str:
        return f"no consumer reads below snapshot {self.end}"


# ---------------------------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class ExpireSettings:
    now_millis: int
    retain_min: int
    retain_max: int
    older_than_millis: int  # a snapshot whose successor was committed before this may expire
    max_deletes: int
    changelog_retain_min: int
    changelog_retain_max: int
    changelog_older_than_millis: int
    changelog_max_deletes: int
    decoupled: bool
    changelog_producer: str
    consumer_changelog_only: bool
    consumer_expiration_ms: int | None
    clean_empty_dirs: bool


def _millis_of(value: Any, name: str) -> int:
    if isinstance(value, bool):
        raise InvalidArgumentError(f"{arg(name)} must be epoch milliseconds or a datetime, not {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, _dt.datetime):
        return int(value.timestamp() * 1000)  # naive = local time, as Java parses timestamps in the JVM zone
    raise InvalidArgumentError(f"{arg(name)} must be epoch milliseconds or a datetime, not {value!r}")


def _duration_ms(value: Any, name: str) -> int:
    if isinstance(value, _dt.timedelta):
        ms = int(value.total_seconds() * 1000)
    elif isinstance(value, str):
        ms = int(parse_duration(value, name).total_seconds() * 1000)
    elif isinstance(value, int) and not isinstance(value, bool):
        ms = value
    else:
        raise InvalidArgumentError(f"{arg(name)} must be a timedelta, a duration string such as '1 h' or milliseconds, "
                                   f"not {value!r}")
    if ms < 0:
        raise InvalidArgumentError(f"{arg(name)} must not be negative, got {value!r}")
    return ms


def resolve_settings(table: FileStoreTable, now_millis: int | None = None, retain_min: int | None = None,
                     retain_max: int | None = None, older_than: Any = None, min_age: Any = None,
                     max_deletes: int | None = None) -> ExpireSettings:
    """Arguments override the table's options (maintenance.md §2.1, §9); everything is validated here, before any
    file is read or deleted."""
    opts = table.options
    now = int(time.time() * 1000) if now_millis is None else int(now_millis)
    rmin = opts.get(SNAPSHOT_NUM_RETAINED_MIN) if retain_min is None else retain_min
    rmax = opts.get(SNAPSHOT_NUM_RETAINED_MAX) if retain_max is None else retain_max
    limit = opts.get(SNAPSHOT_EXPIRE_LIMIT) if max_deletes is None else max_deletes
    for name, v in (("retain_min", rmin), ("retain_max", rmax), ("max_deletes", limit)):
        if not isinstance(v, int) or isinstance(v, bool):
            raise InvalidArgumentError(f"{arg(name)} must be an integer, got {v!r}")
    where = f"table {table.identifier}"

    def refuse(name: str, given: Any, option: str, value: int, must: str, why: str = "") -> Exception:
        """Blame the caller's argument when given, else the table option it came from (never a flag not passed)."""
        if given is not None:
            return InvalidArgumentError(f"{arg(name)} must be {must} (got {value}){why}")
        return InvalidOptionError(option, value, f"{must}{why}", where)

    if rmin < 1:
        raise refuse("retain_min", retain_min, SNAPSHOT_NUM_RETAINED_MIN.key, rmin, "at least 1",
                     ": with 0 the latest snapshot's files would be deleted while its metadata stays "
                     "(apache/paimon#10088)")
    if rmax < rmin:
        rmin_from = arg("retain_min") if retain_min is not None else f"option {SNAPSHOT_NUM_RETAINED_MIN.key}"
        raise refuse("retain_max", retain_max, SNAPSHOT_NUM_RETAINED_MAX.key, rmax,
                     f"at least the minimum retained ({rmin}: {rmin_from})")
    if limit < 1:
        raise refuse("max_deletes", max_deletes, SNAPSHOT_EXPIRE_LIMIT.key, limit, "at least 1")
    if older_than is not None and min_age is not None:
        raise InvalidArgumentError(f"give either {arg('older_than')} (a point in time) or {arg('min_age')} (a "
                                   "duration), not both")
    if older_than is not None:
        older = _millis_of(older_than, "older_than")
        retained_ms = now - older
    else:
        retained_ms = _duration_ms(min_age, "min_age") if min_age is not None else\
            int(opts.get(SNAPSHOT_TIME_RETAINED).total_seconds() * 1000)
        older = now - retained_ms
    # Whether the changelog lifecycle is decoupled is a property of the table (CoreOptions
    # .changelogLifecycleDecoupled: changelog options vs snapshot options), never of one call's arguments; otherwise
    # runs with different arguments would alternate between keeping and deleting changelogs.
    t_min = opts.get(SNAPSHOT_NUM_RETAINED_MIN)
    t_max = opts.get(SNAPSHOT_NUM_RETAINED_MAX)
    t_time = int(opts.get(SNAPSHOT_TIME_RETAINED).total_seconds() * 1000)
    cl_min = opts.value(CHANGELOG_NUM_RETAINED_MIN) or t_min
    cl_max = opts.value(CHANGELOG_NUM_RETAINED_MAX) or t_max
    cl_time = opts.get(CHANGELOG_TIME_RETAINED)
    cl_retained_ms = t_time if cl_time is None else int(cl_time.total_seconds() * 1000)
    if cl_max < cl_min:
        raise opts.fail(CHANGELOG_NUM_RETAINED_MAX, f"at least {CHANGELOG_NUM_RETAINED_MIN.key} ({cl_min})")
    decoupled = cl_max > t_max or cl_min > t_min or cl_retained_ms > t_time
    exp = opts.get(CONSUMER_EXPIRATION_TIME)
    return ExpireSettings(
        now_millis=now, retain_min=rmin, retain_max=rmax, older_than_millis=older, max_deletes=limit,
        changelog_retain_min=cl_min, changelog_retain_max=cl_max, changelog_older_than_millis=now - cl_retained_ms,
        changelog_max_deletes=limit, decoupled=decoupled, changelog_producer=opts.changelog_producer,
        consumer_changelog_only=opts.get(CONSUMER_CHANGELOG_ONLY),
        consumer_expiration_ms=None if exp is None else int(exp.total_seconds() * 1000),
        clean_empty_dirs=opts.get(SNAPSHOT_CLEAN_EMPTY_DIRECTORIES),
    )


def _settings_details(cfg: ExpireSettings) -> dict[str, Any]:
    """The settings as plans and reports show them (the JSON contract): instants in ISO 8601, durations in seconds
    (`*_s`)."""
    out: dict[str, Any] = {}
    for k, v in asdict(cfg).items():
        if k.endswith("_millis") and v is not None:
            out[k[:-len("_millis")]] = iso(v)
        elif k.endswith("_ms"):
            out[k[:-len("_ms")] + "_s"] = None if v is None else v / 1000
        else:
            out[k] = v
    return out


def _consumer_min(table: FileStoreTable, cfg: ExpireSettings, notes: list[str]) -> int | None:
    """min(nextSnapshot) over live consumers; an unreadable consumer file stops everything (fail closed)."""
    try:
        consumers = table.consumers.consumers()
    except CorruptMetadataError as e:
        raise CorruptMetadataError(e.path, f"{e.problem}; a consumer whose position is unknown could lose the "
                                           "snapshots it still reads, so nothing is expired") from None
    except OSError as e:
        raise CorruptMetadataError(table.consumers.dir, f"cannot read consumers ({e}); nothing is expired") from None
    live = []
    for cid, (c, mtime) in sorted(consumers.items()):
        if cfg.consumer_expiration_ms is not None and mtime < cfg.now_millis - cfg.consumer_expiration_ms:
            notes.append(f"consumer {cid} is older than consumer.expiration-time and does not protect snapshots")
            continue
        live.append(c.next_snapshot)
    return min(live) if live else None


# ---------------------------------------------------------------------------------------------- planning


def _changelog_path(table: FileStoreTable, snapshot_id: int) -> str:
    return table.changelogs.path(snapshot_id)


def delta_candidates(scanner: TableScanner, manifests: Iterable[mf.ManifestColumns]) -> dict[str, tuple]:
    """Data files a delta removes, keyed by full path and walked in order (checklist 2): a DELETE makes a
    candidate, a later ADD of the same path (level upgrade, file-index rewrite) takes it back. Values are
    (manifest columns, row): the entry is read from its columns only if it is planned."""
    cands: dict[str, tuple] = {}
    names: set[str] = set()  # names of every path made a candidate (equal paths have equal names)
    delete = mf.FileKind.DELETE
    for cols in manifests:
        kinds = cols.kind
        if any(cols.external_path):  # every external path is checked, as when the manifest is read
            rows: Sequence[int] = range(len(kinds))
            paths = scanner.data_file_paths(cols)
        else:
            # Only DELETEs and the ADDs of a name deleted before can change the candidates: paths are built for
            # those rows alone (an APPEND delta builds none).
            if delete in kinds:
                names.update(n for n, k in zip(cols.file_name, kinds) if k == delete)
            elif not names:
                continue
            rows = [i for i, (n, k) in enumerate(zip(cols.file_name, kinds)) if k == delete or n in names]
            paths = scanner.data_file_paths(cols, rows)
        for i, path in zip(rows, paths):
            if kinds[i] == delete:
                cands[path] = (cols, i)
                names.add(cols.file_name[i])
            else:
                cands.pop(path, None)
    return cands


# Snapshots whose delta manifests are decoded together (one native read), and at most this many of their entries
# (counted from the manifest lists; one larger delta is decoded alone): what is held at once stays bounded whatever
# the size of a commit (10 M-entry tables: the working set of a batch, not of the table).
DELTA_BATCH = 64
DELTA_BATCH_ENTRIES = 50_000


def _deltas(store: ManifestStore, owners: list[tuple[int, Snapshot]], what: str
            ) -> Iterator[tuple[int, list[mf.ManifestColumns], CorruptMetadataError | None]]:
    """(id, its delta's manifests as columns, None) or (id, [], the error that made the delta unreadable) for each
    owner in order; the manifests of up to DELTA_BATCH owners (DELTA_BATCH_ENTRIES entries) are decoded at once. A
    crafted file name raises."""
    chunk: list[tuple[int, Snapshot]] = []
    lists: dict[int, list[str] | CorruptMetadataError] = {}
    entries = 0
    for sid, s in owners:
        try:
            metas = store.manifest_list(s.delta_manifest_list, f"{what} {sid}")
            lists[sid] = [m.file_name for m in metas]
            entries += sum(m.num_added_files + m.num_deleted_files for m in metas)
        except UnsafeNameError:  # a crafted file name: stop, never 'delete less'
            raise
        except CorruptMetadataError as e:
            lists[sid] = e
        chunk.append((sid, s))
        if len(chunk) >= DELTA_BATCH or entries >= DELTA_BATCH_ENTRIES:
            yield from _decode_deltas(store, chunk, lists, what)
            chunk, lists, entries = [], {}, 0
    if chunk:
        yield from _decode_deltas(store, chunk, lists, what)


def _decode_deltas(store: ManifestStore, chunk: list[tuple[int, Snapshot]],
                   lists: dict[int, list[str] | CorruptMetadataError], what: str
                   ) -> Iterator[tuple[int, list[mf.ManifestColumns], CorruptMetadataError | None]]:
    """The decoded deltas of one chunk of `_deltas` (its manifest lists already read), in owner order."""
    wanted = [n for v in lists.values() if not isinstance(v, CorruptMetadataError) for n in v]
    try:
        cols = store.columns_many(wanted, what)
    except UnsafeNameError:  # a crafted file name: stop, never 'delete less'
        raise
    except CorruptMetadataError:
        cols = {}  # one unreadable manifest: find whose, one manifest at a time
    for sid, s in chunk:
        names = lists[sid]
        if isinstance(names, CorruptMetadataError):
            yield sid, [], names
            continue
        delta = []
        error: CorruptMetadataError | None = None
        for n in names:
            c = cols.get(n)
            if c is None:
                try:
                    c = store.manifest_columns(n, s.delta_manifest_list)
                except UnsafeNameError:  # a crafted file name: stop, never 'delete less'
                    raise
                except CorruptMetadataError as e:
                    error = e
                    break
            delta.append(c)
        yield sid, ([] if error else delta), error


def _delta_cands(store: ManifestStore, scanner: TableScanner, owners: list[tuple[int, Snapshot]], what: str,
                 spark: Any = None) -> Iterator[tuple[int, dict[str, tuple], CorruptMetadataError | None]]:
    """(id, the data files its delta removes as `delta_candidates` gives them, None) or (id, {}, the error that made
    the delta unreadable) for each owner in order: decoded here, or on Spark executors when `spark` is a runner
    (only the candidates come back; every manifest entry stays on the executors)."""
    if spark is None:
        for sid, delta, error in _deltas(store, owners, what):
            yield sid, ({} if error is not None else delta_candidates(scanner, delta)), error
        return
    table = scanner.table
    tasks = [{"branch": table.branch, "what": what,
              "owners": [[sid, s.delta_manifest_list] for sid, s in owners[i:i + DELTA_BATCH]]}
             for i in range(0, len(owners), DELTA_BATCH)]
    waves = spark.stream("paimon_ops.lifecycle.expire.delta_candidates_task", table.location, tasks,
                         DELTA_CANDIDATES_SCHEMA, options={**table.io.task_options(), **table.options_override})
    expected = iter(owners)
    with contextlib.closing(waves):  # stopped early (an error, a crafted name): the wave still running is cancelled
        for _, rows in waves:
            errors = rows.column("error").drop_null()
            if len(errors):
                failed = errors[0].as_py()
                if failed.startswith("UnsafeNameError"):
                    raise UnsafeNameError(table.manifest_dir, failed)
                raise CorruptMetadataError(table.manifest_dir, f"reading the deltas on Spark failed: {failed}")
            yield from _wave_candidates(rows, expected, table)
    if next(expected, None) is not None:
        raise CorruptMetadataError(table.manifest_dir, "reading the deltas on Spark returned fewer owners than asked")


# What an executor sends back per owner (`delta_candidates_task`): one row naming the owner (`path` null; `err_*`
# set when its delta could not be read), then one row per data file its delta removes — Arrow columns, a wave of
# tasks at a time (`SparkRunner.stream`), so the driver never holds every candidate of the table at once.
DELTA_CANDIDATES_SCHEMA = ("error string, sid long, err_path string, err_problem string, err_missing boolean, "
                           "path string, partition binary, bucket int, file_name string, file_size long, "
                           "extra_files array<string>, file_source int")


def _wave_candidates(rows: Any, expected: Iterator[tuple[int, Any]], table: FileStoreTable
                     ) -> Iterator[tuple[int, dict[str, tuple], CorruptMetadataError | None]]:
    """The owners of one wave of `delta_candidates_task` rows, in order, each checked to be the next one asked
    for (fail closed on anything else)."""
    heads = pc.indices_nonzero(pc.is_null(rows.column("path"))).to_pylist()
    sids = rows.column("sid")
    for k, head in enumerate(heads):
        sid = sids[head].as_py()
        want = next(expected, None)
        if want is None or want[0] != sid:
            raise CorruptMetadataError(table.manifest_dir, f"reading the deltas on Spark returned {_owner(sid)} where "
                                                           f"{_owner(want[0] if want else None)} was expected")
        err_path = rows.column("err_path")[head].as_py()
        if err_path is not None:
            problem = rows.column("err_problem")[head].as_py()
            missing = rows.column("err_missing")[head].as_py()  # the same class, and the same words, as in-process
            yield sid, {}, MissingFileError.worded(err_path, problem) if missing else \
                CorruptMetadataError(err_path, problem)
            continue
        end = heads[k + 1] if k + 1 < len(heads) else rows.num_rows
        yield sid, _Candidates.decode(rows.slice(head + 1, end - head - 1)), None


def _owner(sid: int | None) -> str:
    return "no owner" if sid is None else f"owner {sid}"


def _ints(col: Any) -> list:
    """An integer column as Python ints (through numpy: several times faster than to_pylist), nulls as None."""
    return col.to_numpy().tolist() if col.null_count == 0 else col.to_pylist()


class _Candidates:
    """Delta candidates sent back by an executor: the columns `_plan_delta_deletes` reads, row i per file."""

    def __init__(self, rows: Any):
        self.partition = rows.column("partition").to_pylist()
        self.bucket = _ints(rows.column("bucket"))
        self.file_name = rows.column("file_name").to_pylist()
        self.file_size = _ints(rows.column("file_size"))
        extra = rows.column("extra_files")
        if extra.null_count == 0 and pc.sum(pc.list_value_length(extra)).as_py() in (0, None):
            self.extra_files: list[tuple] = [()] * rows.num_rows  # (the usual case: no extra files at all)
        else:
            self.extra_files = [tuple(x or ()) for x in extra.to_pylist()]
        self.file_source = _ints(rows.column("file_source"))

    @staticmethod
    def decode(rows: Any) -> dict[str, tuple]:
        cols = _Candidates(rows)
        return {path: (cols, i) for i, path in enumerate(rows.column("path").to_pylist())}


def delta_candidates_task(table_location: str, task: dict) -> dict:
    """Executor side of `_delta_cands`: decode the deltas of the task's snapshots (changelogs) and return, per
    owner in order, a row naming it and then the data files its delta removes (the columns of
    DELTA_CANDIDATES_SCHEMA), or the error that made its delta unreadable. A crafted file name raises (the driver
    stops)."""
    table = FileStoreTable(table_location, options_override=task.get("_options"))
    if task.get("branch", "main") != "main":
        table = table.for_branch(task["branch"])
    store = ManifestStore(table, capacity=STORE_CAPACITY)
    scanner = TableScanner(table, store)
    owners: list[tuple[int, Any]] = [(int(sid), SimpleNamespace(delta_manifest_list=name))
                                     for sid, name in task["owners"]]
    out: dict[str, list] = {k: [] for k in ("sid", "err_path", "err_problem", "err_missing", "path", "partition",
                                            "bucket", "file_name", "file_size", "extra_files", "file_source")}

    def row(sid: int, err: CorruptMetadataError | None = None, path: str | None = None, cols: Any = None,
            i: int = 0) -> None:
        out["sid"].append(sid)
        out["err_path"].append(err.path if err else None)
        out["err_problem"].append(err.problem if err else None)
        out["err_missing"].append(isinstance(err, MissingFileError) if err else None)
        out["path"].append(path)
        for k in ("partition", "bucket", "file_name", "file_size", "file_source"):
            out[k].append(getattr(cols, k)[i] if cols is not None else None)
        out["extra_files"].append(list(cols.extra_files[i] or ()) if cols is not None else None)

    for sid, delta, error in _deltas(store, owners, task.get("what", "snapshot")):
        row(sid, error)
        if error is None:
            for path, (cols, i) in delta_candidates(scanner, delta).items():
                row(sid, None, path, cols, i)
    return out


def _plan_delta_deletes(b: PlanBuilder, scanner: TableScanner, cands: dict[str, tuple], owner: str, owner_id: int,
                        tags: list, skipper: Any, others: Any, buckets: set, keep_append_files: bool = False) -> None:
    """Plan the data files `owner`'s delta removed, except those the nearest tag below it still holds (checklist
    1: compared by (partition, bucket, file name), never by level) or another branch uses. An unreadable tag
    keeps every candidate (fail closed)."""
    if not cands:
        return
    tag = nearest_tag_below(tags, owner_id)
    try:
        protect = skipper.keys([tag[1]]) if tag else set()
    except UnsafeNameError:  # a crafted file name: stop, never 'delete less'
        raise
    except (CorruptMetadataError, OSError) as e:
        b.warn(f"data files deleted by {owner} are kept: tag {tag[0] if tag else ''} is unreadable ({e})")
        return
    why = f"deleted by {owner}, " + (f"not in tag {tag[0]}" if tag else "no tag before it")
    other_data = others.data
    planned: list[FileAction] = []
    add = planned.append
    for path, (cols, i) in cands.items():
        partition, bucket = cols.partition[i], cols.bucket[i]
        if protect or other_data:
            key = (partition, bucket, cols.file_name[i])
            if key in protect or key in other_data:
                continue
        if keep_append_files and cols.file_source[i] in (None, 0):
            continue  # with changelog-producer=none these files are the changelog (§2.8)
        add(FileAction(path, DATA, why, cols.file_size[i]))
        for x in cols.extra_files[i]:
            xp = extra_file_path(path, x)
            add(FileAction(xp, EXTRA, why, file_size(scanner.table, xp)))
        buckets.add((partition, bucket))
    b.add_all(planned)


def expiry_window_end(table: FileStoreTable, cfg: ExpireSettings, latest: int, earliest: int, consumer_min: int | None,
                      warn: Callable[[str], None] | None = None) -> int:
    """The first snapshot id that stays (maintenance.md §2.2): everything in [earliest, end) may expire.

    Below `latest - retain_max + 1` snapshots expire by count alone; above, a snapshot expires only once its
    successor was committed at least `time-retained` ago (the 2.0 rule). `retain_min`, consumers and
    `snapshot.expire.limit` cap the window."""
    lo = max(latest - cfg.retain_max + 1, earliest)
    hi = latest - cfg.retain_min + 1
    if consumer_min is not None and not (cfg.consumer_changelog_only and cfg.decoupled):
        hi = min(hi, consumer_min)
    hi = min(hi, earliest + cfg.max_deletes)
    for sid in range(lo, hi):
        try:
            succ = table.snapshots.try_snapshot(sid + 1)
        except UnsafeNameError:  # a crafted file name: stop, never 'delete less'
            raise
        except CorruptMetadataError as e:
            if warn is not None:
                warn(f"snapshot {sid + 1} is unreadable ({e.problem}); expiring only up to {sid}")
            return sid
        if succ is not None and succ.time_millis >= cfg.older_than_millis:
            return sid  # the successor is too young: `sid` was superseded less than time-retained ago
    return hi


def expirable_snapshots(table: FileStoreTable, cfg: ExpireSettings) -> int:
    """How many snapshots an expiry run would remove now (metadata only: snapshot and consumer JSON)."""
    latest, earliest = table.snapshots.latest_id(), table.snapshots.earliest_id()
    if latest is None or earliest is None:
        return 0
    end = expiry_window_end(table, cfg, latest, earliest, _consumer_min(table, cfg, []))
    return max(0, end - earliest)


@planner(ExpireSnapshotsPlan, internal=("runner",), renamed={"now_millis": "now", "time_retained": "min_age"})
def plan_expire_snapshots(table: FileStoreTable, *, retain_min: int | None = None, retain_max: int | None = None,
                          older_than: InstantMs | None = None, min_age: _dt.timedelta | None = None,
                          max_deletes: int | None = None, now: InstantMs | None = None,
                          runner: Runner | None = None) -> Plan:
    """What expiring snapshots (and, when decoupled, long-lived changelogs) of `table`'s branch would delete. The
    expired deltas are decoded on Spark executors when the runner (`runner`, else the one the caller plans with,
    else the default) places the plan there: beyond execution.local.max-manifests files in manifest/, or when the
    caller chose Spark."""
    cfg = resolve_settings(table, now, retain_min, retain_max, older_than, min_age, max_deletes)
    check_history(table, "snapshot expiry")
    b = PlanBuilder()
    plan_pending(b, table)  # first finish what an interrupted run left
    store = ManifestStore(table, capacity=STORE_CAPACITY)
    scanner = TableScanner(table, store)
    snaps_mgr = table.snapshots
    latest = snaps_mgr.latest_id()
    earliest = snaps_mgr.earliest_id()
    notes: list[str] = []
    details: dict[str, Any] = {"branch": table.branch, "latest": latest, "earliest": earliest,
                               "settings": _settings_details(cfg), "expired_snapshots": [], "notes": notes}
    if latest is None or earliest is None:
        notes.append("no snapshots")
        return b.build(ExpireSnapshotsPlan, table, details)
    tags = read_tags(table)  # read before anything is planned (checklist 1); unreadable tag -> error
    # a tag created inside the window since planning would lose files (§2.5)
    b.require(TagsAre(tag_set(tags)))
    details["tag_set"] = [[n, t.id] for n, t in tags]
    consumer_min = _consumer_min(table, cfg, notes)
    details["consumer_min_next_snapshot"] = consumer_min
    try:
        others = other_branches(table)
    except CorruptMetadataError as e:
        raise CorruptMetadataError(e.path, f"{e.problem}; another branch's files could not be protected, nothing "
                                           "is expired (if that branch's expiry was interrupted, re-run it first)")\
            from None
    details["protected_branches"] = others.branches

    end = expiry_window_end(table, cfg, latest, earliest, consumer_min, b.warn)
    details["end"] = end
    spark = None
    if end > earliest:
        try:
            manifests = len(table.io.list_status(table.manifest_dir))
        except OSError:
            manifests = 0  # (unlistable: the reads below say what is wrong)
        details["manifest_dir_files"] = manifests
        spark, _ = spark_placed(runner, Workload(manifests=manifests), table.options)

    snaps: dict[int, Snapshot] = {}
    end_snap: Snapshot | None = None
    if end <= earliest:
        notes.append(f"nothing to expire: the window [{earliest}, {end}) is empty")
    else:
        try:
            end_snap = snaps_mgr.try_snapshot(end)
            if end_snap is None:
                b.warn(f"snapshot {end} (the first one kept) does not exist; nothing expired (apache/paimon#10088)")
        except UnsafeNameError:  # a crafted file name: stop, never 'delete less'
            raise
        except CorruptMetadataError as e:
            b.warn(f"snapshot {end} (the first one kept) is unreadable ({e.problem}); nothing expired")
        if end_snap is not None:
            for sid in range(earliest, end):
                s = snaps_mgr.try_snapshot(sid)  # corrupt -> raises: we cannot know what it references
                if s is not None:
                    snaps[sid] = s
            snaps[end] = end_snap
    excl = sorted(i for i in snaps if i < end)
    begin = min(snaps) if snaps else earliest
    details["window"] = [begin, end] if excl else None
    details["expired_snapshots"] = excl

    if excl:
        assert end_snap is not None
        # the snapshot kept at the window's end must be the one planned on (a rollback since would make the plan
        # delete live files), and no consumer may have moved into the window
        b.require(SnapshotIs(end, end_snap.base_manifest_list))
        if not (cfg.consumer_changelog_only and cfg.decoupled):
            b.require(NoConsumerBefore(end, cfg.consumer_expiration_ms))
        _plan_snapshot_stage(b, table, store, scanner, cfg, tags, snaps, begin, end, end_snap, others, spark)
    if cfg.decoupled:
        details["changelog"] = _plan_changelog_stage(
            b, table, store, scanner, cfg, tags, {i: snaps[i] for i in excl}, latest,
            end_snap if excl else None, consumer_min, others, spark)
    # Hints end up right even if an interrupted earlier run could not write them (reruns converge).
    # (a catalog owning the table's history, REST, keeps its snapshot hints: none of ours)
    hints = [] if _catalog_owns_history(table) else [
        {"dir": table.snapshots.dir, "name": EARLIEST, "which": "first"},
        {"dir": table.snapshots.dir, "name": LATEST, "which": "last", "only_if_exists": True}]
    if cfg.decoupled:
        hints += [{"dir": table.changelogs.dir, "name": EARLIEST, "which": "first"},
                  {"dir": table.changelogs.dir, "name": LATEST, "which": "last"}]
    # (always: a run killed between its last snapshot delete and the EARLIEST write leaves nothing else to do)
    b.step("hints", ENSURE_HINTS, hints=hints, keep_empty=True)
    b.owners_first()
    return b.build(ExpireSnapshotsPlan, table, details)


def _plan_snapshot_stage(b: PlanBuilder, table: FileStoreTable, store: ManifestStore, scanner: TableScanner,
                         cfg: ExpireSettings, tags: list, snaps: dict[int, Snapshot], begin: int, end: int,
                         end_snap: Snapshot, others: OtherBranches, spark: Any = None) -> None:
    excl = sorted(i for i in snaps if i < end)
    keep_append_files = cfg.decoupled and cfg.changelog_producer == "none"
    # ---- data files: deltas of (begin, end], in entry order keyed by path (checklist 2)
    b.step("data files", DELETE_FILES)
    skipper = DataSkipper(store)
    buckets: set[tuple[bytes, int]] = set()
    for sid, cands, error in _delta_cands(store, scanner, [(sid, snaps[sid]) for sid in sorted(snaps) if sid > begin],
                                          "snapshot", spark):
        if error is not None:
            b.warn(f"data files deleted by snapshot {sid} are kept: its delta is unreadable ({error})")
            continue
        _plan_delta_deletes(b, scanner, cands, f"snapshot {sid}", sid, tags, skipper, others, buckets,
                            keep_append_files)

    # ---- changelog files (only when not decoupled; tags do not protect them)
    b.step("changelog files", DELETE_FILES)
    if not cfg.decoupled:
        for sid in excl:
            s = snaps[sid]
            if s.changelog_manifest_list:
                _plan_added_in(b, table, store, scanner, s.changelog_manifest_list, f"changelog of snapshot {sid}",
                               buckets, CHANGELOG, others)

    if cfg.clean_empty_dirs:
        b.step("empty directories", DELETE_DIRS)
        b.add_all(empty_dir_actions(scanner, buckets, "emptied by snapshot expiry (deleted only if empty)"))

    # ---- manifests, index files, statistics: protected by the window's neighbours (checklist 5)
    prot = skipping_tags(tags, begin, end)
    prot_desc = f"snapshot {end}" + (", tags " + ", ".join(n for n, _ in prot) if prot else "")
    try:
        skip = manifest_skipping_set(store, [t for _, t in prot] + [end_snap]) | others.names
    except UnsafeNameError:  # a crafted file name: stop, never 'delete less'
        raise
    except (CorruptMetadataError, OSError) as e:
        b.warn(f"keeping all manifests, index and statistics files of this run: cannot read {prot_desc} ({e})")
        skip = None
    if skip is not None:
        contents: list[FileAction] = []
        lists: list[FileAction] = []
        delete_data_lists = not cfg.decoupled or cfg.changelog_producer != "none"
        for sid in excl:
            s = snaps[sid]
            why = f"snapshot {sid} expired, not used by {prot_desc}"
            if delete_data_lists:
                plan_manifest_list(b, table, store, s.base_manifest_list, s.base_manifest_list_size, skip, why,
                                   contents, lists)
                plan_manifest_list(b, table, store, s.delta_manifest_list, s.delta_manifest_list_size, skip, why,
                                   contents, lists)
            if not cfg.decoupled and s.changelog_manifest_list:
                plan_manifest_list(b, table, store, s.changelog_manifest_list, s.changelog_manifest_list_size, skip,
                                   why, contents, lists)
            plan_index_and_stats(b, table, scanner, s, skip, why, contents, lists)
        b.step("manifests, index and statistics files", DELETE_FILES).add_all(contents)
        b.step("manifest lists and index manifests", DELETE_FILES).add_all(lists)

    # ---- snapshot files oldest first, then EARLIEST
    b.step("snapshot files (oldest first)", EXPIRE_SNAPSHOT_FILES, decoupled=cfg.decoupled, end=end)
    for sid in excl:
        p = table.snapshots.path(sid)
        b.add(FileAction(p, SNAPSHOT, f"expired (kept from snapshot {end})", file_size(table, p)))
        if cfg.decoupled:
            b.creates(FileAction(_changelog_path(table, sid), LONG_CHANGELOG,
                                 f"snapshot {sid} kept as long-lived changelog"))
    if not _catalog_owns_history(table):
        b.creates(FileAction(posixpath.join(table.snapshots.dir, EARLIEST), HINT, f"earliest snapshot = {end}"))


def _catalog_owns_history(table: FileStoreTable) -> bool:
    cat = catalog_of(table)
    return cat is not None and cat.owns_history(table)


def _plan_added_in(b: PlanBuilder, table: FileStoreTable, store: ManifestStore, scanner: TableScanner, list_name: str,
                   why: str, buckets: set, kind: str, others: OtherBranches) -> None:
    """Every file ADDed in a changelog manifest list; unreadable manifests are skipped (leak)."""
    try:
        metas = store.manifest_list(list_name, why)
    except UnsafeNameError:  # a crafted file name: stop, never 'delete less'
        raise
    except CorruptMetadataError as e:
        if not isinstance(e, MissingFileError):
            b.warn(f"{why}: changelog manifest list unreadable, its files are kept ({e.problem})")
        return
    for m in metas:
        try:
            cols = store.manifest_columns(m.file_name, list_name)
        except UnsafeNameError:  # a crafted file name: stop, never 'delete less'
            raise
        except CorruptMetadataError as e:
            if not isinstance(e, MissingFileError):
                b.warn(f"{why}: manifest {m.file_name} unreadable, its files are kept ({e.problem})")
            continue
        other_names = others.names
        for i, p in enumerate(scanner.data_file_paths(cols)):
            if cols.kind[i] == mf.FileKind.ADD and cols.file_name[i] not in other_names:
                b.add(FileAction(p, kind, why, cols.file_size[i]))
                buckets.add((cols.partition[i], cols.bucket[i]))


def _plan_changelog_stage(b: PlanBuilder, table: FileStoreTable, store: ManifestStore, scanner: TableScanner,
                          cfg: ExpireSettings, tags: list, converted: dict[int, Snapshot], latest: int,
                          stage1_end: Snapshot | None, consumer_min: int | None, others: OtherBranches,
                          spark: Any = None) -> dict:
    """ExpireChangelogImpl (§2.8) planned on the state after the snapshot stage: `converted` snapshots will have
    become long-lived changelogs and the earliest snapshot will be `stage1_end`."""
    info: dict[str, Any] = {"expired_changelogs": []}
    try:
        existing = table.changelogs.list_ids()
    except OSError as e:
        b.warn(f"cannot list long-lived changelogs ({e}); none expired")
        return info
    ids = sorted(set(existing) | set(converted))
    if not ids:
        return info
    earliest_snap = stage1_end if stage1_end is not None else table.snapshots.earliest()
    if earliest_snap is None:
        return info
    ec, lc = ids[0], ids[-1]

    def load(cid: int) -> Snapshot | None:
        return converted.get(cid) or table.changelogs.try_snapshot(cid)

    lo = max(latest - cfg.changelog_retain_max + 1, ec)
    hi = latest - cfg.changelog_retain_min + 1
    if consumer_min is not None:
        hi = min(hi, consumer_min)  # changelog expiry always honours consumers
    hi = min(hi, ec + cfg.changelog_max_deletes, lc)
    if hi <= ec:
        return info
    end = hi
    for cid in range(lo, hi + 1):
        try:
            c = load(cid)
        except UnsafeNameError:  # a crafted file name: stop, never 'delete less'
            raise
        except CorruptMetadataError as e:
            b.warn(f"long-lived changelog {cid} unreadable ({e.problem}); expiring changelogs only below it")
            end = cid
            break
        if c is not None and c.time_millis >= cfg.changelog_older_than_millis:
            end = cid  # own commit time, unlike snapshots
            break
    end = min(end, hi)
    if end <= ec:
        return info
    try:
        end_cl = load(end)
    except UnsafeNameError:  # a crafted file name: stop, never 'delete less'
        raise
    except CorruptMetadataError:
        end_cl = None
    if end_cl is None:
        b.warn(f"long-lived changelog {end} (the first one kept) is missing or unreadable; no changelog expired")
        return info
    cls: dict[int, Snapshot] = {}
    for cid in range(ec, end):
        c = load(cid)  # corrupt -> raises before anything is deleted
        if c is not None:
            cls[cid] = c
    info["window"] = [ec, end]
    info["expired_changelogs"] = sorted(cls)
    buckets: set[tuple[bytes, int]] = set()
    # data and changelog files
    b.step("changelog stage: changelog and data files", DELETE_FILES)
    skipper = DataSkipper(store)
    for cid in sorted(cls):
        c = cls[cid]
        if c.changelog_manifest_list:
            _plan_added_in(b, table, store, scanner, c.changelog_manifest_list, f"changelog {cid} expired", buckets,
                           CHANGELOG, others)
    plain = [(cid, cls[cid]) for cid in sorted(cls) if not cls[cid].changelog_manifest_list]
    for cid, cands, error in _delta_cands(store, scanner, plain, "changelog", spark):
        if error is not None:
            if not isinstance(error, MissingFileError):
                b.warn(f"data files deleted by changelog {cid} are kept: its delta is unreadable ({error.problem})")
            continue
        _plan_delta_deletes(b, scanner, cands, f"changelog {cid}", cid, tags, skipper, others, buckets)
    if cfg.clean_empty_dirs:
        b.step("changelog stage: empty directories", DELETE_DIRS)
        b.add_all(empty_dir_actions(scanner, buckets, "emptied by changelog expiry (deleted only if empty)"))
    prot = skipping_tags(tags, ec, end)
    try:
        # A long-lived changelog's base/delta lists may be gone (snapshot expiry deletes them unless the producer
        # is 'none'); the earliest snapshot's and the tags' lists must be readable.
        tolerate = [end_cl] if cfg.changelog_producer != "none" else []
        skip = manifest_skipping_set(store, [t for _, t in prot] + [end_cl, earliest_snap], tolerate) | others.names
    except UnsafeNameError:  # a crafted file name: stop, never 'delete less'
        raise
    except (CorruptMetadataError, OSError) as e:
        b.warn(f"keeping the manifests of expired changelogs: protectors unreadable ({e})")
        skip = None
    if skip is not None:
        contents: list[FileAction] = []
        lists: list[FileAction] = []
        for cid in sorted(cls):
            c = cls[cid]
            why = f"changelog {cid} expired"
            if c.changelog_manifest_list:
                plan_manifest_list(b, table, store, c.changelog_manifest_list, c.changelog_manifest_list_size, skip,
                                   why, contents, lists)
            else:
                plan_manifest_list(b, table, store, c.delta_manifest_list, c.delta_manifest_list_size, skip, why,
                                   contents, lists)
                plan_manifest_list(b, table, store, c.base_manifest_list, c.base_manifest_list_size, skip, why,
                                   contents, lists)
        b.step("changelog stage: manifests", DELETE_FILES).add_all(contents)
        b.step("changelog stage: manifest lists", DELETE_FILES).add_all(lists)
    b.step("long-lived changelog files (oldest first)", EXPIRE_CHANGELOG_FILES, end=end)
    for cid in sorted(cls):
        b.add(FileAction(_changelog_path(table, cid), LONG_CHANGELOG, f"changelog {cid} expired (kept from {end})"))
    b.creates(FileAction(posixpath.join(table.changelogs.dir, EARLIEST), HINT, f"earliest changelog = {end}"))
    info["end"] = end
    return info


# ---------------------------------------------------------------------------------------------- execution


@register_check(EXPIRE_SNAPSHOT_FILES)
def _check_snapshot_files(table: FileStoreTable, plan: Plan, step: Step) -> None:
    """Never the latest snapshot, never the kept end, never one a live consumer still reads (consumer-protected),
    read from the live table before the first delete."""
    ids = sorted(int(posixpath.basename(a.path)[len("snapshot-"):]) for a in step.files)
    if not ids:
        return
    end = int(step.params["end"])
    latest = table.snapshots.latest_id()
    if ids[-1] >= end or (latest is not None and ids[-1] >= latest):
        raise PreflightError(table.identifier, table.snapshots.path(ids[-1]),
                             f"snapshot {ids[-1]} is not below the first snapshot kept ({end}) and the latest "
                             f"({latest})")
    if not table.snapshots.exists(end):
        raise PreflightError(table.identifier, table.snapshots.path(ids[0]),
                             f"snapshot {end}, the first one kept, does not exist (apache/paimon#10088)")
    settings = (plan.details.get("settings") or {}) if isinstance(plan.details, dict) else {}
    if settings.get("consumer_changelog_only") and step.params.get("decoupled"):
        return  # consumers read the long-lived changelogs these snapshots become
    exp = table.options.get(CONSUMER_EXPIRATION_TIME)
    now = int(time.time() * 1000)
    for cid, (c, mtime) in sorted(table.consumers.consumers().items()):
        if exp is not None and mtime < now - int(exp.total_seconds() * 1000):
            continue
        if c.next_snapshot <= ids[-1]:
            raise PreflightError(table.identifier, table.snapshots.path(max(c.next_snapshot, ids[0])),
                                 f"consumer {cid} still reads snapshot {c.next_snapshot}")


def _hints_now(ex: Execution, directory: str, names: Sequence[str]) -> None:
    """The hints `names` of `directory` (snapshot/ or changelog/) made to say what a listing now says they must
    (`table.hints`, the one piece of code deciding hints; written through the executor, which writes none where a
    catalog owns the history).

    Run before the first file of the directory is deleted for LATEST: a LATEST naming an id this run deletes — or one
    already gone, or one beyond the newest, left by a writer that crashed before updating it — would outlive the
    expiry. Java 0.9 trusts a LATEST hint whose successor does not exist (SnapshotManager.findLatest): every Java
    reader and writer would resolve the latest snapshot to a deleted file ("The specified scan snapshotId … is out of
    available snapshotId range") and a writer would commit the id after the stale one. Java 0.9's own ExpireSnapshots
    leaves the table in that state (it never touches LATEST); we do not. Set first, it names an existing file at every
    later crash point. Run after the deletes for EARLIEST (and a decoupled changelog's LATEST)."""
    hints.ensure(hints.manager_of(ex.table.io, directory), names=names, write_hint=ex.write_hint)


@register_step(EXPIRE_SNAPSHOT_FILES)
def _expire_snapshot_files(ex: Execution, step: Step) -> None:
    """Snapshot files oldest first — after LATEST is made to name a snapshot that stays; with a decoupled changelog
    each is first kept as changelog/changelog-<id> (the snapshot's JSON, written before the snapshot file goes, §2.3
    step 8). Then EARLIEST (and LATEST changelog)."""
    table = ex.table
    _hints_now(ex, table.snapshots.dir, [LATEST])
    last = None
    for a in step.files:
        sid = int(posixpath.basename(a.path)[len("snapshot-"):])
        if step.params.get("decoupled"):
            try:
                data = table.io.read_bytes(a.path)
            except FileNotFoundError:
                data = None  # a rerun: converted and deleted before the crash
            if data is not None:
                ex.write(FileAction(_changelog_path(table, sid), LONG_CHANGELOG, a.reason), data)
                last = sid
        ex.delete_ordered([a])
    if last is not None:
        _hints_now(ex, table.changelogs.dir, [LATEST])
    _hints_now(ex, table.snapshots.dir, [EARLIEST])


@register_step(EXPIRE_CHANGELOG_FILES)
def _expire_changelog_files(ex: Execution, step: Step) -> None:
    _hints_now(ex, ex.table.changelogs.dir, [LATEST])
    ex.delete_ordered(step.files)
    _hints_now(ex, ex.table.changelogs.dir, [EARLIEST])



# ---------------------------------------------------------------------------------------------- changelog expiry
class ExpireChangelogsPlan(Plan):
    """Expiring long-lived changelogs on their own (ExpireChangelogImpl, maintenance.md §2.8)."""

    operation = "expire_changelogs"
    op = EXPIRE_CHANGELOGS  # its operation (the feature gate, the planner's parameters)


def _changelog_settings(cfg: ExpireSettings, retain_min: int | None, retain_max: int | None,
                        older_than: int | None, min_age: _dt.timedelta | None,
                        max_deletes: int | None) -> ExpireSettings:
    """The changelog retention of `cfg` (the table's `changelog.*` options, else its `snapshot.*` ones) overridden by
    the arguments, validated before anything is read."""
    rmin = cfg.changelog_retain_min if retain_min is None else retain_min
    rmax = cfg.changelog_retain_max if retain_max is None else retain_max
    limit = cfg.changelog_max_deletes if max_deletes is None else max_deletes
    for name, v in (("retain_min", rmin), ("retain_max", rmax), ("max_deletes", limit)):
        if not isinstance(v, int) or isinstance(v, bool):
            raise InvalidArgumentError(f"{arg(name)} must be an integer, got {v!r}")
    if rmin < 1:
        raise InvalidArgumentError(f"{arg('retain_min')} must be at least 1 (got {rmin}): the newest changelog is kept")
    if rmax < rmin:
        raise InvalidArgumentError(f"{arg('retain_max')} must be at least the minimum retained ({rmin}), got {rmax}")
    if limit < 1:
        raise InvalidArgumentError(f"{arg('max_deletes')} must be at least 1, got {limit}")
    older = cfg.changelog_older_than_millis
    if older_than is not None:
        older = _millis_of(older_than, "older_than")
    elif min_age is not None:
        older = cfg.now_millis - _duration_ms(min_age, "min_age")
    return replace(cfg, changelog_retain_min=rmin, changelog_retain_max=rmax,
                               changelog_older_than_millis=older, changelog_max_deletes=limit)


@planner(ExpireChangelogsPlan, internal=("runner",))
def plan_expire_changelogs(table: FileStoreTable, *, retain_min: int | None = None, retain_max: int | None = None,
                           older_than: InstantMs | None = None, min_age: _dt.timedelta | None = None,
                           max_deletes: int | None = None, now: InstantMs | None = None,
                           runner: Runner | None = None) -> Plan:
    """What expiring long-lived changelogs (`changelog/changelog-<id>`, kept by a decoupled snapshot expiry) would
    delete, on their own schedule: the changelog stage of snapshot expiry (`_plan_changelog_stage`, Java's
    ExpireChangelogImpl) without expiring any snapshot."""
    cfg = _changelog_settings(resolve_settings(table, now), retain_min, retain_max, older_than, min_age, max_deletes)
    check_history(table, "changelog expiry")
    b = PlanBuilder()
    plan_pending(b, table)  # first finish what an interrupted run left
    store = ManifestStore(table, capacity=STORE_CAPACITY)
    scanner = TableScanner(table, store)
    latest, earliest = table.snapshots.latest_id(), table.snapshots.earliest_id()
    notes: list[str] = []
    details: dict[str, Any] = {"branch": table.branch, "latest": latest, "earliest": earliest,
                               "settings": _settings_details(cfg), "expired_changelogs": [], "notes": notes}
    if latest is None or earliest is None:
        notes.append("no snapshots")
        return b.build(ExpireChangelogsPlan, table, details)
    if not cfg.decoupled:
        notes.append("the table's changelog life cycle is not decoupled (changelog.* retains no more than "
                     "snapshot.*): snapshot expiry removes changelogs with their snapshots")
    tags = read_tags(table)  # read before anything is planned; unreadable tag -> error
    b.require(TagsAre(tag_set(tags)), EarliestSnapshotIs(earliest))  # the earliest snapshot protects manifests
    consumer_min = _consumer_min(table, cfg, notes)
    try:
        others = other_branches(table)
    except CorruptMetadataError as e:
        raise CorruptMetadataError(e.path, f"{e.problem}; another branch's files could not be protected, nothing "
                                           "is expired") from None
    try:
        manifests = len(table.io.list_status(table.manifest_dir))
    except OSError:
        manifests = 0  # (unlistable: the reads below say what is wrong)
    spark, _ = spark_placed(runner, Workload(manifests=manifests), table.options)
    stage = _plan_changelog_stage(b, table, store, scanner, cfg, tags, {}, latest, None, consumer_min, others, spark)
    details["expired_changelogs"] = stage.pop("expired_changelogs", [])
    details.update(stage)
    b.step("hints", ENSURE_HINTS, keep_empty=True, hints=[
        {"dir": table.changelogs.dir, "name": EARLIEST, "which": "first", "only_if_exists": True},
        {"dir": table.changelogs.dir, "name": LATEST, "which": "last", "only_if_exists": True}])
    b.owners_first()
    return b.build(ExpireChangelogsPlan, table, details)


__all__ = ["ExpireSnapshotsPlan", "plan_expire_snapshots", "ExpireChangelogsPlan", "plan_expire_changelogs",
           "resolve_settings", "ExpireSettings", "expiry_window_end", "expirable_snapshots"]
