"""Asset checks of a table — all on the table asset (and one on its tags asset), read-only, metadata only.

| check | on | severity | fails when |
|---|---|---|---|
| `metadata_readable` | table | ERROR | schema, options, snapshots or tags cannot be read (or the table failed to load) |
| `referenced_files_present` | table | ERROR | a file the latest snapshot or a tag references is missing |
| `small_files` | table | WARN | compaction is due: a bucket reaches `compaction.small-files-threshold` level-0 / small files |
| `dv_ratio` | table (DVs) | WARN | dv-ratio compaction is due: a file's deleted-row ratio passes `compaction.dv-ratio-threshold` |
| `snapshot_retention` | table | WARN | the table holds more snapshots than its retention allows: expiry is due |
| `manifest_count` | table | WARN | manifest compaction is due: the latest snapshot reads `manifest.compaction-trigger` manifests |
| `partition_expiry` | table (expiring) | WARN / ERROR | WARN: partitions are due to expire; ERROR: a partition time is unreadable |
| `latest_tag_present` | tags | WARN | a tag of the retained window is missing (deleted or expired, snapshot still known) |
| `maintenance_succeeded` | table | ERROR | its last maintenance run failed on it (recorded by that run, table by table) |

`maintenance_succeeded` is what lets a table failing in a run of many tables show failed while the others show done
(the run itself does not fail: see `table_asset.run_each`). Needs-compaction and needs-expiry are routine states,
hence WARN; ERROR is for what needs a person. Every check turns an unreadable table into an ERROR result, never a
crash. Checks run inside the table asset's runs (after
every maintenance run), and the observation sensor evaluates the cheap ones whenever the table changed.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from dagster import AssetCheckEvaluation, AssetCheckResult, AssetCheckSeverity, AssetCheckSpec, AssetKey, MetadataValue

import paimon_ops.health as health
from paimon_ops.api import health_signals, routine_gates
from paimon_ops.dagster.metadata import md_table
from paimon_ops.dagster.spec import TableSpec
from paimon_ops.errors import PaimonOpsError
from paimon_ops.execution.plan import human_bytes
from paimon_ops.lifecycle.autotag import retained_window
from paimon_ops.lifecycle.manifest_compaction import manifest_health
from paimon_ops.lifecycle.partition_expiry import evaluate_partitions, resolve_partition_settings
from paimon_ops.operations.model import ALL_TABLES, DV_TABLES, EXPIRING_TABLES, Health
from paimon_ops.options import (
    SNAPSHOT_EXPIRABLE_THRESHOLD,
    SNAPSHOT_EXPIRE_LIMIT,
    SNAPSHOT_NUM_RETAINED_MAX,
    SNAPSHOT_NUM_RETAINED_MIN,
    SNAPSHOT_TIME_RETAINED,
)
from paimon_ops.table.table import FileStoreTable

METADATA_READABLE = "metadata_readable"
REFERENCED_FILES = "referenced_files_present"
SMALL_FILES = health.SMALL_FILES  # the health signals' checks: named as the signals (paimon_ops.health)
DV_RATIO = health.DV_RATIO
SNAPSHOT_RETENTION = health.SNAPSHOT_RETENTION
MANIFESTS = health.MANIFEST_COUNT
PARTITION_EXPIRY = health.PARTITION_EXPIRY
LATEST_TAG = "latest_tag_present"
FEATURES = "features_supported"
MAINTAINED = "maintenance_succeeded"  # evaluated by the run maintaining the table, never by the checks' op
# what the observation sensor evaluates on every change
CHEAP = (METADATA_READABLE, *(h.check for _, h in health_signals()), LATEST_TAG, FEATURES)

READ_ERRORS = (PaimonOpsError, OSError)
MAX_ROWS = 15

_DESCRIPTIONS = {
    METADATA_READABLE: "Schema, options, snapshots and tags of {ident} can be read (ERROR otherwise).",
    REFERENCED_FILES: "Every file referenced by the latest snapshot and the tags of {ident} exists: manifest lists, "
                      "manifests, data, index and statistics files (ERROR otherwise).",
    SMALL_FILES: "Compaction is not due: every bucket of {ident} holds fewer level-0 files (primary-key tables) or "
                 "small files (append tables) than compaction.small-files-threshold (WARN otherwise).",
    DV_RATIO: "Dv-ratio compaction is not due: no data file of {ident} has a deleted-row ratio above "
              "compaction.dv-ratio-threshold (default 0.2) (WARN otherwise).",
    SNAPSHOT_RETENTION: "Expiry is not due: {ident} holds no more snapshots than its retention options allow "
                        "(WARN otherwise).",
    MANIFESTS: "Manifest compaction is not due: the latest snapshot of {ident} reads fewer manifests than "
               "manifest.compaction-trigger (default manifest.merge-min-count, 30) (WARN otherwise).",
    PARTITION_EXPIRY: "No partition of {ident} is older than partition.expiration-time (WARN otherwise: expiry is "
                      "due), and the time of every partition can be read (ERROR otherwise: it never expires).",
    FEATURES: "Every maintenance operation can run on {ident}: the table uses no feature (row tracking, data "
              "evolution, BLOB, postpone bucket, ...) that paimon-ops refuses for an operation (WARN otherwise: that "
              "operation's work is not done).",
    MAINTAINED: "The last maintenance run of {ident} succeeded on it (ERROR otherwise: the run's observation of the "
                "table says what failed). Recorded by the maintaining run, table by table.",
    LATEST_TAG: "Every tag of {ident}'s retained window exists — the latest period that ended and each earlier one "
                "the tag retention keeps whose snapshot is still known (WARN otherwise: backfill the "
                "missing days).",
}


@dataclass(frozen=True)
class Outcome:
    name: str
    passed: bool
    severity: AssetCheckSeverity
    description: str
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def result(self, key: AssetKey) -> AssetCheckResult:
        return AssetCheckResult(asset_key=key, check_name=self.name, passed=self.passed, severity=self.severity,
                                description=self.description, metadata=dict(self.metadata))

    def evaluation(self, key: AssetKey) -> AssetCheckEvaluation:
        return AssetCheckEvaluation(asset_key=key, check_name=self.name, passed=self.passed, severity=self.severity,
                                    description=self.description, metadata=dict(self.metadata))


def maintenance_outcome(passed: bool, description: str) -> Outcome:
    """The `maintenance_succeeded` evaluation of a table a run maintained (or failed to)."""
    return Outcome(MAINTAINED, passed, AssetCheckSeverity.ERROR, description,
                   {} if passed else {"error": description})


def has_signal(spec: TableSpec, signal: Health) -> bool:
    """Whether a table has a health signal of the operation registry (its check, its sensor)."""
    return (signal.tables == ALL_TABLES or (signal.tables == DV_TABLES and spec.dv_enabled)
            or (signal.tables == EXPIRING_TABLES and spec.expires_partitions))


def table_check_names(spec: TableSpec) -> list[str]:
    """The table's checks: readable, files present, every health signal of the registry it has, supported."""
    if spec.broken:
        return [METADATA_READABLE]
    names = [METADATA_READABLE, REFERENCED_FILES] + [h.check for _, h in health_signals() if has_signal(spec, h)]
    if spec.gated:
        names.append(FEATURES)
    return names + [MAINTAINED]


