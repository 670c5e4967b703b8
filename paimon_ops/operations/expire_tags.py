"""Tag expiry with reclamation."""
from dataclasses import dataclass
from datetime import timedelta

from paimon_ops.features import RECLAIMING
from paimon_ops.operations.model import InstantMs, Operation, Params, now_param, param


@dataclass(frozen=True)
class ExpireTagsParams(Params):
    older_than: InstantMs | None = param("also delete tags created before this instant (ISO 8601 with a zone, e.g. "
                                         "2026-11-20T00:00:00Z, or epoch ms)", metavar="INSTANT", group="time")
    min_age: timedelta | None = param("also delete tags created more than this long ago, e.g. '30 d'", metavar="AGE",
                                      group="time")
    now: InstantMs | None = now_param()


OPERATION = Operation(
    name="expire_tags", title="tag expiry", summary="expire tags by retention and count, reclaiming files",
    doc="Tag expiry: retention (`tagTimeRetained`), `tag.num-retained-max`, and tags created before `older_than` (an "
        "instant) or more than `min_age` ago (an age); not both.",
    params_type=ExpireTagsParams, handles=RECLAIMING, nightly=True, stage=60, dagster_job="paimon_expire_tags",
)
