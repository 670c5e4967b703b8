"""Rolling back to a snapshot, a tag or a point in time."""
from paimon_ops.features import RECLAIMING
from paimon_ops.operations.model import INSTANT, INT, METADATA, STR, Operation, Param

OPERATION = Operation(
    name="rollback", title="rollback", summary="roll back to a snapshot, tag or point in time (metadata only)",
    placement=METADATA, handles=RECLAIMING, confirm=True, required_groups=("target",),
    manual_why="a one-off decision that cannot be undone (the CLI asks --yes)",
    params=(
        Param("snapshot_id", INT, "roll back to this snapshot", flag="--snapshot", metavar="ID", group="target"),
        Param("tag", STR, "roll back to this tag", group="target"),
        Param("timestamp", INSTANT, "roll back to the latest snapshot committed at or before this instant (ISO 8601 "
                                    "with a zone, e.g. 2026-11-20T00:00:00Z, or epoch ms)", metavar="INSTANT",
              group="target"),
    ),
)
