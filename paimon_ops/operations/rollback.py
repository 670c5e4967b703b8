"""Rolling back to a snapshot, a tag, a point in time or a watermark — destructively, or as a new latest snapshot."""
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
    watermark: InstantMs | None = param("roll back to the latest snapshot whose watermark is at or before this "
                                        "instant (ISO 8601 with a zone, or epoch ms; Java's rollback_to_watermark)",
                                        metavar="INSTANT", group="target")
    as_latest: bool = param("commit the target's data as a new latest snapshot, keeping every later snapshot and "
                            "tag (Java's rollback_to_as_latest; needs no --yes)", default=False)


OPERATION = Operation(
    name="rollback", title="rollback", summary="roll back to a snapshot, tag, point in time or watermark",
    doc="Rolling back to a snapshot, a tag, the point in time `timestamp` (the latest snapshot at or before it, live "
        "or held by a tag) or the watermark `watermark` (the latest snapshot whose watermark is at or before it). "
        "Metadata only: the later snapshots, changelogs and tags are removed and cannot be restored — unless "
        "`as_latest`, which commits the target's data as a new latest snapshot and keeps them all.",
    params_type=RollbackParams, handles=RECLAIMING, placement=METADATA, confirm=True, required_groups=("target",),
    manual_why="a one-off decision that cannot be undone (the CLI asks --yes)",
)
