"""The demo's persistent Dagster instance: `./dev.sh demo` (demo.py, run here the same way into a tmp warehouse)
leaves a DAGSTER_HOME beside the warehouse that a real `DagsterInstance` — what `dagster dev` opens — reads back with
the demo's history: its runs, an observation of every table, and the tags partitions of every day-named tag the
demo's tables hold."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from dagster import DagsterInstance, DagsterRunStatus, RunsFilter

from paimon_ops.dagster import build_paimon_parts
from paimon_ops.dagster.spec import partition_key_of
from paimon_ops.table.table import FileSystemCatalog

ROOT = Path(__file__).resolve().parents[2]


def test_the_demo_leaves_an_instance_with_its_history(tmp_path):
    warehouse = tmp_path / "demo-warehouse"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("DAGSTER_HOME", None)
    done = subprocess.run([sys.executable, str(ROOT / "demo.py"), "--warehouse", str(warehouse)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    home = tmp_path / "demo-warehouse-dagster-home"
    assert f"Dagster instance (the runs and observations above): {home}" in done.stdout
    assert (home / "dagster.yaml").is_file()

    parts = build_paimon_parts(str(warehouse))
    refs = [r for r in parts.refs if not r.spec.broken]
    assert refs
    catalog = FileSystemCatalog(str(warehouse))
    with DagsterInstance.from_config(str(home)) as instance:
        runs = instance.get_runs(RunsFilter(job_name="paimon_nightly"))
        assert len(runs) == len(refs) and all(r.status == DagsterRunStatus.SUCCESS for r in runs)
        assert {r.tags.get("paimon/table") for r in runs} == {r.ident for r in refs}
        assert len(instance.get_runs()) > len(runs)  # and the sensor-requested runs
        for ref in refs:
            assert instance.fetch_observations(ref.key, limit=1).records, f"{ref.ident} never observed"
            if ref.tags_key is None:
                continue
            tags = catalog.get_table(ref.ident).tags.names()
            wanted = {k for name in tags if (k := partition_key_of(ref.spec, name)) is not None}
            assert wanted, f"{ref.ident}: the demo made no day-named tag"
            # every existing tag is a materialised partition, also those older than the table's schema time
            assert wanted <= set(instance.get_materialized_partitions(ref.tags_key)), ref.ident
            assert min(wanted) >= ref.spec.partitions_start
