"""Partition expiry (maintenance.md §8; Java 0.9 `PartitionExpire`, `PartitionValuesTimeExpireStrategy`,
`PartitionUpdateTimeExpireStrategy`, `FileStoreCommitImpl.dropPartitions`).

    plan_expire_partitions(table, now_millis=None, expiration_time=None, strategy=None, timestamp_formatter=None,
                           timestamp_pattern=None, max_expires=None) -> PartitionExpiryPlan
    expirable_partitions(table, now_millis=None, ...) -> list[PartitionVerdict]        (Dagster sensors / checks)
    partition_expiry_due(table, last_check_millis, now_millis=None) -> bool             (check interval)

What expires. Options (arguments override them, like Java's `expire_partitions` procedure): the age
`partition.expiration-time`, the strategy `partition.expiration-strategy`:

* `values-time` (default): the partition's time comes from its values — `partition.timestamp-pattern` (`$dt
  $hour:00:00`; unset: the first partition value) parsed with `partition.timestamp-formatter` (a Java
  DateTimeFormatter pattern; unset: `yyyy-MM-dd[ HH:mm:ss[.S…]]`, lenient) exactly as Java's
  PartitionTimeExtractor does (`partition_time`). A partition expires when `now − expiration-time` is after its time.
* `update-time`: the partition's time is the newest `_CREATION_TIME` of its live files; it expires when that is
  before `now − expiration-time`.

Times are local date-times; `now` is read on the wall clock of the table's local zone — `sink.process-time-zone`,
else UTC — the same zone paimon-ops writes tag create times in (Java uses the JVM's zone).

Partition values are the typed values of the partition row (`format/partition.py`), never strings split on ','
(apache/paimon#9277): the pattern sees each key's value as Java's `toString()` does, except DATE / TIME / TIMESTAMP keys,
which are rendered as ISO dates and times (`2024-01-01`, `10:00:00`, `2024-01-01 10:00:00.000`) — Java 0.9 hands
the formatter a DATE's day number (`19723`), which no formatter parses, so DATE partitions never expire there
(apache/paimon#6439). A partition whose time cannot be read (a value the formatter does not parse, a null value, a binary
key) is listed under `unparseable_partitions` with the reason and a warning, and never expired (Java logs a warning,
or — 0.9, a null value — fails the whole run with a NullPointerException). A formatter or pattern that is invalid, or
that parses none of the table's partitions (the silent never-expiring table of apache/paimon#7428), is an
InvalidOptionError naming the option; nothing is planned.

At most `partition.expiration-max-num` (default 100, Paimon's; 0.9 has no limit) expired partitions are dropped per
run, the first ones in the order of their joined value strings (as Paimon does); the rest are listed under
`over_limit` and go in the next run.

The commit. One OVERWRITE snapshot that DELETEs every live data file of the expired partitions and their index
files (deletion vectors, hash index) and adds nothing — what Java's `dropPartitions` commits. The files stay on disk:
the next snapshot expiry reclaims them once no retained snapshot or tag uses them (tags keep them alive, as in
Java). The plan requires the expired partitions' live files (and index files) to be exactly those planned
(`PartitionFilesUnchanged`): a write into an expiring partition since the plan makes it stale (StalePlanError),
while commits to other partitions do not — a streaming table keeps committing, and expiry must not starve; the
commit itself refuses a file written into a dropped partition after the check (CommitConflictError).

`partition.expiration-check-interval` (default 1 h) is how often Java's writers check, per writer process (0.9 keeps
no state between processes: the first check is one interval after the writer starts). An explicit run always checks
(as Java's procedure does); schedulers use `partition_expiry_due(table, last_check, now)` to honour the interval.

Refused: unpartitioned tables.

Postpone-bucket tables (`bucket = -2`): an expired partition loses its real buckets *and* the rows still waiting in
`bucket-postpone`, as Java's dropPartitions does (its overwrite scan filters no bucket when the table's bucket is
-2); with `update-time` the partition's newest file may be a postpone file, as in Java.

Differences from Java 0.9 (proven in tests/lifecycle/test_partition_expiry_java.py and test_partition_time_java.py):
* DATE partitions expire by their dates (Java: never, apache/paimon#6439); TIME / TIMESTAMP keys are read as ISO times likewise.
* a null partition value: reported (values-time) or expired like any partition (update-time); Java 0.9 fails the whole
  run with a NullPointerException and expires nothing.
* `$dt1` in a pattern with keys `dt, dt1` means dt1 (longest key first, apache/paimon#9136); 0.9 substitutes `$dt` first.
* `partition.expiration-max-num` (Paimon 1.0+, default 100) bounds one run; 0.9 drops every expired partition.
* `partition.expiration-batch-size` is not honoured: one run is one atomic commit.
* update-time uses the newest creation time of the partition's *live* files; Java 0.9 also counts files whose DELETE
  entries are still in unmerged manifests (a compacted-away file newer than every live one — rare).
* formatters with text fields (`MMM`, `EEE`, `a`) are refused (InvalidOptionError) rather than parsed.

A `metastore.partitioned-table` table drops the partitions from its metastore first (the Hive catalog; with their
`.done` partitions), as Java does; through a catalog without a metastore the run is refused
(`metastore.allow-out-of-sync=true` overrides; paimon_ops.catalog.check_sync).
"""
from __future__ import annotations

