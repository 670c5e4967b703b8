"""The compaction engine: full (PK merge to the max level), minor (Paimon's own pick), deletion-vector-ratio, append
bin-pack and sort compaction of Paimon tables, planned on the driver (planner.py; buckets.py what a bucket's files
become), executed as tasks on a runner (rewrite.py, lsm.py), committed as one COMPACT snapshot (api.py); the
postpone compaction (postpone.py) and rescale (rescale.py).

    plan = plan_compaction(table, mode="full")          # paimon_ops.compact.planner; metadata only, JSON-serialisable
    report = plan.execute(runner=SparkRunner(spark))   # or po.Table(table).maintenance.compact(...)
"""
