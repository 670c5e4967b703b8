"""The compaction engine: full (PK merge to the max level), deletion-vector-ratio, append bin-pack and sort
compaction of Paimon tables, planned on the driver, executed as tasks on a runner (Spark by default), committed
as one COMPACT snapshot.

    plan = plan_compaction(table, mode="full")          # metadata only; JSON-serialisable
    report = plan.execute(runner=SparkRunner(spark))   # or po.Table(table).maintenance.compact(...)
"""
from paimon_ops.compact.api import CompactionTaskError, commit_compaction, execute_plan
from paimon_ops.compact.model import CompactionPlan, CompactionTask, InputFile
from paimon_ops.compact.planner import MODES, plan_compaction

__all__ = ["plan_compaction", "execute_plan", "commit_compaction", "CompactionPlan", "CompactionTask",
           "InputFile", "CompactionTaskError", "MODES"]
