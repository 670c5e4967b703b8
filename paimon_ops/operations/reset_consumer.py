"""Moving a consumer to a snapshot, or removing it (Java's reset_consumer)."""
from dataclasses import dataclass

from paimon_ops.features import CONSUMERS
from paimon_ops.operations.model import METADATA, Name, Operation, Params, param


@dataclass(frozen=True)
class ResetConsumerParams(Params):
    consumer_id: Name = param("consumer id")
    snapshot_id: int | None = param("the snapshot the consumer reads next (an existing one)", flag="--snapshot",
                                    metavar="ID", group="to")
    delete: bool = param("remove the consumer", default=False, group="to")


OPERATION = Operation(
    name="reset_consumer", title="consumer reset", summary="move a consumer to a snapshot, or remove it",
    doc="Moving consumer `consumer_id` to the existing snapshot `snapshot_id`, or removing it (`delete`).",
    params_type=ResetConsumerParams, handles=CONSUMERS, placement=METADATA, required_groups=("to",),
    manual_why="a one-off decision about a named consumer",
)
