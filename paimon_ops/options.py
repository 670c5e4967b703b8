"""The options catalogue: every table option paimon-ops reads — Paimon's own (Java `CoreOptions`) and paimon-ops'
— declared once here with its type, default, fallback keys, validation and a one-line doc. Reads go only through it:
`table.options.get(SNAPSHOT_NUM_RETAINED_MIN)` returns the typed, validated value (else the default); a bad value
fails with one line naming the option and the table. The docs' options reference (docs/reference/options.md) is
generated from `CATALOGUE` (`render_readme_tables`, checked by tests/core/test_options.py).

Paimon durations look like `1 h`, `30 min`, `1 d`, `500 ms`, `PT1H`; memory sizes like `128 mb`, `2 MiB`; enum
values match as Java's `OptionsUtils.convertToEnum` does (the value's text, ignoring case: `aggregation`, not
`aggregate` or `partial_update`).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Callable, Generic, Mapping, TypeVar

from paimon_ops.errors import InvalidOptionError

_DURATION_UNITS = {
    "ns": 1e-9, "nano": 1e-9, "nanos": 1e-9, "nanosecond": 1e-9, "nanoseconds": 1e-9,
    "us": 1e-6, "µs": 1e-6, "micro": 1e-6, "micros": 1e-6, "microsecond": 1e-6, "microseconds": 1e-6,
    "ms": 1e-3, "milli": 1e-3, "millis": 1e-3, "millisecond": 1e-3, "milliseconds": 1e-3,
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
    "min": 60, "m": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
}
_MEMORY_UNITS = {
    "": 1, "b": 1, "bytes": 1,
    "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "kibibytes": 1 << 10,
    "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20, "mebibytes": 1 << 20,
    "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "gibibytes": 1 << 30,
    "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40, "tebibytes": 1 << 40,
}
_NUM_UNIT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Zµ]*)\s*$")
_ISO_DURATION = re.compile(
    r"^P(?:(?P<d>\d+(?:\.\d+)?)D)?(?:T(?:(?P<h>\d+(?:\.\d+)?)H)?(?:(?P<m>\d+(?:\.\d+)?)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?$",
    re.IGNORECASE,
)


def parse_duration(text: str, name: str = "duration") -> timedelta:
    """Parse a Paimon/Flink duration; a bare number means milliseconds (as Flink's TimeUtils does)."""
    try:
        return _parse_duration(text, name)
    except (OverflowError, ValueError) as e:
        if isinstance(e, InvalidOptionError):
            raise
        raise InvalidOptionError(name, text, "a duration of at most 999999999 days") from None


def _parse_duration(text: str, name: str) -> timedelta:
    s = str(text).strip()
    iso = _ISO_DURATION.match(s)
    if iso and s.upper() != "P":
        d, h, mins, sec = (float(iso.group(k) or 0) for k in ("d", "h", "m", "s"))
        return timedelta(days=d, hours=h, minutes=mins, seconds=sec)
    num = _NUM_UNIT.match(s)
    if not num:
        raise InvalidOptionError(name, text, "a duration such as '1 h', '30 min', '1 d' or '500 ms'")
    unit = num.group(2).lower()
    if unit == "":
        return timedelta(milliseconds=float(num.group(1)))
    if unit not in _DURATION_UNITS:
        raise InvalidOptionError(name, text, f"a duration; unknown unit {num.group(2)!r}")
    return timedelta(seconds=float(num.group(1)) * _DURATION_UNITS[unit])


def looks_like_duration(text: str) -> bool:
    """True for a Paimon duration ('3 d', 'PT1H'), not for plain digits (epoch ms) or an ISO instant."""
    s = str(text).strip()
    if s.lstrip("-").isdigit():
        return False
    m = _NUM_UNIT.match(s)
    return bool(m and m.group(2)) or bool(_ISO_DURATION.match(s) and s.upper() != "P")


def parse_memory(text: str, name: str = "memory size") -> int:
    m = _NUM_UNIT.match(str(text))
    if not m or m.group(2).lower() not in _MEMORY_UNITS:
        raise InvalidOptionError(name, text, "a memory size such as '128 mb' or '2 gb'")
    return int(float(m.group(1)) * _MEMORY_UNITS[m.group(2).lower()])


def format_duration(td: timedelta) -> str:
    ms = int(td.total_seconds() * 1000)
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms and ms % size == 0:
            return f"{ms // size} {unit}"
    return f"{ms} ms"


# ---------------------------------------------------------------------------------------------------- declarations
INT, FLOAT, BOOL, STR, DURATION, MEMORY, ENUM, LIST = "int", "float", "bool", "str", "duration", "memory", "enum", "list"
INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
RATIO = "a ratio within [0, 1]"

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

# Sections of the options reference's tables, in order.
SECTIONS = {
    "snapshots": "Snapshot, changelog and consumer expiry",
    "tags": "Tags",
    "partitions": "Partition expiry",
    "compaction": "Compaction",
    "merge": "Merge engines and changelog",
    "files": "Buckets, files and formats",
    "commit": "Commits and manifests",
    "execution": "Execution",
    "catalog": "Catalogs (catalog options: `-o KEY=VALUE`, `po.Catalog(warehouse, options=…)`, not table options)",
    "features": "Detected features (paimon-ops limits or refuses operations on them)",
}


@dataclass(frozen=True)
class Option(Generic[T_co]):
    """One table option. `default` is the value when the option (and each fallback key) is unset; None: no value
    (the reader derives one, see `default_doc`)."""

    key: str
    kind: str
    default: T_co
    doc: str
    section: str
    fallback_keys: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()           # ENUM: the values (Java's enum `toString`s)
    minimum: float | None = None
    maximum: float | None = None
    check: Callable[[Any], bool] | None = field(default=None, compare=False)  # further validation
    expected: str = ""                      # what `check` wants, for its error
    ours: bool = False                      # paimon-ops' own option (Java Paimon ignores it)
    default_doc: str | None = None          # the docs' default when it is derived (None: from `default`)
    paimon_defaults: tuple[tuple[str, str], ...] = ()  # (Paimon version, its default) where it differs from ours
    affects_files: bool = False             # decides how files are read or where they are (a saved plan may not
                                            # override it)
    schema_defaults: tuple[tuple[int, str], ...] = ()  # (up to schema version, value) Java fills in on read

    def __post_init__(self) -> None:
        if self.section not in SECTIONS:
            raise InvalidOptionError(self.key, self.section, "a known section of the catalogue")

    @property
    def keys(self) -> tuple[str, ...]:
        return (self.key, *self.fallback_keys)

    def parse(self, text: object, where: str = "", key: str | None = None) -> T_co:
        """The typed value of `text` given for this option (under `key`: the key it was set with); a bad value
        raises InvalidOptionError naming the option and `where` (the table)."""
        name = key or self.key
        s = str(text).strip()
        value: Any
        k = self.kind
        try:
            if k == INT:
                value = int(s)
            elif k == FLOAT:
                value = float(s)
                if not math.isfinite(value):  # 'nan', 'inf': no option takes them
                    raise InvalidOptionError(name, text, self.kind_text, where)
            elif k == BOOL:
                if s.lower() not in ("true", "false"):
                    raise InvalidOptionError(name, text, "true or false", where)
                value = s.lower() == "true"
            elif k == DURATION:
                value = parse_duration(s, name)
            elif k == MEMORY:
                value = parse_memory(s, name)
            elif k == ENUM:
                by_lower = {c.lower(): c for c in self.choices}
                if s.lower() not in by_lower:
                    raise InvalidOptionError(name, text, self.expected or self.kind_text, where)
                value = by_lower[s.lower()]
            elif k == LIST:
                value = tuple(p.strip() for p in s.split(",") if p.strip())
            else:
                value = str(text)
        except InvalidOptionError as e:
            raise InvalidOptionError(name, text, e.expected, where) from None
        except ValueError:  # not of the option's type
            raise InvalidOptionError(name, text, self.kind_text, where) from None
        if self.minimum is not None and value < self.minimum or self.maximum is not None and value > self.maximum:
            raise InvalidOptionError(name, text, self.expected or self.what, where)
        if self.check is not None and not self.check(value):
            raise InvalidOptionError(name, text, self.expected or self.what, where)
        return value

    @property
    def kind_text(self) -> str:
        """The values of its type, for errors."""
        return {INT: "an integer", FLOAT: "a number", BOOL: "true or false",
                DURATION: "a duration such as '1 h', '30 min', '1 d'", MEMORY: "a memory size such as '128 mb'",
                ENUM: "one of " + ", ".join(self.choices), LIST: "a comma-separated list", STR: "text"}[self.kind]

    @property
    def what(self) -> str:
        """The values it takes, for errors."""
        base = self.kind_text
        if self.minimum is not None and self.maximum is not None:
            return f"{base} within [{self.minimum:g}, {self.maximum:g}]"
        if self.minimum is not None:
            return f"{base} >= {self.minimum:g}"
        return base

    @property
    def default_text(self) -> str:
        """The default as the options reference shows it."""
        if self.default_doc is not None:
            return self.default_doc
        d: Any = self.default
        if d is None or d == ():
            return "—"
        if isinstance(d, bool):
            return "true" if d else "false"
        if isinstance(d, timedelta):
            return format_duration(d)
        if self.kind == MEMORY:
            return _format_memory(d)
        if d == INT_MAX:
            return "2147483647 (no limit)"
        if d == LONG_MAX:
            return "9223372036854775807 (no limit)"
        return str(d)


def _format_memory(n: int) -> str:
    for unit, size in (("gb", 1 << 30), ("mb", 1 << 20), ("kb", 1 << 10)):
        if n and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} b"


