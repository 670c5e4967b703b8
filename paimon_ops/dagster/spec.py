"""What the factory knows about one table at load time: identity, schema, options, and the automation they ask for.

Loading is cheap and read-only (schema, options, latest snapshot JSON, schema-0 / earliest snapshot times) and
never raises: a table that cannot be read or whose options are malformed becomes a spec with `error` set; its
table asset then fails to run and its `metadata_readable` check fails with that error.
"""
from __future__ import annotations

import datetime as _dt
import logging
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from paimon_ops.errors import InvalidOptionError, PaimonOpsError
from paimon_ops.features import uses_of_schema
from paimon_ops.lifecycle.schedule import tag_schedule
from paimon_ops.options import (
    COMPACTION_DV_RATIO_THRESHOLD,
    COMPACTION_SMALL_FILES_THRESHOLD,
    PARTITION_EXPIRATION_TIME,
    TAG_CREATE_TIME,
    TAG_CREATE_TIME_ZONE,
    Options,
)
from paimon_ops.table.table import FileStoreTable, Identifier

if TYPE_CHECKING:
    from paimon_ops.dagster.resources import PaimonWarehouse

log = logging.getLogger("paimon_ops.dagster")

WAREHOUSE_PLACEHOLDER = "_warehouse._catalog"  # the spec standing for a warehouse that cannot be listed


@dataclass(frozen=True)
class TagTiming:
    """`tag.create-time` = 'HH:mm' in `tag.create-time-zone`, every `tag.create-interval` (whole days)."""

    hour: int
    minute: int
    zone: str
    interval_days: int = 1

    @property
    def cron(self) -> str:
        return f"{self.minute} {self.hour} * * *"

    @property
    def hh_mm(self) -> str:
        return f"{self.hour:02d}:{self.minute:02d}"


PRIMARY_KEY = "primary-key"
APPEND = "append"
APPEND_FIXED = "append-fixed-bucket"


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    nullable: bool = True
    description: str | None = None


@dataclass(frozen=True)
class TableSpec:
    """One table as the factory sees it. `error` set means: broken, reported through a placeholder asset."""

    identifier: str
    database: str
    table: str
    location: str = ""
    options: Mapping[str, str] = field(default_factory=dict)
    primary_keys: tuple[str, ...] = ()
    partition_keys: tuple[str, ...] = ()
    latest_snapshot: int | None = None
    tag_timing: TagTiming | None = None
    auto_tag: str | None = None  # Paimon's tag.automatic-creation (process-time | watermark | batch), no create-time
    tag_zone: str = "UTC"  # zone of the tags asset's daily partitions
    tag_period: str = "daily"  # daily | days (tag.create-interval > 1 d) | hourly | two-hours | duration
    period_formatter: str = "with_dashes"
    partitions_start: str = "2024-01-01"  # first daily partition (yyyy-MM-dd)
    dv_enabled: bool = False
    bucket: int = -1
    columns: tuple[Column, ...] = ()
    comment: str | None = None
    error: str | None = None

    @property
    def branch(self) -> str:
        """The branch it is (`db.t$branch_b`, Paimon's identifier), main for a table."""
        return Identifier.parse(self.identifier).branch

    @property
    def is_primary_key(self) -> bool:
        return bool(self.primary_keys)

    @property
    def kind(self) -> str:
        """`primary-key`, `append` (unaware-bucket: sort compaction possible) or `append-fixed-bucket`."""
        if self.primary_keys:
            return PRIMARY_KEY
        return APPEND if self.bucket == -1 else APPEND_FIXED

    @property
    def broken(self) -> bool:
        return self.error is not None

    @property
    def has_expected_tags(self) -> bool:
        """Tags are expected per period: `tag.create-time`, or Paimon's process-time / watermark auto creation."""
        return self.tag_timing is not None or self.auto_tag in ("process-time", "watermark")

    @property
    def expires_partitions(self) -> bool:
        """Partitioned with `partition.expiration-time` set: Paimon's writers would expire its partitions."""
        return bool(self.partition_keys) and bool(Options(self.options).text(PARTITION_EXPIRATION_TIME))

    @property
    def gated(self) -> bool:
        """The options declare a feature the engine's feature gate refuses for some operation."""
        return bool(uses_of_schema(self.options))

    @property
    def daily_tags(self) -> bool:
        """Daily tag periods (or no automatic tags: manual daily tags): the tags asset is partitioned by day."""
        return self.tag_period == "daily"

    def period_name(self, partition_key: str) -> str:
        """Tag name of the day `partition_key` (yyyy-MM-dd) — Paimon's daily period names per formatter."""
        if self.period_formatter in ("without_dashes", "without_dashes_and_spaces"):
            return partition_key.replace("-", "")
        return partition_key


