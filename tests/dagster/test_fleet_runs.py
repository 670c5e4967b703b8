"""Fleets in few runs that keep per-table results, against a real Dagster instance on disk: the nightly schedule's
run of a shard maintains each table in its own pool and records each table's own result; a table made to fail (a
corrupt manifest) shows failed on its own asset while the others show done, and the run names it; a sensor's tick
that finds several tables due requests one run for them, which compacts exactly what each needs; a table held by
another run is waited for while the batch goes on with the others' work in order; the code location builds from a
warehouse description with the warehouse gone, and a real run worker (`dagster api execute_run`) of this
repository's code location loads from it."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from dagster import AssetCheckKey, DagsterInstance, build_schedule_context, build_sensor_context

from paimon_ops.dagster import PaimonSpark, PaimonWarehouse, build_paimon_definitions, build_paimon_parts
from paimon_ops.dagster.state import read_state, write_state
from paimon_ops.dagster.table_asset import FAILED_COUNT_TAG, FAILED_TABLES_TAG
from paimon_ops.table.local_fileio import LocalFileIO
from paimon_ops.table.table import FileSystemCatalog
from paimon_ops.table.writer import create_table
from tests.dagster.util import materializations, ms, observations, table_key, write
from tests.pypaimon_util import read, sorted_rows

REPO = Path(__file__).resolve().parents[2]
TABLES = ("db1.pk_a", "db1.ap_b", "db1.ap_c", "db2.ap_d")
CORRUPT = "db1.ap_c"


def _fleet(warehouse: str) -> None:
    """Small real tables over two databases; every append table has more small files than its threshold and
    snapshots past its retention (so the nightly and the small-files sensor have work)."""
    for ident in TABLES:
        if ident.split(".")[1].startswith("pk"):
            t = create_table(warehouse, ident, [("id", "INT"), ("v", "STRING")], primary_keys=["id"],
                             options={"bucket": "1", "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2",
                                      "snapshot.time-retained": "1 min"})
        else:
            t = create_table(warehouse, ident, [("id", "BIGINT"), ("v", "STRING")],
                             options={"bucket": "-1", "snapshot.num-retained.min": "1",
                                      "snapshot.num-retained.max": "2", "snapshot.time-retained": "1 min"})
        for i in range(6):  # six small files: over compaction.small-files-threshold / compaction.min.file-num (5)
            write(t, {"id": [i, i + 10], "v": [f"v{i}", "x"]}, ms(2026, 3, 27, 8 + i))


def _corrupt_manifests(warehouse: str, ident: str) -> None:
    db, name = ident.split(".")
    folder = Path(warehouse) / f"{db}.db" / name / "manifest"
    for f in folder.glob("manifest-*"):
        if not f.name.startswith("manifest-list-"):
            f.write_bytes(b"not an avro file")


@pytest.fixture
def fleet(warehouse) -> str:
    _fleet(warehouse)
    return warehouse


def _resources(warehouse: str) -> dict:
    return {"paimon": PaimonWarehouse(uri=warehouse), "spark": PaimonSpark(placement="local")}


def _execute(defs, request, instance, job_name: str | None = None):
    """A RunRequest executed as the daemon launches it: its job (`job_name`: the schedule's or sensor's), its asset
    selection, its run config and tags — without the tables' checks when it asks for none."""
    repo = defs.get_repository_def()
    job = repo.get_job(request.job_name or job_name)
    if request.asset_check_keys == []:
        job = job.get_subset(asset_selection=set(request.asset_selection), asset_check_selection=set())
        return job.execute_in_process(instance=instance, run_config=request.run_config or None, tags=request.tags,
                                      raise_on_error=False, partition_key=request.partition_key)
    return job.execute_in_process(instance=instance, asset_selection=list(request.asset_selection),
                                  run_config=request.run_config or None, tags=request.tags, raise_on_error=False,
                                  partition_key=request.partition_key)


