"""Renaming a branch."""
from dataclasses import dataclass

from paimon_ops.features import BRANCHING
from paimon_ops.operations.model import METADATA, Name, Operation, Params, param


@dataclass(frozen=True)
class RenameBranchParams(Params):
    old: Name = param("current branch name")
    new: Name = param("new branch name")
    resume: bool = param("finish a rename an object store interrupted (NEW holds part of OLD's files)",
                         default=False)


OPERATION = Operation(
    name="rename_branch", title="branch rename", summary="rename a branch",
    doc="Renaming branch `old` to `new` (one directory rename; file by file on object stores, where `resume` finishes "
        "an interrupted rename).",
    params_type=RenameBranchParams, handles=BRANCHING, placement=METADATA,
    manual_why="a one-off decision about a named branch",
)
