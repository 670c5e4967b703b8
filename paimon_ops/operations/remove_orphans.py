"""Removal of files nothing references."""
from paimon_ops.features import ORPHAN_REMOVAL
from paimon_ops.operations.model import AGE, BOOL, INSTANT, Operation, Param

OPERATION = Operation(
    nightly=True, stage=60,
    name="remove_orphans", title="orphan removal", summary="delete files nothing references",
    takes_now=True, handles=ORPHAN_REMOVAL, dagster_job="paimon_remove_orphans",
    params=(
        Param("older_than", INSTANT, "only files last modified before this instant (ISO 8601 with a zone, e.g. "
                                     "2026-11-20T00:00:00Z, or epoch ms)", metavar="INSTANT", group="time"),
        Param("min_age", AGE, "only files last modified more than this long ago (default 3 d)", metavar="AGE",
              group="time"),
        Param("allow_short", BOOL, "allow an age below 1 day (only when no writer can be active)", default=False),
    ),
)