def _check(instance, ident: str, name: str = "maintenance_succeeded"):
    key = AssetCheckKey(table_key(ident), name)
    summary = instance.event_log_storage.get_asset_check_summary_records([key])[key]
    record = summary.last_completed_check_execution_record
    return None if record is None else record.status.value


def test_a_shard_run_keeps_each_tables_result_and_a_failing_table_fails_alone(fleet, fresh_instance):
    _corrupt_manifests(fleet, CORRUPT)
    rows = {t: sorted_rows(read(fleet, t), ["id"]) for t in TABLES if t != CORRUPT}
    defs = build_paimon_definitions(fleet, shard_size=2)  # db1's three tables split into two runs
    sched = defs.get_repository_def().get_schedule_def("paimon_nightly_schedule")
    requests = sched(build_schedule_context(instance=fresh_instance, scheduled_execution_time=datetime.now(timezone.utc)))
    shards = {r.tags.get("paimon/shard") or r.tags.get("paimon/table"): r for r in requests}
    assert set(shards) == {"db1#1", "db1.pk_a", "db2.ap_d"}  # a shard of one table: that table's own run
    assert [len(r.asset_selection) for r in requests] == [2, 1, 1] and shards["db1#1"].asset_selection == [
        table_key("db1.ap_b"), table_key(CORRUPT)]

    results = {name: _execute(defs, r, fresh_instance, "paimon_nightly") for name, r in shards.items()}
    failing = next(name for name, r in shards.items() if table_key(CORRUPT) in r.asset_selection)
    for name, result in results.items():
        assert result.success, name  # the failing table fails alone; its run says which in its tags and log
    run = fresh_instance.get_run_by_id(results[failing].run_id)
    assert run.tags[FAILED_TABLES_TAG] == CORRUPT and run.tags[FAILED_COUNT_TAG] == "1"
    errors = [e.user_message for e in fresh_instance.all_logs(run.run_id) if e.level >= 40]
    assert any(m.startswith(f"1 of 2 tables failed: {CORRUPT}: ") for m in errors), errors

    (failed,) = observations(results[failing], table_key(CORRUPT))
    assert failed["failed"] is True and CORRUPT in failed["error"]
    assert _check(fresh_instance, CORRUPT) == "FAILED"
    for ident in TABLES:
        if ident == CORRUPT:
            continue
        name = next(n for n, r in shards.items() if table_key(ident) in r.asset_selection)
        result = results[name]
        (obs,) = observations(result, table_key(ident))  # one observation: its own report
        assert obs["operations"] == "expire_snapshots, expire_tags, remove_orphans", (ident, obs)
        assert obs["expire_snapshots/deleted/snapshot"] >= 2 and obs["snapshots"] <= 2, (ident, obs["snapshots"])
        # a run of one table records it; a batch only what changes: it never failed
        assert _check(fresh_instance, ident) == (None if name == "db1#1" else "SUCCEEDED"), ident
        assert sorted_rows(read(fleet, ident), ["id"]) == rows[ident]  # pypaimon reads the same rows
    # the table fixed, its next batch records it done again
    shutil.rmtree(Path(fleet) / "db1.db" / "ap_c")
    _fleet_one = create_table(fleet, CORRUPT, [("id", "BIGINT"), ("v", "STRING")], options={"bucket": "-1"})
    write(_fleet_one, {"id": [1], "v": ["a"]}, ms(2026, 3, 28, 8))
    again = _execute(defs, shards[failing], fresh_instance, "paimon_nightly")
    assert again.success and FAILED_TABLES_TAG not in fresh_instance.get_run_by_id(again.run_id).tags
    assert _check(fresh_instance, CORRUPT) == "SUCCEEDED"


