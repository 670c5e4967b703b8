"""Deleting a branch, reclaiming the files only it kept alive."""
from dataclasses import dataclass

from paimon_ops.features import RECLAIMING
from paimon_ops.operations.model import Name, Operation, Params, param


@dataclass(frozen=True)
class DeleteBranchParams(Params):
    name: Name = param("branch name")


OPERATION = Operation(
    name="delete_branch", title="branch deletion", summary="delete a branch, reclaiming files only it kept alive",
    doc="Deleting branch `name` and the files only it kept alive — never one that main, a tag or another branch keeps "
        "alive.",
    params_type=DeleteBranchParams, handles=RECLAIMING, manual_why="a one-off decision about a named branch",
)
