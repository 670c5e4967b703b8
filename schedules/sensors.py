"""Sensors of this code location: observation, dv-ratio, small-files and snapshot-count sensors across all tables,
and the tag automation sensor (see `paimon_ops.dagster.sensors`)."""
from __future__ import annotations

from assets import location


def sensors() -> list:
    return location().sensors
