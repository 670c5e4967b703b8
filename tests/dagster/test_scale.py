"""A warehouse of many small tables: the definitions are constant in the number of tables (the tables are specs of
one multi-asset per kind of table, their checks check specs of one op per kind, the tags assets specs of one more
multi-asset), every job
resolves, a run for one table touches that table only (and claims its pool), sensor ticks over the fleet read one
hint per table when nothing changed and spread a first pass over ticks. Structure only, never time: the figures are
benchmarks/bench_fleet.py's."""
from __future__ import annotations

import json
import shutil

import pytest
from dagster import AssetKey, Definitions, SensorResult, build_sensor_context

from paimon_ops.api import OPERATIONS
from paimon_ops.dagster import build_paimon_definitions
from paimon_ops.dagster.operations import DAGSTER_OPERATIONS
from paimon_ops.table.local_fileio import LocalFileIO
from paimon_ops.table.table import FileSystemCatalog
from paimon_ops.table.writer import create_table
from tests.dagster.util import ms, observations, run_job, table_key, write

N_TABLES = 120  # half primary-key tables with daily tags and deletion vectors, half partitioned append tables
SENSORS = ("paimon_observation_sensor", "paimon_dv_ratio_sensor", "paimon_small_files_sensor",
           "paimon_snapshot_count_sensor", "paimon_manifest_sensor")


def _ident(i: int) -> str:
    return f"db{i % 5}.{'pk' if i % 2 == 0 else 'ap'}_{i:04d}"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> tuple[str, str]:
    """(a warehouse of N_TABLES copies of two real tables, one of two: one copy of each). Tables carry no name
    inside, so a copy is a table of its own."""
    root = tmp_path_factory.mktemp("fleet")
    templates = root / "templates"
    pk = create_table(str(templates), "t.pk", [("id", "INT"), ("v", "STRING")], primary_keys=["id"],
                      options={"bucket": "2", "deletion-vectors.enabled": "true", "tag.create-time": "01:00",
                               "tag.create-time-zone": "Asia/Shanghai"})
    write(pk, {"id": [1, 2, 3], "v": ["a", "b", "c"]}, ms(2026, 3, 26, 10))
    ap = create_table(str(templates), "t.ap", [("dt", "STRING"), ("id", "BIGINT")], partition_keys=["dt"],
                      options={"bucket": "-1"})
    write(ap, {"dt": ["2026-03-27"], "id": [1]}, ms(2026, 3, 27, 10))
    for name, n in (("warehouse", N_TABLES), ("small", 2)):
        for i in range(n):
            db, _, table = _ident(i).partition(".")
            shutil.copytree(templates / "t.db" / table[:2], root / name / f"{db}.db" / table)
    return str(root / "warehouse"), str(root / "small")


def _structure(defs: Definitions) -> dict:
    repo = defs.get_repository_def()
    jobs = repo.get_all_jobs()  # every job resolved
    return {
        "ops": sorted({ad.node_def.name for ad in repo.assets_defs_by_key.values()}
                      | {ad.node_def.name for ad in repo.asset_checks_defs_by_key.values()}),
        "jobs": {j.name: sorted(n.name for n in j.graph.nodes) for j in jobs},
        "sensors": sorted(s.name for s in repo.sensor_defs),
        "schedules": sorted(s.name for s in repo.schedule_defs),
        # the config of the tables' ops: one class per kind of table, whatever the number of tables
        "config": {ad.node_def.name: sorted(ad.op.config_schema.config_type.fields)
                   for ad in repo.assets_defs_by_key.values() if ad.node_def.name.endswith("_tables")},
    }


