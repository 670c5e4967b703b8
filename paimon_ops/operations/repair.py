"""Repairing the LATEST / EARLIEST hints (Java's repair_earliest_snapshot, and the hint a crashed writer left)."""
from dataclasses import dataclass

from paimon_ops.features import TAGGING
from paimon_ops.operations.model import METADATA, Operation, Params, param


@dataclass(frozen=True)
class RepairParams(Params):
    earliest: int | None = param("the snapshot EARLIEST names, as Java's repair_earliest_snapshot: the first snapshot "
                                 "after a gap in the ids, from which every snapshot up to the latest exists (default: "
                                 "the oldest snapshot file; a gap is refused without it)", metavar="ID")


OPERATION = Operation(
    name="repair", title="hint repair",
    summary="repair the LATEST / EARLIEST hints to name the real latest and earliest snapshots",
    doc="Repairing the snapshot hints (and those of long-lived changelogs): LATEST names the newest snapshot file and "
        "EARLIEST the oldest (or `earliest`, the first after a gap, as Java's repair_earliest_snapshot). A stale hint "
        "a crashed writer left — a LATEST older than the earliest snapshot makes Java resolve the latest snapshot to a "
        "deleted file, failing its reads and commits — is rewritten; the plan lists each hint with what it says "
        "and why it changes. Refused on a table without snapshots and where the catalog owns the history (REST).",
    params_type=RepairParams,
    handles=TAGGING,  # it writes hint files only: no table feature changes what a hint means
    placement=METADATA, reclaims=False, stage=10,  # (first: the other operations resolve snapshots by the hints)
    dagster_job="paimon_repair",
)
