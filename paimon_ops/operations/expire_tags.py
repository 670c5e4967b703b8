"""Tag expiry with reclamation."""
from paimon_ops.features import RECLAIMING
from paimon_ops.operations.model import AGE, INSTANT, Operation, Param

OPERATION = Operation(
    nightly=True, stage=40,
    name="expire_tags", title="tag expiry", summary="expire tags by retention and count, reclaiming files",
    takes_now=True, handles=RECLAIMING, dagster_job="paimon_expire_tags",
    params=(
        Param("older_than", INSTANT, "also delete tags created before this instant (ISO 8601 with a zone, e.g. "
                                     "2026-11-20T00:00:00Z, or epoch ms)", metavar="INSTANT", group="time"),
        Param("min_age", AGE, "also delete tags created more than this long ago, e.g. '30 d'", metavar="AGE",
              group="time"),
    ),
)
