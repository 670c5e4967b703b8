"""Partition expiry: one OVERWRITE commit dropping the expired partitions."""
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import paimon_ops.options as o
from paimon_ops.features import MANIFEST_REWRITES
from paimon_ops.operations.model import EXPIRING_TABLES, METADATA, Health, InstantMs, Operation, Params, now_param, param


def _applies(spec: Any, section: Any) -> bool:
    """Partitioned tables with partition.expiration-time, or given an expiration_time."""
    return bool(spec.partition_keys) and (spec.expires_partitions or bool(getattr(section, "expiration_time", None)))


@dataclass(frozen=True)
class ExpirePartitionsParams(Params):
    expiration_time: timedelta | None = param("partitions older than this expire, e.g. '7 d'",
                                              option=o.PARTITION_EXPIRATION_TIME, metavar="AGE")
    strategy: str | None = param("where a partition's time comes from: its values or its newest file",
                                 choices=o.PARTITION_EXPIRATION_STRATEGY.choices,
                                 option=o.PARTITION_EXPIRATION_STRATEGY)
    timestamp_formatter: str | None = param("Java DateTimeFormatter pattern of the partition time, e.g. yyyyMMdd",
                                            option=o.PARTITION_TIMESTAMP_FORMATTER, metavar="PATTERN")
    timestamp_pattern: str | None = param("how partition values make the time string, e.g. '$dt $hour:00:00'",
                                          option=o.PARTITION_TIMESTAMP_PATTERN, metavar="PATTERN")
    max_expires: int | None = param("drop at most this many partitions per run", option=o.PARTITION_EXPIRATION_MAX_NUM,
                                    metavar="N")
    now: InstantMs | None = now_param()


# Its health signal (paimon_ops.health measures it).
PARTITION_EXPIRY = Health("partition_expiry", "paimon_partition_expiry_sensor", tables=EXPIRING_TABLES)

OPERATION = Operation(
    name="expire_partitions", title="partition expiry",
    summary="drop expired partitions in one OVERWRITE commit (snapshot expiry reclaims their files)",
    doc="Dropping partitions older than `expiration_time` (an age; default the table's `partition.expiration-time`) "
        "in one OVERWRITE commit, by `strategy` values-time (the time in the partition values, read with "
        "`timestamp_pattern` / `timestamp_formatter`) or update-time (the newest file). The plan lists which partitions "
        "go and why, and those whose time cannot be read (never expired); snapshot expiry reclaims the files later.",
    params_type=ExpirePartitionsParams, handles=MANIFEST_REWRITES, placement=METADATA, nightly=True, stage=20,
    dagster_job="paimon_expire_partitions",
    reclaims=False,  # the dropped partitions' files stay until the snapshots that still read them expire
    applies=_applies,
    health=(PARTITION_EXPIRY,),
)