def _bucket_ok(n: int) -> bool:
    return n in (-1, -2) or n > 0


# --------------------------------------------------------------------------------------- snapshots and consumers
SNAPSHOT_NUM_RETAINED_MIN = Option("snapshot.num-retained.min", INT, 10, "always keep at least this many snapshots",
                                   "snapshots", minimum=1,
                                   expected="at least 1: with 0 the latest snapshot's files would be deleted while "
                                            "its metadata stays (apache/paimon#10088)")
SNAPSHOT_NUM_RETAINED_MAX = Option("snapshot.num-retained.max", INT, INT_MAX,  # >= the minimum: checked by expiry
                                   "never keep more snapshots than this", "snapshots")
SNAPSHOT_TIME_RETAINED = Option("snapshot.time-retained", DURATION, timedelta(hours=1),
                                "snapshots younger than this are kept (between the min and max counts)", "snapshots")
SNAPSHOT_EXPIRE_LIMIT = Option("snapshot.expire.limit", INT, 50, "expire at most this many snapshots per run",
                               "snapshots", minimum=1, expected="at least 1", paimon_defaults=(("0.9", "10"),))
SNAPSHOT_CLEAN_EMPTY_DIRECTORIES = Option("snapshot.clean-empty-directories", BOOL, False,
                                          "remove partition and bucket directories expiry leaves empty", "snapshots",
                                          fallback_keys=("snapshot.expire.clean-empty-directories",))
SNAPSHOT_EXPIRABLE_THRESHOLD: Option[int | None] = Option(
    "snapshot.expirable-threshold", INT, None, "expirable snapshots at which the snapshot sensor / check asks for "
    "expiry", "snapshots", ours=True, minimum=1, default_doc="`snapshot.expire.limit`")
CHANGELOG_NUM_RETAINED_MIN: Option[int | None] = Option(
    "changelog.num-retained.min", INT, None, "always keep at least this many changelogs (decoupled from snapshots)",
    "snapshots", minimum=1, default_doc="`snapshot.num-retained.min`")
CHANGELOG_NUM_RETAINED_MAX: Option[int | None] = Option(
    "changelog.num-retained.max", INT, None, "never keep more changelogs than this", "snapshots", minimum=1,
    default_doc="`snapshot.num-retained.max`")
CHANGELOG_TIME_RETAINED: Option[timedelta | None] = Option(
    "changelog.time-retained", DURATION, None, "changelogs younger than this are kept", "snapshots",
    default_doc="`snapshot.time-retained`")
CONSUMER_EXPIRATION_TIME: Option[timedelta | None] = Option(
    "consumer.expiration-time", DURATION, None, "consumers idle longer than this stop protecting snapshots",
    "snapshots", default_doc="— (consumers never expire)")
CONSUMER_CHANGELOG_ONLY = Option("consumer.changelog-only", BOOL, False,
                                 "consumers protect only changelogs, not snapshots", "snapshots")

# --------------------------------------------------------------------------------------------------------- tags
TAG_AUTOMATIC_CREATION = Option("tag.automatic-creation", ENUM, "none", "Paimon's automatic tags",
                                "tags",
                                choices=("none", "process-time", "watermark", "batch"))
TAG_CREATION_PERIOD = Option("tag.creation-period", ENUM, "daily", "the period of automatic tags", "tags",
                             choices=("daily", "hourly", "two-hours"))
TAG_CREATION_PERIOD_DURATION: Option[timedelta | None] = Option(
    "tag.creation-period-duration", DURATION, None, "a custom tag period (overrides tag.creation-period)", "tags")
TAG_CREATION_DELAY = Option("tag.creation-delay", DURATION, timedelta(0),
                            "create a period's tag this long after the period ends", "tags")
TAG_PERIOD_FORMATTER = Option("tag.period-formatter", ENUM, "with_dashes", "how tag names spell the period", "tags",
                              choices=("with_dashes", "without_dashes", "without_dashes_and_spaces"))
TAG_NUM_RETAINED_MAX: Option[int | None] = Option(
    "tag.num-retained-max", INT, None, "keep at most this many automatic tags", "tags", minimum=1)
TAG_DEFAULT_TIME_RETAINED: Option[timedelta | None] = Option(
    "tag.default-time-retained", DURATION, None, "the retention of tags created without one", "tags",
    check=lambda td: td > timedelta(0), expected="a positive duration")
TAG_AUTOMATIC_COMPLETION = Option("tag.automatic-completion", BOOL, False,
                                  "also create the tags of past periods that were missed", "tags")
