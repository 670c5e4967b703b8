"""Jobs of this code location: the paimon_* maintenance jobs (one per kind, whatever the number of tables; see
`paimon_ops.dagster.jobs`)."""
from __future__ import annotations

from assets import location


def maintenance_jobs() -> list:
    return location().jobs
