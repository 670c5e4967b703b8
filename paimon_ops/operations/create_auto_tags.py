"""The automatic tags that are due (tag.create-time or Paimon's auto-tag options), or a backfill."""
from dataclasses import dataclass
from typing import Any

from paimon_ops.errors import PeriodCannotBeTaggedError, PeriodNotDueError
from paimon_ops.features import TAGGING
from paimon_ops.operations.model import METADATA, InstantMs, Operation, Params, now_param, param


def _one_period(plan: Any, table: Any) -> None:
    """`--period`: that period's tag is made, or the command says why not (exit 2)."""
    periods = plan.details.get("periods") or []
    if len(periods) != 1:
        return
    d = periods[0]
    if d["status"] == "not-due":
        raise PeriodNotDueError(f"the tag of period {d['period']} of {table.identifier} is not due yet: {d['reason']}")
    if d["status"] in ("expired", "too-late"):
        raise PeriodCannotBeTaggedError(f"period {d['period']} of {table.identifier} cannot be tagged: {d['reason']}")


@dataclass(frozen=True)
class CreateAutoTagsParams(Params):
    periods: list[str] | None = param("create (or backfill) the tags of these periods, e.g. 2026-11-21 (default: "
                                      "the tags that are due)", flag="--period", metavar="PERIOD", dagster=False)
    now: InstantMs | None = now_param()


OPERATION = Operation(
    name="create_auto_tags", title="automatic tags", summary="create the automatic tags that are due",
    doc="The automatic tags that are due (`tag.create-time` or Paimon's auto-tag options), or those of `periods` "
        "(period names or dates: a backfill).",
    params_type=CreateAutoTagsParams, handles=TAGGING, placement=METADATA, nightly=True, stage=10,
    cli_name="auto-tag", dagster_name="create_tags",
    manual_why="run by the nightly job and the daily tags asset (on time, per period)",
    cli_check=_one_period, applies=lambda spec, section: bool(spec.has_expected_tags),
)
