"""Renaming a branch."""
from paimon_ops.operations import BOOL, METADATA, NAME, Operation, Param

OPERATION = Operation(
    name="rename_branch", title="branch rename", summary="rename a branch", facade="maintenance.rename_branch",
    plan_module="paimon_ops.lifecycle.branches", plan_types=("rename_branch",), placement=METADATA,
    manual_why="a one-off decision about a named branch",
    params=(
        Param("old", NAME, "current branch name"),
        Param("new", NAME, "new branch name"),
        Param("resume", BOOL, "finish a rename an object store interrupted (NEW holds part of OLD's files)",
              default=False),
    ),
)