TAG_TIME_EXPIRE_ENABLED = Option("tag.time-expire-enabled", BOOL, True,
                                 "tags with a retention expire when it has passed", "tags")
TAG_BATCH_CUSTOMIZED_NAME: Option[str | None] = Option(
    "tag.batch.customized-name", STR, None, "the tag name of tag.automatic-creation = batch", "tags")
TAG_CREATE_TIME: Option[str | None] = Option(
    "tag.create-time", STR, None, "`HH:mm`: daily tags; the tag of day D is created at D+1 `HH:mm`", "tags",
    ours=True)
TAG_CREATE_TIME_ZONE: Option[str | None] = Option(
    "tag.create-time-zone", STR, None, "IANA zone of `tag.create-time` and of the day boundaries", "tags", ours=True,
    default_doc="`UTC` (or `sink.process-time-zone`)")
TAG_CREATE_INTERVAL = Option("tag.create-interval", DURATION, timedelta(days=1), "whole days per tag period "
                             "(with `tag.create-time`)", "tags", ours=True,
                             check=lambda td: td >= timedelta(days=1) and not td % timedelta(days=1),
                             expected="a whole number of days such as '1 d' or '7 d'")
TAG_CREATE_MAX_DELAY: Option[timedelta | None] = Option(
    "tag.create-max-delay", DURATION, None, "never tag a snapshot later than this past the period end", "tags",
    ours=True, default_doc="one period",
    check=lambda td: td >= timedelta(0), expected="a duration >= 0")
METASTORE_TAG_TO_PARTITION: Option[str | None] = Option(
    "metastore.tag-to-partition", STR, None, "tags are partitions of this key in the metastore: creating and deleting "
    "a tag adds and drops its partition there (Hive catalog); refused without one (see `metastore.allow-out-of-sync`)",
    "tags")
SINK_PROCESS_TIME_ZONE: Option[str | None] = Option(
    "sink.process-time-zone", STR, None, "the zone whose wall clock `now` is read in (Java: the JVM's zone)", "tags",
    default_doc="`UTC`")
SINK_WATERMARK_TIME_ZONE = Option("sink.watermark-time-zone", STR, "UTC",
                                  "the zone of watermark-driven automatic tags", "tags")

# --------------------------------------------------------------------------------------------------- partitions
PARTITION_EXPIRATION_TIME: Option[timedelta | None] = Option(
    "partition.expiration-time", DURATION, None, "partitions older than this expire (`--expiration-time`)",
    "partitions")
PARTITION_EXPIRATION_STRATEGY = Option(
    "partition.expiration-strategy", ENUM, "values-time", "`values-time`: the time in the partition values; "
    "`update-time`: the newest file's creation time", "partitions", choices=("values-time", "update-time"))
PARTITION_TIMESTAMP_PATTERN: Option[str | None] = Option(
    "partition.timestamp-pattern", STR, None, "how values make the time string, e.g. `$dt $hour:00:00` "
    "(longest key first)", "partitions", default_doc="the first partition value")
PARTITION_TIMESTAMP_FORMATTER: Option[str | None] = Option(
    "partition.timestamp-formatter", STR, None, "Java DateTimeFormatter pattern (numeric fields "
    "`y u M d D H k K h m s S n`, quotes, `[optional]`); text fields are refused", "partitions",
    default_doc="`yyyy-MM-dd[ HH:mm:ss[.S]]`, lenient")
PARTITION_EXPIRATION_MAX_NUM = Option(
    "partition.expiration-max-num", INT, 100, "at most this many partitions per run, in the order of their joined "
    "values", "partitions", minimum=1, paimon_defaults=(("0.9", "no limit"),))
PARTITION_EXPIRATION_CHECK_INTERVAL = Option(
    "partition.expiration-check-interval", DURATION, timedelta(hours=1), "how often writers check; "
    "`partition_expiry_due(table, last_check, now)` lets a scheduler honour it (an explicit run always checks)",
    "partitions")
METASTORE_PARTITIONED_TABLE = Option("metastore.partitioned-table", BOOL, False,
                                     "partitions are registered in the metastore: partition expiry drops them there "
                                     "(Hive catalog) and is refused without one (see `metastore.allow-out-of-sync`)",
                                     "partitions")
PARTITION_DEFAULT_NAME = Option("partition.default-name", STR, "__DEFAULT_PARTITION__",
                                "the partition value standing for null", "partitions", affects_files=True)
PARTITION_LEGACY_NAME = Option("partition.legacy-name", BOOL, True,
                               "partition directories spell values as Paimon 0.x did", "partitions",
                               affects_files=True)
# Java's PartitionMarkDoneAction kinds (Paimon 0.9: success-file, done-partition, mark-event; later: http-report,
# custom); paimon-ops does all but custom (a Java class).
MARK_DONE_ACTIONS = ("success-file", "done-partition", "mark-event", "http-report", "custom")
PARTITION_MARK_DONE_ACTION: Option[tuple[str, ...]] = Option(
    "partition.mark-done-action", LIST, ("success-file",), "how `mark-partition-done` tells downstream jobs a partition "
    "is complete: `success-file` (a `_SUCCESS` file in its directory), `done-partition` (a `<value>.done` partition in "
    "the Hive Metastore), `mark-event` (a metastore LOAD_DONE event), `http-report` (a POST to "
    "`partition.mark-done-action.http.url`); comma-separated", "partitions", default_doc="`success-file`",
    check=lambda v: bool(v) and all(a in MARK_DONE_ACTIONS for a in v),
    expected="comma-separated actions of " + ", ".join(MARK_DONE_ACTIONS))
PARTITION_MARK_DONE_ACTION_URL: Option[str | None] = Option(
    "partition.mark-done-action.http.url", STR, None, "where the `http-report` action POSTs each partition marked "
    "done", "partitions")
PARTITION_MARK_DONE_ACTION_PARAMS: Option[str | None] = Option(
    "partition.mark-done-action.http.params", STR, None, "the `params` the `http-report` action sends", "partitions")
PARTITION_MARK_DONE_CUSTOM_CLASS: Option[str | None] = Option(
    "partition.mark-done-action.custom.class", STR, None, "Java's `custom` action class (a Java class: `custom` is "
    "refused)", "partitions")

# --------------------------------------------------------------------------------------------------- compaction
NUM_SORTED_RUN_COMPACTION_TRIGGER = Option("num-sorted-run.compaction-trigger", INT, 5,
                                           "sorted runs at which a primary-key bucket is compacted", "compaction",
                                           minimum=1)
NUM_LEVELS: Option[int | None] = Option("num-levels", INT, None, "LSM levels of a primary-key bucket", "compaction",
                                        minimum=2, default_doc="`num-sorted-run.compaction-trigger` + 1")
COMPACTION_MIN_FILE_NUM = Option("compaction.min.file-num", INT, 5, "small files of an append bucket worth a "
                                 "compaction", "compaction", minimum=1)
COMPACTION_SMALL_FILE_RATIO = Option("compaction.small-file-ratio", FLOAT, 0.7, "a file smaller than this share of "
                                     "target-file-size is small", "compaction", minimum=0, maximum=1,
                                     expected=RATIO)
