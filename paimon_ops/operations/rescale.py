"""Rescaling a table's (or partitions') bucket count."""
from dataclasses import dataclass

import paimon_ops.options as o
from paimon_ops.features import BUCKETS_ONLY
from paimon_ops.operations.model import Operation, Params, Partitions, param


@dataclass(frozen=True)
class RescaleParams(Params):
    bucket_num: int | None = param("the new number of buckets (required for bucket = -2)", option=o.BUCKET,
                                   metavar="N")
    partitions: Partitions | None = param("only this partition; repeatable", flag="--partition",
                                          metavar="K=V[,K2=V2]")
    where: str | None = param("predicate on partition columns, e.g. \"dt >= '2024-01-01'\"")


OPERATION = Operation(
    name="rescale", title="rescale",
    summary="change the bucket count of a table or of chosen partitions (one OVERWRITE)",
    doc="Rescale to `bucket_num` buckets (default: the table's `bucket` option; required for postpone tables) the "
        "whole table or the chosen `partitions` / `where`: their rows rewritten into the new buckets in one OVERWRITE "
        "commit; fixed-bucket tables get the new `bucket` option by a schema change first.",
    params_type=RescaleParams, handles=BUCKETS_ONLY, reclaims=False,
    manual_why="a one-off decision about one table (the new bucket count), not recurring maintenance",
)
