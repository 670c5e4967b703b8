"""Helpers of the Hive catalog tests: Java Paimon 0.9's HiveCatalog tables in the session's real metastore."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.interop import java_harness as jh
from tests.interop.java_harness import JavaTable


def java_hive_options(uri: str, **extra: str) -> dict[str, str]:
    """Catalog options of Java's HiveCatalog (the lock on, as on object stores)."""
    return {"metastore": "hive", "uri": uri, "lock.enabled": "true", "lock-check-max-sleep": "500 ms", **extra}


def java_hive_table(warehouse: Path | str, database: str, table: str, uri: str, **extra: str) -> JavaTable:
    return JavaTable(warehouse, database, table, catalog_options=java_hive_options(uri, **extra))


def java_list_tables(warehouse: Path | str, database: str, uri: str, **extra: str) -> dict:
    return jh.run("list_tables", {"warehouse": str(warehouse), "database": database,
                                  "catalog_options": java_hive_options(uri, **extra)})


@pytest.fixture
def hms_client(hive_metastore):
    from paimon_ops.catalog.hive_client import HiveMetastoreClient
    with HiveMetastoreClient(hive_metastore.uri) as c:
        yield c


@pytest.fixture(autouse=True)
def _java_available():
    reason = jh.skip_reason()
    if reason:
        pytest.skip(reason)