COMPACTION_FORCE_REWRITE_ALL_FILES = Option("compaction.force-rewrite-all-files", BOOL, False,
                                            "full compaction rewrites every file, large ones too", "compaction")
COMPACTION_DELETE_RATIO_THRESHOLD = Option("compaction.delete-ratio-threshold", FLOAT, 0.2,
                                           "rewrite files whose deleted-row ratio passes it", "compaction",
                                           minimum=0, maximum=1, expected=RATIO)
COMPACTION_DV_RATIO_THRESHOLD = Option("compaction.dv-ratio-threshold", FLOAT, 0.2, "dv-ratio compaction rewrites "
                                       "files whose deleted-row ratio passes it", "compaction", ours=True,
                                       fallback_keys=("compaction.delete-ratio-threshold",), minimum=0, maximum=1,
                                       expected=RATIO, default_doc="`compaction.delete-ratio-threshold`, else 0.2")
COMPACTION_SMALL_FILES_THRESHOLD: Option[int | None] = Option(
    "compaction.small-files-threshold", INT, None, "small-file / level-0 sensor and check threshold per bucket",
    "compaction", ours=True, default_doc="`num-sorted-run.compaction-trigger` (primary key), "
    "`compaction.min.file-num` (append)")
COMPACTION_MEMORY_BUDGET: Option[int | None] = Option(
    "compaction.memory-budget", MEMORY, None, "bound the memory of one bucket's merge", "compaction", ours=True)
COMPACTION_SIZE_RATIO = Option("compaction.size-ratio", INT, 1, "universal compaction: size ratio (%) of runs "
                               "picked together", "compaction")
COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT = Option("compaction.max-size-amplification-percent", INT, 200,
                                                   "universal compaction: size amplification that triggers a full "
                                                   "compaction", "compaction")
COMPACTION_OFFPEAK_START_HOUR = Option("compaction.offpeak.start.hour", INT, -1, "off-peak hours start (-1: none)",
                                       "compaction")
COMPACTION_OFFPEAK_END_HOUR = Option("compaction.offpeak.end.hour", INT, -1, "off-peak hours end (-1: none)",
                                     "compaction")
COMPACTION_OFFPEAK_RATIO = Option("compaction.offpeak-ratio", INT, 0, "size ratio (%) added during off-peak hours",
                                  "compaction")
COMPACTION_FORCE_UP_LEVEL_0 = Option("compaction.force-up-level-0", BOOL, False,
                                     "every compaction moves level-0 files up", "compaction")
COMPACTION_OPTIMIZATION_INTERVAL: Option[timedelta | None] = Option(
    "compaction.optimization-interval", DURATION, None, "a full compaction at least this often", "compaction")
COMPACTION_TOTAL_SIZE_THRESHOLD: Option[int | None] = Option(
    "compaction.total-size-threshold", MEMORY, None, "full compaction when a bucket is smaller than this",
    "compaction")
COMPACTION_INCREMENTAL_SIZE_THRESHOLD: Option[int | None] = Option(
    "compaction.incremental-size-threshold", MEMORY, None, "full compaction when level 0 is larger than this",
    "compaction")
LOOKUP_COMPACT = Option("lookup-compact", ENUM, "radical", "lookup compaction: radical or gentle", "compaction",
                        choices=("radical", "gentle"))
LOOKUP_COMPACT_MAX_INTERVAL: Option[int | None] = Option(
    "lookup-compact.max-interval", INT, None, "gentle lookup compaction: at most this many triggers between "
    "level-0 compactions", "compaction", minimum=1, default_doc="2 × `num-sorted-run.compaction-trigger`")
ZORDER_VAR_LENGTH_CONTRIBUTION = Option("zorder.var-length-contribution", INT, 8,
                                        "bytes a variable-length column contributes to a z-order key", "compaction",
                                        minimum=1)
POSTPONE_DEFAULT_BUCKET_NUM = Option("postpone.default-bucket-num", INT, 1, "buckets of a postpone partition's "
                                     "first compaction", "compaction", minimum=1, expected="a positive integer",
                                     paimon_defaults=(("master", "unset: estimated from the target row count or "
                                                                 "file size"),))
POSTPONE_TARGET_ROW_NUM_PER_BUCKET: Option[int | None] = Option(
    "postpone.target-row-num-per-bucket", INT, None, "rows per bucket that decide a postpone partition's bucket "
    "count", "compaction", minimum=1)
WRITE_BUFFER_SIZE = Option("write-buffer-size", MEMORY, 256 << 20, "rows sorted in memory before a spill",
                           "compaction")
SOURCE_SPLIT_OPEN_FILE_COST = Option("source.split.open-file-cost", MEMORY, 4 << 20,
                                     "the cost of opening a file, counted when packing small files", "compaction")

# ------------------------------------------------------------------------------------------- merge and changelog
MERGE_ENGINE = Option("merge-engine", ENUM, "deduplicate", "how rows of one key merge", "merge",
                      choices=("deduplicate", "partial-update", "aggregation", "first-row"), affects_files=True)
SEQUENCE_FIELD: Option[tuple[str, ...]] = Option("sequence.field", LIST, (), "the columns ordering rows of one key", "merge",
                        affects_files=True)
SEQUENCE_FIELD_SORT_ORDER = Option("sequence.field.sort-order", ENUM, "ascending", "the order of sequence fields",
                                   "merge", choices=("ascending", "descending"), expected="ascending or descending")
IGNORE_DELETE = Option("ignore-delete", BOOL, False, "DELETE rows are dropped", "merge",
                       fallback_keys=("first-row.ignore-delete", "deduplicate.ignore-delete",
                                      "partial-update.ignore-delete"), affects_files=True)
FORCE_LOOKUP = Option("force-lookup", BOOL, False, "compact with lookup even without a lookup changelog", "merge")
PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE = Option("partial-update.remove-record-on-delete", BOOL, False,
                                                "partial-update: a DELETE removes the row", "merge",
                                                affects_files=True)
PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP: Option[tuple[str, ...]] = Option(
    "partial-update.remove-record-on-sequence-group", LIST, (), "partial-update: a DELETE of these sequence groups "
    "removes the row", "merge")
AGGREGATION_REMOVE_RECORD_ON_DELETE = Option("aggregation.remove-record-on-delete", BOOL, False,
                                             "aggregation: a DELETE removes the row", "merge", affects_files=True)
FIELDS_DEFAULT_AGGREGATE_FUNCTION: Option[str | None] = Option(
    "fields.default-aggregate-function", STR, None, "the aggregate function of columns without their own", "merge")
DELETION_VECTORS_ENABLED = Option("deletion-vectors.enabled", BOOL, False, "deleted rows are marked in deletion "
                                  "vectors", "merge", affects_files=True)
DELETION_VECTORS_BITMAP64 = Option("deletion-vectors.bitmap64", BOOL, False, "deletion vectors use 64-bit bitmaps",
                                   "merge", affects_files=True)
DELETION_VECTORS_MERGE_ON_READ = Option("deletion-vectors.merge-on-read", BOOL, False,
                                        "readers merge levels despite deletion vectors", "merge")
