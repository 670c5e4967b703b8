"""Tagging the first snapshot whose watermark reached a value (Java's create_tag_from_watermark)."""
from dataclasses import dataclass
from datetime import timedelta

from paimon_ops.features import TAGGING
from paimon_ops.operations.model import METADATA, InstantMs, Operation, Params, TagName, now_param, param


@dataclass(frozen=True)
class CreateTagFromWatermarkParams(Params):
    name: TagName = param("tag name")
    watermark: InstantMs | None = param("tag the first snapshot whose watermark is at or after this instant (ISO "
                                        "8601 with a zone, or epoch ms: Paimon's watermarks are event-time epoch "
                                        "milliseconds)", metavar="INSTANT", group="watermark")
    time_retained: timedelta | None = param("keep the tag this long, e.g. '7 d'", metavar="AGE")
    replace: bool = param("move the tag if it already exists", default=False)
    now: InstantMs | None = now_param()


OPERATION = Operation(
    name="create_tag_from_watermark", title="tag creation from a watermark",
    summary="tag the first snapshot whose watermark reached an instant",
    doc="Tag the first snapshot whose watermark is at or after `watermark` — live, or held by a tag — as Java's "
        "create_tag_from_watermark. Refused when no snapshot has reached it, or when the one that did first has "
        "expired untagged.",
    params_type=CreateTagFromWatermarkParams, handles=TAGGING, placement=METADATA, required_groups=("watermark",),
    manual_why="a one-off tag; Dagster creates the automatic tags (create_auto_tags)",
)
