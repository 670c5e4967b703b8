"""Fixtures: real catalog databases (SQLite files, PostgreSQL and MariaDB servers started here, stopped by pid) and
Java Paimon 0.9 tables written through its JdbcCatalog."""
from __future__ import annotations

import shutil
import sqlite3
import tempfile
from pathlib import Path

import pytest

from tests.catalog import servers


def sqlite_catalog_db(path: Path) -> str:
    """A SQLite catalog database file in WAL mode: Java 0.9's JdbcCatalog leaves a read open on one pooled
    connection, and in the default rollback-journal mode that blocks its own lock row's INSERT (SQLITE_BUSY)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    c = sqlite3.connect(path)
    c.execute("PRAGMA journal_mode=WAL").fetchall()
    c.close()
    return f"jdbc:sqlite:{path}"


@pytest.fixture
def sqlite_jar() -> str:
    jar = servers.first_file(servers.SQLITE_JDBC_JARS)
    if jar is None:
        pytest.skip("Debian's libxerial-sqlite-jdbc-java is not installed (dev.sh installs it)")
    return jar


@pytest.fixture
def java():
    from tests.interop.java_harness import skip_reason
    reason = skip_reason()
    if reason:
        pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres():
    if servers.postgres_bin() is None:
        pytest.skip("PostgreSQL is not installed (Debian: postgresql; dev.sh installs it)")
    pytest.importorskip("psycopg")
    root = Path(tempfile.mkdtemp(prefix="paimon-ops-pg-"))
    server = servers.Postgres.start(root)
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def mariadb():
    if servers.mariadb_bins() is None:
        pytest.skip("MariaDB is not installed (Debian: mariadb-server; dev.sh installs it)")
    pytest.importorskip("pymysql")
    root = Path(tempfile.mkdtemp(prefix="paimon-ops-mariadb-"))
    server = servers.MariaDB.start(root)
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
