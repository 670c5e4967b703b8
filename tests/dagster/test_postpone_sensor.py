"""Postpone-bucket tables in Dagster: rows waiting in bucket-postpone make compaction due (check and small-files
sensor); the run the sensor requests moves them into real buckets, and pypaimon then reads them."""
from __future__ import annotations

import pyarrow as pa

from paimon_ops.dagster import build_paimon_definitions
from paimon_ops.health import measure_files
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import FileSystemCatalog
from tests import pypaimon_util as pu
from tests.dagster.test_sensors import _run, _tick


def test_pending_postpone_rows_are_due_and_the_sensor_run_moves_them(warehouse, instance):
    s = pa.schema([("dt", pa.string()), ("id", pa.int32()), ("v", pa.string())])
    t = pu.create_table(warehouse, "shop.pp", s, ["dt"], ["dt", "id"], {"bucket": "-2"})
    pu.write(t, {"dt": ["2026-03-27"] * 3, "id": [1, 2, 3], "v": ["a", "b", "c"]})
    table = FileSystemCatalog(warehouse).get_table("shop.pp")
    h = measure_files(table)
    assert [b.label for b in h.postpone_pending] == ["dt=2026-03-27/bucket-postpone"] and h.small_over
    defs = build_paimon_definitions(warehouse)
    out = _tick(defs, "paimon_small_files_sensor", instance)
    [req] = out.run_requests
    assert req.run_key.startswith("small_files:shop.pp:")
    assert pu.read(warehouse, "shop.pp").num_rows == 0
    assert _run(defs, req, instance).success
    assert pu.sorted_rows(pu.read(warehouse, "shop.pp"), ["id"]) == [
        {"dt": "2026-03-27", "id": i, "v": v} for i, v in ((1, "a"), (2, "b"), (3, "c"))]
    scan = TableScanner(FileSystemCatalog(warehouse).get_table("shop.pp")).scan_latest()
    assert {f.bucket for f in scan.files} == {0} and not measure_files(FileSystemCatalog(warehouse).get_table("shop.pp")).small_over
    out = _tick(defs, "paimon_small_files_sensor", instance, cursor=out.cursor)
    assert not out.run_requests
