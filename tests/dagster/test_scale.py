"""A generated warehouse of 500 small tables loads in seconds with a constant number of jobs, sensors and schedules
(the only per-table definitions are the table assets with their checks, and the daily tags assets)."""
from __future__ import annotations

import shutil
import time
from pathlib import Path

from dagster import Definitions

from paimon_ops.dagster import build_paimon_definitions
from paimon_ops.table.writer import create_table
from tests.dagster.util import ms, write

N_TABLES = 500
LOAD_BOUND_S = 10.0  # the bound; generous on purpose (2 shared cores)


def _generate(root: Path) -> None:
    """Two small real tables (a primary-key table with daily tags, an append table), each copied 250 times over
    five databases: tables carry no name inside, so a copy is a table of its own."""
    templates = root / "_templates"
    templates.mkdir(parents=True)
    pk = create_table(str(templates), "t.pk", [("id", "INT"), ("v", "STRING")], primary_keys=["id"],
                      options={"bucket": "2", "deletion-vectors.enabled": "true", "tag.create-time": "01:00",
                               "tag.create-time-zone": "Asia/Shanghai"})
    write(pk, {"id": [1, 2, 3], "v": ["a", "b", "c"]}, ms(2026, 3, 26, 10))
    ap = create_table(str(templates), "t.ap", [("dt", "STRING"), ("id", "BIGINT")], partition_keys=["dt"],
                      options={"bucket": "-1"})
    write(ap, {"dt": ["2026-03-27"], "id": [1]}, ms(2026, 3, 27, 10))
    src = {"pk": templates / "t.db" / "pk", "ap": templates / "t.db" / "ap"}
    for i in range(N_TABLES):
        kind = "pk" if i % 2 == 0 else "ap"
        shutil.copytree(src[kind], root / "warehouse" / f"db{i % 5}.db" / f"{kind}_{i:03d}")


def _counts(defs: Definitions) -> tuple[int, int, int]:
    repo = defs.get_repository_def()
    return len(repo.get_all_jobs()), len(repo.sensor_defs), len(repo.schedule_defs)


def test_500_tables_load_fast_with_constant_automation(tmp_path):
    _generate(tmp_path)
    warehouse = str(tmp_path / "warehouse")
    started = time.monotonic()
    defs = build_paimon_definitions(warehouse)
    repo = defs.get_repository_def()
    jobs = repo.get_all_jobs()  # resolves every asset job over the 500 table assets
    elapsed = time.monotonic() - started
    print(f"\n500 tables: definitions built and every job resolved in {elapsed:.2f} s")
    keys = repo.asset_graph.get_all_asset_keys()
    assert len(keys) == N_TABLES + N_TABLES // 2  # a table asset each, a tags asset per table with daily tags
    assert len(repo.asset_graph.asset_check_keys) == N_TABLES // 2 * 7 + N_TABLES // 2 * 5
    assert elapsed < LOAD_BOUND_S, f"loading 500 tables took {elapsed:.1f} s"
    # O(1): the same jobs, sensors and schedules as a warehouse of two tables
    small = tmp_path / "small"
    for name in ("db0.db/pk_000", "db1.db/ap_001"):
        shutil.copytree(Path(warehouse) / name, small / name)
    assert _counts(defs) == _counts(build_paimon_definitions(str(small))) == (len(jobs), 7, 1)
    assert len(jobs) == 9
