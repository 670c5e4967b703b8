"""Maintenance operations, table-driven: each is a name, a config field and a function that *plans* it on the
engine's facade (`po.Table.maintenance`). The table asset's op runs the operations its run asks for (the run tag
`paimon/operations`, set by the paimon_* jobs), plans each, starts a runner only for plans with work, and records
one observation on the table. Adding an operation = one `Operation` entry, one config field, one job line.

Typed config per kind of table (the launchpad offers only what is valid for the table): primary-key tables compact
`minor` | `full` | `dv-ratio`; unaware-bucket append tables `small-files` | `full` | `sort` (with `order_by` and
`strategy` order | zorder | hilbert); fixed-bucket append tables `small-files` | `full`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Literal, Optional

from dagster import Config
from pydantic import Field

from paimon_ops.dagster.spec import APPEND, APPEND_FIXED, PRIMARY_KEY, TableSpec
from paimon_ops.errors import InvalidArgumentError
from paimon_ops.options import parse_duration

OPERATIONS_TAG = "paimon/operations"  # run tag: comma-separated operation names (none: observe only)

CREATE_TAGS = "create_tags"
COMPACT = "compact"
EXPIRE_SNAPSHOTS = "expire_snapshots"
EXPIRE_TAGS = "expire_tags"
REMOVE_ORPHANS = "remove_orphans"
EXPIRE_PARTITIONS = "expire_partitions"
COMPACT_MANIFESTS = "compact_manifests"


def now_millis() -> int:
    """The clock of every op, sensor and check (tests replace it)."""
    return int(time.time() * 1000)


# ---------------------------------------------------------------------------------------------- config
class CompactPrimaryKey(Config):
    mode: Literal["minor", "full", "dv-ratio"] = Field(
        default="minor", description="minor: Paimon's own LSM pick per bucket (lookups, deletion vectors, "
                                     "changelog); full: everything to the max level; dv-ratio: rewrite files with many deleted rows")
    partitions: list[dict[str, str]] = Field(default_factory=list, description="partition specs, e.g. "
                                             "[{'dt': '2024-01-01'}]; empty: every partition")
    buckets: list[int] = Field(default_factory=list, description="only these buckets; empty: every bucket")
    where: Optional[str] = Field(default=None, description="predicate on partition columns, e.g. dt >= '2024-01-01'")


class CompactFixedBucketAppend(Config):
    mode: Literal["small-files", "full"] = Field(default="small-files", description="small-files: bin-pack small "
                                                                                    "files; full: rewrite every bucket")
    partitions: list[dict[str, str]] = Field(default_factory=list, description="partition specs; empty: all")
    buckets: list[int] = Field(default_factory=list, description="only these buckets; empty: every bucket")
    where: Optional[str] = Field(default=None, description="predicate on partition columns")


class CompactAppend(Config):
    mode: Literal["small-files", "full", "sort"] = Field(
        default="small-files", description="small-files: bin-pack small files; full: rewrite everything; sort: "
                                           "rewrite sorted by order_by")
    partitions: list[dict[str, str]] = Field(default_factory=list, description="partition specs; empty: all")
    buckets: list[int] = Field(default_factory=list, description="only these buckets; empty: every bucket")
    where: Optional[str] = Field(default=None, description="predicate on partition columns")
    order_by: list[str] = Field(default_factory=list, description="sort mode: columns to sort by")
    strategy: Literal["order", "zorder", "hilbert"] = Field(default="order", description="sort mode: curve")


class RemoveOrphans(Config):
    older_than: Optional[str] = Field(default=None, description="only files older than this age ('3 d', '36 h'); "
                                                        "default 3 days")
    allow_short: bool = Field(default=False, description="allow older_than under 1 day (only when no writer can be active)")


class ExpirePartitions(Config):
    expiration_time: Optional[str] = Field(default=None, description="drop partitions older than this age ('30 d'); "
                                                                     "default the table's partition.expiration-time")
    max_expires: Optional[int] = Field(default=None, description="at most this many partitions per run; default "
                                                                 "partition.expiration-max-num (100)")


class TableConfig(Config):
    """Config of a table asset run. Which operations run is the run's `paimon/operations` tag (the paimon_* jobs
    set it); without it the run observes the table and evaluates its checks."""

    dry_run: bool = Field(default=False, description="plan only: record what would be written and deleted (would_* keys) "
                                             "as an observation; change nothing, never start Spark")
    remove_orphans: RemoveOrphans = Field(default_factory=lambda: RemoveOrphans())
    expire_partitions: ExpirePartitions = Field(default_factory=lambda: ExpirePartitions())


class PrimaryKeyTableConfig(TableConfig):
    compact: CompactPrimaryKey = Field(default_factory=lambda: CompactPrimaryKey())


class AppendTableConfig(TableConfig):
    compact: CompactAppend = Field(default_factory=lambda: CompactAppend())


class FixedBucketAppendTableConfig(TableConfig):
    compact: CompactFixedBucketAppend = Field(default_factory=lambda: CompactFixedBucketAppend())


CONFIG_BY_KIND: dict[str, type[TableConfig]] = {
    PRIMARY_KEY: PrimaryKeyTableConfig, APPEND: AppendTableConfig, APPEND_FIXED: FixedBucketAppendTableConfig,
}


def config_class(spec: TableSpec) -> type[TableConfig]:
    return TableConfig if spec.broken else CONFIG_BY_KIND[spec.kind]


def default_compaction_mode(spec: TableSpec) -> str:
    """What the small-files sensor requests: Paimon's minor compaction for primary-key tables (what a dedicated
    compaction job runs), small-files for append tables."""
    return "minor" if spec.is_primary_key else "small-files"


# ---------------------------------------------------------------------------------------------- operations
@dataclass(frozen=True)
class Operation:
    name: str
    title: str
    plan: Callable[[Any, Any, int], Any]  # (po.Table, run config, now millis) -> Plan
    applies: Callable[[TableSpec, Any], bool] = lambda spec, cfg: True  # (spec, run config)
    reclaims: bool = True  # its deletes free storage (compaction's inputs leave the table; expiry reclaims them)


def _compact(t: Any, cfg: Any, now: int) -> Any:
    c = cfg.compact
    if c.mode == "minor" and t.options.get("bucket") == "-2":
        # Paimon's compaction of a postpone-bucket table: the rows waiting in bucket-postpone move into real buckets
        # (and real buckets with level-0 files are compacted), what the small-files sensor asks for there
        return t.maintenance.compact_postpone(partitions=list(c.partitions) or None, where=c.where or None)
    kw: dict[str, Any] = dict(mode=c.mode, partitions=list(c.partitions) or None, where=c.where or None,
                              buckets=list(c.buckets) or None, now=now)
    if c.mode == "sort":
        kw.update(order_by=list(c.order_by), strategy=c.strategy)
    return t.maintenance.compact(**kw)


def _remove_orphans(t: Any, cfg: Any, now: int) -> Any:
    o = cfg.remove_orphans
    age = parse_duration(o.older_than, "remove_orphans.older_than") if o.older_than else None
    return t.maintenance.remove_orphans(min_age=age, allow_short=o.allow_short, now=now)


def _expire_partitions(t: Any, cfg: Any, now: int) -> Any:
    e = cfg.expire_partitions
    age = parse_duration(e.expiration_time, "expire_partitions.expiration_time") if e.expiration_time else None
    if e.max_expires is not None and e.max_expires < 1:
        raise InvalidArgumentError(f"expire_partitions.max_expires must be at least 1, got {e.max_expires}")
    return t.maintenance.expire_partitions(expiration_time=age, max_expires=e.max_expires, now=now)


OPERATIONS: dict[str, Operation] = {op.name: op for op in (
    Operation(CREATE_TAGS, "automatic tags that are due", lambda t, cfg, now: t.maintenance.create_auto_tags(now=now),
              applies=lambda spec, cfg: spec.has_expected_tags),
    Operation(COMPACT, "compaction", _compact, reclaims=False),
    Operation(EXPIRE_SNAPSHOTS, "snapshot expiry", lambda t, cfg, now: t.maintenance.expire_snapshots(now=now)),
    Operation(EXPIRE_TAGS, "tag expiry", lambda t, cfg, now: t.maintenance.expire_tags(now=now)),
    Operation(REMOVE_ORPHANS, "orphan removal", _remove_orphans),
    # the dropped partitions' files stay until the snapshots that still read them expire: nothing is reclaimed now
    Operation(EXPIRE_PARTITIONS, "partition expiry", _expire_partitions, reclaims=False,
              applies=lambda spec, cfg: bool(spec.partition_keys) and (spec.expires_partitions
                                                                       or bool(cfg.expire_partitions.expiration_time))),
    Operation(COMPACT_MANIFESTS, "manifest compaction", lambda t, cfg, now: t.maintenance.compact_manifests(),
              reclaims=False),
)}


def operations_of(tags: Any) -> list[str]:
    """The operations a run asks for (its `paimon/operations` tag), validated."""
    text = (tags or {}).get(OPERATIONS_TAG, "") or ""
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in OPERATIONS]
    if unknown:
        raise InvalidArgumentError(f"unknown operation(s) {', '.join(unknown)} in run tag {OPERATIONS_TAG}; "
                                   f"known: {', '.join(OPERATIONS)}")
    return names
