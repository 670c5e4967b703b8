"""paimon-ops: maintenance for Apache Paimon tables — compaction, tags, snapshot/tag expiry with file reclamation,
orphan removal, rollback, partition expiry and manifest compaction — planned, reviewed, then executed (in-process or
on Spark).

    import paimon_ops as po
    t = po.Catalog("/data/warehouse").get_table("db.t")
    plan = t.maintenance.expire_snapshots(retain_min=3)
    report = plan.execute()

See `paimon_ops.api` for every operation; errors are in `paimon_ops.errors`.
"""
from paimon_ops.api import Catalog, Maintenance, Table, Tags, load_plan
from paimon_ops.errors import (
    CommitConflictError,
    CorruptMetadataError,
    InvalidArgumentError,
    InvalidOptionError,
    PaimonOpsError,
    StalePlanError,
    TableNotFoundError,
    UnreachableError,
    UnsafeOperationError,
    UnsupportedError,
)
from paimon_ops.execution.plan import Plan
from paimon_ops.execution.report import Report
from paimon_ops.execution.runner import LocalRunner, Runner, SparkRunner
from paimon_ops.execution.spark_session import LazySparkRunner
from paimon_ops.schemas import package_version

__version__ = package_version()  # also in every JSON document's `version` (paimon_ops.schemas)

__all__ = [
    "Catalog", "Table", "Maintenance", "Tags", "Plan", "Report", "load_plan", "LocalRunner", "SparkRunner",
    "LazySparkRunner", "Runner", "PaimonOpsError", "TableNotFoundError", "CorruptMetadataError", "InvalidOptionError",
    "InvalidArgumentError", "UnsupportedError", "UnsafeOperationError", "CommitConflictError", "StalePlanError",
    "UnreachableError", "__version__",
]
