"""Fixtures of the Dagster tests: a real warehouse per test, the session's SparkSession behind dagster-pyspark's
resource, and a Dagster instance whose pools have limit 1 (as dagster.yaml should set them)."""
from __future__ import annotations

import pytest
from dagster import instance_for_test

from assets.resources import spark_resource

from tests.dagster.util import build_warehouse

POOL_LIMIT_1 = {"concurrency": {"pools": {"default_limit": 1}}}


@pytest.fixture(scope="session")
def instance():
    """One instance for the session (creating one costs seconds); tests that need an empty run history use
    `fresh_instance`."""
    with instance_for_test(overrides=POOL_LIMIT_1) as inst:
        yield inst


@pytest.fixture
def fresh_instance():
    with instance_for_test(overrides=POOL_LIMIT_1) as inst:
        yield inst


@pytest.fixture
def full_warehouse(warehouse) -> str:
    """orders (PK, DVs, tags at 02:30 Berlin), events (partitioned append), broken (corrupt snapshot), badtime."""
    return build_warehouse(warehouse)


@pytest.fixture
def pyspark(spark):
    """dagster-pyspark's lazy resource configured with the session's master: getOrCreate returns the session
    fixture's SparkSession, so no second session is started."""
    return spark_resource(master=spark.sparkContext.master)
