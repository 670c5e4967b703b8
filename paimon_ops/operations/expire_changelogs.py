"""Expiry of long-lived changelogs: the decoupled changelog life cycle on its own schedule (Java's ExpireChangelogImpl,
Flink's `expire_changelogs` procedure; maintenance.md §2.8)."""
from dataclasses import dataclass
from datetime import timedelta

import paimon_ops.options as o
from paimon_ops.features import RECLAIMING
from paimon_ops.operations.model import InstantMs, Operation, Params, now_param, param


@dataclass(frozen=True)
class ExpireChangelogsParams(Params):
    retain_min: int | None = param("always keep this many changelogs", option=o.CHANGELOG_NUM_RETAINED_MIN, metavar="N")
    retain_max: int | None = param("never keep more changelogs than this", option=o.CHANGELOG_NUM_RETAINED_MAX,
                                   metavar="N")
    older_than: InstantMs | None = param("expire changelogs committed before this instant (ISO 8601 with a zone, e.g. "
                                         "2026-11-20T00:00:00Z, or epoch ms)", metavar="INSTANT", group="time")
    min_age: timedelta | None = param("expire changelogs committed more than this long ago, e.g. '7 d'",
                                      option=o.CHANGELOG_TIME_RETAINED, metavar="AGE", group="time")
    max_deletes: int | None = param("expire at most this many changelogs", option=o.SNAPSHOT_EXPIRE_LIMIT, metavar="N")
    now: InstantMs | None = now_param()


OPERATION = Operation(
    name="expire_changelogs", title="changelog expiry",
    summary="expire long-lived changelogs (decoupled changelog retention) and reclaim their files",
    doc="Changelog expiry on its own schedule: the long-lived changelogs a decoupled snapshot expiry kept "
        "(`changelog.num-retained.*`, `changelog.time-retained`) beyond `retain_max`, or committed before `older_than` "
        "(an instant) or more than `min_age` ago (an age) while more than `retain_min` remain, with the files only they "
        "keep. Retention defaults to the table's `changelog.*` options, else its `snapshot.*` ones.",
    params_type=ExpireChangelogsParams, handles=RECLAIMING, stage=55, dagster_job="paimon_expire_changelogs",
)
