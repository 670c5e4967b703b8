"""Renaming a tag."""
from paimon_ops.features import TAGGING
from paimon_ops.operations.model import BOOL, METADATA, NAME, Operation, Param

OPERATION = Operation(
    name="rename_tag", title="tag rename", summary="rename a tag", placement=METADATA, handles=TAGGING,
    manual_why="a one-off decision about a named tag",
    params=(
        Param("old", NAME, "current tag name"),
        Param("new", NAME, "new tag name"),
        Param("resume", BOOL, "finish an interrupted rename (NEW already exists with OLD's content)", default=False),
    ),
)
