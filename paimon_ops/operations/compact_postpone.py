"""Compaction of postpone-bucket tables (`bucket = -2`)."""
from dataclasses import dataclass

import paimon_ops.options as o
from paimon_ops.features import BUCKETS_ONLY
from paimon_ops.operations.model import Operation, Params, Partitions, param


@dataclass(frozen=True)
class CompactPostponeParams(Params):
    partitions: Partitions | None = param("only this partition; repeatable", flag="--partition",
                                          metavar="K=V[,K2=V2]")
    where: str | None = param("predicate on partition columns, e.g. \"dt >= '2024-01-01'\"")
    memory_budget: int | None = param("bytes a compaction task may hold in memory", cli=False, dagster=False,
                                      option=o.COMPACTION_MEMORY_BUDGET)


OPERATION = Operation(
    name="compact_postpone", title="postpone-bucket compaction",
    summary="postpone-bucket tables (bucket = -2): move the rows waiting in bucket-postpone into real buckets",
    doc="Postpone-bucket compaction (`bucket = -2` tables): the rows waiting in `bucket-postpone` replayed in writer "
        "order into real buckets (the partition's bucket count, else `postpone.target-row-num-per-bucket` / "
        "`postpone.default-bucket-num`), merged, compacted as Paimon's writer would, in one COMPACT commit.",
    params_type=CompactPostponeParams, handles=BUCKETS_ONLY, reclaims=False,
    manual_why="compaction runs it on a postpone-bucket table whose rows wait (the compaction job, like every face)",
)
