"""Fault injection for partition expiry and manifest compaction: a FileIO that fails at the k-th write or rename of
the execution, for every k. After the failure every retained snapshot and tag still finds all its files, either
nothing was committed (and nothing this run wrote is left referenced) or exactly the one new snapshot was; a rerun
without faults ends in the same table as an uninterrupted run."""
from __future__ import annotations

import datetime as dt
import shutil

import pyarrow as pa
import pytest

import paimon_ops as po
from paimon_ops.execution.runner import LocalRunner
from paimon_ops.lifecycle.manifest_compaction import plan_compact_manifests
from paimon_ops.lifecycle.partition_expiry import plan_expire_partitions
from paimon_ops.table.fileio import InjectedFault, fault_after
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import FileStoreTable, FileSystemCatalog
from paimon_ops.table.writer import TableWriter, create_table
from tests.lifecycle.helpers import check_references, leaks

NOW = int(dt.datetime(2024, 1, 10, tzinfo=dt.timezone.utc).timestamp() * 1000)


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> str:
    wh = str(tmp_path_factory.mktemp("faults14") / "wh")
    t = create_table(wh, "db.t", [("dt", "STRING"), ("k", "INT"), ("v", "STRING")], ["dt"], ["dt", "k"],
                     {"bucket": "2", "deletion-vectors.enabled": "true", "manifest.merge-min-count": "1000"})
    for i, day in enumerate(("2024-01-01", "2024-01-02", "2024-01-08", "2024-01-01", "2024-01-09")):
        w = TableWriter(t.refresh())
        w.write(pa.table({"dt": [day] * 4, "k": [i, i + 1, i + 2, i + 3], "v": [f"v{i}"] * 4}))
        w.commit()
    po.Table(t.refresh()).maintenance.compact().execute(runner=LocalRunner())
    w = TableWriter(t.refresh())
    w.write(pa.table({"dt": ["2024-01-01"], "k": [1], "v": ["late"]}))
    w.commit()
    return wh


def _live(t: FileStoreTable) -> list:
    t = t.refresh()
    return sorted((f.partition, f.bucket, f.name, f.level) for f in TableScanner(t).scan_latest().files)


PLANS = {
    "expire_partitions": lambda t: plan_expire_partitions(t, now=NOW, expiration_time=dt.timedelta(days=3)),
    "compact_manifests": lambda t: plan_compact_manifests(t),
}


@pytest.mark.parametrize("op", sorted(PLANS))
def test_every_failure_point_is_safe_and_a_rerun_converges(source, tmp_path, op):
    ref_wh = str(tmp_path / "ref")
    shutil.copytree(source, ref_wh)
    ref = FileSystemCatalog(ref_wh).get_table("db.t")
    PLANS[op](ref).execute()
    expected = _live(ref)
    latest_before = FileSystemCatalog(source).get_table("db.t").snapshots.latest_id()
    for fault in ("write", "rename"):
        failures = 0
        for k in range(1, 20):
            wh = str(tmp_path / f"{fault}-{k}")
            shutil.copytree(source, wh)
            t = FileSystemCatalog(wh).get_table("db.t")
            before_leaks = leaks(t)
            plan = PLANS[op](t)
            try:
                plan.execute(table=t.with_fault_hook(fault_after(fault, k)))
                failed = False
            except Exception as e:  # whatever the fault turns into, it must name the fault
                failed = True
                assert "injected failure" in str(e) or isinstance(e.__cause__, InjectedFault), e
            t = t.refresh()
            check_references(t)  # every retained snapshot and tag finds all its files
            latest = t.snapshots.latest_id()
            assert latest in (latest_before, latest_before + 1)
            if failed and latest == latest_before:
                # nothing committed; at most unreferenced leftovers of this run (orphans, never referenced)
                new = leaks(t) - before_leaks
                assert all("/manifest/" in p for p in new), new
                PLANS[op](t).execute()  # the rerun
            assert _live(t) == expected, (fault, k)
            failures += failed
            if not failed:
                assert failures >= 1, f"{op}: no {fault} of the run failed"
                break  # k is past the last write / rename of the run
        else:
            pytest.fail(f"{op} still fails at {fault} #19")
