"""Removing consumers by pattern (Java's clear_consumers)."""
from dataclasses import dataclass

from paimon_ops.features import CONSUMERS
from paimon_ops.operations.model import METADATA, Operation, Params, param


@dataclass(frozen=True)
class ClearConsumersParams(Params):
    including: str | None = param("remove consumers whose whole id matches this regular expression (default: all)",
                                  metavar="REGEX")
    excluding: str | None = param("keep consumers whose whole id matches this regular expression", metavar="REGEX")


OPERATION = Operation(
    name="clear_consumers", title="consumer clearing", summary="remove the consumers matching a pattern",
    doc="Removing the consumers whose id matches the regular expression `including` (default: all) and not "
        "`excluding` (Java's clear_consumers).",
    params_type=ClearConsumersParams, handles=CONSUMERS, placement=METADATA,
    manual_why="a one-off decision about which consumers are dead",
)
