"""Moving an existing tag to another snapshot (Java's replace_tag)."""
from dataclasses import dataclass
from datetime import timedelta

from paimon_ops.features import TAGGING
from paimon_ops.operations.model import METADATA, InstantMs, Operation, Params, TagName, now_param, param


@dataclass(frozen=True)
class ReplaceTagParams(Params):
    name: TagName = param("tag name (the tag must exist)")
    snapshot_id: int | None = param("move it to this snapshot (default: the latest)", flag="--snapshot", metavar="ID")
    time_retained: timedelta | None = param("keep the tag this long from now, e.g. '7 d'", metavar="AGE")
    now: InstantMs | None = now_param()


OPERATION = Operation(
    name="replace_tag", title="tag replacement", summary="move an existing tag to another snapshot",
    doc="Move the existing tag `name` to `snapshot_id` (default: the latest snapshot), with a new `time_retained`, "
        "as Java's replace_tag: a tag that does not exist is refused, and the files only its old snapshot kept are "
        "not reclaimed (a warning says when they become orphans).",
    params_type=ReplaceTagParams, handles=TAGGING, placement=METADATA,
    manual_why="a one-off decision about a named tag",
)
