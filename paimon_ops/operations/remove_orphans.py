"""Removal of files nothing references."""
from dataclasses import dataclass
from datetime import timedelta

from paimon_ops.features import ORPHAN_REMOVAL
from paimon_ops.operations.model import InstantMs, Operation, Params, now_param, param

# Files younger than this are never candidates unless the caller says otherwise: a commit in flight writes its files
# before its snapshot references them (Java's remove_orphan_files default too).
DEFAULT_MIN_AGE = timedelta(days=3)


@dataclass(frozen=True)
class RemoveOrphansParams(Params):
    older_than: InstantMs | None = param("only files last modified before this instant (ISO 8601 with a zone, e.g. "
                                         "2026-11-20T00:00:00Z, or epoch ms)", metavar="INSTANT", group="time")
    min_age: timedelta | None = param("only files last modified more than this long ago", metavar="AGE",
                                      group="time", fallback=DEFAULT_MIN_AGE)
    allow_short: bool = param("allow an age below 1 day (only when no writer can be active)", default=False)
    now: InstantMs | None = now_param()


OPERATION = Operation(
    name="remove_orphans", title="orphan removal", summary="delete files nothing references",
    doc="Files no snapshot, tag or changelog of any branch references, last modified before `older_than` (an instant) "
        "or more than `min_age` ago (an age; default 3 days; under 1 day needs `allow_short`).",
    params_type=RemoveOrphansParams, handles=ORPHAN_REMOVAL, nightly=True, stage=70,
    dagster_job="paimon_remove_orphans",
)
