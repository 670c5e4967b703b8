"""Shared fixtures: one real local SparkSession for the whole session, temporary warehouses; the test lanes
(tests/lanes.py: process markers applied automatically, the guard that proves them)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests import lanes

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def spark():
    lanes.require("spark")
    from paimon_ops.execution.spark_session import local_spark
    session = local_spark("local[2]", "paimon-ops-tests")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def connect_server(tmp_path_factory):
    """One real Spark Connect server process (local[2]) for the whole test session (tests/spark_connect.py)."""
    from tests.spark_connect import connect_server_process
    lanes.require("connect")
    with connect_server_process(tmp_path_factory.mktemp("spark-connect")) as server:
        yield server


@pytest.fixture(scope="module")
def connect(connect_server):
    """A Spark Connect client session on `connect_server`, one per test module (the process leaves Connect mode
    after it, so classic sessions keep working in later modules)."""
    from tests.spark_connect import connect_session
    with connect_session(connect_server["url"]) as session:
        yield session


@pytest.fixture(scope="session")
def standalone_cluster(tmp_path_factory):
    """A Spark standalone master and one worker (2 cores) on 127.0.0.1, each its own process, for the whole test
    session (drivers run as subprocesses: this process already holds the classic `spark` session); stopped by pid."""
    from tests.spark_cluster import StandaloneCluster
    lanes.require("cluster")
    with StandaloneCluster(tmp_path_factory.mktemp("cluster")) as cluster:
        worker_pid = cluster.add_worker(cores=2)
        assert cluster.master is not None
        yield {"url": cluster.url, "ui": cluster.ui, "master_pid": cluster.master.pid, "worker_pid": worker_pid}


@pytest.fixture(scope="session")
def hive_metastore(tmp_path_factory):
    """A real Hive 2.3 Metastore (pyspark's jars, embedded Derby; tests/hive_metastore.py) for the whole session, on a
    random port, stopped by pid. Tests share it: each uses databases of its own (`hive_database`)."""
    from tests.hive_metastore import HiveMetastore
    pytest.importorskip("pymetastore", reason="the Hive Metastore tests need paimon-ops[hive] (pymetastore)")
    lanes.require("hive")
    with HiveMetastore(tmp_path_factory.mktemp("hive-metastore")) as hms:
        yield hms


@pytest.fixture
def hive_database(request) -> str:
    """A metastore database name no other test uses (databases are shared by the session's metastore)."""
    import re
    import uuid
    return "t_" + re.sub(r"[^a-z0-9]+", "_", request.node.name.lower())[:40] + "_" + uuid.uuid4().hex[:6]


@pytest.fixture
def warehouse(tmp_path) -> str:
    w = tmp_path / "warehouse"
    w.mkdir()
    return str(w)


# ---------------------------------------------------------------------------------------------- lanes
def pytest_configure(config):
    for name, text in {**lanes.KINDS, **lanes.OTHER_MARKERS}.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    lanes.install_guard()


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects
def pytest_collection_modifyitems(config, items):
    lanes.apply_markers(config, items)
    lanes.longest_first(items)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    outer = lanes.set_current(item)  # (an inner pytest run, tests/test_lanes.py, restores the outer test)
    try:
        yield
    finally:
        lanes.set_current(outer)
        harness = sys.modules.get("tests.interop.java_harness")
        if harness is not None and outer is None:
            harness.end_of_test()  # a catalog's JVM never outlives its test


# ---------------------------------------------------------------------------------------------- proofs cannot skip
def _ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under CI=true a skipped test is a failed proof: the Java interop, the Dagster UI and the object-store tests
    must run, and a missing prerequisite (javac, Chromium, test data) fails the run instead of hiding it."""
    outcome = yield
    rep = outcome.get_result()
    if call.when == "teardown":
        lanes.check_lingering(item)
    started = lanes.violations_of(item)
    if started:  # an unmarked process start fails the test, whatever its outcome (tests/lanes.py)
        rep.outcome = "failed"
        rep.longrepr = f"{item.nodeid}: " + "; ".join(started)
        return
    if _ci() and rep.skipped and not hasattr(rep, "wasxfail"):
        reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        rep.outcome = "failed"
        rep.longrepr = f"skipped under CI=true, where every proof must run: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    rep = outcome.get_result()
    if _ci() and rep.skipped:
        reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        rep.outcome = "failed"
        rep.longrepr = f"module skipped under CI=true, where every proof must run: {reason}"