def evaluated_names(spec: TableSpec) -> list[str]:
    """The table's checks an evaluation measures (`maintenance_succeeded` is the maintaining run's record)."""
    return [n for n in table_check_names(spec) if n != MAINTAINED]


def tags_check_names(spec: TableSpec) -> list[str]:
    return [LATEST_TAG] if spec.has_expected_tags and not spec.broken else []


def check_specs(spec: TableSpec, key: AssetKey, names: list[str]) -> list[AssetCheckSpec]:
    return [AssetCheckSpec(n, asset=key, description=_DESCRIPTIONS[n].format(ident=spec.identifier)) for n in names]


# ---------------------------------------------------------------------------------------------- evaluation
class _Measure:
    """Measurements shared by the checks of one evaluation (manifests are read once)."""

    def __init__(self, table: FileStoreTable, now_millis: int, files: health.FileHealth | None = None):
        self.table = table
        self.now_millis = now_millis
        self._files: health.FileHealth | None = files

    @property
    def files(self) -> health.FileHealth:
        if self._files is None:
            self._files = health.measure_files(self.table)
        return self._files


def _unreadable(name: str, spec: TableSpec, e: BaseException | str) -> Outcome:
    text = e if isinstance(e, str) else f"{type(e).__name__}: {e}"
    return Outcome(name, False, AssetCheckSeverity.ERROR, f"cannot read {spec.identifier}: {text}", {"error": text})


