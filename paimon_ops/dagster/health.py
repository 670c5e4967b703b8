"""The health measurements moved to the engine (`paimon_ops.health`, importable without Dagster: the Airflow provider
uses them too); re-exported here for the Dagster integration."""
from paimon_ops.health import *  # noqa: F401,F403