import datetime as _dt
import logging
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

import paimon_ops.format.manifest as mf
from paimon_ops.catalog import catalog_of, check_sync
from paimon_ops.errors import InvalidArgumentError, InvalidOptionError, StalePlanError, arg
from paimon_ops.execution.executor import Execution, register_step
from paimon_ops.execution.journal import plan_pending
from paimon_ops.execution.plan import DATA, INDEX, FileAction, Plan, PlanBuilder, Precondition, Step, declare_step_action, planner
from paimon_ops.format.partition import partition_json, partition_path, partition_spec, partition_value_string
from paimon_ops.lifecycle.partition_time import LocalDateTime, PartitionTimeError, PartitionTimeExtractor, PatternError
from paimon_ops.operations.expire_partitions import OPERATION as EXPIRE_PARTITIONS
from paimon_ops.operations.model import InstantMs
from paimon_ops.options import (
    METASTORE_PARTITIONED_TABLE,
    PARTITION_EXPIRATION_CHECK_INTERVAL,
    PARTITION_EXPIRATION_MAX_NUM,
    PARTITION_EXPIRATION_STRATEGY,
    PARTITION_EXPIRATION_TIME,
    PARTITION_TIMESTAMP_FORMATTER,
    PARTITION_TIMESTAMP_PATTERN,
    SINK_PROCESS_TIME_ZONE,
    format_duration,
    parse_duration,
)
from paimon_ops.table.commit import CommitChanges, FileStoreCommit
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import FileStoreTable
from paimon_ops.timeutil import (
    UTC,
    iso,
    local_to_instant_millis,
    naive_to_local_millis,
    now_ms,
    parse_zone,
    to_local_millis,
    zone_name,
)

log = logging.getLogger(__name__)

STRATEGIES = PARTITION_EXPIRATION_STRATEGY.choices
VALUES_TIME, UPDATE_TIME = STRATEGIES

# The one step: an OVERWRITE commit dropping the expired partitions' files from the table.
PARTITION_DROP = "partition-drop-commit"
declare_step_action(PARTITION_DROP, deletes=True, verb="would drop from the table",
                    done="dropped from the table (the files stay on disk until snapshot expiry)", removal="dropped")

