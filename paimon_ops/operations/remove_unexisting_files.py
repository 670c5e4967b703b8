"""Dropping the entries whose files are missing (Java's remove_unexisting_files): the one operation that acts on a table
with missing files."""
from dataclasses import dataclass

from paimon_ops.features import (
    CLUSTERING,
    EXTERNAL_STRATEGY,
    FORMAT_PER_LEVEL,
    OTHER_FORMAT,
    POSTPONE,
    ROW_TRACKING,
    SNAPSHOT_ORDERING,
    VARIANT_SHREDDING,
)
from paimon_ops.operations.model import METADATA, Operation, Params, Partitions, param


@dataclass(frozen=True)
class RemoveUnexistingFilesParams(Params):
    partitions: Partitions | None = param("only these partitions (K=V[,K2=V2]; repeat for several); none: every "
                                          "partition", flag="--partition", metavar="K=V[,K2=V2]")
    drop_missing_manifests: bool = param("also drop manifests missing from storage (Java's remove_unexisting_manifests), "
                                         "if they hold no DELETE entry: the files they added leave the table with "
                                         "their rows", default=False)


OPERATION = Operation(
    name="remove_unexisting_files", title="removal of missing files",
    summary="drop from the latest snapshot the entries whose files are missing (one commit; their rows are lost)",
    doc="Recovering a table whose data files went missing (a bucket lifecycle rule, a bad copy), as Java's "
        "remove_unexisting_files: one OVERWRITE commit that drops exactly the entries of the latest snapshot whose "
        "data files are missing (with their deletion vectors), the data files whose deletion-vector index file is "
        "missing, and the references to missing file-index files; optionally restricted to `partitions`. Their rows "
        "are lost (on a primary-key table older versions of their keys may reappear: the plan says so). A missing "
        "or unreadable manifest is refused, unless `drop_missing_manifests` drops a missing one that holds no DELETE "
        "entry (Java's remove_unexisting_manifests); nothing else is read than metadata and directory listings.",
    params_type=RemoveUnexistingFilesParams,
    # It drops entries and rewrites deletion vectors without opening a data file: features that tie files together
    # by row id or in packs (data evolution, BLOB files, global / primary-key / vector indexes, row sidecars) and
    # deletion vectors modified in place are refused; files on another file system cannot be listed.
    handles=frozenset({ROW_TRACKING, CLUSTERING, SNAPSHOT_ORDERING, FORMAT_PER_LEVEL, OTHER_FORMAT, EXTERNAL_STRATEGY,
                       POSTPONE, VARIANT_SHREDDING}),
    placement=METADATA, confirm=True, reclaims=False,
    manual_why="a one-off repair after files went missing that drops rows: decided by a person (the CLI asks --yes)",
)
