"""Tag expiry (maintenance.md §3.4), always deleting through tag deletion with reclamation:

* time: ``tagCreateTime + tagTimeRetained < now`` (local, tag local zone — see timeline.py), if
  ``tag.time-expire-enabled`` (default true); plus ``older_than``: tags created before that instant, using the tag
  file's modification time for tags without ``tagCreateTime`` (Java ``expire_tags``).
* count: ``tag.num-retained-max`` keeps that many auto tags (names parsing with the current period formatter), deleting
  the oldest by snapshot id; in batch mode all tags count (ties by file mtime), like Java. Evaluated on every run (Java
  only right after creating an auto tag), after removing the tags that expire by time.
"""
from __future__ import annotations

import dataclasses
import logging
from datetime import timedelta
from typing import Any

from paimon_ops.catalog import check_sync
from paimon_ops.execution.journal import plan_pending
from paimon_ops.execution.plan import Plan, PlanBuilder, planner
from paimon_ops.lifecycle.protection import TagsAre
from paimon_ops.lifecycle.schedule import tag_schedule
from paimon_ops.lifecycle.tag_deletion import plan_delete_tags
from paimon_ops.lifecycle.timeline import tag_local_zone
from paimon_ops.operations.expire_tags import OPERATION as EXPIRE_TAGS
from paimon_ops.operations.model import InstantMs
from paimon_ops.options import TAG_NUM_RETAINED_MAX, TAG_TIME_EXPIRE_ENABLED, format_duration
from paimon_ops.table.consistency import check_history
from paimon_ops.table.table import FileStoreTable
from paimon_ops.timeutil import (
    age_ms,
    iso,
    local_millis_to_naive,
    local_to_instant_millis,
    naive_to_local_millis,
    to_instant_millis,
    to_local_millis,
    zone_name,
)
from paimon_ops.timeutil import now_ms as now_millis_or_clock

log = logging.getLogger(__name__)


class ExpireTagsPlan(Plan):
    """Expiring tags by retention, `older_than` and tag.num-retained-max, reclaiming their files."""

    operation = "expire_tags"
    op = EXPIRE_TAGS  # its operation (the feature gate, the planner's parameters)

    @property
    def expired_tags(self) -> dict[str, str]:
        return dict(self.details.get("expired_tags", {}))


def _older_than_millis(table: FileStoreTable, older_than: Any) -> int | None:
    if older_than is None:
        return None
    return to_instant_millis(older_than, tag_local_zone(table), "older_than")


def _expiry_reasons(table: FileStoreTable, now_ms: int, older_than_ms: int | None) -> tuple[dict[str, str], list[str]]:
    opts = table.options
    zone = tag_local_zone(table)
    now_local = local_millis_to_naive(to_local_millis(now_ms, zone))
    tags = table.tags.tags()
    reasons: dict[str, str] = {}
    warnings: list[str] = []
    mtimes: dict[str, int] = {}

    def mtime(name: str) -> int:
        if name not in mtimes:
            mtimes[name] = table.tags.mtime_millis(name)
        return mtimes[name]

    time_expire = opts.get(TAG_TIME_EXPIRE_ENABLED)
    for name, tag in tags:
        ct, tr = tag.tag_create_time, tag.tag_time_retained
        if time_expire and ct is not None and tr is not None and now_local > ct + tr:  # strictly after, like Java
            reasons[name] = (f"retention: created {ct.isoformat()} + {format_duration(tr)} = "
                             f"{(ct + tr).isoformat()} < now {now_local.isoformat()} ({zone_name(zone)})")
        elif older_than_ms is not None:
            if ct is not None:
                created_ms = local_to_instant_millis(naive_to_local_millis(ct), zone)
                what = f"created {ct.isoformat()} ({zone_name(zone)})"
            else:
                created_ms = mtime(name)
                what = f"tag file modified {iso(created_ms)} (no tagCreateTime)"
            if created_ms < older_than_ms:
                reasons[name] = f"older_than {iso(older_than_ms)}: {what}"

    sched = tag_schedule(table)
    num_max = opts.get(TAG_NUM_RETAINED_MAX)
    if num_max is not None:
        if sched is None:
            warnings.append("tag.num-retained-max is set but automatic tagging is off; like Java it is not applied")
        else:
            remaining = [(n, t) for n, t in tags if n not in reasons]
            if sched.mode == "batch":
                pool = sorted(remaining, key=lambda nt: (nt[1].id, mtime(nt[0]), nt[0]))
                label = "tags"
            else:
                handler = sched.handler
                assert handler is not None
                pool = sorted(((n, t) for n, t in remaining if handler.is_auto_tag(n)),
                              key=lambda nt: (nt[1].id, handler.parse(nt[0]) or 0, nt[0]))
                label = "auto tags"
            excess = len(pool) - num_max
            for n, t in pool[:max(excess, 0)]:
                reasons[n] = f"count: {len(pool)} {label} > tag.num-retained-max={num_max}; oldest (snapshot {t.id})"
    return reasons, warnings


@planner(ExpireTagsPlan, renamed={"now_millis": "now"})
def plan_expire_tags(table: FileStoreTable, *, older_than: InstantMs | None = None, min_age: timedelta | None = None,
                     now: InstantMs | None = None) -> ExpireTagsPlan:
    """Tags to expire (by retention, tag.num-retained-max, and created before `older_than` or more than `min_age` ago)
    and the files their deletion reclaims."""
    check_sync(table, "expire_tags")
    now_ms = now_millis_or_clock(now)
    check_history(table, "tag expiry")
    older = _older_than_millis(table, older_than) if min_age is None else now_ms - age_ms(min_age, "min_age")
    reasons, warnings = _expiry_reasons(table, now_ms, older)
    if not reasons:
        b = PlanBuilder()
        plan_pending(b, table)  # what an interrupted run left (e.g. the files of tags it already deleted)
        b.require(TagsAre(tuple((n, t.id) for n, t in table.tags.tags())))
        return b.build(ExpireTagsPlan, table, {"expired_tags": {}, "now": iso(now_ms)}, warnings=warnings)
    for n, why in sorted(reasons.items()):
        log.info("%s: expiring tag %s (%s)", table.identifier, n, why)
    plan = plan_delete_tags(table, sorted(reasons), plan_type=ExpireTagsPlan,
                            details={"expired_tags": reasons, "now": iso(now_ms)})
    assert isinstance(plan, ExpireTagsPlan)
    return dataclasses.replace(plan, warnings=tuple(warnings) + tuple(plan.warnings))


__all__ = ["ExpireTagsPlan", "plan_expire_tags"]
