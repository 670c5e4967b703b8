"""Fast-forwarding the table's branch (main for db.t) to another branch."""
from paimon_ops.operations import METADATA, NAME, Operation, Param

OPERATION = Operation(
    name="fast_forward", title="fast-forward", summary="make the table's branch (main for db.t) take another "
                                                     "branch's snapshots, tags and schemas (metadata only)",
    facade="maintenance.fast_forward", plan_module="paimon_ops.lifecycle.branches", plan_types=("fast_forward",),
    placement=METADATA, confirm=True, manual_why="a one-off decision that cannot be undone (the CLI asks --yes)",
    params=(Param("branch", NAME, "the branch whose state the table's branch takes"),),
)
