"""The health assessment (what the Airflow sensor and triggers wait for) is engine code: it imports without Dagster
and answers from the same measurements as the Dagster sensors."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from paimon_ops.errors import InvalidArgumentError
from paimon_ops.health import DV_RATIO, SIGNALS, SMALL_FILES, SNAPSHOT_RETENTION, assess, measure_files
from paimon_ops.table.table import FileSystemCatalog
from tests.conftest import REPO
from tests.dagster.util import EVENTS, ORDERS, build_warehouse


def test_health_imports_without_dagster():
    code = textwrap.dedent("""
        import importlib.abc, sys

        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("dagster", "airflow", "pyspark"):
                    raise ImportError(f"blocked: {name}")
                return None

        sys.meta_path.insert(0, Block())
        import paimon_ops.health
        print(paimon_ops.health.SIGNALS)
    """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_assess_names_what_is_due_and_the_operation(warehouse):
    build_warehouse(warehouse, broken=False)
    catalog = FileSystemCatalog(warehouse)
    orders = assess(catalog.get_table(ORDERS))
    assert [n.signal for n in orders.due] == [DV_RATIO]
    (dv,) = orders.due
    assert dv.operation == "compact" and dv.arguments == {"mode": "dv-ratio", "buckets": [0]}
    assert measure_files(catalog.get_table(ORDERS)).dv_over[0].bucket == 0  # the Dagster sensor's measurement

    events = assess(catalog.get_table(EVENTS), [SMALL_FILES, "snapshots"])  # (a former name of snapshot_retention)
    assert [n.signal for n in events.due] == [SMALL_FILES, SNAPSHOT_RETENTION]
    assert events.due[0].arguments == {"mode": "small-files", "partitions": [{"dt": "2026-03-27"}], "buckets": [0]}
    assert events.to_dict()["due"] == [SMALL_FILES, SNAPSHOT_RETENTION]
    assert "DUE small_files" in events.summary()

    with pytest.raises(InvalidArgumentError, match="unknown health signal"):
        assess(catalog.get_table(EVENTS), ["nope"])
    # one vocabulary: the signals the operations declare, measured here, named so in Dagster and Airflow
    import paimon_ops.api as registry
    assert sorted(SIGNALS) == sorted(h.signal for _, h in registry.health_signals())
    assert set(SIGNALS) == {"small_files", "dv_ratio", "snapshot_retention", "manifest_count", "partition_expiry"}
