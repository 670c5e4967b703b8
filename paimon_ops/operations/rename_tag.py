"""Renaming a tag."""
from dataclasses import dataclass

from paimon_ops.features import TAGGING
from paimon_ops.operations.model import METADATA, Operation, Params, TagName, param


@dataclass(frozen=True)
class RenameTagParams(Params):
    old: TagName = param("current tag name")
    new: TagName = param("new tag name")
    resume: bool = param("finish an interrupted rename (NEW already exists with OLD's content)", default=False)


OPERATION = Operation(
    name="rename_tag", title="tag rename", summary="rename a tag",
    doc="Renaming tag `old` to `new`; `resume` finishes an interrupted rename (`new` already exists with `old`'s "
        "content).",
    params_type=RenameTagParams, handles=TAGGING, placement=METADATA,
    manual_why="a one-off decision about a named tag",
)
