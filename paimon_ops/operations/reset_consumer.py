"""Moving a consumer to a snapshot, or removing it."""
from paimon_ops.operations import BOOL, INT, METADATA, NAME, Operation, Param

OPERATION = Operation(
    name="reset_consumer", title="consumer reset", summary="move a consumer to a snapshot, or remove it",
    facade="maintenance.reset_consumer", plan_module="paimon_ops.lifecycle.consumers", plan_types=("reset_consumer",),
    placement=METADATA, required_groups=("to",), manual_why="a one-off decision about a named consumer",
    params=(
        Param("consumer_id", NAME, "consumer id"),
        Param("snapshot_id", INT, "the snapshot the consumer reads next (an existing one)", flag="--snapshot",
              metavar="ID", group="to"),
        Param("delete", BOOL, "remove the consumer", default=False, group="to"),
    ),
)
