"""Deleting tags, reclaiming the files only they kept alive."""
from dataclasses import dataclass

from paimon_ops.features import RECLAIMING
from paimon_ops.operations.model import Operation, Params, TagName, param


@dataclass(frozen=True)
class DeleteTagsParams(Params):
    names: list[TagName] = param("tag names")
    missing_ok: bool = param("a tag that does not exist is no error", default=False, cli=False)


OPERATION = Operation(
    name="delete_tags", title="tag deletion", summary="delete tags, reclaiming files only they kept alive",
    doc="Deleting tags, reclaiming the files only they kept alive.",
    params_type=DeleteTagsParams, handles=RECLAIMING, cli_name="delete-tag",
    manual_why="a one-off decision about named tags; Dagster expires tags (expire_tags)",
)
