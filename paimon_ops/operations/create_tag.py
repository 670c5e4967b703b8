"""Creating (or moving) a tag."""
from dataclasses import dataclass
from datetime import timedelta

from paimon_ops.features import TAGGING
from paimon_ops.operations.model import METADATA, InstantMs, Operation, Params, TagName, now_param, param


@dataclass(frozen=True)
class CreateTagParams(Params):
    name: TagName = param("tag name")
    snapshot_id: int | None = param("tag this snapshot (default: the latest)", flag="--snapshot", metavar="ID",
                                    group="target")
    timestamp: InstantMs | None = param("tag the snapshot current at this instant (ISO 8601 with a zone, e.g. "
                                        "2026-11-20T00:00:00Z, or epoch ms)", metavar="INSTANT", group="target")
    time_retained: timedelta | None = param("keep the tag this long, e.g. '7 d'", metavar="AGE")
    replace: bool = param("move the tag if it already exists", default=False)
    now: InstantMs | None = now_param()


OPERATION = Operation(
    name="create_tag", title="tag creation", summary="create a tag",
    doc="Tag the latest snapshot, `snapshot_id`, or the snapshot current at `timestamp`; `replace` moves an existing "
        "tag of that name instead of refusing.",
    params_type=CreateTagParams, handles=TAGGING, placement=METADATA,
    manual_why="a one-off tag; Dagster creates the automatic tags (create_auto_tags)",
)
