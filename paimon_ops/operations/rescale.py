"""Rescaling a table's (or partitions') bucket count."""
from paimon_ops import options as o
from paimon_ops.features import BUCKETS_ONLY
from paimon_ops.operations.model import INT, PARTITIONS, STR, Operation, Param

OPERATION = Operation(
    name="rescale", title="rescale",
    summary="change the bucket count of a table or of chosen partitions (one OVERWRITE)", reclaims=False, handles=BUCKETS_ONLY,
    manual_why="a one-off decision about one table (the new bucket count), not recurring maintenance",
    params=(
        Param("bucket_num", INT, "the new number of buckets (required for bucket = -2)", option=o.BUCKET,
              metavar="N"),
        Param("partitions", PARTITIONS, "only this partition; repeatable", flag="--partition", metavar="K=V[,K2=V2]"),
        Param("where", STR, "predicate on partition columns, e.g. \"dt >= '2024-01-01'\""),
    ),
)
