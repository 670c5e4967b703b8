"""This repository's own code location, built from the installable integration `paimon_ops.dagster`.

The location's settings come from the environment (see definitions.py); `location()` builds its parts once:
per table, the table asset `paimon/<db>/<table>` (with its checks) and, with automatic tags, its daily tags asset —
as specs of a few multi-assets, so thousands of tables load in seconds.
"""
from __future__ import annotations

import functools
import json
import os

from paimon_ops.dagster import PaimonDefinitions, build_paimon_parts


def _patterns(name: str) -> list[str]:
    return [p.strip() for p in os.environ.get(name, "").split(",") if p.strip()]


@functools.cache
def location() -> PaimonDefinitions:
    return build_paimon_parts(
        os.environ.get("PAIMON_OPS_WAREHOUSE", "./demo-warehouse"),
        catalog_options=json.loads(os.environ.get("PAIMON_OPS_CATALOG_OPTIONS") or "{}"),
        include=_patterns("PAIMON_OPS_INCLUDE"),
        exclude=_patterns("PAIMON_OPS_EXCLUDE"),
        spark_master=os.environ.get("PAIMON_OPS_SPARK_MASTER") or None,
        spark_remote=os.environ.get("PAIMON_OPS_SPARK_REMOTE") or None,
        spark_placement=os.environ.get("PAIMON_OPS_PLACEMENT") or "auto",
        automation_running=os.environ.get("PAIMON_OPS_AUTOMATION", "").strip().lower() == "running",
        observation_interval_seconds=int(os.environ.get("PAIMON_OPS_OBSERVATION_INTERVAL") or 60),
        sensor_interval_seconds=int(os.environ.get("PAIMON_OPS_SENSOR_INTERVAL") or 300),
        sensor_tick_budget_seconds=float(os.environ.get("PAIMON_OPS_SENSOR_TICK_BUDGET") or 20),
        shard_size=int(os.environ.get("PAIMON_OPS_SHARD_SIZE") or 500),
        nightly_cron=os.environ.get("PAIMON_OPS_NIGHTLY_CRON") or "0 3 * * *",
        state_path=os.environ.get("PAIMON_OPS_DEFS_STATE") or None,
    )


def table_assets() -> list:
    """The table assets and tags assets of every selected table (a few multi-assets, whatever the number of tables)."""
    return location().assets


def table_checks() -> list:
    """The checks of every selected table (one op of checks per kind of table)."""
    return location().asset_checks