def test_a_sensor_tick_requests_one_run_for_the_tables_it_finds_due(fleet, fresh_instance):
    defs = build_paimon_definitions(fleet)
    repo = defs.get_repository_def()
    ctx = build_sensor_context(instance=fresh_instance, repository_def=repo, sensor_name="paimon_small_files_sensor",
                               resources=dict(repo.get_top_level_resources()))
    out = repo.get_sensor_def("paimon_small_files_sensor")(ctx)
    (request,) = out.run_requests
    due = {table_key(t) for t in TABLES}  # six small files in every table: level-0 files of the primary-key one
    assert set(request.asset_selection) == due and request.asset_check_keys == []
    assert request.job_name == "paimon_compaction" and request.tags["paimon/tables"] == "4"
    assert request.run_config == {"ops": {op: {"config": {"due_checks": ["small_files"]}}
                                          for op in ("paimon_primary_key_tables", "paimon_append_tables")}}
    # the same findings are requested once (the run key of the batch is that of its tables and snapshots)
    again = repo.get_sensor_def("paimon_small_files_sensor")(build_sensor_context(
        instance=fresh_instance, repository_def=repo, sensor_name="paimon_small_files_sensor",
        resources=dict(repo.get_top_level_resources())))
    assert again.run_requests[0].run_key == request.run_key
    rows = {t: sorted_rows(read(fleet, t), ["id"]) for t in TABLES}
    result = _execute(defs, request, fresh_instance)
    assert result.success
    for ident in TABLES:
        table = FileSystemCatalog(fleet).get_table(ident)
        if table_key(ident) in due:
            (obs,) = observations(result, table_key(ident))
            assert obs["operations"] == "compact" and obs["due"] == "compact (small_files)", obs
            assert table.snapshots.latest().commit_kind == "COMPACT", ident
        else:  # not selected: untouched
            assert table.snapshots.latest().commit_kind == "APPEND", ident
        assert sorted_rows(read(fleet, ident), ["id"]) == rows[ident]
    # the small_files check the work changed is recorded (it was never evaluated: a change)
    assert all(_check(fresh_instance, t, "small_files") == "SUCCEEDED" for t in TABLES if table_key(t) in due)


def test_a_table_held_by_another_run_is_waited_for_within_the_batch(fleet, fresh_instance, monkeypatch):
    """Per-table mutual exclusion inside a batch: the run claims each table's pool slot (paimon/<db>.<table>, limit
    1) in the instance's concurrency storage for as long as it maintains that table; a table another run holds is
    waited for, and no other table of the batch is maintained while it waits (each in turn)."""
    import paimon_ops.dagster.table_asset as table_asset
    started: dict[str, float] = {}
    real = table_asset.table_state

    def recording(table):
        started[table.identifier] = time.monotonic()
        return real(table)
    monkeypatch.setattr(table_asset, "table_state", recording)
    defs = build_paimon_definitions(fleet)
    storage = fresh_instance.event_log_storage
    held = "paimon/db1.ap_b"
    storage.initialize_concurrency_limit_to_default(held)
    assert storage.claim_concurrency_slot(held, "another-run", "another-step").is_claimed
    released: list[float] = []

    def release():
        released.append(time.monotonic())
        storage.free_concurrency_slots_for_run("another-run")
    timer = threading.Timer(1.5, release)
    timer.start()
    try:
        job = defs.get_repository_def().get_job("paimon_observe")
        keys = [table_key(t) for t in ("db1.ap_b", "db2.ap_d")]
        result = job.get_subset(asset_selection=set(keys), asset_check_selection=set()).execute_in_process(
            instance=fresh_instance)
    finally:
        timer.cancel()
    assert result.success and released
    assert started["db1.ap_b"] >= released[0] and started["db2.ap_d"] >= started["db1.ap_b"]
    assert storage.get_concurrency_info(held).claimed_slots == []


