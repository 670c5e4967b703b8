"""Read-only measurements behind the Dagster asset checks and sensors and the Airflow health sensor and triggers.
Plain Python over the engine's table layer (no orchestrator here); metadata only — manifests, index
manifests, snapshot and tag JSON — never data files.

* `measure_files`: per (partition, bucket) of the latest snapshot: files, level-0 files, small files, rows,
  deleted rows (deletion-vector cardinalities from the index manifest) and the worst per-file DV ratio.
* `measure_retention`: snapshot count and how many snapshots the table's own retention options would expire
  now (maintenance.md §2.2 window, consumers and `snapshot.expire.limit` included).
* `missing_files`: every file the latest snapshot and every tag reference (manifest lists, manifests, data and
  extra files, index manifest, index files, statistics) that does not exist.
"""
from __future__ import annotations

import datetime as _dt
import json
import posixpath
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from paimon_ops.compact.buckets import dv_ratio_threshold
from paimon_ops.errors import InvalidArgumentError, MissingFileError
from paimon_ops.execution.plan import human_bytes
from paimon_ops.features import Gate
from paimon_ops.features import refused_operations as refused
from paimon_ops.format.snapshot import Snapshot
from paimon_ops.lifecycle.expire import expirable_snapshots, resolve_settings
from paimon_ops.lifecycle.manifest_compaction import manifest_health
from paimon_ops.lifecycle.partition_expiry import expirable_partitions
from paimon_ops.operations.compact import DV_RATIO as DV_RATIO_SIGNAL
from paimon_ops.operations.compact import OPERATION as COMPACT
from paimon_ops.operations.compact import SMALL_FILES as SMALL_FILES_SIGNAL
from paimon_ops.operations.compact_manifests import MANIFEST_COUNT as MANIFEST_COUNT_SIGNAL
from paimon_ops.operations.compact_manifests import OPERATION as COMPACT_MANIFESTS
from paimon_ops.operations.expire_partitions import OPERATION as EXPIRE_PARTITIONS
from paimon_ops.operations.expire_partitions import PARTITION_EXPIRY as PARTITION_EXPIRY_SIGNAL
from paimon_ops.operations.expire_snapshots import OPERATION as EXPIRE_SNAPSHOTS
from paimon_ops.operations.expire_snapshots import SNAPSHOT_RETENTION as SNAPSHOT_RETENTION_SIGNAL
from paimon_ops.operations.model import Health
from paimon_ops.options import PARTITION_EXPIRATION_TIME, SNAPSHOT_EXPIRABLE_THRESHOLD
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import FileStoreTable

POSTPONE_BUCKET = -2
INT_MAX = 2147483647


# ---------------------------------------------------------------------------------------------- files / DVs
@dataclass(frozen=True)
class BucketStat:
    partition: dict[str, str]  # partition column -> value as text (null: the default partition name; {} unpartitioned)
    partition_dir: str  # e.g. "dt=2024-01-01/" ("" unpartitioned)
    bucket: int
    files: int
    level0_files: int
    small_files: int
    rows: int
    deleted_rows: int
    bytes: int
    max_file_dv_ratio: float
    files_over_dv_threshold: int
    # the partition's values as the JSON contract prints them (`files --json`): a DATE as 2026-11-27, where its
    # directory says dt=20784 (days since the epoch)
    partition_values: dict[str, Any] = field(default_factory=dict)

    @property
    def dv_ratio(self) -> float:
        return self.deleted_rows / self.rows if self.rows else 0.0

    @property
    def label(self) -> str:
        """`dt=2026-11-27/bucket-0` (the partition in the words of the JSON contract, not its directory name)."""
        name = "bucket-postpone" if self.bucket == POSTPONE_BUCKET else f"bucket-{self.bucket}"
        if not self.partition_dir:
            return f"(unpartitioned) {name}"
        values = self.partition_values or self.partition
        return ",".join(f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in values.items()) + f"/{name}"


