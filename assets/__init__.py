"""The Dagster face of paimon-ops: per-table maintenance assets, checks, resources and the definitions factory.

Thin by design: every op calls one `paimon_ops` operation and turns its Report into metadata.
"""
from assets.factory import build_paimon_definitions, load_specs
from assets.resources import PaimonWarehouse, spark_resource, spark_runner
from assets.spec import TableSpec
from assets.translator import PaimonTranslator

__all__ = ["build_paimon_definitions", "load_specs", "PaimonWarehouse", "PaimonTranslator", "TableSpec",
           "spark_resource", "spark_runner"]