def test_definitions_build_from_the_description_without_the_warehouse(fleet, tmp_path, monkeypatch):
    state = tmp_path / "state.json"
    assert write_state(PaimonWarehouse(uri=fleet), state) == len(TABLES)
    live = build_paimon_parts(fleet)
    moved = str(tmp_path / "elsewhere")
    shutil.move(fleet, moved)  # nothing left where the tables were: any read would fail
    reads: list[str] = []
    for method in ("read_bytes", "open_input", "exists", "list_status", "is_dir", "is_file"):
        original = getattr(LocalFileIO, method)

        def spy(self, path, *a, _original=original, **kw):
            reads.append(path)
            return _original(self, path, *a, **kw)
        monkeypatch.setattr(LocalFileIO, method, spy)
    parts = build_paimon_parts(fleet, state_path=str(state))
    assert reads == []
    assert [r.spec for r in parts.refs] == [r.spec for r in live.refs]
    repo = parts.definitions().get_repository_def()
    assert {k.to_user_string() for k in repo.asset_graph.get_all_asset_keys()} == {
        f"paimon/{t.replace('.', '/')}" for t in TABLES}
    assert "paimon_nightly" in {j.name for j in repo.get_all_jobs()}
    # a description of another warehouse is refused, naming both
    with pytest.raises(Exception, match="describes warehouse .* not /nowhere"):
        read_state(state, PaimonWarehouse(uri="/nowhere"))
    shutil.move(moved, fleet)


def test_a_run_worker_of_the_code_location_loads_from_the_description(fleet, tmp_path):
    """`dagster api execute_run` — the process the daemon's run launcher starts — on this repository's code location
    (definitions.py) built from PAIMON_OPS_DEFS_STATE: the run of a shard maintains exactly its tables."""
    from dagster._cli.api import ExecuteRunArgs
    from dagster._core.definitions.reconstruct import ReconstructableRepository
    from dagster._serdes import serialize_value

    state = tmp_path / "state.json"
    write_state(PaimonWarehouse(uri=fleet), state)
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text("concurrency:\n  pools:\n    default_limit: 1\ntelemetry:\n  enabled: false\n")
    env = {**os.environ, "PAIMON_OPS_WAREHOUSE": fleet, "PAIMON_OPS_DEFS_STATE": str(state),
           "PAIMON_OPS_PLACEMENT": "local", "DAGSTER_HOME": str(home), "PYTHONPATH": str(REPO)}
    old = {k: os.environ.get(k) for k in ("PAIMON_OPS_WAREHOUSE", "PAIMON_OPS_DEFS_STATE", "PAIMON_OPS_PLACEMENT")}
    os.environ.update({k: env[k] for k in old})
    try:
        recon = ReconstructableRepository.for_file(str(REPO / "definitions.py"), "defs", str(REPO))
        recon_job = recon.get_reconstructable_job("paimon_nightly")
        job = recon_job.get_definition()
        keys = {table_key(t) for t in TABLES if t.startswith("db1.")}
        with DagsterInstance.from_config(str(home)) as instance:
            run = instance.create_run_for_job(
                job_def=job.get_subset(asset_selection=keys, asset_check_selection=set()), asset_selection=frozenset(keys),
                job_code_origin=recon_job.get_python_origin(),
                tags={"paimon/shard": "db1"})
            args = ExecuteRunArgs(job_origin=recon_job.get_python_origin(), run_id=run.run_id,
                                  instance_ref=instance.get_ref(), set_exit_code_on_failure=True)
            proc = subprocess.run([sys.executable, "-m", "dagster", "api", "execute_run",
                                   serialize_value(args)], cwd=REPO, env=env, capture_output=True, text=True,
                                  timeout=600)
            assert proc.returncode == 0, proc.stderr[-4000:]
            assert instance.get_run_by_id(run.run_id).status.value == "SUCCESS"
            observed = {e.dagster_event.asset_key for e in instance.all_logs(run.run_id)
                        if e.dagster_event and e.dagster_event.event_type_value == "ASSET_OBSERVATION"}
            assert observed == keys
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    assert json.loads(state.read_text())["warehouse"] == fleet


TAGGED = ("tagdb.t0", "tagdb.t1", "tagdb.t2")


