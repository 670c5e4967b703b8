"""Tagging the first snapshot committed at or after an instant (Java's create_tag_from_timestamp)."""
from dataclasses import dataclass
from datetime import timedelta

from paimon_ops.features import TAGGING
from paimon_ops.operations.model import METADATA, InstantMs, Operation, Params, TagName, now_param, param


@dataclass(frozen=True)
class CreateTagFromTimestampParams(Params):
    name: TagName = param("tag name")
    timestamp: InstantMs | None = param("tag the first snapshot committed at or after this instant (ISO 8601 with a "
                                        "zone, e.g. 2026-11-20T00:00:00Z, or epoch ms)", metavar="INSTANT",
                                        group="timestamp")
    time_retained: timedelta | None = param("keep the tag this long, e.g. '7 d'", metavar="AGE")
    replace: bool = param("move the tag if it already exists", default=False)
    now: InstantMs | None = now_param()


OPERATION = Operation(
    name="create_tag_from_timestamp", title="tag creation from a timestamp",
    summary="tag the first snapshot committed at or after an instant",
    doc="Tag the first snapshot committed at or after `timestamp` — live, or held by a tag — as Java's "
        "create_tag_from_timestamp (`create_tag(timestamp=…)` tags the snapshot current at an instant instead). "
        "Refused when no snapshot was committed since, or when the one that was first has expired untagged.",
    params_type=CreateTagFromTimestampParams, handles=TAGGING, placement=METADATA, required_groups=("timestamp",),
    manual_why="a one-off tag; Dagster creates the automatic tags (create_auto_tags)",
)