def evaluate(spec: TableSpec, open_table: Callable[[], FileStoreTable], names: list[str], now_millis: int,
             files: health.FileHealth | None = None) -> list[Outcome]:
    """Evaluate `names` for one table; unreadable metadata is an ERROR outcome of every check asked for. `files`:
    the table's file measurement when the caller already made it (the observation sensor: manifests read once)."""
    if spec.broken:
        return [_unreadable(n, spec, f"the table failed to load: {spec.error}") for n in names]
    try:
        table = open_table()
        table.schema  # noqa: B018 - read now
        table.options  # noqa: B018
    except READ_ERRORS as e:
        return [_unreadable(n, spec, e) for n in names]
    m = _Measure(table, now_millis, files)
    out = []
    for n in names:
        try:
            out.append(_CHECKS[n](spec, m))
        except READ_ERRORS as e:
            out.append(_unreadable(n, spec, e))
    return out


def _metadata_readable(spec: TableSpec, m: _Measure) -> Outcome:
    t = m.table
    latest = t.snapshots.latest()
    tags = t.tags.names()
    ids = t.snapshots.list_ids()
    return Outcome(METADATA_READABLE, True, AssetCheckSeverity.ERROR,
                   f"schema {t.schema.id}, {len(ids)} snapshots (latest {latest.id if latest else 'none'}), "
                   f"{len(tags)} tags readable",
                   {"schema_id": MetadataValue.int(t.schema.id), "snapshots": MetadataValue.int(len(ids)),
                    "tags": MetadataValue.int(len(tags))})


def _bucket_table(h: health.FileHealth, buckets: list[health.BucketStat]) -> str:
    rows = [(b.label, b.files, h.small_count(b), b.rows, b.deleted_rows, f"{b.max_file_dv_ratio:.1%}",
             human_bytes(b.bytes)) for b in buckets[:MAX_ROWS]]
    text = md_table(["bucket", "files", h.small_files_label, "rows", "deleted rows", "worst DV ratio", "size"], rows)
    if len(buckets) > MAX_ROWS:
        text += f"\n\n… and {len(buckets) - MAX_ROWS} more buckets"
    return text


def _small_files(spec: TableSpec, m: _Measure) -> Outcome:
    h = m.files
    over = h.small_over
    pending = h.postpone_pending
    worst = sorted(h.buckets, key=lambda b: -h.small_count(b))
    return Outcome(
        SMALL_FILES, not over, AssetCheckSeverity.WARN,
        (f"at most {h.max_small_count} {h.small_files_label} per bucket vs threshold {h.small_files_threshold}; "
         f"{len(over)} bucket(s) at or over" + ("; compaction is due" if over else "")
         + (f"; {len(pending)} bucket-postpone director(ies) with rows waiting for postpone compaction"
            if pending else "")),
        {"max_per_bucket": MetadataValue.int(h.max_small_count),
         "postpone_pending_files": MetadataValue.int(sum(b.files for b in pending)),
         "postpone_pending_rows": MetadataValue.int(sum(b.rows for b in pending)),
         "threshold": MetadataValue.int(h.small_files_threshold),
         "buckets_over": MetadataValue.int(len(over)), "files": MetadataValue.int(h.total_files),
         "buckets": MetadataValue.md(_bucket_table(h, worst))})


