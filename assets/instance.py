"""The Dagster instance settings this code location needs: every maintenance op of a table runs in the pool
`paimon/<db>.<table>`, and pools must have limit 1 so two runs never touch one table at once.

Either put `DAGSTER_YAML` in `$DAGSTER_HOME/dagster.yaml` (`write_dagster_home()` does it; the repository keeps
`.dagster_home/` out of git), or set limits per pool on an existing instance:

    dagster instance concurrency set paimon/shop.orders 1
"""
from __future__ import annotations

from pathlib import Path

DAGSTER_YAML = """\
# paimon-ops: one maintenance op per table at a time (pools are named paimon/<db>.<table>)
concurrency:
  pools:
    default_limit: 1
run_coordinator:
  module: dagster.core.run_coordinator
  class: QueuedRunCoordinator
telemetry:
  enabled: false
"""


def write_dagster_home(path: str | Path = ".dagster_home") -> Path:
    """Create a DAGSTER_HOME with `dagster.yaml` (pool limit 1) unless one exists; returns the directory."""
    home = Path(path).resolve()
    home.mkdir(parents=True, exist_ok=True)
    cfg = home / "dagster.yaml"
    if not cfg.exists():
        cfg.write_text(DAGSTER_YAML)
    return home