@dataclass(frozen=True)
class FileHealth:
    table: str
    snapshot_id: int | None
    primary_key: bool
    dv_threshold: float
    small_files_threshold: int
    buckets: tuple[BucketStat, ...] = ()

    def small_count(self, b: BucketStat) -> int:
        """What the small-file check counts: level-0 files (primary-key tables) or small files (append)."""
        return b.level0_files if self.primary_key else b.small_files

    @property
    def small_files_label(self) -> str:
        return "level-0 files" if self.primary_key else "small files"

    @property
    def dv_over(self) -> list[BucketStat]:
        return [b for b in self.buckets if b.files_over_dv_threshold]

    @property
    def small_over(self) -> list[BucketStat]:
        """Buckets where compaction is due: at or over the threshold, and every bucket-postpone holding files (its
        rows are invisible until postpone compaction moves them)."""
        return [b for b in self.buckets if self.small_count(b) >= self.small_files_threshold or self.pending(b)]

    @staticmethod
    def pending(b: BucketStat) -> bool:
        return b.bucket == POSTPONE_BUCKET and b.files > 0

    @property
    def postpone_pending(self) -> list[BucketStat]:
        """The partitions' bucket-postpone directories with rows waiting (postpone-bucket tables)."""
        return [b for b in self.buckets if self.pending(b)]

    @property
    def max_dv_ratio(self) -> float:
        return max((b.max_file_dv_ratio for b in self.buckets), default=0.0)

    @property
    def total_dv_ratio(self) -> float:
        rows = sum(b.rows for b in self.buckets)
        return sum(b.deleted_rows for b in self.buckets) / rows if rows else 0.0

    @property
    def max_small_count(self) -> int:
        return max((self.small_count(b) for b in self.buckets), default=0)

    @property
    def total_files(self) -> int:
        return sum(b.files for b in self.buckets)


def dv_threshold(table: FileStoreTable) -> float:
    """`compaction.dv-ratio-threshold`, else Paimon's `compaction.delete-ratio-threshold`, else 0.2 — read by the
    compaction planner itself, so the check, the sensor and the dv-ratio compaction agree."""
    return dv_ratio_threshold(table, None)


def small_files_threshold(table: FileStoreTable) -> int:
    return table.options.small_files_threshold(table.is_primary_key)


def measure_files(table: FileStoreTable, scanner: TableScanner | None = None) -> FileHealth:
    """Per-bucket file statistics of the latest snapshot, from manifests and the index manifest only."""
    scanner = scanner or TableScanner(table)
    threshold = dv_threshold(table)
    small_thr = small_files_threshold(table)
    pk = table.is_primary_key
    result = scanner.scan_latest()
    if result is None:
        return FileHealth(table.identifier, None, pk, threshold, small_thr)
    opts = table.options
    small_size = opts.small_file_size(pk)
    keys = list(table.schema.partition_keys)
    out = []
    for (partition, bucket), files in sorted(result.buckets().items(), key=lambda kv: (kv[0][0], kv[0][1])):
        rows = deleted = level0 = small = nbytes = over = 0
        worst = 0.0
        for f in files:
            rows += f.meta.row_count
            nbytes += f.meta.file_size
            level0 += f.level == 0
            small += f.meta.file_size < small_size
            hit = result.dv_of(f)
            if hit is not None:
                card = hit[1].cardinality
                if card is None:  # pre-0.9 index manifests: the count lives in the DV itself
                    card = scanner.deletion_vector(*hit).cardinality
                deleted += card
                ratio = card / f.meta.row_count if f.meta.row_count else 0.0
                worst = max(worst, ratio)
                over += ratio > threshold or ratio >= 1.0
        values = scanner.partition_values(partition) if keys else []
        out.append(BucketStat(
            partition={k: (opts.partition_default_name if v is None else str(v)) for k, v in zip(keys, values)},
            partition_dir=scanner.partition_dir(partition), bucket=bucket, files=len(files), level0_files=level0,
            small_files=small, rows=rows, deleted_rows=deleted, bytes=nbytes, max_file_dv_ratio=worst,
            files_over_dv_threshold=over, partition_values=scanner.partition_json(partition) if keys else {}))
    return FileHealth(table.identifier, result.snapshot.id, pk, threshold, small_thr, tuple(out))



def bucket_groups(buckets: list[BucketStat]) -> list[tuple[list[dict[str, str]], list[int]]]:
    """Partitions grouped by their exact set of buckets: each (partitions, buckets) pair, as a compaction filter
    (partitions × buckets), selects exactly the given buckets and nothing else."""
    by_partition: dict[tuple, list[int]] = {}
    spec: dict[tuple, dict[str, str]] = {}
    for b in buckets:
        k = tuple(b.partition.items())
        spec[k] = dict(b.partition)
        by_partition.setdefault(k, []).append(b.bucket)
    groups: dict[tuple[int, ...], list[dict[str, str]]] = {}
    for k, bs in by_partition.items():
        groups.setdefault(tuple(sorted(set(bs))), []).append(spec[k])
    return [(parts, list(bs)) for bs, parts in groups.items()]


