"""Rolling back to a snapshot, a tag or a point in time."""
from dataclasses import dataclass

from paimon_ops.features import RECLAIMING
from paimon_ops.operations.model import METADATA, InstantMs, Operation, Params, param


@dataclass(frozen=True)
class RollbackParams(Params):
    snapshot_id: int | None = param("roll back to this snapshot", flag="--snapshot", metavar="ID", group="target")
    tag: str | None = param("roll back to this tag", group="target")
    timestamp: InstantMs | None = param("roll back to the latest snapshot committed at or before this instant (ISO "
                                        "8601 with a zone, e.g. 2026-11-20T00:00:00Z, or epoch ms)", metavar="INSTANT",
                                        group="target")


OPERATION = Operation(
    name="rollback", title="rollback", summary="roll back to a snapshot, tag or point in time (metadata only)",
    doc="Rolling back to a snapshot, a tag, or the point in time `timestamp` (the latest snapshot at or before it, "
        "live or held by a tag). Metadata only; cannot be undone.",
    params_type=RollbackParams, handles=RECLAIMING, placement=METADATA, confirm=True, required_groups=("target",),
    manual_why="a one-off decision that cannot be undone (the CLI asks --yes)",
)
