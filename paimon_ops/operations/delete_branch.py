"""Deleting a branch, reclaiming the files only it kept alive."""
from paimon_ops.operations import NAME, Operation, Param

OPERATION = Operation(
    name="delete_branch", title="branch deletion", summary="delete a branch, reclaiming files only it kept alive",
    facade="maintenance.delete_branch", plan_module="paimon_ops.lifecycle.branches", plan_types=("delete_branch",),
    manual_why="a one-off decision about a named branch",
    params=(Param("name", NAME, "branch name"),),
)