_OFFSET = re.compile(r"^(?:GMT|UTC)?([+-])(\d{1,2})(?::?(\d{2}))?$")


def iana_zone(text: str) -> str:
    """The IANA name Dagster needs (partitions, execution_timezone) for the engine's zone text; fixed whole-hour
    offsets ('+08:00', 'GMT+8') become 'Etc/GMT-8'. Raises InvalidOptionError otherwise."""
    text = text.strip()
    try:
        ZoneInfo(text)
        return text
    except (ZoneInfoNotFoundError, ValueError):
        pass
    m = _OFFSET.match(text)
    if m and not int(m.group(3) or 0) and int(m.group(2)) <= 14:
        hours = int(m.group(2))
        return "UTC" if hours == 0 else f"Etc/GMT{'-' if m.group(1) == '+' else '+'}{hours}"
    raise InvalidOptionError(TAG_CREATE_TIME_ZONE.key, text, "a time zone with an IANA equivalent Dagster can schedule "
                                                           "in, e.g. a region name such as 'Asia/Shanghai'")


def _date_in_zone(millis: int, zone: str) -> _dt.date:
    return _dt.datetime.fromtimestamp(millis / 1000, tz=ZoneInfo(zone)).date()


def _type_text(t) -> str:
    """Paimon's SQL type text (`BIGINT`, `DECIMAL(10, 2)`, `ARRAY<STRING>`) without the nullability suffix."""
    text = str(t)
    return text[:-len(" NOT NULL")] if text.endswith(" NOT NULL") else text