def test_the_tag_automation_runs_a_shard_and_each_table_keeps_its_own_partition(warehouse, fresh_instance,
                                                                                 monkeypatch):
    """At the tag time, one run for the tables of a shard tagging then: each table's tags partition of the day is its
    own materialisation (the tag created in that table); a table that fails (its snapshots unreadable) leaves only its
    own partition failed, and the run names it."""
    import datetime as dt
    from zoneinfo import ZoneInfo

    from dagster import AssetKey
    from dagster._core.storage.partition_status_cache import AssetPartitionStatus

    from paimon_ops.dagster import tags_asset as tags_mod
    berlin = ZoneInfo("Europe/Berlin")
    for ident in TAGGED:
        t = create_table(warehouse, ident, [("id", "BIGINT"), ("v", "STRING")],
                         options={"bucket": "-1", "tag.create-time": "02:30", "tag.create-time-zone": "Europe/Berlin"})
        write(t, {"id": [1], "v": ["a"]}, ms(2026, 3, 27, 10))
        write(t, {"id": [2], "v": ["b"]}, ms(2026, 3, 28, 10))
    defs = build_paimon_definitions(warehouse)
    repo = defs.get_repository_def()
    for f in (Path(warehouse) / "tagdb.db" / "t1" / "snapshot").glob("snapshot-*"):
        f.write_bytes(b"{not json")  # after the build: the code location knows t1, its run cannot read it

    def tick(when: dt.datetime, cursor):
        monkeypatch.setattr(tags_mod, "now_millis", lambda: int(when.timestamp() * 1000))
        ctx = build_sensor_context(instance=fresh_instance, cursor=cursor, repository_def=repo,
                                   sensor_name="paimon_tag_automation", resources=dict(repo.get_top_level_resources()))
        return repo.get_sensor_def("paimon_tag_automation")(ctx)
    cursor = tick(dt.datetime(2026, 3, 29, 1, 55, tzinfo=berlin), None).cursor
    (request,) = tick(dt.datetime(2026, 3, 29, 3, 1, tzinfo=berlin), cursor).run_requests
    keys = [AssetKey(["paimon", *ident.split("."), "tags"]) for ident in TAGGED]
    assert request.asset_selection == keys and request.partition_key == "2026-03-28"
    assert request.tags["paimon/shard"] == "tagdb" and request.tags["paimon/tables"] == "3"
    assert request.run_key.startswith("tags:tagdb:") and request.run_key.endswith(":2026-03-28")

    result = defs.resolve_implicit_global_asset_job_def().execute_in_process(
        instance=fresh_instance, asset_selection=request.asset_selection, partition_key=request.partition_key,
        tags=request.tags, raise_on_error=False)
    assert not result.success  # the run fails naming the one table; the others' partitions stand
    errors = [e.user_message for e in fresh_instance.all_logs(result.run_id) if e.level >= 40]
    assert any(m.startswith("tagdb.t1: tagging day 2026-03-28 of tagdb.t1 failed: ") for m in errors), errors
    (failure,) = result.get_step_failure_events()
    assert failure.step_failure_data.user_failure_data.description.startswith("1 of 3 tables failed: tagdb.t1: ")
    materialized = {(m.asset_key, m.partition) for m in materializations(result)}
    assert materialized == {(keys[0], "2026-03-28"), (keys[2], "2026-03-28")}
    for key, ident in zip(keys, TAGGED):
        partitions = repo.asset_graph.get(key).partitions_def
        status = fresh_instance.get_status_by_partition(key, ["2026-03-28"], partitions)
        expected = AssetPartitionStatus.FAILED if ident == "tagdb.t1" else AssetPartitionStatus.MATERIALIZED
        assert status == {"2026-03-28": expected}, (ident, status)
        if ident != "tagdb.t1":  # the tag is in the table, on the day's last snapshot; pypaimon reads it
            assert {n: t.id for n, t in FileSystemCatalog(warehouse).get_table(ident).tags.tags()} == {"2026-03-28": 2}
            assert sorted_rows(read(warehouse, ident, tag="2026-03-28"), ["id"]) == sorted_rows(
                read(warehouse, ident, snapshot_id=2), ["id"])