def refused_operations(table: FileStoreTable, gates: Iterable[Gate]) -> dict[str, str]:
    """Operations the feature gate refuses on this table (operation -> the one-line refusal), of those whose `gates`
    are given (`api.routine_gates`)."""
    return refused(table, gates)


# ---------------------------------------------------------------------------------------------- snapshots
@dataclass(frozen=True)
class Retention:
    table: str
    count: int
    earliest: int | None
    latest: int | None
    retain_min: int
    retain_max: int | None  # None: not set (Integer.MAX_VALUE)
    time_retained: _dt.timedelta
    expire_limit: int
    expirable: int  # snapshots an expiry run would remove now (capped by snapshot.expire.limit)
    threshold: int  # expirable snapshots at which expiry is due

    @property
    def over_max(self) -> bool:
        return self.retain_max is not None and self.count > self.retain_max

    @property
    def over(self) -> bool:
        return self.expirable > 0 and (self.over_max or self.expirable >= self.threshold)


def measure_retention(table: FileStoreTable, now_millis: int | None = None) -> Retention:
    """Snapshot count and the §2.2 expiry window by the table's options, as the engine resolves them (reads only
    snapshot and consumer JSON)."""
    cfg = resolve_settings(table, now_millis)
    opts = table.options
    own = opts.value(SNAPSHOT_EXPIRABLE_THRESHOLD)
    threshold = cfg.max_deletes if own is None else own
    retain_max = cfg.retain_max if cfg.retain_max < INT_MAX else None
    time_retained = _dt.timedelta(milliseconds=cfg.now_millis - cfg.older_than_millis)
    latest, earliest = table.snapshots.latest_id(), table.snapshots.earliest_id()
    if latest is None or earliest is None:
        return Retention(table.identifier, 0, earliest, latest, cfg.retain_min, retain_max, time_retained,
                         cfg.max_deletes, 0, threshold)
    count = len(table.snapshots.list_ids())
    return Retention(table.identifier, count, earliest, latest, cfg.retain_min, retain_max, time_retained,
                     cfg.max_deletes, expirable_snapshots(table, cfg), threshold)


# ---------------------------------------------------------------------------------------------- referenced files
@dataclass
class FilePresence:
    table: str
    checked: int = 0
    sources: list[str] = field(default_factory=list)  # "snapshot 12", "tag 2024-01-01"
    missing: list[tuple[str, str]] = field(default_factory=list)  # (path, referenced by)
    by_kind: dict[str, int] = field(default_factory=dict)


def _referenced(table: FileStoreTable, scanner: TableScanner, snap: Snapshot, source: str,
                refs: dict[str, tuple[str, str]]) -> None:
    """Collect what `snap` references; an unreadable (missing) metadata file is itself recorded as referenced."""
    def add(path: str, kind: str) -> None:
        refs.setdefault(path, (kind, source))

    store = scanner.store
    for lst in (snap.base_manifest_list, snap.delta_manifest_list, snap.changelog_manifest_list):
        if not lst:
            continue
        add(table.manifest_path(lst), "manifest-list")
        try:
            for meta in store.manifest_list(lst, source):
                add(table.manifest_path(meta.file_name), "manifest")
        except MissingFileError:
            pass  # the list itself is reported missing
    try:
        for f in scanner.scan(snap).files:
            add(f.path, "data")
            for extra in f.meta.extra_files:
                add(posixpath.join(posixpath.dirname(f.path), extra), "extra")
    except MissingFileError as e:
        add(e.path, "manifest")
    if snap.index_manifest:
        add(table.manifest_path(snap.index_manifest), "index-manifest")
        try:
            for ie in scanner.index_entries(snap):
                add(scanner.index_file_path(ie), "index")
        except MissingFileError:
            pass
    if snap.statistics:
        add(posixpath.join(table.statistics_dir, snap.statistics), "statistics")


