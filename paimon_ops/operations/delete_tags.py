"""Deleting tags, reclaiming the files only they kept alive."""
from paimon_ops.features import RECLAIMING
from paimon_ops.operations.model import BOOL, NAMES, Operation, Param

OPERATION = Operation(
    name="delete_tags", title="tag deletion", summary="delete tags, reclaiming files only they kept alive",
    cli_name="delete-tag", handles=RECLAIMING, manual_why="a one-off decision about named tags; Dagster expires tags (expire_tags)",
    params=(
        Param("names", NAMES, "tag names"),
        Param("missing_ok", BOOL, "a tag that does not exist is no error", default=False, cli=False),
    ),
)
