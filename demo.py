"""The main job end to end on the embedded default (`./dev.sh demo`):

1. build a sample warehouse on local disk (a deletion-vector primary-key table, a partial-update table, an
   aggregation table and a partitioned append table, with a week of churn written by paimon-ops itself; the
   deletion-vector table is write-only and paimon-ops is its dedicated compaction job: its daily minor (lookup)
   compactions mark superseded rows in deletion vectors, so the deleted-row ratio of its older files rises);
2. run the nightly maintenance job for every table through Dagster in-process: the due daily tags (their
   tags-asset partitions show as materialised) → expire partitions (logs.events keeps two days) → expire snapshots
   → expire tags → remove orphans; each run records its report on the table asset as an observation. Plans this
   small run in the run's own process (the PaimonSpark resource's default placement); Spark local[*] would be
   started only for a plan beyond execution.local.max-input-size;
3. evaluate the compaction, expiry and manifest sensors (one per kind, across all tables) and run the maintenance
   they request (the DV-ratio sensor finds the files the minor compactions filled with deletions and requests a
   dv-ratio compaction that rewrites them);
4. tick the observation sensor (the tables' figures and checks, recorded without a run), print what was done, and
   re-read every table to show it is intact.

The runs, observations and tags partitions are recorded in a persistent Dagster instance beside the warehouse
(`demo-warehouse-dagster-home`, rebuilt with the warehouse), so the UI opens with the demo's history:
    DAGSTER_HOME=$PWD/demo-warehouse-dagster-home PAIMON_OPS_WAREHOUSE=demo-warehouse .venv/bin/dagster dev -w workspace.yaml
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def _say(msg: str = "") -> None:
    print(msg, flush=True)


def _events(result, kind: str) -> list[tuple[str, dict]]:
    """(asset key, metadata) of the observations ('ASSET_OBSERVATION') or materialisations of a run."""
    out = []
    for ev in result.all_events:
        if ev.event_type_value != kind:
            continue
        data = ev.event_specific_data
        event = data.asset_observation if kind == "ASSET_OBSERVATION" else data.materialization
        out.append(("/".join(event.asset_key.path), {k: v.value for k, v in event.metadata.items()}))
    return out


def _op_summary(meta: dict, op: str) -> str:
    """What one operation of a run wrote and deleted, by kind (from the observation the run recorded)."""
    from paimon_ops.execution.plan import human_bytes

    parts = []
    written = {k.rsplit("/", 1)[1]: v for k, v in meta.items() if k.startswith(f"{op}/written/") and v}
    deleted = {k.rsplit("/", 1)[1]: v for k, v in meta.items() if k.startswith(f"{op}/deleted/") and v}
    if written:
        parts.append("wrote " + ", ".join(f"{v} {k}" for k, v in sorted(written.items()))
                     + f" ({human_bytes(meta.get(f'{op}/bytes_written') or 0)})")
    if deleted:
        verb = {"compact": "replaced ", "expire_partitions": "dropped from the table (reclaimed by snapshot expiry) ",
                "compact_manifests": "merged "}.get(op, "deleted ")
        parts.append(verb + ", ".join(f"{v} {k}" for k, v in sorted(deleted.items()))
                     + f" ({human_bytes(meta.get(f'{op}/bytes_deleted') or 0)})")
    if meta.get(f"{op}/committed_snapshot") is not None:
        parts.append(f"committed snapshot {meta[f'{op}/committed_snapshot']}")
    if not parts:
        parts.append("nothing to do")
    where = f" {meta[f'{op}/ran_on']}" if meta.get(f"{op}/ran_on") else ""
    parts.append(f"{float(meta.get(f'{op}/duration_s') or 0):.2f}s{where}")
    return "; ".join(parts)


def _say_run(result, indent: str = "     ") -> None:
    from paimon_ops.execution.plan import human_bytes

    tags: dict[str, list[str]] = {}
    for key, meta in _events(result, "ASSET_MATERIALIZATION"):
        tags.setdefault(key, []).append(str(meta.get("tag", "")))
    for key, names in tags.items():
        shown = ", ".join(names) if len(names) <= 3 else f"{names[0]} … {names[-1]}"
        _say(f"{indent}{key}: {len(names)} partition(s) materialised (tags {shown})")
    for key, meta in _events(result, "ASSET_OBSERVATION"):
        if meta.get("phase") == "planned":  # the plan logged before the work; its report follows
            continue
        for op in [o.strip() for o in str(meta.get("operations", "")).split(",") if o.strip() != "observe"]:
            _say(f"{indent}{key} {op}: {_op_summary(meta, op)}")
        rows = meta.get("dagster/row_count")
        rows_text = f"{rows} rows" if rows is not None else f"{meta.get('rows_before_merge')} rows before merge"
        _say(f"{indent}{key} observed: {rows_text}, {meta.get('files')} files "
             f"({meta.get('level0_files')} level 0), {meta.get('snapshots')} snapshots, {meta.get('tags')} tags; "
             f"reclaimed {human_bytes(meta.get('bytes_reclaimed') or 0)} "
             f"(total {human_bytes(meta.get('bytes_reclaimed_total') or 0)})")
    for ev in result.get_asset_check_evaluations():
        if not ev.passed:
            _say(f"{indent}check {ev.check_name} ({ev.severity.value}): {ev.description}")


def _table_state(warehouse: str) -> list[str]:
    from paimon_ops.table.reader import read_file, visible_files
    from paimon_ops.table.scan import TableScanner
    from paimon_ops.table.table import FileSystemCatalog

    lines = []
    cat = FileSystemCatalog(warehouse)
    for ident in cat.all_tables():
        t = cat.get_table(ident)
        sc = TableScanner(t)
        res = sc.scan_latest()
        files = res.files if res else []
        visible = visible_files(sc, res) if res else []
        rows = 0
        for f in visible:  # every visible file is read back: the table must be intact
            hit = res.dv_of(f)
            rows += read_file(sc, f, sc.deletion_vector(*hit) if hit else None, keep_system_columns=False).num_rows
        levels = sorted({f.level for f in files})
        line = (f"  {ident:<18} snapshots {len(t.snapshots.list_ids()):>3}  tags {len(t.tags.names()):>2}  "
                f"files {len(files):>4} (levels {levels})  visible raw rows {rows}")
        if t.options.deletion_vectors_enabled:
            import paimon_ops.health as health
            h = health.measure_files(t, sc)
            line += (f"  deleted-row ratio: worst file {h.max_dv_ratio:.1%}, table {h.total_dv_ratio:.1%} "
                     f"(threshold {h.dv_threshold:.0%})")
        lines.append(line)
    return lines


QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def _quiet(run_config: dict | None) -> dict:
    return {**(run_config or {}), **QUIET}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--warehouse", default=str(ROOT / "demo-warehouse"))
    p.add_argument("--rounds", type=int, default=6, help="days of churn in the sample warehouse")
    p.add_argument("--spark-master", default=os.environ.get("PAIMON_OPS_SPARK_MASTER"),
                   help="Spark for plans beyond execution.local.max-input-size (default: the embedded local[*])")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)

    import shutil

    from dagster import DagsterInstance, build_sensor_context

    from paimon_ops.dagster import build_paimon_parts, write_dagster_home
    from paimon_ops.sample import build_sample_warehouse

    started = time.time()
    _say(f"1. building the sample warehouse at {args.warehouse}")
    tables = build_sample_warehouse(args.warehouse, rounds=args.rounds)
    _say("   tables: " + ", ".join(tables))
    for line in _table_state(args.warehouse):
        _say(line)

    parts = build_paimon_parts(args.warehouse, spark_master=args.spark_master)
    defs = parts.definitions()
    repo = defs.get_repository_def()
    # a persistent instance beside the warehouse (the UI opens it with the demo's history), whose table pools have
    # limit 1 as the repository's dagster.yaml sets them; rebuilt with the warehouse, so no history of an old one
    home = dagster_home_of(args.warehouse)
    if home.exists():
        shutil.rmtree(home)
    instance = DagsterInstance.from_config(str(write_dagster_home(home)))

    _say("\n2. nightly maintenance (Dagster, in-process; large plans would go to Spark "
         + (args.spark_master or "local[*]") + ")")
    nightly = repo.get_job("paimon_nightly")
    for ref in sorted(parts.refs, key=lambda r: r.ident):
        if ref.spec.broken:
            continue
        result = nightly.execute_in_process(instance=instance, asset_selection=[ref.key], run_config=QUIET,
                                            tags={**dict(ref.tags or {}), "paimon/trigger": "demo"},
                                            raise_on_error=False)
        _say(f"   paimon_nightly [{ref.ident}]: {'ok' if result.success else 'FAILED'}")
        _say_run(result)
        if not result.success:
            for ev in result.all_events:
                if ev.is_failure:
                    _say(f"     error: {ev.message}")
            return 1

    _say("\n3. sensors → maintenance (one sensor per kind, across all tables)")
    launched = 0
    resources = dict(repo.get_top_level_resources())
    for name in ("paimon_dv_ratio_sensor", "paimon_small_files_sensor", "paimon_snapshot_count_sensor",
                 "paimon_manifest_sensor", "paimon_partition_expiry_sensor"):
        sensor_def = repo.get_sensor_def(name)
        ctx = build_sensor_context(instance=instance, repository_def=repo, sensor_name=name, cursor=None,
                                   resources=resources)
        data = sensor_def.evaluate_tick(ctx)
        if not data.run_requests:
            _say(f"   {name}: skip ({data.skip_message or 'nothing to do'})")
            continue
        for req in data.run_requests:
            job = repo.get_job(req.job_name or sensor_def.job_name)
            result = job.execute_in_process(instance=instance, run_config=_quiet(req.run_config), tags=req.tags,
                                            asset_selection=req.asset_selection, raise_on_error=False)
            launched += 1
            _say(f"   {name} → {job.name} (run_key {req.run_key}): {'ok' if result.success else 'FAILED'}")
            _say_run(result)
            if not result.success:
                return 1

    _say("\n4. the observation sensor (no runs) and the warehouse afterwards")
    ctx = build_sensor_context(instance=instance, repository_def=repo, sensor_name="paimon_observation_sensor",
                               cursor=None, resources=resources)
    data = repo.get_sensor_def("paimon_observation_sensor").evaluate_tick(ctx)
    kinds: dict[str, int] = {}
    for e in data.asset_events:
        kinds[type(e).__name__] = kinds.get(type(e).__name__, 0) + 1
        instance.report_runless_asset_event(e)
    _say("   paimon_observation_sensor: " + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())))
    for line in _table_state(args.warehouse):
        _say(line)
    _say(f"\ndone in {time.time() - started:.0f}s ({launched} sensor-requested run(s)).")
    instance.dispose()
    _say(f"Dagster instance (the runs and observations above): {home}")
    _say(f"UI: DAGSTER_HOME={home} PAIMON_OPS_WAREHOUSE={args.warehouse} .venv/bin/dagster dev -w workspace.yaml")
    return 0


def dagster_home_of(warehouse: str) -> Path:
    """The demo's DAGSTER_HOME: `<warehouse>-dagster-home` beside the warehouse (outside it: not a database)."""
    root = Path(warehouse).resolve()
    return root.with_name(root.name + "-dagster-home")


if __name__ == "__main__":
    sys.exit(main())
