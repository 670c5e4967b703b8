"""Removing consumers by pattern (Java's clear_consumers)."""
from paimon_ops.operations import METADATA, STR, Operation, Param

OPERATION = Operation(
    name="clear_consumers", title="consumer clearing", summary="remove the consumers matching a pattern",
    facade="maintenance.clear_consumers", plan_module="paimon_ops.lifecycle.consumers",
    plan_types=("clear_consumers",), placement=METADATA,
    manual_why="a one-off decision about which consumers are dead",
    params=(
        Param("including", STR, "remove consumers whose whole id matches this regular expression (default: all)",
              metavar="REGEX"),
        Param("excluding", STR, "keep consumers whose whole id matches this regular expression", metavar="REGEX"),
    ),
)