def _dv_ratio(spec: TableSpec, m: _Measure) -> Outcome:
    h = m.files
    over = h.dv_over
    worst = sorted(h.buckets, key=lambda b: -b.max_file_dv_ratio)
    return Outcome(
        DV_RATIO, not over, AssetCheckSeverity.WARN,
        (f"worst file DV ratio {h.max_dv_ratio:.1%} vs threshold {h.dv_threshold:.1%}; {len(over)} bucket(s) over"
         + ("; dv-ratio compaction is due" if over else "")),
        {"max_file_dv_ratio": MetadataValue.float(h.max_dv_ratio),
         "table_dv_ratio": MetadataValue.float(h.total_dv_ratio), "threshold": MetadataValue.float(h.dv_threshold),
         "buckets_over": MetadataValue.int(len(over)),
         "snapshot_id": h.snapshot_id if h.snapshot_id is not None else "none",
         "buckets": MetadataValue.md(_bucket_table(h, worst))})


def _snapshot_retention(spec: TableSpec, m: _Measure) -> Outcome:
    r = health.measure_retention(m.table, m.now_millis)
    retain_max = "unlimited" if r.retain_max is None else r.retain_max
    return Outcome(
        SNAPSHOT_RETENTION, not r.over, AssetCheckSeverity.WARN,
        (f"{r.count} snapshots (min {r.retain_min}, max {retain_max}, time {r.time_retained}); {r.expirable} "
         f"expirable now, expiry due at {r.threshold}" + ("; expiry is due" if r.over else "")),
        {"snapshots": MetadataValue.int(r.count), "expirable": MetadataValue.int(r.expirable),
         "earliest": r.earliest if r.earliest is not None else "none",
         "latest": r.latest if r.latest is not None else "none",
         "retained": MetadataValue.md(md_table(
             ["option", "value"],
             [(SNAPSHOT_NUM_RETAINED_MIN.key, r.retain_min), (SNAPSHOT_NUM_RETAINED_MAX.key, retain_max),
              (SNAPSHOT_TIME_RETAINED.key, str(r.time_retained)), (SNAPSHOT_EXPIRE_LIMIT.key, r.expire_limit),
              (SNAPSHOT_EXPIRABLE_THRESHOLD.key, r.threshold)], "ll"))})


def _manifests(spec: TableSpec, m: _Measure) -> Outcome:
    h = manifest_health(m.table)
    return Outcome(
        MANIFESTS, not h.due, AssetCheckSeverity.WARN,
        (f"{h.manifests} manifests ({h.small_manifests} small, {human_bytes(h.total_bytes)}) vs "
         f"manifest.compaction-trigger {h.trigger}" + ("; manifest compaction is due" if h.due else "")),
        {"manifests": MetadataValue.int(h.manifests), "small_manifests": MetadataValue.int(h.small_manifests),
         "manifest_bytes": MetadataValue.int(h.total_bytes), "trigger": MetadataValue.int(h.trigger),
         "snapshot_id": h.snapshot_id if h.snapshot_id is not None else "none"})


def _partition_expiry(spec: TableSpec, m: _Measure) -> Outcome:
    cfg = resolve_partition_settings(m.table, m.now_millis)
    _, verdicts, _ = evaluate_partitions(m.table, cfg)
    due = [v for v in verdicts if v.expired]
    unreadable = [v for v in verdicts if v.unparseable]
    parts = []
    if due:
        parts.append(f"{len(due)} of {len(verdicts)} partitions are older than partition.expiration-time "
                     f"({cfg.strategy}, before {cfg.expire_before}); partition expiry is due")
    else:
        parts.append(f"none of {len(verdicts)} partitions is before {cfg.expire_before} ({cfg.strategy})")
    if unreadable:
        parts.append(f"{len(unreadable)} partition value(s) cannot be read as a time and never expire, e.g. "
                     f"{unreadable[0].path.rstrip('/')}: {unreadable[0].reason}")
    shown = (unreadable + due)[:MAX_ROWS]
    md: dict[str, Any] = {"partitions": MetadataValue.int(len(verdicts)), "due": MetadataValue.int(len(due)),
                          "unreadable": MetadataValue.int(len(unreadable)), "expire_before": str(cfg.expire_before)}
    if shown:
        md["partitions_table"] = MetadataValue.md(md_table(
            ["partition", "files", "size", "reason"],
            [(v.path.rstrip("/"), v.files, human_bytes(v.size), v.reason) for v in shown], "lrrl"))
    return Outcome(PARTITION_EXPIRY, not due and not unreadable,
                   AssetCheckSeverity.ERROR if unreadable else AssetCheckSeverity.WARN, "; ".join(parts), md)


