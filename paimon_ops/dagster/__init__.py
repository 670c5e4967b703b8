"""The Dagster integration of paimon-ops (`pip install 'paimon-ops[dagster]'`): the Paimon table is the asset.

    from paimon_ops.dagster import build_paimon_definitions
    defs = build_paimon_definitions("s3://bucket/warehouse", spark_master="spark://master:7077")

or, in a `dg` project, the `PaimonComponent` (`type: paimon_ops.dagster.PaimonComponent` in a defs.yaml).

Per table: the table asset `paimon/<db>/<table>` (observed; maintenance runs record their reports on it as
observations; its Materialize runs the maintenance its health signals make due, `due`; checks hang off it) and,
with automatic tags, its daily tags asset — specs of a few multi-assets, so ops, jobs, schedules and sensors are
constant in number. Downstream of a table, `partition_done_sensor` runs assets or a job for each partition newly
marked done. The engine (`paimon_ops` outside this package) never imports Dagster.
"""
import importlib.util as _util

if _util.find_spec("dagster") is None:  # one line naming the extra, not a bare ModuleNotFoundError deep inside
    raise ModuleNotFoundError("paimon_ops.dagster needs Dagster, which is not installed: "
                              "pip install 'paimon-ops[dagster]'", name="dagster")

from paimon_ops.dagster.component import PaimonComponent  # noqa: E402
from paimon_ops.dagster.factory import PaimonDefinitions, build_paimon_definitions, build_paimon_parts, load_specs
from paimon_ops.dagster.instance import DAGSTER_YAML, write_dagster_home
from paimon_ops.dagster.operations import (
    AppendTableConfig,
    FixedBucketAppendTableConfig,
    PrimaryKeyTableConfig,
    TableConfig,
)
from paimon_ops.dagster.partition_done import partition_done_sensor
from paimon_ops.dagster.resources import PaimonSpark, PaimonWarehouse, runner_for
from paimon_ops.dagster.spec import TableSpec
from paimon_ops.dagster.translator import PaimonTranslator

__all__ = ["build_paimon_definitions", "build_paimon_parts", "load_specs", "PaimonDefinitions", "PaimonComponent",
           "PaimonTranslator", "PaimonWarehouse", "PaimonSpark", "TableSpec", "runner_for", "TableConfig",
           "PrimaryKeyTableConfig", "AppendTableConfig", "FixedBucketAppendTableConfig", "DAGSTER_YAML",
           "write_dagster_home", "partition_done_sensor"]
