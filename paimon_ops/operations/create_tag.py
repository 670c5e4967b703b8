"""Creating (or moving) a tag."""
from paimon_ops.features import TAGGING
from paimon_ops.operations.model import AGE, BOOL, INSTANT, INT, METADATA, NAME, Operation, Param

OPERATION = Operation(
    name="create_tag", title="tag creation", summary="create a tag", placement=METADATA, handles=TAGGING,
    takes_now=True, manual_why="a one-off tag; Dagster creates the automatic tags (create_auto_tags)",
    params=(
        Param("name", NAME, "tag name"),
        Param("snapshot_id", INT, "tag this snapshot (default: the latest)", flag="--snapshot", metavar="ID",
              group="target"),
        Param("timestamp", INSTANT, "tag the snapshot current at this instant (ISO 8601 with a zone, e.g. "
                                    "2026-11-20T00:00:00Z, or epoch ms)", metavar="INSTANT", group="target",
              engine_names=("timestamp_millis",)),
        Param("time_retained", AGE, "keep the tag this long, e.g. '7 d'", metavar="AGE"),
        Param("replace", BOOL, "move the tag if it already exists", default=False),
    ),
)