CHANGELOG_PRODUCER = Option("changelog-producer", ENUM, "none", "how changelog files are produced", "merge",
                            choices=("none", "input", "full-compaction", "lookup"), affects_files=True)
CHANGELOG_PRODUCER_ROW_DEDUPLICATE = Option("changelog-producer.row-deduplicate", BOOL, False,
                                            "no changelog for an update that changes nothing", "merge")
CHANGELOG_PRODUCER_ROW_DEDUPLICATE_IGNORE_FIELDS = Option(
    "changelog-producer.row-deduplicate-ignore-fields", LIST, (), "columns row deduplication ignores", "merge")

# ------------------------------------------------------------------------------------- buckets, files, formats
BUCKET = Option("bucket", INT, -1, "buckets per partition: -1 dynamic / unaware, -2 postpone", "files",
                check=_bucket_ok, expected="-1 (dynamic or unaware), -2 (postpone) or a positive bucket count",
                affects_files=True, schema_defaults=((1, "1"),), paimon_defaults=(("schema version 1", "1"),))
BUCKET_KEY: Option[tuple[str, ...]] = Option("bucket-key", LIST, (), "the columns hashed to a bucket", "files", affects_files=True,
                    default_doc="the primary key")
BUCKET_FUNCTION_TYPE = Option("bucket-function.type", STR, "default", "how a bucket is computed from the key",
                              "files")
PRIMARY_KEY: Option[tuple[str, ...]] = Option("primary-key", LIST, (), "primary key columns (schema options)", "files", affects_files=True)
PARTITION: Option[tuple[str, ...]] = Option("partition", LIST, (), "partition columns (schema options)", "files", affects_files=True)
PATH: Option[str | None] = Option("path", STR, None, "the table's directory", "files", affects_files=True)
FILE_FORMAT = Option("file.format", STR, "parquet", "the data file format", "files", affects_files=True,
                     schema_defaults=((2, "orc"),), paimon_defaults=(("schema version ≤ 2", "orc"),))
FILE_COMPRESSION = Option("file.compression", STR, "zstd", "the data files' compression", "files")
FILE_COMPRESSION_ZSTD_LEVEL = Option("file.compression.zstd-level", INT, 1, "the zstd level", "files")
AVRO_CODEC = Option("avro.codec", STR, "zstd", "Avro data files' codec", "files",
                    fallback_keys=("file.compression",), default_doc="`file.compression`")
ORC_COMPRESS = Option("orc.compress", STR, "zstd", "ORC data files' compression", "files",
                      fallback_keys=("file.compression",), default_doc="`file.compression`")
PARQUET_BLOCK_SIZE = Option("parquet.block.size", MEMORY, 128 << 20, "Parquet row group size", "files")
PARQUET_PAGE_SIZE = Option("parquet.page.size", MEMORY, 1 << 20, "Parquet page size", "files")
ORC_STRIPE_SIZE = Option("orc.stripe.size", MEMORY, 64 << 20, "ORC stripe size", "files")
TARGET_FILE_SIZE: Option[int | None] = Option("target-file-size", MEMORY, None, "the size files are rolled at",
                                              "files", default_doc="128 mb (primary key), 256 mb (append)")
TARGET_FILE_ROW_NUM = Option("target-file-row-num", INT, LONG_MAX, "the rows files are rolled at", "files",
                             minimum=1)


def _name_prefix(text: str) -> bool:
    """A file name prefix stays within the file name: '../x-' or 'sub/' would put files beside or below their
    bucket directory, under names no reader accepts."""
    return "/" not in text and "\\" not in text and text.isprintable()


DATA_FILE_PREFIX = Option("data-file.prefix", STR, "data-", "data file names start with it", "files",
                          affects_files=True, check=_name_prefix, expected="a file name prefix (no '/' or '\\')")
CHANGELOG_FILE_PREFIX = Option("changelog-file.prefix", STR, "changelog-", "changelog file names start with it",
                               "files", affects_files=True, check=_name_prefix,
                               expected="a file name prefix (no '/' or '\\')")
DATA_FILE_PATH_DIRECTORY: Option[str | None] = Option(
    "data-file.path-directory", STR, None, "data files live in this subdirectory", "files", affects_files=True)
DATA_FILE_EXTERNAL_PATHS: Option[tuple[str, ...]] = Option(
    "data-file.external-paths", LIST, (), "roots for data files outside the table directory", "files",
    affects_files=True)
DATA_FILE_EXTERNAL_PATHS_STRATEGY = Option(
    "data-file.external-paths.strategy", ENUM, "none", "how new data files pick an external root", "files",
    choices=("none", "round-robin", "specific-fs", "entropy-inject", "weight-robin"), affects_files=True)
DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS: Option[str | None] = Option(
    "data-file.external-paths.specific-fs", STR, None, "the file system scheme of strategy specific-fs", "files")
DATA_FILE_THIN_MODE = Option("data-file.thin-mode", BOOL, False, "primary-key data files omit the key columns",
                             "files")
INDEX_FILE_IN_DATA_FILE_DIR = Option("index-file-in-data-file-dir", BOOL, False, "index files live beside the data "
                                     "files", "files", affects_files=True)
FILE_INDEX_IN_MANIFEST_THRESHOLD = Option("file-index.in-manifest-threshold", MEMORY, 500, "a data file's index up to "
                                          "this size is kept in its manifest entry, a larger one in a `.index` file "
                                          "beside it (rewrite-file-index)", "files")
FILE_INDEX_BLOOM_FILTER_COLUMNS: Option[tuple[str, ...]] = Option(
    "file-index.bloom-filter.columns", LIST, (), "columns with a bloom-filter file index (sized per column by the "
    "options items and fpp under file-index.bloom-filter.COLUMN)", "files")
FILE_INDEX_BITMAP_COLUMNS: Option[tuple[str, ...]] = Option(
    "file-index.bitmap.columns", LIST, (), "columns with a bitmap file index", "files")
FILE_INDEX_PREFIX = "file-index."  # file-index.<type>.columns, file-index.<type>.<column>.<option> (Java FileIndexOptions)
METADATA_STATS_MODE = Option("metadata.stats-mode", STR, "truncate(16)", "column statistics: none, counts, "
                             "truncate(N) or full", "files")
METADATA_STATS_DENSE_STORE = Option("metadata.stats-dense-store", BOOL, True, "statistics list only their columns",
                                    "files")
METADATA_STATS_KEEP_FIRST_N_COLUMNS = Option("metadata.stats-keep-first-n-columns", INT, -1,
                                             "statistics of the first N columns only (-1: all)", "files")

# --------------------------------------------------------------------------------------- commits and manifests
COMMIT_MAX_RETRIES = Option("commit.max-retries", INT, 10, "retries of a commit that lost a race", "commit",
                            minimum=0)
COMMIT_OBJECT_STORE_UNSAFE_LOCK: Option[str | None] = Option(
    "commit.object-store.unsafe-lock", STR, None, "`external`: commit on a store without conditional put (see "
    "Object stores); only if an external lock guarantees a single committer", "commit", ours=True)