def load_spec(table: FileStoreTable) -> TableSpec:
    """Read what the factory needs from a table; never raises (errors go into `error`)."""
    ident = table.full_name  # db.t, or db.t$branch_b for a branch
    db, _, name = table.identifier.partition(".")
    try:
        schema = table.schema
        opts = table.options
        latest = table.snapshots.latest()  # parses the JSON: a corrupt latest snapshot is reported here
        # The engine's reading of the tag options (tag.create-time / Paimon's tag.automatic-creation), validated:
        # a malformed option makes the table "broken" here exactly as it would fail every tag run.
        sched = tag_schedule(table)
        timing = None
        auto_tag = None
        period, formatter, zone = "daily", "with_dashes", "UTC"
        if sched is not None:
            zone = iana_zone(sched.zone_name)
            if sched.handler is not None:
                formatter = sched.handler.formatter
                period = {"daily": "daily", "days": "days"}.get(sched.handler.kind, sched.handler.kind)
            if sched.source == TAG_CREATE_TIME.key:
                hours, rest = divmod(sched.delay_ms, 3_600_000)
                timing = TagTiming(int(hours), int(rest // 60_000), zone,
                                   (sched.handler.length_ms // 86_400_000) if sched.handler else 1)
            else:
                auto_tag = sched.mode
        opts.get(COMPACTION_DV_RATIO_THRESHOLD)  # validate now: a malformed threshold is a broken table too
        opts.get(COMPACTION_SMALL_FILES_THRESHOLD)
        # First daily partition, for tables with a tags asset only (two more reads per table)
        expects_tags = timing is not None or auto_tag in ("process-time", "watermark")  # has_expected_tags
        start = _partitions_start(table, schema, zone) if expects_tags else TableSpec.partitions_start
        return TableSpec(
            identifier=ident, database=db, table=name, location=table.location, options=dict(opts.raw),
            primary_keys=tuple(schema.primary_keys), partition_keys=tuple(schema.partition_keys),
            latest_snapshot=latest.id if latest is not None else None, tag_timing=timing, auto_tag=auto_tag,
            tag_zone=zone, tag_period=period, period_formatter=formatter, partitions_start=start,
            dv_enabled=opts.deletion_vectors_enabled, bucket=opts.bucket,
            columns=tuple(Column(f.name, _type_text(f.type), f.type.nullable, f.description) for f in schema.fields),
            comment=schema.comment,
        )
    except (PaimonOpsError, OSError) as e:
        log.warning("paimon: table %s cannot be maintained until fixed: %s", ident, e)
        return TableSpec(identifier=ident, database=db, table=name, location=table.location,
                         error=f"{type(e).__name__}: {e}")


def _partitions_start(table: FileStoreTable, schema, zone: str) -> str:
    """The day (yyyy-MM-dd, in the tag zone) the table was created, its earliest snapshot or its earliest dated tag
    (tags outlive expired snapshots, and may be older than the schema), whichever is oldest."""
    times = [schema.time_millis] if schema.time_millis else []
    try:
        s0 = schema if schema.id == 0 else table.schemas.schema(0)
        if s0.time_millis:
            times.append(s0.time_millis)
    except PaimonOpsError:
        pass
    earliest = table.snapshots.earliest()
    if earliest is not None:
        times.append(earliest.time_millis)
    start = _date_in_zone(min(times), zone) if times else _dt.date.today() - _dt.timedelta(days=30)
    floor = start - _dt.timedelta(days=3660)  # a stray name ('0001-01-01') must not make millions of partitions
    for name in table.tags.names():  # a day-named tag (either formatter) before that day: start there
        m = re.fullmatch(r"(\d{4})-?(\d{2})-?(\d{2})", name)
        if m:
            try:
                day = _dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
            except ValueError:
                continue
            if day >= floor:
                start = min(start, day)
    return start.isoformat()


def partition_key_of(spec: TableSpec, tag_name: str) -> str | None:
    """The daily partition (yyyy-MM-dd) a tag name stands for, or None (not a daily tag of this table)."""
    if not spec.daily_tags:
        return None
    m = re.fullmatch(r"(\d{4})-?(\d{2})-?(\d{2})", tag_name)
    if not m:
        return None
    key = f"{m.group(1)}-{m.group(2)}-{m.group(3)}"
    try:
        _dt.date.fromisoformat(key)
    except ValueError:
        return None
    return key if spec.period_name(key) == tag_name else None


LOAD_THREADS = 16  # tables read at once from an object store


def load_specs(warehouse: PaimonWarehouse) -> list[TableSpec]:
    """A spec per selected table; broken tables (and an unlistable warehouse) come back with `error` set."""
    try:
        catalog = warehouse.catalog()
        identifiers = warehouse.table_identifiers(catalog)
    except (PaimonOpsError, OSError) as e:
        log.warning("paimon: warehouse %s cannot be listed: %s", warehouse.uri, e)
        db, _, name = WAREHOUSE_PLACEHOLDER.partition(".")
        return [TableSpec(identifier=WAREHOUSE_PLACEHOLDER, database=db, table=name, location=warehouse.uri,
                          error=f"warehouse {warehouse.uri} cannot be listed: {type(e).__name__}: {e}")]

    def one(ident: str) -> TableSpec:
        try:
            return load_spec(warehouse.get_table(ident, catalog))
        except (PaimonOpsError, OSError) as e:
            log.warning("paimon: table %s cannot be maintained until fixed: %s", ident, e)
            db, _, name = ident.partition(".")
            return TableSpec(identifier=ident, database=db, table=name, error=f"{type(e).__name__}: {e}")

    if catalog.io.is_local:  # a local disk answers faster than threads hand work around
        return [one(ident) for ident in identifiers]
    with ThreadPoolExecutor(LOAD_THREADS, thread_name_prefix="paimon-load") as pool:  # a request per read
        return list(pool.map(one, identifiers))