def test_definitions_are_constant_in_the_number_of_tables(fleet):
    big, small = fleet
    defs = build_paimon_definitions(big)
    repo = defs.get_repository_def()
    assert len(repo.asset_graph.get_all_asset_keys()) == N_TABLES + N_TABLES // 2  # a tags asset per PK table
    # PK tables with DVs: 6 checks, maintenance_succeeded and latest_tag_present on the tags asset; partitioned
    # append tables: 5 and maintenance_succeeded
    assert len(repo.asset_graph.asset_check_keys) == N_TABLES // 2 * 8 + N_TABLES // 2 * 6
    structure = _structure(defs)
    assert structure == _structure(build_paimon_definitions(small))
    assert structure["ops"] == ["paimon_append_tables", "paimon_append_tables_checks", "paimon_daily_tags",
                                "paimon_primary_key_tables", "paimon_primary_key_tables_checks"]
    # one job per operation naming a dagster_job (the registry), the nightly and observation jobs, Dagster's own
    registry_jobs = {op.dagster_job for op in OPERATIONS.values() if op.dagster_job}
    assert set(structure["jobs"]) == registry_jobs | {"__ASSET_JOB", "paimon_nightly", "paimon_observe"}
    assert len(structure["sensors"]) == 7 and structure["schedules"] == [
        "paimon_nightly_schedule"]
    assert structure["jobs"]["paimon_compaction"] == ["paimon_append_tables", "paimon_primary_key_tables"]
    # one optional section per Dagster operation (a run of a paimon_* job fills its own: jobs.job_config)
    assert structure["config"]["paimon_primary_key_tables"] == sorted([*DAGSTER_OPERATIONS, "dry_run", "due_checks",
                                                                       "observe_only"])
    assert {"compact", "create_tags", "expire_changelogs", "mark_partition_done", "repair"} <= set(DAGSTER_OPERATIONS)
    # each spec keeps its own daily partitions and its tag time
    tags = repo.asset_graph.get(AssetKey(["paimon", "db0", "pk_0000", "tags"]))
    assert tags.partitions_def.timezone == "Asia/Shanghai"


def test_a_run_for_one_table_touches_that_table_only(fleet, fresh_instance):
    big, _ = fleet
    defs = build_paimon_definitions(big)
    ident = _ident(4)
    result = run_job(defs, "paimon_observe", ident, fresh_instance)
    assert result.success
    assert [o["operations"] for o in observations(result, table_key(ident))] == ["observe"]
    observed = {e.event_specific_data.asset_observation.asset_key for e in result.all_events
                if e.event_type_value == "ASSET_OBSERVATION"}
    assert observed == {table_key(ident)}
    # its checks, once each, in the checks' op after the tables' op (Dagster adds a selected table's checks)
    checks = [(e.asset_key, e.check_name) for e in result.get_asset_check_evaluations()]
    # (maintenance_succeeded: the tables' op records it)
    assert {k for k, _ in checks} == {table_key(ident)} and len(checks) == len(set(checks)) == 7
    steps = [e.step_key for e in result.all_events if e.event_type_value == "STEP_START"]
    assert steps == ["paimon_primary_key_tables", "paimon_primary_key_tables_checks"]
    # the table's pool was claimed by the run and is free again
    claimed = [e for e in fresh_instance.all_logs(result.run_id) if "paimon/" + ident in (e.user_message or "")]
    info = fresh_instance.event_log_storage.get_concurrency_info(f"paimon/{ident}")
    assert info.slot_count == 1 and not info.claimed_slots, (claimed, info)


def _tick(defs, name, instance, cursor=None) -> SensorResult:
    repo = defs.get_repository_def()
    ctx = build_sensor_context(instance=instance, cursor=cursor, repository_def=repo, sensor_name=name,
                               resources=dict(repo.get_top_level_resources()))
    out = repo.get_sensor_def(name)(ctx)
    assert isinstance(out, SensorResult)
    return out


def _cursor(text: str) -> dict:
    from paimon_ops.dagster.sensors import _load_cursor
    return _load_cursor(text)