MANIFEST_COMPRESSION = Option("manifest.compression", STR, "zstd", "manifests' Avro codec", "commit")
MANIFEST_TARGET_FILE_SIZE = Option("manifest.target-file-size", MEMORY, 8 << 20, "size of merged manifests; leading "
                                   "manifests at least this large and without DELETE entries are kept", "commit")
MANIFEST_MERGE_MIN_COUNT = Option("manifest.merge-min-count", INT, 30, "manifests a commit merges at", "commit",
                                  minimum=1)
MANIFEST_COMPACTION_TRIGGER = Option("manifest.compaction-trigger", INT, 30, "manifests in the latest snapshot at "
                                     "which the manifest sensor / check asks for `compact-manifests`", "commit",
                                     ours=True, fallback_keys=("manifest.merge-min-count",), minimum=1,
                                     default_doc="`manifest.merge-min-count`, else 30")

# ---------------------------------------------------------------------------------------------------- execution
EXECUTION_LOCAL_MAX_INPUT_SIZE = Option("execution.local.max-input-size", MEMORY, 8 << 30,
                                        "plans reading more than this run on Spark by default", "execution",
                                        ours=True)
EXECUTION_LOCAL_MAX_TASKS = Option("execution.local.max-tasks", INT, 1024,
                                   "plans with more tasks than this run on Spark by default", "execution", ours=True,
                                   minimum=1)
# One process plans 10 M manifest entries (~10,000 manifests of 1,000) within 2 GiB, so that is where Spark starts;
# 2 M files is what a driver deletes in well under a minute on a local disk and holds in a few hundred MiB.
EXECUTION_LOCAL_MAX_MANIFESTS = Option("execution.local.max-manifests", INT, 10_000,
                                       "expiry / orphan removal of a table with more files in manifest/ than this "
                                       "read manifests, diff the live set and delete on Spark by default", "execution",
                                       ours=True, minimum=1)
EXECUTION_LOCAL_MAX_FILES = Option("execution.local.max-files", INT, 2_000_000,
                                   "orphan removal listing (expiry deleting) more files than this runs on Spark by "
                                   "default", "execution", ours=True, minimum=1)
FILE_OPERATION_THREAD_NUM: Option[int | None] = Option(
    "file-operation.thread-num", INT, None, "threads deleting a phase's files at once on local and HDFS-like file "
    "systems (object stores: `s3.delete.concurrency`)", "execution", fallback_keys=("delete-file.thread-num",),
    minimum=1, default_doc="8", paimon_defaults=(("0.9", "the CPU count"),))

# ------------------------------------------------------------------------------------------------------ catalogs
# Catalog options (Java's CatalogOptions, JdbcCatalogOptions, RESTCatalogOptions): they configure where tables live
# and how commits are made (paimon_ops.catalog), not a table. Read from the catalog's options, never a table's.
METASTORE = Option("metastore", ENUM, "filesystem", "where tables are registered: `filesystem` (the warehouse "
                   "directory), `hive` (a Hive Metastore), `jdbc` (a database), `rest` (a REST catalog server)",
                   "catalog", choices=("filesystem", "hive", "jdbc", "rest"))
CATALOG_URI: Option[str | None] = Option(
    "uri", STR, None, "the metastore: `thrift://host:9083` (hive), `jdbc:sqlite:/path/db`, "
    "`jdbc:postgresql://host:5432/db`, `jdbc:mysql://host:3306/db` (jdbc), `https://host` (rest)", "catalog")
CATALOG_WAREHOUSE: Option[str | None] = Option(
    "warehouse", STR, None, "the warehouse root (the command line's WAREHOUSE); a REST catalog's name", "catalog")
LOCK_ENABLED: Option[bool | None] = Option(
    "lock.enabled", BOOL, None, "commits hold the catalog's table lock (Hive Metastore lock, JDBC lock row)",
    "catalog", default_doc="`true` on object stores (s3, oss, gs, abfs, wasb, emr), else `false`")
LOCK_ACQUIRE_TIMEOUT = Option("lock-acquire-timeout", DURATION, timedelta(minutes=8),
                              "give up waiting for the table lock after this long", "catalog")
LOCK_CHECK_MAX_SLEEP = Option("lock-check-max-sleep", DURATION, timedelta(seconds=8),
                              "the longest pause between two tries of a busy lock (from 50 ms, doubling)", "catalog")
CATALOG_KEY = Option("catalog-key", STR, "jdbc", "jdbc: the catalog's key in `paimon_tables` and in lock ids",
                     "catalog")
LOCK_KEY_MAX_LENGTH = Option("lock-key-max-length", INT, 255, "jdbc: the length of `paimon_distributed_locks`' "
                             "lock ids (`<catalog-key>.<database>.<table>`)", "catalog", minimum=1)
JDBC_USER: Option[str | None] = Option("jdbc.user", STR, None, "jdbc: the database user", "catalog")
JDBC_PASSWORD: Option[str | None] = Option("jdbc.password", STR, None, "jdbc: the database password (a secret: "
                                           "never in plans or reports)", "catalog")
LOCATION_IN_PROPERTIES = Option("location-in-properties", BOOL, False, "hive: a table's location is its "
                                "`paimon_location` parameter (object stores), else the storage descriptor's",
                                "catalog")
SYNC_ALL_PROPERTIES = Option("sync-all-properties", BOOL, False, "hive: the metastore's table carries every table "
                             "option (else only the `hive.`-prefixed ones), updated on schema changes", "catalog")
TOKEN_PROVIDER: Option[str | None] = Option("token.provider", STR, None, "rest: how requests are authenticated: "
                                            "`bear` (a bearer token) or `dlf` (signed with `dlf.*` keys)", "catalog")
TOKEN: Option[str | None] = Option("token", STR, None, "rest: the bearer token (a secret)", "catalog")
DATA_TOKEN_ENABLED = Option("data-token.enabled", BOOL, False, "rest: storage credentials come from the server "
                            "(`GET …/token`), refreshed before they expire", "catalog")
DLF_REGION: Option[str | None] = Option("dlf.region", STR, None, "rest/dlf: the region requests are signed for",
                                        "catalog")
DLF_ACCESS_KEY_ID: Option[str | None] = Option("dlf.access-key-id", STR, None, "rest/dlf: the access key id",
                                               "catalog")
DLF_ACCESS_KEY_SECRET: Option[str | None] = Option("dlf.access-key-secret", STR, None, "rest/dlf: the access key "
                                                   "secret (a secret)", "catalog")
DLF_SECURITY_TOKEN: Option[str | None] = Option("dlf.security-token", STR, None, "rest/dlf: an STS security token "
                                                "(a secret)", "catalog")
CATALOG_CONNECT_TIMEOUT = Option("catalog.connect-timeout", DURATION, timedelta(seconds=10),
                                 "how long the catalog's server may take to answer (`--connect-timeout`)", "catalog",
                                 ours=True)
METASTORE_ALLOW_OUT_OF_SYNC = Option(
    "metastore.allow-out-of-sync", BOOL, False, "maintain tables with `metastore.partitioned-table` or "
    "`metastore.tag-to-partition` without their metastore (e.g. through the filesystem catalog), leaving its "
    "partitions out of step", "catalog", ours=True)