def missing_files(table: FileStoreTable) -> FilePresence:
    """Files referenced by the latest snapshot and every tag that do not exist (one listing of the table)."""
    scanner = TableScanner(table)
    out = FilePresence(table.identifier)
    refs: dict[str, tuple[str, str]] = {}
    latest = table.snapshots.latest()
    if latest is not None:
        out.sources.append(f"snapshot {latest.id}")
        _referenced(table, scanner, latest, f"snapshot {latest.id}", refs)
    for name, tag in table.tags.tags():
        out.sources.append(f"tag {name}")
        _referenced(table, scanner, tag, f"tag {name}", refs)
    existing = {st.path for st in table.io.walk_files(table.root)}
    for path, (kind, source) in refs.items():
        out.by_kind[kind] = out.by_kind.get(kind, 0) + 1
        if path in existing:
            continue
        if not path.startswith(table.root + "/") and table.io.exists(path):  # external paths
            continue
        out.missing.append((path, f"{kind}, {source}"))
    out.checked = len(refs)
    return out


# ---------------------------------------------------------------------------------------------- what is due
# The health signals, one vocabulary: each is declared by the operation it makes due (`Operation.health`, in its
# module) and measured here (`SIGNALS` below pairs each with its measurement); the Dagster asset checks and sensors
# and the Airflow health sensor and triggers use these names.
SMALL_FILES = SMALL_FILES_SIGNAL.signal               # level-0 files (primary key) / small files (append) per bucket
DV_RATIO = DV_RATIO_SIGNAL.signal                     # a file's deleted-row ratio over compaction.dv-ratio-threshold
SNAPSHOT_RETENTION = SNAPSHOT_RETENTION_SIGNAL.signal  # more snapshots than the retention options allow
MANIFEST_COUNT = MANIFEST_COUNT_SIGNAL.signal         # manifests in the latest snapshot >= manifest.compaction-trigger
PARTITION_EXPIRY = PARTITION_EXPIRY_SIGNAL.signal     # partitions older than partition.expiration-time
# Names the engine and the Airflow provider used before the vocabulary was one (still accepted by `assess`).
FORMER_NAMES = {"snapshots": SNAPSHOT_RETENTION, "manifests": MANIFEST_COUNT, "partitions": PARTITION_EXPIRY}
SNAPSHOTS, MANIFESTS, PARTITIONS = SNAPSHOT_RETENTION, MANIFEST_COUNT, PARTITION_EXPIRY  # (their former constants)


@dataclass(frozen=True)
class Need:
    """One signal evaluated on one table: whether work is due, the figure behind it, and the operation (with its
    arguments) that does the work."""

    signal: str
    due: bool
    figure: str
    operation: str | None = None
    arguments: dict = field(default_factory=dict)
    over: tuple[BucketStat, ...] = ()  # compaction signals: the buckets over the threshold (not in the JSON)

    def to_dict(self) -> dict:
        return {"signal": self.signal, "due": self.due, "figure": self.figure, "operation": self.operation,
                "arguments": self.arguments}


@dataclass(frozen=True)
class Assessment:
    table: str
    snapshot_id: int | None
    needs: tuple[Need, ...]

    @property
    def due(self) -> list[Need]:
        return [n for n in self.needs if n.due]

    def summary(self) -> str:
        head = f"{self.table} snapshot {self.snapshot_id}: " + (
            "due: " + ", ".join(n.signal for n in self.due) if self.due else "nothing due")
        return "\n".join([head] + [f"  {'DUE ' if n.due else 'ok  '}{n.signal}: {n.figure}" for n in self.needs])

    def to_dict(self) -> dict:
        return {"table": self.table, "snapshot_id": self.snapshot_id, "due": [n.signal for n in self.due],
                "needs": [n.to_dict() for n in self.needs]}


def _compaction_arguments(table: FileStoreTable, mode: str, over: list[BucketStat]) -> dict:
    """Exactly the buckets over the threshold when they form one partitions × buckets filter, else the partitions."""
    groups = bucket_groups(over)
    partitions = [dict(b.partition) for b in over if b.partition]
    partitions = [dict(p) for p in {tuple(sorted(p.items())): p for p in partitions}.values()]
    args: dict = {"mode": mode}
    if table.schema.partition_keys:
        args["partitions"] = groups[0][0] if len(groups) == 1 else partitions
    if len(groups) == 1:
        args["buckets"] = groups[0][1]
    return args


@dataclass
class _Measuring:
    """One assessment in progress: the table, the clock, the file measurement shared by the compaction signals."""

    table: FileStoreTable
    now_millis: int | None
    _files: FileHealth | None = None

    @property
    def files(self) -> FileHealth:
        if self._files is None:
            self._files = measure_files(self.table)
        return self._files


