"""Compaction of postpone-bucket tables (`bucket = -2`)."""
from paimon_ops import options as o
from paimon_ops.features import BUCKETS_ONLY
from paimon_ops.operations.model import INT, PARTITIONS, STR, Operation, Param

OPERATION = Operation(
    name="compact_postpone", title="postpone-bucket compaction",
    summary="postpone-bucket tables (bucket = -2): move the rows waiting in bucket-postpone into real buckets",
    reclaims=False, handles=BUCKETS_ONLY,
    manual_why="in Dagster, the compaction job's minor mode runs it on postpone-bucket tables",
    params=(
        Param("partitions", PARTITIONS, "only this partition; repeatable", flag="--partition", metavar="K=V[,K2=V2]"),
        Param("where", STR, "predicate on partition columns, e.g. \"dt >= '2024-01-01'\""),
        Param("memory_budget", INT, "bytes a compaction task may hold in memory", cli=False, dagster=False,
              option=o.COMPACTION_MEMORY_BUDGET),
    ),
)
