"""Shared fixtures: one real local SparkSession for the whole session, temporary warehouses."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def spark():
    from paimon_ops.runner import local_spark
    session = local_spark("local[2]", "paimon-ops-tests")
    yield session
    session.stop()


@pytest.fixture
def warehouse(tmp_path) -> str:
    w = tmp_path / "warehouse"
    w.mkdir()
    return str(w)
