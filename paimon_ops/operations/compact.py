"""Compaction of primary-key and append tables."""
from dataclasses import dataclass
from datetime import timedelta

import paimon_ops.options as o
from paimon_ops.features import BUCKETS_ONLY, FORMAT_PER_LEVEL, ROW_ID_REWRITES, SNAPSHOT_ORDERING
from paimon_ops.operations.model import (
    DV_TABLES,
    Health,
    InstantMs,
    Mode,
    Operation,
    Params,
    Partitions,
    now_param,
    param,
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

@dataclass(frozen=True)
class CompactParams(Params):
    mode: str = param("full (like Paimon's compact procedure): everything to the max level; minor: what Paimon's own "
                      "compaction trigger picks per bucket (universal / lookup compaction, deletion vectors, "
                      "changelog) — what a dedicated compaction job runs; dv-ratio: files with many deleted rows; "
                      "sort / small-files: append tables",
                      default="full", choices=MODE_NAMES,
                      by_table_kind={_PK: (("minor", "full", "dv-ratio"), "minor"),
                                     _APPEND: (("small-files", "full", "sort"), "small-files"),
                                     _APPEND_FIXED: (("small-files", "full"), "small-files")})
    partitions: Partitions | None = param("only these partitions (K=V[,K2=V2]; repeat for several); none: every "
                                          "partition", flag="--partition", metavar="K=V[,K2=V2]")
    where: str | None = param("predicate on partition columns, e.g. \"dt >= '2024-01-01'\"")
    order_by: list[str] | None = param("sort mode: the columns to sort by (comma-separated)", metavar="COLS",
                                       by_table_kind={_APPEND: ((), None)})
    strategy: str = param("sort mode: how rows are ordered", default="order", choices=("order", "zorder", "hilbert"),
                          by_table_kind={_APPEND: (("order", "zorder", "hilbert"), "order")})
    threshold: float | None = param("dv-ratio mode: deleted-row ratio above which a file is rewritten",
                                    option=o.COMPACTION_DV_RATIO_THRESHOLD, dagster=False)
    buckets: list[int] | None = param("only these buckets; none: every bucket", cli=False)
    partition_idle_time: timedelta | None = param("full mode: only partitions without a write for this long",
                                                  cli=False, dagster=False)
    min_files: int | None = param("small-files mode: compact a bucket with at least this many small files",
                                  cli=False, dagster=False, option=o.COMPACTION_MIN_FILE_NUM)
    memory_budget: int | None = param("bytes a compaction task may hold in memory", cli=False, dagster=False,
                                      option=o.COMPACTION_MEMORY_BUDGET)
    force: bool = param("no effect (kept for old command lines)", cli_hidden=True, dagster=False)
    now: InstantMs | None = now_param()


# Its health signals (paimon_ops.health measures them).
SMALL_FILES = Health("small_files", "paimon_small_files_sensor")
DV_RATIO = Health("dv_ratio", "paimon_dv_ratio_sensor", tables=DV_TABLES)

OPERATION = Operation(
    name="compact", title="compaction", summary="compact a table (full, minor, dv-ratio, sort, small-files)",
    doc="Compaction: `mode` full | minor | dv-ratio | small-files | sort (`order_by`, `strategy` order | zorder | "
        "hilbert). Restricted to `partitions` (list of {key: value}) and/or `where` (SQL on partition columns).",
    params_type=CompactParams, modes=MODES, stage=30, dagster_job="paimon_compaction", reclaims=False,
    health=(SMALL_FILES, DV_RATIO),
)
