"""The Dagster code location of paimon-ops (loaded by workspace.yaml with the repository as working directory).

Environment:
  PAIMON_OPS_WAREHOUSE      warehouse URI or path (default ./demo-warehouse)
  PAIMON_OPS_SPARK_MASTER   Spark master URL (default local[*])
  PAIMON_OPS_SPARK_REMOTE   Spark Connect remote, e.g. sc://spark-connect:15002 (wins over the master)
  PAIMON_OPS_INCLUDE / PAIMON_OPS_EXCLUDE   comma-separated fnmatch patterns on db.table
  PAIMON_OPS_AUTOMATION     'running' to start schedules and sensors by default (default: stopped)

Concurrency: every maintenance op of a table runs in the pool `paimon/<db>.<table>`; give pools limit 1 so two
runs never touch one table at once — in $DAGSTER_HOME/dagster.yaml (`assets.instance.write_dagster_home()` writes
one; `.dagster_home/` is gitignored):
  concurrency:
    pools:
      default_limit: 1
or per pool on a running instance: `dagster instance concurrency set paimon/shop.orders 1`.

UI: `DAGSTER_HOME=$PWD/.dagster_home dagster dev -w workspace.yaml` from the repository root.
"""
import os
import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parent
if str(_ROOT) not in sys.path:  # `dagster dev -f definitions.py` from elsewhere: find assets/, jobs/, schedules/
    sys.path.insert(0, str(_ROOT))

from assets import build_paimon_definitions  # noqa: E402


def _patterns(name: str) -> list[str]:
    return [p.strip() for p in os.environ.get(name, "").split(",") if p.strip()]


defs = build_paimon_definitions(
    os.environ.get("PAIMON_OPS_WAREHOUSE", "./demo-warehouse"),
    include=_patterns("PAIMON_OPS_INCLUDE"),
    exclude=_patterns("PAIMON_OPS_EXCLUDE"),
    spark_master=os.environ.get("PAIMON_OPS_SPARK_MASTER") or "local[*]",
    spark_remote=os.environ.get("PAIMON_OPS_SPARK_REMOTE") or None,
    automation_running=os.environ.get("PAIMON_OPS_AUTOMATION", "").strip().lower() == "running",
)
