"""Rewriting the data files' file indexes (Java's rewrite_file_index) after the `file-index.*` options change."""
from dataclasses import dataclass

from paimon_ops.features import CLUSTERING, EXTERNAL_STRATEGY, FORMAT_PER_LEVEL, ROW_TRACKING, SNAPSHOT_ORDERING
from paimon_ops.operations.model import METADATA, Operation, Params, Partitions, param


@dataclass(frozen=True)
class RewriteFileIndexParams(Params):
    partitions: Partitions | None = param("only these partitions (K=V[,K2=V2]; repeat for several); none: every "
                                          "partition", flag="--partition", metavar="K=V[,K2=V2]")


OPERATION = Operation(
    name="rewrite_file_index", title="file index rewrite",
    summary="rebuild the data files' bloom-filter / bitmap file indexes after the file-index.* options change",
    doc="Rebuilding the file indexes of an append table's live data files (optionally of `partitions`) as the table's "
        "`file-index.*` options say now (bloom filter, bitmap), as Java's rewrite_file_index: each file's rows are "
        "read, its index is kept in the manifest entry up to `file-index.in-manifest-threshold` or written to a new "
        "`.index` file beside it, and one COMPACT commit replaces each entry by the same file with its new index "
        "(DELETE + ADD); the old index files stay on disk for older snapshots. Files already indexed as configured "
        "are left alone.",
    params_type=RewriteFileIndexParams,
    # It reads data files and re-commits them unchanged but for their index: files tied together by row id or in
    # packs, column-update files and formats paimon-ops cannot read are refused, as are files on another file system.
    handles=frozenset({ROW_TRACKING, CLUSTERING, SNAPSHOT_ORDERING, FORMAT_PER_LEVEL, EXTERNAL_STRATEGY}),
    placement=METADATA, reclaims=False,
    dagster_job="paimon_rewrite_file_index",
)