_TIME_TYPES = ("DATE", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ")


class PartitionExpiryPlan(Plan):
    """Dropping expired partitions: which partitions go and why, then one OVERWRITE commit."""

    operation = "expire_partitions"
    op = EXPIRE_PARTITIONS  # its operation (the feature gate, the planner's parameters)

    @property
    def expired_partitions(self) -> list[dict]:
        return list(self.details.get("expired_partitions", []))

    @property
    def is_empty(self) -> bool:
        return not self.details.get("expired_partitions")

    def summary(self, limit: int | None = None, files: bool = True) -> str:
        d = self.details
        head = [f"{self.operation} on {self.table}" + (f" (branch {self.branch})" if self.branch != "main" else "")
                + f", planned on snapshot {self.base_snapshot}",
                f"  strategy {d.get('strategy')}, expiration time "
                f"{format_duration(_dt.timedelta(seconds=d.get('expiration_time_s') or 0))}: partitions whose time is "
                f"before {d.get('expire_before')} ({d.get('zone')}; now {d.get('now_local')}) expire"]
        if d.get("strategy") == VALUES_TIME:
            head.append(f"  timestamp pattern {d.get('timestamp_pattern') or '(first partition value)'}, formatter "
                        f"{d.get('timestamp_formatter') or '(default yyyy-MM-dd[ HH:mm:ss])'}")
        head.append(f"  {d.get('partitions_checked', 0)} partition(s) checked, {len(d.get('expired_partitions', []))} "
                    f"expire, {d.get('kept', 0)} kept, {len(d.get('unparseable_partitions', []))} without a time")
        for p in d.get("expired_partitions", []):
            head.append(f"  expires {p['path']}: {p['reason']} ({p['files']} file(s), {p['rows']} row(s))")
        for p in d.get("over_limit", []):
            head.append(f"  next run {p['path']}: {p['reason']}")
        for p in d.get("unparseable_partitions", []):
            head.append(f"  no time for {p['path']}: {p['reason']} — never expired")
        body = super().summary(limit, files).split("\n")[1:]
        body = [line for line in body if not line.startswith(("  expired_partitions:", "  unparseable_partitions:",
                                                                "  over_limit:"))]
        return "\n".join(head + body)

    __str__ = summary


@dataclass(frozen=True)
class PartitionFilesUnchanged(Precondition):
    """The expired partitions hold exactly the planned live files and index files in the latest snapshot: a write
    into one of them (or a compaction, a rollback) since the plan makes it stale. Other partitions may change."""

    kind: ClassVar[str] = "partition-files"
    # (partition BinaryRow hex, partition path for messages, ((bucket, file name, level), ...))
    partitions: tuple[tuple[str, str, tuple[tuple[int, str, int], ...]], ...]
    index_files: tuple[str, ...] = ()

    def check(self, table: Any) -> str | None:
        latest = table.snapshots.latest()
        if latest is None:
            return "the table has no snapshot any more"
        scanner = TableScanner(table)
        wanted = {h: (path, {tuple(f) for f in files}) for h, path, files in self.partitions}
        now: dict[str, set] = {h: set() for h in wanted}
        for e in scanner.live_entries(latest).values():
            h = e.partition.hex()
            if h in now:
                now[h].add((e.bucket, e.file.file_name, e.file.level))
        for h, (path, files) in wanted.items():
            if now[h] != files:
                added = sorted(now[h] - files)
                gone = sorted(files - now[h])
                what = (f"{added[0][1]} written" if added else "") + (", " if added and gone else "") +\
                    (f"{gone[0][1]} removed" if gone else "")
                return f"partition {path.rstrip('/')} changed since the plan ({what}): a concurrent write or compaction"
        idx = sorted(ie.file_name for ie in scanner.index_entries(latest) if ie.partition.hex() in wanted)
        if idx != sorted(self.index_files):
            return "the index files (deletion vectors / hash index) of an expiring partition changed since the plan"
        return None

    def describe(self) -> str:
        return f"the {len(self.partitions)} expiring partition(s) still hold exactly the planned files"


# ---------------------------------------------------------------------------------------------- settings
@dataclass(frozen=True)
class PartitionExpirySettings:
    strategy: str
    expiration_ms: int
    now_millis: int
    zone: _dt.tzinfo
    now_local: LocalDateTime
    expire_before: LocalDateTime  # partitions whose time is before this expire
    timestamp_formatter: str | None
    timestamp_pattern: str | None
    max_expires: int
    check_interval_ms: int
    extractor: PartitionTimeExtractor | None
    formatter_given: bool = False  # the formatter / pattern came from an argument (errors name it), not an option
    pattern_given: bool = False

    def details(self) -> dict[str, Any]:
        """As the JSON contract says them: times ISO 8601 with the offset of `zone` (the zone Java reads partition
        times in), durations in seconds."""
        return {"strategy": self.strategy, "expiration_time_s": self.expiration_ms / 1000,
                "now": iso(self.now_millis), "zone": zone_name(self.zone),
                "now_local": zoned(str(self.now_local), self.zone),
                "expire_before": zoned(str(self.expire_before), self.zone),
                "timestamp_formatter": self.timestamp_formatter, "timestamp_pattern": self.timestamp_pattern,
                "max_expires": self.max_expires, "check_interval_s": self.check_interval_ms / 1000}


def zoned(local: str | None, zone: _dt.tzinfo) -> str | None:
    """A local date-time text (LocalDateTime) as ISO 8601 with the offset it has in `zone`."""
    if local is None:
        return None
    naive = _dt.datetime.fromisoformat(local)
    return iso(local_to_instant_millis(naive_to_local_millis(naive), zone), zone)


def partition_local_zone(table: FileStoreTable) -> _dt.tzinfo:
    """The zone `now` is read in: sink.process-time-zone, else UTC (Java: the JVM's default zone)."""
    opts = table.options
    z = opts.get(SINK_PROCESS_TIME_ZONE)
    return parse_zone(z, SINK_PROCESS_TIME_ZONE.key, opts.where) if z else UTC


def _duration_ms(value: Any, name: str) -> int:
    if isinstance(value, _dt.timedelta):
        ms = int(value.total_seconds() * 1000)
    elif isinstance(value, str):
        ms = int(parse_duration(value, arg(name)).total_seconds() * 1000)
    elif isinstance(value, int) and not isinstance(value, bool):
        ms = value
    else:
        raise InvalidArgumentError(f"{arg(name)} must be an age (a timedelta or a duration such as '7 d'), not "
                                   f"{value!r}")
    if ms < 0:
        raise InvalidArgumentError(f"{arg(name)} must not be negative, got {value!r}")
    return ms


def _engine(table: Any) -> FileStoreTable:
    """The engine table of a facade `po.Table` (hooks accept either)."""
    return getattr(table, "raw", table)


def check_interval_ms(table: FileStoreTable) -> int:
    """`partition.expiration-check-interval` in milliseconds (default 1 h)."""
    table = _engine(table)
    return int(table.options.get(PARTITION_EXPIRATION_CHECK_INTERVAL).total_seconds() * 1000)


def partition_expiry_due(table: FileStoreTable, last_check_millis: int | None, now_millis: int | None = None) -> bool:
    """Whether a check is due after one at `last_check_millis` (None: never checked): Java checks when the interval
    is 0 or `now` is after `last check + partition.expiration-check-interval`. A scheduler (a Dagster sensor with the
    last check in its cursor) uses this to run expiry no more often than Java's writers would."""
    interval = check_interval_ms(_engine(table))
    now = now_ms(now_millis)
    return last_check_millis is None or interval == 0 or now > last_check_millis + interval


def resolve_partition_settings(table: FileStoreTable, now_millis: int | None = None, expiration_time: Any = None,
                               strategy: str | None = None, timestamp_formatter: str | None = None,
                               timestamp_pattern: str | None = None,
                               max_expires: int | None = None) -> PartitionExpirySettings:
    """Arguments override the table's options; everything is validated here, before any metadata is read. Errors
    name the argument (in the caller's words) or the option."""
    opts = table.options
    schema = table.schema
    if not schema.partition_keys:
        raise InvalidArgumentError(f"{table.identifier} is not partitioned: there are no partitions to expire")
    if expiration_time is not None:
        exp_ms = _duration_ms(expiration_time, "expiration_time")
    else:
        exp = opts.get(PARTITION_EXPIRATION_TIME)
        if exp is None:
            raise InvalidArgumentError(f"no expiration time for {table.identifier}: give {arg('expiration_time')} or "
                                       f"set the table option {PARTITION_EXPIRATION_TIME.key}")
        exp_ms = int(exp.total_seconds() * 1000)
    if strategy is not None:
        s = str(strategy).strip().lower().replace("_", "-")
        if s not in STRATEGIES:
            raise InvalidArgumentError(f"{arg('strategy', strategy)}: expected one of {', '.join(STRATEGIES)}")
    else:
        s = opts.get(PARTITION_EXPIRATION_STRATEGY)
    if max_expires is not None:
        if isinstance(max_expires, bool) or not isinstance(max_expires, int) or max_expires < 1:
            raise InvalidArgumentError(f"{arg('max_expires', max_expires)}: expected an integer >= 1")
        limit = max_expires
    else:
        limit = opts.get(PARTITION_EXPIRATION_MAX_NUM)
    interval = check_interval_ms(table)  # validated even when unused: a bad option is reported, not ignored
    fmt = timestamp_formatter if timestamp_formatter is not None else opts.get(PARTITION_TIMESTAMP_FORMATTER)
    pat = timestamp_pattern if timestamp_pattern is not None else opts.get(PARTITION_TIMESTAMP_PATTERN)
    extractor = None
    if s == VALUES_TIME:
        try:
            extractor = PartitionTimeExtractor(pat, None)
            extractor.check_pattern(list(schema.partition_keys))
        except PatternError as e:
            raise _bad("timestamp_pattern", PARTITION_TIMESTAMP_PATTERN.key, pat, timestamp_pattern, str(e),
                       opts.where) from None
        try:
            extractor = PartitionTimeExtractor(pat, fmt)
        except PatternError as e:
            raise _bad("timestamp_formatter", PARTITION_TIMESTAMP_FORMATTER.key, fmt, timestamp_formatter, str(e),
                       opts.where) from None
    zone = partition_local_zone(table)
    now = now_ms(now_millis)
    now_local = LocalDateTime.of_local_millis(to_local_millis(now, zone))
    return PartitionExpirySettings(
        strategy=s, expiration_ms=exp_ms, now_millis=now, zone=zone, now_local=now_local,
        expire_before=now_local.plus_nanos(-exp_ms * 1_000_000), timestamp_formatter=fmt, timestamp_pattern=pat,
        max_expires=limit, check_interval_ms=interval, extractor=extractor,
        formatter_given=timestamp_formatter is not None, pattern_given=timestamp_pattern is not None)


def _bad(keyword: str, option: str, value: Any, given: Any, problem: str, where: str) -> Exception:
    if given is not None:  # the caller's argument, in the caller's words
        return InvalidArgumentError(f"{arg(keyword, value)} is not a usable partition timestamp "
                                    f"{'formatter' if 'formatter' in option else 'pattern'}: {problem}")
    return InvalidOptionError(option, value, f"a Java DateTimeFormatter pattern of numeric fields such as 'yyyyMMdd' "
                              f"({problem})" if "formatter" in option else
                              f"a pattern of partition keys such as '$dt $hour:00:00' ({problem})", where)


# ---------------------------------------------------------------------------------------------- evaluation
@dataclass(frozen=True)
class PartitionVerdict:
    """One live partition of the latest snapshot and what expiry decides about it."""

    partition: bytes
    spec: Mapping[str, str]       # key -> value as in the partition directory (unescaped)
    path: str                     # the partition directory, escaped, with Java's trailing slash
    files: int
    rows: int
    size: int                     # bytes of its live data files
    time: str | None              # the partition's local time (LocalDateTime text), None when it has none
    expired: bool
    reason: str
    timestamp: str | None = None  # values-time: the string handed to the formatter
    unparseable: bool = False     # values-time: the formatter cannot read it (reported, never guessed or expired)
    values: Mapping[str, Any] | None = None  # key -> typed JSON value (format.partition.partition_json)

    def to_dict(self, zone: _dt.tzinfo = UTC) -> dict[str, Any]:
        return {"partition": dict(self.spec if self.values is None else self.values), "path": self.path,
                "time": zoned(self.time, zone), "files": self.files,
                "rows": self.rows, "bytes": self.size, "reason": self.reason, "timestamp_string": self.timestamp}


def _time_value(value: Any, t: Any) -> str:
    """The text Java's PartitionTimeExtractor sees for one partition value (`toString()` of the internal value),
    except DATE / TIME / TIMESTAMP: rendered as ISO text (Java's day number / millis never parse: apache/paimon#6439)."""
    if t.root in _TIME_TYPES:
        return partition_value_string(value, t, legacy=False)  # type: ignore[return-value]
    if t.root in ("BINARY", "VARBINARY"):
        raise PartitionTimeError(f"a {t} value has no time")
    return partition_value_string(value, t, legacy=True)  # type: ignore[return-value]


def evaluate_partitions(table: FileStoreTable, cfg: PartitionExpirySettings,
                        scanner: TableScanner | None = None) -> tuple[Any, list[PartitionVerdict], dict]:
    """(latest snapshot, a verdict per live partition, live entries by partition) on the latest snapshot."""
    scanner = scanner or TableScanner(table)
    latest = table.snapshots.latest()
    if latest is None:
        return None, [], {}
    schema = table.schema
    keys = list(schema.partition_keys)
    types = [f.type for f in schema.fields_of(schema.partition_keys)]
    opts = table.options
    by_part: dict[bytes, list] = {}
    for e in scanner.live_entries(latest).values():
        by_part.setdefault(e.partition, []).append(e)
    used_keys: set[str] = set(keys[:1])
    if cfg.extractor is not None and cfg.timestamp_pattern is not None:
        used_keys = set(cfg.extractor._scan(cfg.timestamp_pattern, keys)[0])
    verdicts: list[PartitionVerdict] = []
    before = cfg.expire_before
    for part, entries in by_part.items():
        values = scanner.partition_values(part)
        spec = partition_spec(values, keys, types, opts.partition_legacy_name, opts.partition_default_name)
        path = partition_path(values, keys, types, opts.partition_legacy_name, opts.partition_default_name)
        n_files, rows, size = len(entries), sum(e.file.row_count for e in entries), sum(e.file.file_size
                                                                                        for e in entries)
        common = dict(partition=part, spec=spec, path=path, files=n_files, rows=rows, size=size,
                      values=partition_json(values, keys, types))
        if cfg.strategy == UPDATE_TIME:
            known = [e.file.creation_time for e in entries if e.file.creation_time is not None]
            if not known:
                verdicts.append(PartitionVerdict(**common, time=None, expired=False,
                                                 reason="no file of the partition records its creation time"))
                continue
            newest = LocalDateTime.of_local_millis(max(known))
            exp = before > newest
            verdicts.append(PartitionVerdict(
                **common, time=str(newest), expired=exp,
                reason=(f"last written {newest}, before {before}" if exp else f"last written {newest}, not before "
                        f"{before}")))
            continue
        assert cfg.extractor is not None
        nulls = [k for k, v in zip(keys, values) if v is None and k in used_keys]
        if nulls:
            verdicts.append(PartitionVerdict(
                **common, time=None, expired=False,
                reason=f"partition key {nulls[0]} is null ({opts.partition_default_name}): no time to compare"))
            continue
        text = None
        try:
            texts = [_time_value(v, t) if k in used_keys else "" for k, v, t in zip(keys, values, types)]
            text = cfg.extractor.timestamp_string(keys, texts)
            pt = cfg.extractor.parse(text)
        except PartitionTimeError as e:
            verdicts.append(PartitionVerdict(
                **common, time=None, expired=False, timestamp=text, unparseable=True,
                reason=f"{text!r} does not parse with formatter "
                       f"{cfg.timestamp_formatter or '(default yyyy-MM-dd[ HH:mm:ss])'}: {e}" if text is not None
                else str(e)))
            continue
        exp = before > pt
        verdicts.append(PartitionVerdict(
            **common, time=str(pt), expired=exp, timestamp=text,
            reason=(f"partition time {pt} is before {before}" if exp else
                    f"partition time {pt} is not before {before}")))
    return latest, verdicts, by_part


def _sort_key(v: PartitionVerdict) -> str:
    return ",".join(v.spec.values())  # Paimon sorts on the joined value strings (and never splits them again)


def expirable_partitions(table: FileStoreTable, now_millis: int | None = None, expiration_time: Any = None,
                         strategy: str | None = None, timestamp_formatter: str | None = None,
                         timestamp_pattern: str | None = None, max_expires: int | None = None) -> list[PartitionVerdict]:
    """The partitions a run now would drop (at most `partition.expiration-max-num`, in Paimon's order): what a
    Dagster sensor or asset check asks. Raises like `plan_expire_partitions` on bad options."""
    table = _engine(table)
    cfg = resolve_partition_settings(table, now_millis, expiration_time, strategy, timestamp_formatter,
                                     timestamp_pattern, max_expires)
    _, verdicts, _ = evaluate_partitions(table, cfg)
    return sorted((v for v in verdicts if v.expired), key=_sort_key)[:cfg.max_expires]


# ---------------------------------------------------------------------------------------------- planning
@planner(PartitionExpiryPlan, renamed={"now_millis": "now"})
def plan_expire_partitions(table: FileStoreTable, *, expiration_time: _dt.timedelta | None = None,
                           strategy: str | None = None, timestamp_formatter: str | None = None,
                           timestamp_pattern: str | None = None, max_expires: int | None = None,
                           now: InstantMs | None = None) -> PartitionExpiryPlan:
    """Which partitions expire and why, and the OVERWRITE commit dropping them (see the module docstring)."""
    check_sync(table, "expire_partitions")
    cfg = resolve_partition_settings(table, now, expiration_time, strategy, timestamp_formatter,
                                     timestamp_pattern, max_expires)
    scanner = TableScanner(table)
    latest, verdicts, by_part = evaluate_partitions(table, cfg, scanner)
    b = PlanBuilder()
    plan_pending(b, table)  # first finish what an interrupted run left
    details: dict[str, Any] = cfg.details()
    unparseable = [v for v in verdicts if v.time is None]
    parsed = [v for v in verdicts if v.time is not None]
    if cfg.strategy == VALUES_TIME and unparseable and not parsed:
        with_values = [v for v in unparseable if not v.reason.startswith("partition key")]
        if with_values:  # apache/paimon#7428: a formatter or pattern that matches nothing would keep every partition forever
            v = with_values[0]
            raise _matches_nothing(table, cfg, v, len(with_values))
    expired = sorted((v for v in verdicts if v.expired), key=_sort_key)
    chosen, over = expired[:cfg.max_expires], expired[cfg.max_expires:]
    details.update({
        "partitions_checked": len(verdicts),
        "expired_partitions": [v.to_dict(cfg.zone) for v in chosen],
        "unparseable_partitions": [v.to_dict(cfg.zone) for v in sorted(unparseable, key=_sort_key)],
        "kept": len(verdicts) - len(expired) - len(unparseable),
    })
    if over:
        details["over_limit"] = [dict(v.to_dict(cfg.zone), reason=f"{v.reason}; over partition.expiration-max-num "
                                                          f"({cfg.max_expires}), dropped by the next run")
                                 for v in over]
        b.warn(f"{len(over)} more expired partition(s) over partition.expiration-max-num ({cfg.max_expires}) are "
               "left for the next run")
    for v in unparseable:
        b.warn(f"partition {v.path.rstrip('/')} of {table.identifier} has no time and is never expired: {v.reason}")
    if chosen:
        index = [ie for ie in scanner.index_entries(latest) if ie.partition in {v.partition for v in chosen}]
        b.step("drop expired partitions (one OVERWRITE commit)", PARTITION_DROP,
               partitions=[v.partition.hex() for v in chosen])
        for v in chosen:
            why = (f"partition {v.path.rstrip('/')} expired ({v.reason}); the file stays on disk until snapshot "
                   "expiry reclaims it")
            for e in sorted(by_part[v.partition], key=lambda e: (e.bucket, e.file.level, e.file.file_name)):
                b.add(FileAction(scanner.data_file_path(e.partition, e.bucket, e.file), DATA, why, e.file.file_size))
        for ie in index:
            b.add(FileAction(scanner.index_file_path(ie), INDEX,
                             f"{ie.index_type} index of an expired partition (bucket {ie.bucket})", ie.file_size))
        b.require(PartitionFilesUnchanged(
            tuple((v.partition.hex(), v.path, tuple(sorted((e.bucket, e.file.file_name, e.file.level)
                                                           for e in by_part[v.partition]))) for v in chosen),
            tuple(sorted(ie.file_name for ie in index))))
    return b.build(PartitionExpiryPlan, table, details, base_snapshot=latest.id if latest else None)


def _matches_nothing(table: FileStoreTable, cfg: PartitionExpirySettings, v: PartitionVerdict, n: int) -> Exception:
    """apache/paimon#7428: a formatter / pattern under which no partition has a time (every partition kept forever)."""
    example = f"e.g. {v.path.rstrip('/')} gives {v.timestamp!r}"
    if cfg.timestamp_formatter is not None:
        problem = (f"it parses none of the {n} partition(s) of {table.identifier}, {example} (check the timestamp "
                   "pattern too); nothing was expired")
        if cfg.formatter_given:
            return InvalidArgumentError(f"{arg('timestamp_formatter', cfg.timestamp_formatter)}: {problem}")
        return InvalidOptionError(PARTITION_TIMESTAMP_FORMATTER.key, cfg.timestamp_formatter,
                                  f"a formatter that parses the partition times: {problem}", table.options.where)
    problem = (f"the default formatter (yyyy-MM-dd[ HH:mm:ss]) parses none of the {n} partition(s) of "
               f"{table.identifier}, {example}; set the timestamp formatter (e.g. 'yyyyMMdd'); nothing was expired")
    if cfg.pattern_given:
        return InvalidArgumentError(f"{arg('timestamp_pattern', cfg.timestamp_pattern)}: {problem}")
    if cfg.timestamp_pattern is not None:
        return InvalidOptionError(PARTITION_TIMESTAMP_PATTERN.key, cfg.timestamp_pattern,
                                  f"a pattern giving parseable times: {problem}", table.options.where)
    return InvalidOptionError(PARTITION_TIMESTAMP_FORMATTER.key, None,
                              f"a formatter for partition values that are not yyyy-MM-dd dates: {problem}",
                              table.options.where)


# ---------------------------------------------------------------------------------------------- execution
@register_step(PARTITION_DROP)
def _drop_partitions(ex: Execution, step: Step) -> None:
    """DELETE every live file (and index file) of the planned partitions, exactly as planned, in one OVERWRITE
    snapshot; a partition that gained or lost a file since is a conflict (nothing committed)."""
    table = ex.table
    plan = ex.plan
    parts = {bytes.fromhex(h) for h in step.params["partitions"]}
    scanner = TableScanner(table)
    latest = table.snapshots.latest()
    if latest is None:
        raise StalePlanError(plan.operation, plan.table, ["the table has no snapshot any more"])
    deletes = [e.with_(kind=mf.FileKind.DELETE) for e in scanner.live_entries(latest).values() if e.partition in parts]
    planned = {a.path for a in step.files if a.kind == DATA}
    now = {scanner.data_file_path(e.partition, e.bucket, e.file) for e in deletes}
    if now != planned:
        raise StalePlanError(plan.operation, plan.table, ["the files of an expiring partition changed while the plan "
                                                          "was being applied"])
    index = [ie for ie in scanner.index_entries(latest) if ie.partition in parts]
    changes = CommitChanges(data=tuple(sorted(deletes, key=lambda e: (e.partition, e.bucket, e.file.file_name))),
                            index_deleted=tuple(index), emptied_partitions=tuple(sorted(parts)))
    catalog = catalog_of(table)
    if catalog is not None and catalog.syncs_metastore and table.options.get(METASTORE_PARTITIONED_TABLE):
        # as Java's partition expiry: out of the metastore first (with their .done partitions), then the commit
        schema, opts = table.schema, table.options
        keys = list(schema.partition_keys)
        types = [f.type for f in schema.fields_of(keys)]
        catalog.drop_partitions(table, [partition_spec(scanner.partition_values(p), keys, types,
                                                       opts.partition_legacy_name, opts.partition_default_name)
                                        for p in sorted(parts)])
    snap = FileStoreCommit(table, commit_user=ex.state.get("commit_user"), journal=ex.journal_writes).commit(
        changes, "OVERWRITE", plan.base_snapshot, now_millis=ex.state.get("commit_time_millis"))
    ex.snapshot_id = snap.id
    ex.done += step.files
    ex.details["partitions_dropped"] = len(parts)
    ex.details["files_dropped"] = len(deletes)
    ex.details["rows_dropped"] = sum(e.file.row_count for e in deletes)


__all__ = ["PartitionExpiryPlan", "PartitionFilesUnchanged", "PartitionVerdict", "PartitionExpirySettings",
           "plan_expire_partitions", "expirable_partitions", "evaluate_partitions",
           "resolve_partition_settings", "partition_expiry_due", "check_interval_ms", "partition_local_zone",
           "VALUES_TIME", "UPDATE_TIME", "PARTITION_DROP"]
