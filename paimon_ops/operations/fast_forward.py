"""Fast-forwarding the table's branch (main for db.t) to another branch (Java's fast_forward)."""
from dataclasses import dataclass

from paimon_ops.features import BRANCHING
from paimon_ops.operations.model import METADATA, Name, Operation, Params, param


@dataclass(frozen=True)
class FastForwardParams(Params):
    branch: Name = param("the branch whose state the table's branch takes")


OPERATION = Operation(
    name="fast_forward", title="fast-forward",
    summary="make the table's branch (main for db.t) take another branch's snapshots, tags and schemas",
    doc="This branch of the table (main for `db.t`) taking the snapshots, tags and schemas of `branch` from its "
        "earliest snapshot on, as Java's fast_forward; refused when `branch` is behind. Metadata only; cannot be "
        "undone.",
    params_type=FastForwardParams, handles=BRANCHING, placement=METADATA, confirm=True,
    manual_why="a one-off decision that cannot be undone (the CLI asks --yes)",
)
