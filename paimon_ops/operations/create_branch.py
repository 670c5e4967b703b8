"""Creating a branch from a tag, a snapshot, or empty (Java's create_branch)."""
from dataclasses import dataclass

from paimon_ops.features import BRANCHING
from paimon_ops.operations.model import METADATA, Name, Operation, Params, param


@dataclass(frozen=True)
class CreateBranchParams(Params):
    name: Name = param("branch name")
    tag: str | None = param("start from this tag of the table's branch (Java's create_branch)", metavar="TAG",
                            group="source")
    snapshot_id: int | None = param("start from this snapshot of the table's branch", flag="--snapshot",
                                    metavar="ID", group="source")


OPERATION = Operation(
    name="create_branch", title="branch creation", summary="create a branch from a tag, a snapshot, or empty",
    doc="Creating branch `name` from `tag` or `snapshot_id` of this branch of the table, or empty: the tag (or "
        "snapshot) and its snapshot are copied into `branch/branch-<name>/` with every schema up to the snapshot's.",
    params_type=CreateBranchParams, handles=BRANCHING, placement=METADATA,
    manual_why="a one-off decision about a named branch",
)