def _small_files(m: _Measuring) -> Need | None:
    files = m.files
    over = files.small_over
    mode = "minor" if files.primary_key else "small-files"
    return Need(SMALL_FILES, bool(over),
                f"at most {files.max_small_count} {files.small_files_label} per bucket vs threshold "
                f"{files.small_files_threshold}; {len(over)} of {len(files.buckets)} buckets at or over",
                "compact", _compaction_arguments(m.table, mode, over) if over else {"mode": mode}, tuple(over))


def _dv_ratio(m: _Measuring) -> Need | None:
    if not m.table.options.deletion_vectors_enabled:
        return None
    files = m.files
    over = files.dv_over
    return Need(DV_RATIO, bool(over),
                f"worst file deleted-row ratio {files.max_dv_ratio:.1%} (table {files.total_dv_ratio:.1%}) vs threshold "
                f"{files.dv_threshold:.1%}; {len(over)} of {len(files.buckets)} buckets over",
                "compact", _compaction_arguments(m.table, "dv-ratio", over) if over else {"mode": "dv-ratio"},
                tuple(over))


def _snapshot_retention(m: _Measuring) -> Need | None:
    r = measure_retention(m.table, m.now_millis)
    limit = "" if r.retain_max is None else f", max {r.retain_max}"
    return Need(SNAPSHOT_RETENTION, r.over, f"{r.count} snapshots{limit}, {r.expirable} expirable now (expiry due at "
                                            f"{r.threshold})", "expire_snapshots")


def _manifest_count(m: _Measuring) -> Need | None:
    h = manifest_health(m.table)
    return Need(MANIFEST_COUNT, h.due, f"{h.manifests} manifests ({h.small_manifests} small, "
                                       f"{human_bytes(h.total_bytes)}) vs manifest.compaction-trigger {h.trigger}",
                "compact_manifests")


def _partition_expiry(m: _Measuring) -> Need | None:
    table = m.table
    expiration = table.options.text(PARTITION_EXPIRATION_TIME)
    if not table.schema.partition_keys or not expiration:
        return None
    expired = expirable_partitions(table, m.now_millis)
    shown = ", ".join(v.path.rstrip("/") for v in expired[:5]) + (" …" if len(expired) > 5 else "")
    return Need(PARTITION_EXPIRY, bool(expired),
                f"{len(expired)} partition(s) older than {PARTITION_EXPIRATION_TIME.key} {expiration}"
                + (f": {shown}" if expired else ""), "expire_partitions")


# Every health signal with its measurement, in assessment order: (the signal, the operation it makes due, how it is
# measured; a measurement returns None when the signal does not apply to the table).
MEASUREMENTS: tuple[tuple[Health, str, Callable[[_Measuring], Need | None]], ...] = (
    (SMALL_FILES_SIGNAL, COMPACT.name, _small_files),
    (DV_RATIO_SIGNAL, COMPACT.name, _dv_ratio),
    (SNAPSHOT_RETENTION_SIGNAL, EXPIRE_SNAPSHOTS.name, _snapshot_retention),
    (MANIFEST_COUNT_SIGNAL, COMPACT_MANIFESTS.name, _manifest_count),
    (PARTITION_EXPIRY_SIGNAL, EXPIRE_PARTITIONS.name, _partition_expiry),
)
SIGNALS = tuple(h.signal for h, _, _ in MEASUREMENTS)


def signal_names(signals: Iterable[str]) -> list[str]:
    """The signals by their names (former names accepted); an unknown one is refused, naming the known ones."""
    names = [FORMER_NAMES.get(s, s) for s in signals]
    unknown = [s for s in names if s not in SIGNALS]
    if unknown:
        raise InvalidArgumentError(f"unknown health signal(s) {', '.join(map(repr, unknown))}; known: "
                                   + ", ".join(SIGNALS))
    return names


def assess(table: FileStoreTable, signals: Iterable[str] = SIGNALS, now_millis: int | None = None) -> Assessment:
    """Evaluate `signals` on the table's latest snapshot (metadata only). Signals that do not apply to the table
    (dv_ratio without deletion vectors, partition_expiry without partition.expiration-time) are left out."""
    wanted = set(signal_names(signals))
    table = getattr(table, "raw", table)  # a facade po.Table or the engine's
    m = _Measuring(table, now_millis)
    needs = [n for h, _, measure in MEASUREMENTS if h.signal in wanted and (n := measure(m)) is not None]
    return Assessment(table.identifier, table.snapshots.latest_id(), tuple(needs))
