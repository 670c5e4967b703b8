"""Snapshot expiry with data-file reclamation."""
from paimon_ops import options as o
from paimon_ops.features import RECLAIMING
from paimon_ops.operations.model import AGE, INSTANT, INT, Health, Operation, Param

OPERATION = Operation(
    nightly=True, stage=30,
    name="expire_snapshots", title="snapshot expiry", summary="expire snapshots and reclaim their files",
    takes_now=True, handles=RECLAIMING, dagster_job="paimon_expire_snapshots",
    params=(
        Param("retain_min", INT, "always keep this many snapshots", option=o.SNAPSHOT_NUM_RETAINED_MIN, metavar="N"),
        Param("retain_max", INT, "never keep more snapshots than this", option=o.SNAPSHOT_NUM_RETAINED_MAX,
              metavar="N"),
        Param("older_than", INSTANT, "expire snapshots superseded before this instant (ISO 8601 with a zone, e.g. "
                                     "2026-11-20T00:00:00Z, or epoch ms)", metavar="INSTANT", group="time"),
        Param("min_age", AGE, "expire snapshots superseded more than this long ago, e.g. '1 d'",
              option=o.SNAPSHOT_TIME_RETAINED, metavar="AGE", group="time", engine_names=("time_retained",)),
        Param("max_deletes", INT, "expire at most this many snapshots", option=o.SNAPSHOT_EXPIRE_LIMIT, metavar="N"),
    ),
    health=(Health("snapshot_retention", "paimon_snapshot_count_sensor"),),
)
