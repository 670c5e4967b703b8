"""Marking partitions done for downstream jobs (Java's mark_partition_done)."""
from dataclasses import dataclass

import paimon_ops.options as o
from paimon_ops.features import TAGGING
from paimon_ops.operations.model import METADATA, InstantMs, Operation, Params, Partitions, now_param, param


@dataclass(frozen=True)
class MarkPartitionDoneParams(Params):
    partitions: Partitions | None = param("a partition to mark done, k=v[,k2=v2] (repeatable; the leading partition "
                                          "keys: dt=… of a dt,hh table marks the day)", flag="--partition",
                                          metavar="K=V[,K=V]")
    actions: list[str] | None = param("the mark-done actions, comma-separated: success-file, done-partition, "
                                      "mark-event, http-report", option=o.PARTITION_MARK_DONE_ACTION,
                                      metavar="ACTION[,ACTION]")
    now: InstantMs | None = now_param()


OPERATION = Operation(
    name="mark_partition_done", title="partition mark-done",
    summary="mark partitions done for downstream jobs (a _SUCCESS file, a .done partition, a metastore event)",
    doc="Mark `partitions` done as Java's mark_partition_done does, with `actions` (default: the table's "
        "partition.mark-done-action): a `_SUCCESS` file in the partition's directory, a `<value>.done` partition or "
        "a LOAD_DONE event in the Hive Metastore, a POST to partition.mark-done-action.http.url. An action the "
        "table's catalog cannot carry out is refused before anything is marked.",
    params_type=MarkPartitionDoneParams,
    handles=TAGGING,  # it writes a marker file and metastore entries; it reads and rewrites no table file
    placement=METADATA, reclaims=False, stage=90, dagster_job="paimon_mark_partition_done",
)
