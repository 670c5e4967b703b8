"""Schedules of this code location: `paimon_nightly_schedule` (one run per shard of tables). Daily tags are created by the
tags assets' automation conditions at each table's tag.create-time; sensors are in `schedules.sensors`."""
from __future__ import annotations

from assets import location


def schedules() -> list:
    return location().schedules
