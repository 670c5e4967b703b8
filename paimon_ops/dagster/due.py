"""What a table needs now, as Dagster runs it: the engine's assessment (`paimon_ops.health.assess`, the measurements
behind the checks and the Airflow triggers) of each health signal of the operation registry (`Operation.health`),
with the run-config section(s) of the operation it makes due — what the signal's sensor requests, one run per
section. A plain "Materialize" of a table runs those sections itself, in one run (`table_asset`).

| signal (check) | due when | operation, section(s) |
|---|---|---|
| `small_files` | a bucket reaches `compaction.small-files-threshold` | compact, mode minor (primary-key) / small-files (append): one section per group of partitions sharing the same over-threshold buckets, exactly those buckets |
| `dv_ratio` | a file's deleted-row ratio passes `compaction.dv-ratio-threshold` | compact, mode dv-ratio: the buckets over, grouped the same way |
| `snapshot_retention` | expiry by the table's own retention options is due | expire_snapshots (the table's options) |
| `manifest_count` | the latest snapshot reads `manifest.compaction-trigger` manifests | compact_manifests |
| `partition_expiry` | partitions are older than `partition.expiration-time` | expire_partitions (the table's options) |
"""  # noqa: E501 - a table
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import paimon_ops.dagster.checks as checks_mod
import paimon_ops.health as health
from paimon_ops.api import health_signals
from paimon_ops.dagster.spec import TableSpec


@dataclass(frozen=True)
class Need:
    """One health signal measured on one table: the figure (the sensor's reason: table, snapshot, measurement) and,
    when due, the operation's run-config sections, one per run its sensor requests (compaction: one per group of
    buckets, `buckets` holding each group's buckets)."""

    check: str
    operation: str  # its Dagster name: the config section
    figure: str
    sections: tuple[Mapping[str, Any], ...] = ()
    buckets: tuple[tuple[health.BucketStat, ...], ...] = ()

    @property
    def due(self) -> bool:
        return bool(self.sections)


def compaction_sections(spec: TableSpec, mode: str, over: Sequence[health.BucketStat]
                        ) -> tuple[tuple[Mapping[str, Any], ...], tuple[tuple[health.BucketStat, ...], ...]]:
    """One compaction section per group of partitions sharing the same buckets over the threshold: exactly those
    buckets (partitions × buckets selects nothing else)."""
    sections, chosen = [], []
    for partitions, buckets in health.bucket_groups(list(over)):
        sections.append({"mode": mode, "partitions": partitions if spec.partition_keys else [], "buckets": buckets})
        chosen.append(tuple(b for b in over if b.partition in partitions and b.bucket in buckets))
    return tuple(sections), tuple(chosen)


def _need(spec: TableSpec, sid: Any, n: health.Need) -> Need:
    figure = f"{spec.identifier} snapshot {sid}: {n.figure}"
    operation = n.operation or ""
    if not n.due:
        return Need(n.signal, operation, figure)
    if n.over:
        sections, chosen = compaction_sections(spec, n.arguments["mode"], n.over)
        return Need(n.signal, operation, figure, sections, chosen)
    return Need(n.signal, operation, figure, ({},))  # no knob set: the table's own options


def needs(spec: TableSpec, table: Any, now: int, checks: Sequence[str] | None = None) -> list[Need]:
    """The health signals (by check; None: every one) the table has, measured now on its latest snapshot, in the
    registry's order (a signal that does not apply to the table is left out)."""
    wanted = [h.signal for _, h in health_signals()
              if checks_mod.has_signal(spec, h) and (checks is None or h.signal in checks)]
    a = health.assess(table, wanted, now)
    return [_need(spec, a.snapshot_id, n) for n in a.needs]


def need(spec: TableSpec, table: Any, now: int, check: str) -> Need:
    """One health signal (what its sensor decides on); not applying to the table: not due."""
    found = needs(spec, table, now, [check])
    return found[0] if found else Need(check, "", f"{spec.identifier}: {check} does not apply")