def _referenced_files(spec: TableSpec, m: _Measure) -> Outcome:
    p = health.missing_files(m.table)
    md: dict[str, Any] = {"referenced": MetadataValue.int(p.checked), "missing": MetadataValue.int(len(p.missing)),
                          "sources": ", ".join(p.sources[:20]) or "none", "by_kind": MetadataValue.json(p.by_kind)}
    if p.missing:
        md["missing_files"] = MetadataValue.md(md_table(["file", "referenced by"], p.missing[:50], "ll"))
    return Outcome(
        REFERENCED_FILES, not p.missing, AssetCheckSeverity.ERROR,
        (f"all {p.checked} referenced files exist" if not p.missing else
         f"{len(p.missing)} of {p.checked} referenced files are missing, e.g. {p.missing[0][0]} ({p.missing[0][1]})"),
        md)


def _latest_tag(spec: TableSpec, m: _Measure) -> Outcome:
    w = retained_window(m.table, m.now_millis)
    names = m.table.tags.names()
    md: dict[str, Any] = {"tags": MetadataValue.int(len(names)), "expected_tags": MetadataValue.int(len(w.expected)),
                          "missing_tags": MetadataValue.int(len(w.missing)),
                          "latest_tags": ", ".join(names[-5:]) or "none"}
    if not w.expected:
        return Outcome(LATEST_TAG, True, AssetCheckSeverity.WARN, "no tag is expected yet", md)
    md["expected_tag"] = w.expected[0]
    md["window"] = f"{w.oldest} .. {w.expected[0]}"
    if not w.missing:
        return Outcome(LATEST_TAG, True, AssetCheckSeverity.WARN,
                       f"tag {w.expected[0]} exists, and every tag of the retained window ({len(w.expected)} since "
                       f"{w.oldest})", md)
    shown = ", ".join(w.missing[:10]) + (" …" if len(w.missing) > 10 else "")
    md["missing"] = ", ".join(w.missing[:MAX_ROWS]) + (" …" if len(w.missing) > MAX_ROWS else "")
    return Outcome(LATEST_TAG, False, AssetCheckSeverity.WARN,
                   f"{len(w.missing)} tag(s) of the retained window missing: {shown} — deleted or never made; their "
                   "snapshots are still known: backfill the missing partitions of the tags asset", md)


def _features(spec: TableSpec, m: _Measure) -> Outcome:
    refused = health.refused_operations(m.table, routine_gates())
    rows = [(op, msg.split(": ", 1)[-1]) for op, msg in refused.items()]
    md: dict[str, Any] = {"refused": MetadataValue.int(len(refused))}
    if rows:
        md["operations"] = MetadataValue.md(md_table(["operation", "why"], rows[:MAX_ROWS], "ll"))
    return Outcome(FEATURES, not refused, AssetCheckSeverity.WARN,
                   "every operation can run" if not refused else
                   f"{len(refused)} operation(s) refused: {', '.join(refused)}; e.g. {next(iter(refused.values()))}",
                   md)


_CHECKS: dict[str, Callable[[TableSpec, _Measure], Outcome]] = {
    METADATA_READABLE: _metadata_readable, REFERENCED_FILES: _referenced_files, SMALL_FILES: _small_files,
    DV_RATIO: _dv_ratio, SNAPSHOT_RETENTION: _snapshot_retention, LATEST_TAG: _latest_tag, MANIFESTS: _manifests,
    PARTITION_EXPIRY: _partition_expiry, FEATURES: _features,
}