def test_a_first_pass_spreads_over_ticks(fleet, fresh_instance):
    """With no time left in a tick the sensor still measures one table and says how many wait for the next ticks;
    the next tick goes on from there."""
    big, _ = fleet
    defs = build_paimon_definitions(big, sensor_tick_budget_seconds=0)
    order = FileSystemCatalog(big).all_tables()
    out = _tick(defs, "paimon_observation_sensor", fresh_instance)
    first = _cursor(out.cursor)
    assert list(first["tables"]) == order[:1] and first["next"] == 1
    observed = [e for e in out.asset_events if type(e).__name__ == "AssetObservation"]
    assert [o.asset_key for o in observed] == [table_key(order[0])]
    again = _tick(defs, "paimon_observation_sensor", fresh_instance, cursor=out.cursor)
    second = _cursor(again.cursor)
    assert set(second["tables"]) == set(order[:2]) and second["next"] == 2
    out = _tick(defs, "paimon_dv_ratio_sensor", fresh_instance)
    assert f"time budget of 0 s used; {N_TABLES // 2 - 1} table(s) next tick" in out.skip_reason.skip_message


def test_a_steady_tick_reads_one_hint_per_table(fleet, fresh_instance, monkeypatch):
    """Once every table was evaluated, a tick with nothing changed reads each table's LATEST hint and checks that
    the snapshot after it does not exist (the observation sensor also lists its tag directory) — nothing else."""
    big, _ = fleet
    defs = build_paimon_definitions(big)
    cursors = {}
    for name in SENSORS:
        want = N_TABLES // 2 if name == "paimon_dv_ratio_sensor" else N_TABLES
        # the first pass may spread over ticks when the machine is slow (the tick's time budget); run it out
        cursor = _tick(defs, name, fresh_instance).cursor
        for _ in range(20):
            if len(_cursor(cursor)["tables"]) == want:
                break
            cursor = _tick(defs, name, fresh_instance, cursor=cursor).cursor
        assert len(_cursor(cursor)["tables"]) == want, name
        cursors[name] = cursor
    calls: list[tuple[str, str]] = []
    for method in ("read_bytes", "open_input", "exists", "list_status", "is_dir", "is_file"):  # what reads
        original = getattr(LocalFileIO, method)

        def spy(self, path, *a, _original=original, _method=method, **kw):
            calls.append((_method, path))
            return _original(self, path, *a, **kw)
        monkeypatch.setattr(LocalFileIO, method, spy)
    for name in SENSORS:
        calls.clear()
        out = _tick(defs, name, fresh_instance, cursor=cursors[name])
        assert not out.run_requests and not out.asset_events, name
        n = N_TABLES // 2 if name == "paimon_dv_ratio_sensor" else N_TABLES
        reads = [p for m, p in calls if m in ("read_bytes", "open_input")]
        assert len(reads) == n and all(p.endswith("/snapshot/LATEST") for p in reads), name
        exists = [p for m, p in calls if m in ("exists", "is_file")]
        assert len(exists) == n and all("/snapshot/snapshot-" in p for p in exists), name
        listings = [p for m, p in calls if m == "list_status"]
        assert len(listings) == (n if name == "paimon_observation_sensor" else 0), name
        assert all(p.endswith("/tag") for p in listings), name
        assert len(calls) == len(reads) + len(exists) + len(listings) + 1, name  # + the warehouse, once
    # a table that changes is evaluated again, the others stay untouched
    changed = _ident(7)
    write(FileSystemCatalog(big).get_table(changed), {"dt": ["2026-03-28"], "id": [2]}, ms(2026, 3, 28, 10))
    monkeypatch.undo()
    out = _tick(defs, "paimon_observation_sensor", fresh_instance, cursor=cursors["paimon_observation_sensor"])
    assert [e.asset_key for e in out.asset_events if type(e).__name__ == "AssetObservation"] == [table_key(changed)]
    assert json.loads(json.dumps(_cursor(out.cursor)))["tables"][changed].startswith("2:")