# Options whose values are secrets: never recorded in plans, reports or logs.
SECRET_CATALOG_OPTIONS = (JDBC_PASSWORD, TOKEN, DLF_ACCESS_KEY_SECRET, DLF_SECURITY_TOKEN)
# Prefixes of catalog options Paimon passes on as they are (JDBC driver properties, REST headers, DLF settings).
CATALOG_OPTION_PREFIXES = ("jdbc.", "dlf.", "header.")

# ----------------------------------------------------------------------------------------------------- features
ROW_TRACKING_ENABLED = Option("row-tracking.enabled", BOOL, False, "rows carry ids", "features", affects_files=True)
DATA_EVOLUTION_ENABLED = Option("data-evolution.enabled", BOOL, False, "files may hold some columns of rows",
                                "features")
DATA_EVOLUTION_ROW_SIDECAR_ENABLED = Option("data-evolution.row-sidecar.enabled", BOOL, False,
                                            "row sidecar files carry row ids", "features")
BLOB_FIELD: Option[str | None] = Option("blob-field", STR, None, "BLOB columns", "features")
BLOB_DESCRIPTOR_FIELD: Option[str | None] = Option("blob-descriptor-field", STR, None, "BLOB descriptor columns",
                                                   "features", fallback_keys=("blob.stored-descriptor-fields",))
BLOB_VIEW_FIELD: Option[str | None] = Option("blob-view-field", STR, None, "BLOB view columns", "features")
BLOB_AS_DESCRIPTOR = Option("blob-as-descriptor", BOOL, False, "BLOBs are written as descriptors", "features")
VECTOR_FILE_FORMAT: Option[str | None] = Option("vector.file.format", STR, None, "vector-store file format",
                                                "features")
VECTOR_FIELD: Option[str | None] = Option("vector-field", STR, None, "vector-store columns", "features")
GLOBAL_INDEX_EXTERNAL_PATH: Option[str | None] = Option("global-index.external-path", STR, None,
                                                        "global indexes live there", "features")
CLUSTERING_COLUMNS: Option[str | None] = Option("clustering.columns", STR, None, "clustering columns", "features",
                                                fallback_keys=("sink.clustering.by-columns",))
CLUSTERING_INCREMENTAL = Option("clustering.incremental", BOOL, False, "incremental clustering", "features")
PK_CLUSTERING_OVERRIDE = Option("pk-clustering-override", BOOL, False,
                                "primary-key tables sorted by clustering.columns instead of the key", "features")
CHAIN_TABLE_ENABLED = Option("chain-table.enabled", BOOL, False, "snapshots and deltas on chained branches",
                             "features")
DELETION_VECTORS_MODIFIABLE = Option("deletion-vectors.modifiable", BOOL, False,
                                     "deletion vectors may change outside compaction", "features")
SEQUENCE_SNAPSHOT_ORDERING = Option("sequence.snapshot-ordering", BOOL, False, "rows are ordered by snapshot",
                                    "features")
FILE_FORMAT_PER_LEVEL: Option[str | None] = Option("file.format.per.level", STR, None, "a file format per LSM level",
                                                   "features")
FILE_COMPRESSION_PER_LEVEL: Option[str | None] = Option("file.compression.per.level", STR, None,
                                                        "a compression per LSM level", "features")
TYPE = Option("type", STR, "table", "the table type (other types are not Paimon-managed tables)", "features")
VARIANT_SHREDDING_SCHEMA: Option[str | None] = Option("variant.shreddingSchema", STR, None,
                                                      "VARIANT columns are shredded", "features",
                                                      fallback_keys=("parquet.variant.shreddingSchema",))
VARIANT_INFER_SHREDDING_SCHEMA = Option("variant.inferShreddingSchema", BOOL, False,
                                        "VARIANT columns are shredded by an inferred schema", "features")


def _collect() -> dict[str, Option[Any]]:
    out: dict[str, Option[Any]] = {}
    for value in list(globals().values()):
        if isinstance(value, Option):
            for k in value.keys:
                if k in out and out[k] is not value and k == value.key:
                    raise InvalidOptionError(k, value.key, "declared once in the catalogue")
            out.setdefault(value.key, value)
    return out


# Every option, by key (fallback keys are not entries: they belong to their option).
CATALOGUE: dict[str, Option[Any]] = _collect()


def is_catalog_option(key: str) -> bool:
    """A catalog option (section `catalog`, or a prefix Paimon passes on to the catalog's client), not a table's."""
    opt = CATALOGUE.get(key)
    return opt.section == "catalog" if opt is not None else key.startswith(CATALOG_OPTION_PREFIXES)


def is_secret_catalog_option(key: str) -> bool:
    return any(key == o.key for o in SECRET_CATALOG_OPTIONS) or (key.startswith(CATALOG_OPTION_PREFIXES) and any(
        w in key.lower() for w in ("password", "secret", "token")))


def with_schema_defaults(options: dict[str, str], version: int) -> dict[str, str]:
    """`options` of a schema file of `version` with the defaults Java fills in when it reads an old schema."""
    for opt in CATALOGUE.values():
        for up_to, value in opt.schema_defaults:
            if version <= up_to and opt.key not in options:
                options[opt.key] = value
    return options


class FieldOption:
    """A per-column option `fields.<column>.<suffix>` (aggregate functions, sequence groups, nested keys, …)."""

    PREFIX = "fields."

    def __init__(self, suffix: str, kind: str, default: Any, doc: str, choices: tuple[str, ...] = (),
                 minimum: float | None = None, expected: str = "") -> None:
        self.suffix = suffix
        self.kind = kind
        self.default = default
        self.doc = doc
        self.choices = choices
        self.minimum = minimum
        self.expected = expected

    def key(self, column: str) -> str:
        return f"{self.PREFIX}{column}.{self.suffix}"

    def of(self, column: str) -> Option[Any]:
        """The option of one column."""
        return Option(self.key(column), self.kind, self.default, self.doc, "merge", choices=self.choices,
                      minimum=self.minimum, expected=self.expected)

    def column(self, key: str) -> str | None:
        """The column `key` is this option of (None: another key)."""
        tail = "." + self.suffix
        if key.startswith(self.PREFIX) and key.endswith(tail) and len(key) > len(self.PREFIX) + len(tail):
            return key[len(self.PREFIX):-len(tail)]
        return None


FIELD_AGGREGATE_FUNCTION = FieldOption("aggregate-function", STR, None, "the column's aggregate function")
FIELD_SEQUENCE_GROUP = FieldOption("sequence-group", LIST, (),
                                   "partial-update: columns updated with these sequence columns")
FIELD_IGNORE_RETRACT = FieldOption("ignore-retract", BOOL, False, "aggregation: the column ignores retractions")
FIELD_DISTINCT = FieldOption("distinct", BOOL, False, "collect: distinct values only")
FIELD_LIST_AGG_DELIMITER = FieldOption("list-agg-delimiter", STR, ",", "listagg: the delimiter")
FIELD_NESTED_KEY = FieldOption("nested-key", LIST, (), "nested_update: the nested rows' key")
FIELD_NESTED_SEQUENCE_FIELD = FieldOption("nested-sequence-field", LIST, (), "nested_update: the nested rows' sequence")
FIELD_NESTED_KEY_NULL_STRATEGY = FieldOption("nested-key-null-strategy", ENUM, "merge",
                                             "nested_update: rows with a null key", choices=("merge", "ignore", "error"),
                                             expected="merge, ignore or error")
