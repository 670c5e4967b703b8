"""Creating a branch from a tag, a snapshot, or empty."""
from paimon_ops.operations import INT, METADATA, NAME, STR, Operation, Param

OPERATION = Operation(
    name="create_branch", title="branch creation", summary="create a branch from a tag, a snapshot, or empty",
    facade="maintenance.create_branch", plan_module="paimon_ops.lifecycle.branches", plan_types=("create_branch",),
    placement=METADATA, manual_why="a one-off decision about a named branch",
    params=(
        Param("name", NAME, "branch name"),
        Param("tag", STR, "start from this tag of the table's branch (Java's create_branch)", metavar="TAG",
              group="source"),
        Param("snapshot_id", INT, "start from this snapshot of the table's branch", flag="--snapshot", metavar="ID",
              group="source"),
    ),
)
