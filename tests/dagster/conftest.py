"""Fixtures of the Dagster tests: a real warehouse per test, the session's SparkSession behind the PaimonSpark
resource, and a Dagster instance whose pools have limit 1 (as the repository's dagster.yaml sets them)."""
from __future__ import annotations

import pytest
from dagster import instance_for_test

from paimon_ops.dagster import PaimonSpark
from tests.dagster.util import build_warehouse

POOL_LIMIT_1 = {"concurrency": {"pools": {"default_limit": 1}}}


@pytest.fixture(scope="session")
def instance():
    """One instance for the session (creating one costs seconds); tests that need an empty history use
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
def spark_res(spark) -> PaimonSpark:
    """The PaimonSpark resource on the session's master: the session starts with getOrCreate, which returns the
    session fixture's SparkSession, so no second session is started."""
    return PaimonSpark(master=spark.sparkContext.master)
