"""The Dagster code location of this repository (loaded by workspace.yaml with the repository as working directory),
built from the installable integration `paimon_ops.dagster`.

Environment:
  PAIMON_OPS_WAREHOUSE      warehouse URI or path (default ./demo-warehouse)
  PAIMON_OPS_CATALOG_OPTIONS   catalog options as a JSON object, e.g. {"metastore": "hive", "uri": "thrift://h:9083"}
  PAIMON_OPS_SPARK_MASTER   Spark master URL (default local[*])
  PAIMON_OPS_SPARK_REMOTE   Spark Connect remote, e.g. sc://spark-connect:15002 (wins over the master)
  PAIMON_OPS_PLACEMENT      auto (default: in-process within execution.local.*, Spark beyond) | spark | local
  PAIMON_OPS_INCLUDE / PAIMON_OPS_EXCLUDE   comma-separated fnmatch patterns on db.table
  PAIMON_OPS_AUTOMATION     'running' to start sensors, the nightly schedule and the tag automation by default
  PAIMON_OPS_OBSERVATION_INTERVAL / PAIMON_OPS_SENSOR_INTERVAL   minimum sensor intervals in s (60 / 300)
  PAIMON_OPS_SENSOR_TICK_BUDGET   seconds a sensor tick measures tables before leaving the rest to the next (20)
  PAIMON_OPS_NIGHTLY_CRON   cron of the nightly schedule (default 0 3 * * *, UTC)
  PAIMON_OPS_SHARD_SIZE     tables per run of the nightly schedule and of a sensor's tick, per database (500)
  PAIMON_OPS_DEFS_STATE     build from this warehouse description (no table read at load; written on first load,
                            refreshed by `python -m paimon_ops.dagster.state refresh --warehouse … --state …`)

Concurrency: everything that changes a table runs in the pool `paimon/<db>.<table>`; the repository's dagster.yaml
gives every pool limit 1 (`dagster dev` reads it from the working directory when DAGSTER_HOME is unset).

UI: `dagster dev -w workspace.yaml` from the repository root.
"""
import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parent
if str(_ROOT) not in sys.path:  # `dagster dev -f definitions.py` from elsewhere: find assets/, jobs/, schedules/
    sys.path.insert(0, str(_ROOT))

from dagster import Definitions, in_process_executor  # noqa: E402

from assets import location, table_assets, table_checks  # noqa: E402
from jobs import maintenance_jobs  # noqa: E402
from schedules import schedules  # noqa: E402
from schedules.sensors import sensors  # noqa: E402

defs = Definitions(assets=table_assets(), asset_checks=table_checks(), jobs=maintenance_jobs(), schedules=schedules(),
                   sensors=sensors(), resources=location().resources, executor=in_process_executor)
