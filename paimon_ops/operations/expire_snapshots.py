"""Snapshot expiry with data-file reclamation."""
from dataclasses import dataclass
from datetime import timedelta

import paimon_ops.options as o
from paimon_ops.features import RECLAIMING
from paimon_ops.operations.model import Health, InstantMs, Operation, Params, now_param, param


@dataclass(frozen=True)
class ExpireSnapshotsParams(Params):
    retain_min: int | None = param("always keep this many snapshots", option=o.SNAPSHOT_NUM_RETAINED_MIN,
                                   metavar="N")
    retain_max: int | None = param("never keep more snapshots than this", option=o.SNAPSHOT_NUM_RETAINED_MAX,
                                   metavar="N")
    older_than: InstantMs | None = param("expire snapshots superseded before this instant (ISO 8601 with a zone, e.g. "
                                         "2026-11-20T00:00:00Z, or epoch ms)", metavar="INSTANT", group="time")
    min_age: timedelta | None = param("expire snapshots superseded more than this long ago, e.g. '1 d'",
                                      option=o.SNAPSHOT_TIME_RETAINED, metavar="AGE", group="time")
    max_deletes: int | None = param("expire at most this many snapshots", option=o.SNAPSHOT_EXPIRE_LIMIT,
                                    metavar="N")
    now: InstantMs | None = now_param()


# Its health signal (paimon_ops.health measures it).
SNAPSHOT_RETENTION = Health("snapshot_retention", "paimon_snapshot_count_sensor")

OPERATION = Operation(
    name="expire_snapshots", title="snapshot expiry", summary="expire snapshots and reclaim their files",
    doc="Snapshot expiry with file reclamation. Retention defaults to the table's `snapshot.num-retained.*` and "
        "`snapshot.time-retained`: a snapshot may expire once its successor was committed before `older_than` (an "
        "instant) or more than `min_age` ago (an age); not both.",
    params_type=ExpireSnapshotsParams, handles=RECLAIMING, nightly=True, stage=50,
    dagster_job="paimon_expire_snapshots", health=(SNAPSHOT_RETENTION,),
)
