"""Compaction of primary-key and append tables."""
from paimon_ops import options as o
from paimon_ops.features import BUCKETS_ONLY, FORMAT_PER_LEVEL, ROW_ID_REWRITES, SNAPSHOT_ORDERING
from paimon_ops.operations.model import (
    AGE,
    BOOL,
    CHOICE,
    DV_TABLES,
    FLOAT,
    INT,
    INTS,
    PARTITIONS,
    STR,
    STRINGS,
    Health,
    Mode,
    Operation,
    Param,
)

# Kinds of table (as paimon_ops.dagster.spec names them): the Dagster config offers each the modes valid for it.
_PK, _APPEND, _APPEND_FIXED = "primary-key", "append", "append-fixed-bucket"

# The compaction modes, each gated on its own (the features it handles besides the table's real buckets).
MODES = (
    Mode("full", BUCKETS_ONLY | ROW_ID_REWRITES),
    Mode("minor", BUCKETS_ONLY),
    Mode("dv-ratio", BUCKETS_ONLY | {FORMAT_PER_LEVEL}),
    Mode("small-files", BUCKETS_ONLY | ROW_ID_REWRITES | {SNAPSHOT_ORDERING, FORMAT_PER_LEVEL}),
    Mode("sort", BUCKETS_ONLY | {SNAPSHOT_ORDERING, FORMAT_PER_LEVEL}),
)
MODE_NAMES = tuple(m.name for m in MODES)

OPERATION = Operation(
    name="compact", title="compaction", summary="compact a table (full, minor, dv-ratio, sort, small-files)", takes_now=True, modes=MODES,
    dagster_job="paimon_compaction", reclaims=False,
    params=(
        Param("mode", CHOICE, "full (like Paimon's compact procedure): everything to the max level; minor: what "
                              "Paimon's own compaction trigger picks per bucket (universal / lookup compaction, deletion "
                              "vectors, changelog) — what a dedicated compaction job runs; dv-ratio: files with many "
                              "deleted rows; sort / small-files: append tables",
              default="full", choices=MODE_NAMES,
              by_table_kind={_PK: (("minor", "full", "dv-ratio"), "minor"),
                             _APPEND: (("small-files", "full", "sort"), "small-files"),
                             _APPEND_FIXED: (("small-files", "full"), "small-files")}),
        Param("partitions", PARTITIONS, "only these partitions (K=V[,K2=V2]; repeat for several); none: every "
                                        "partition", flag="--partition", metavar="K=V[,K2=V2]"),
        Param("where", STR, "predicate on partition columns, e.g. \"dt >= '2024-01-01'\""),
        Param("order_by", STRINGS, "sort mode: the columns to sort by (comma-separated)", metavar="COLS",
              by_table_kind={_APPEND: ((), None)}),
        Param("strategy", CHOICE, "sort mode: how rows are ordered", default="order",
              choices=("order", "zorder", "hilbert"), by_table_kind={_APPEND: (("order", "zorder", "hilbert"), "order")}),
        Param("threshold", FLOAT, "dv-ratio mode: deleted-row ratio above which a file is rewritten",
              option=o.COMPACTION_DV_RATIO_THRESHOLD, dagster=False),
        Param("buckets", INTS, "only these buckets; none: every bucket", cli=False),
        Param("partition_idle_time", AGE, "full mode: only partitions without a write for this long", cli=False,
              dagster=False),
        Param("min_files", INT, "small-files mode: compact a bucket with at least this many small files", cli=False,
              dagster=False, option=o.COMPACTION_MIN_FILE_NUM),
        Param("memory_budget", INT, "bytes a compaction task may hold in memory", cli=False, dagster=False,
              option=o.COMPACTION_MEMORY_BUDGET),
        Param("force", BOOL, "no effect (kept for old command lines)", cli_hidden=True, dagster=False),
    ),
    health=(Health("small_files", "paimon_small_files_sensor"),
            Health("dv_ratio", "paimon_dv_ratio_sensor", tables=DV_TABLES)),
)
