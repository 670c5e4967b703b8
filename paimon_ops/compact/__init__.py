"""The compaction engine: full (PK merge to the max level), deletion-vector-ratio, append bin-pack and sort
compaction of Paimon tables, planned on the driver, executed as tasks on a runner (Spark by default), committed
as one COMPACT snapshot.

    plan = plan_compaction(table, mode="full")          # metadata only; JSON-serialisable
    report = compact(table, mode="dv-ratio", runner=SparkRunner(spark))
"""
from paimon_ops.compact.api import CompactionTaskError, commit_compaction, compact, execute_plan
from paimon_ops.compact.model import CompactionPlan, CompactionTask, InputFile
from paimon_ops.compact.planner import MODES, plan_compaction

__all__ = ["compact", "plan_compaction", "execute_plan", "commit_compaction", "CompactionPlan", "CompactionTask",
           "InputFile", "CompactionTaskError", "MODES"]
