"""Partition expiry: one OVERWRITE commit dropping the expired partitions."""
from typing import Any

from paimon_ops import options as o
from paimon_ops.features import MANIFEST_REWRITES
from paimon_ops.operations.model import AGE, CHOICE, EXPIRING_TABLES, INT, METADATA, STR, Health, Operation, Param


def _applies(spec: Any, section: Any) -> bool:
    """Partitioned tables with partition.expiration-time, or given an expiration_time."""
    return bool(spec.partition_keys) and (spec.expires_partitions or bool(getattr(section, "expiration_time", None)))


OPERATION = Operation(
    nightly=True, stage=20,
    name="expire_partitions", title="partition expiry",
    summary="drop expired partitions in one OVERWRITE commit (snapshot expiry reclaims their files)",
    placement=METADATA, handles=MANIFEST_REWRITES, takes_now=True,
    dagster_job="paimon_expire_partitions",
    reclaims=False,  # the dropped partitions' files stay until the snapshots that still read them expire
    applies=_applies,
    params=(
        Param("expiration_time", AGE, "partitions older than this expire, e.g. '7 d'",
              option=o.PARTITION_EXPIRATION_TIME, metavar="AGE"),
        Param("strategy", CHOICE, "where a partition's time comes from: its values or its newest file",
              choices=o.PARTITION_EXPIRATION_STRATEGY.choices, option=o.PARTITION_EXPIRATION_STRATEGY),
        Param("timestamp_formatter", STR, "Java DateTimeFormatter pattern of the partition time, e.g. yyyyMMdd",
              option=o.PARTITION_TIMESTAMP_FORMATTER, metavar="PATTERN"),
        Param("timestamp_pattern", STR, "how partition values make the time string, e.g. '$dt $hour:00:00'",
              option=o.PARTITION_TIMESTAMP_PATTERN,
              metavar="PATTERN"),
        Param("max_expires", INT, "drop at most this many partitions per run", option=o.PARTITION_EXPIRATION_MAX_NUM,
              metavar="N"),
    ),
    health=(Health("partition_expiry", "paimon_partition_expiry_sensor", tables=EXPIRING_TABLES),),
)