FIELD_COUNT_LIMIT = FieldOption("count-limit", INT, INT_MAX, "nested_update: at most this many nested rows",
                                minimum=0, expected="a non-negative integer")
FIELD_STATS_MODE = FieldOption("stats-mode", STR, None, "the column's statistics (as metadata.stats-mode)")
FIELD_OPTIONS = (FIELD_AGGREGATE_FUNCTION, FIELD_SEQUENCE_GROUP, FIELD_IGNORE_RETRACT, FIELD_DISTINCT,
                 FIELD_LIST_AGG_DELIMITER, FIELD_NESTED_KEY, FIELD_NESTED_SEQUENCE_FIELD, FIELD_NESTED_KEY_NULL_STRATEGY,
                 FIELD_COUNT_LIMIT, FIELD_STATS_MODE)


def affects_files(key: str) -> bool:
    """Does the option `key` decide how files are read or where they are? (per-column options do)"""
    if key.startswith(FieldOption.PREFIX):
        return True
    return any(key in o.keys for o in CATALOGUE.values() if o.affects_files)


# ---------------------------------------------------------------------------------------------------- the view
@dataclass(frozen=True)
class Options:
    """Typed read-only view over a table's string options (plus overrides); `where` names the table in errors."""

    raw: Mapping[str, str]
    where: str = ""

    def key_set(self, opt: Option[Any]) -> str | None:
        """The key the option is set with (its own, else the first fallback key set), None when unset."""
        return next((k for k in opt.keys if self.raw.get(k) is not None), None)

    def is_set(self, opt: Option[Any]) -> bool:
        return self.key_set(opt) is not None

    def text(self, opt: Option[Any]) -> str | None:
        """The configured text, as given."""
        k = self.key_set(opt)
        return None if k is None else self.raw[k]

    def value(self, opt: Option[T]) -> T | None:
        """The configured value, validated; None when unset."""
        k = self.key_set(opt)
        return None if k is None else opt.parse(self.raw[k], self.where, k)

    def get(self, opt: Option[T]) -> T:
        """The configured value, validated; else the option's default."""
        k = self.key_set(opt)
        return opt.default if k is None else opt.parse(self.raw[k], self.where, k)

    def fail(self, opt: Option[Any], expected: str, value: object = ...) -> InvalidOptionError:
        """An error naming the option (as set) and the table: the configured value is not `expected`."""
        return InvalidOptionError(self.key_set(opt) or opt.key, self.text(opt) if value is ... else value, expected,
                                  self.where)

    # ------------------------------------------------------------------ values derived from several options
    @property
    def bucket(self) -> int:
        return self.get(BUCKET)

    @property
    def file_format(self) -> str:
        return self.get(FILE_FORMAT).strip().lower()

    @property
    def deletion_vectors_enabled(self) -> bool:
        return self.get(DELETION_VECTORS_ENABLED)

    @property
    def bitmap64(self) -> bool:
        return self.get(DELETION_VECTORS_BITMAP64)

    @property
    def merge_engine(self) -> str:
        return self.get(MERGE_ENGINE)

    @property
    def changelog_producer(self) -> str:
        return self.get(CHANGELOG_PRODUCER)

    @property
    def num_levels(self) -> int:
        levels = self.value(NUM_LEVELS)
        return self.get(NUM_SORTED_RUN_COMPACTION_TRIGGER) + 1 if levels is None else levels

    def target_file_size(self, primary_key: bool) -> int:
        size = self.value(TARGET_FILE_SIZE)
        return ((128 if primary_key else 256) << 20) if size is None else size

    def small_file_size(self, primary_key: bool) -> float:
        """Files below this size are small (Java's CoreOptions.compactionFileSize)."""
        return self.target_file_size(primary_key) * self.get(COMPACTION_SMALL_FILE_RATIO)

    def small_files_threshold(self, primary_key: bool) -> int:
        """Small files / level-0 files per bucket at which compaction is due (sensor, check, health)."""
        own = self.value(COMPACTION_SMALL_FILES_THRESHOLD)
        if own is not None:
            return own
        return self.get(NUM_SORTED_RUN_COMPACTION_TRIGGER if primary_key else COMPACTION_MIN_FILE_NUM)

    @property
    def partition_default_name(self) -> str:
        return self.get(PARTITION_DEFAULT_NAME)

    @property
    def partition_legacy_name(self) -> bool:
        return self.get(PARTITION_LEGACY_NAME)

    @property
    def sequence_fields(self) -> list[str]:
        return list(self.get(SEQUENCE_FIELD))

    @property
    def data_file_prefix(self) -> str:
        return self.get(DATA_FILE_PREFIX)

    @property
    def changelog_file_prefix(self) -> str:
        return self.get(CHANGELOG_FILE_PREFIX)

    @property
    def data_path_directory(self) -> str | None:
        return self.get(DATA_FILE_PATH_DIRECTORY)

    @property
    def index_file_in_data_dir(self) -> bool:
        return self.get(INDEX_FILE_IN_DATA_FILE_DIR)


def read(raw: Mapping[str, str], opt: Option[T], where: str = "") -> T:
    """`opt` read from a plain mapping of options (codecs that receive the options as a dict)."""
    return Options(raw, where).get(opt)


# ------------------------------------------------------------------------------------- the options reference
def _shown_default(o: Option[Any]) -> str:
    text = o.default_text
    if o.default_doc is not None or text == "—" or "no limit" in text:
        return text
    return f"`{text}`"


def render_readme_tables() -> str:
    """The option tables of the options reference (docs/reference/options.md, generated at every docs build)."""
    lines: list[str] = []
    for section, title in SECTIONS.items():
        opts = [o for o in CATALOGUE.values() if o.section == section]
        if not opts:
            continue
        lines += [f"**{title}**", "", "| option | default | meaning |", "|---|---|---|"]
        for o in opts:
            default = _shown_default(o)
            notes = [f"Paimon {v}: {d}" for v, d in o.paimon_defaults]
            if notes:
                default += f" ({'; '.join(notes)})"
            name = f"`{o.key}`" + "".join(f" / `{k}`" for k in o.fallback_keys if k not in CATALOGUE)
            meaning = o.doc + (" — paimon-ops' own" if o.ours and section != "execution" else "")
            if o.kind == ENUM and not any(f"`{c}`" in o.doc for c in o.choices):
                meaning += " (" + ", ".join(f"`{c}`" for c in o.choices) + ")"
            lines.append(f"| {name} | {default} | {meaning} |")
        lines.append("")
    lines += ["**Per-column options** (`fields.<column>.<option>`)", "", "| option | default | meaning |", "|---|---|---|"]
    for f in FIELD_OPTIONS:
        lines.append(f"| `{f.key('<column>')}` | {_shown_default(f.of('<column>'))} | {f.doc} |")
    return "\n".join(lines).rstrip() + "\n"
