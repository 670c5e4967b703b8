"""The main job end to end on the embedded default (`./dev.sh demo`):

1. build a sample warehouse on local disk (a deletion-vector primary-key table, a partial-update table, an
   aggregation table and a partitioned append table, with a week of churn written by paimon-ops itself; the
   deletion-vector table is write-only and paimon-ops is its dedicated compaction job: its daily minor (lookup)
   compactions mark superseded rows in deletion vectors, so the deleted-row ratio of its older files rises);
2. run every table's nightly maintenance job (tag the day that ended → expire snapshots → expire tags → remove
   orphans) through Dagster in-process, on a local Spark session;
3. evaluate the compaction sensors and run the compactions they request (the DV-ratio sensor finds the files the
   minor compactions filled with deletions and requests a dv-ratio compaction that rewrites them);
4. print what was done, and re-read every table to show it is intact.

Open the same warehouse in the Dagster UI afterwards:
    PAIMON_OPS_WAREHOUSE=demo-warehouse .venv/bin/dagster dev -w workspace.yaml
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


def _materializations(result) -> list[tuple[str, dict]]:
    out = []
    for ev in result.get_asset_materialization_events():
        mat = ev.event_specific_data.materialization
        out.append(("/".join(mat.asset_key.path), {k: v.value for k, v in mat.metadata.items()}))
    return out


def _summary(meta: dict) -> str:
    from paimon_ops.plan import human_bytes

    """One line per materialisation: what was written and deleted, by kind."""
    parts = []
    written = {k.split("/", 1)[1]: v for k, v in meta.items() if k.startswith("written/") and v}
    deleted = {k.split("/", 1)[1]: v for k, v in meta.items() if k.startswith("deleted/") and v}
    if written:
        parts.append("wrote " + ", ".join(f"{v} {k}" for k, v in sorted(written.items()))
                     + f" ({human_bytes(meta.get('bytes_written') or 0)})")
    if deleted:
        parts.append("deleted " + ", ".join(f"{v} {k}" for k, v in sorted(deleted.items()))
                     + f" ({human_bytes(meta.get('bytes_deleted') or 0)})")
    if meta.get("snapshot_id") is not None:
        parts.append(f"committed snapshot {meta['snapshot_id']}")
    if not parts:
        parts.append("nothing to do")
    parts.append(f"{float(meta.get('duration_s') or 0):.1f}s")
    return "; ".join(parts)


def _table_state(warehouse: str) -> list[str]:
    from paimon_ops.table.reader import read_file, visible_files
    from paimon_ops.table.scan import TableScanner
    from paimon_ops.table.table import Catalog

    lines = []
    cat = Catalog(warehouse)
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
            from assets import health
            h = health.measure_files(t, sc)
            line += (f"  deleted-row ratio: worst file {h.max_dv_ratio:.1%}, table {h.total_dv_ratio:.1%} "
                     f"(threshold {h.dv_threshold:.0%})")
        lines.append(line)
    return lines


def _due_partition(warehouse: str, job, partitions: list[str]) -> str | None:
    """The newest day whose tag is due: between midnight and tag.create-time the last partition is not yet."""
    from paimon_ops.lifecycle import autotag
    from paimon_ops.table.table import Catalog

    ident = (job.tags or {}).get("paimon/table")
    if not partitions or ident is None:
        return partitions[-1] if partitions else None
    table = Catalog(warehouse).get_table(ident)
    now = int(time.time() * 1000)
    for key in reversed(partitions[-2:]):
        try:
            if autotag.period_for_date(table, key).due_millis <= now:
                return key
        except Exception:  # noqa: BLE001 - not a periodic tag table: the last day as before
            return partitions[-1]
    return partitions[-1]


QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def _quiet(run_config: dict | None) -> dict:
    return {**(run_config or {}), **QUIET}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--warehouse", default=str(ROOT / "demo-warehouse"))
    p.add_argument("--rounds", type=int, default=6, help="days of churn in the sample warehouse")
    p.add_argument("--spark-master", default=os.environ.get("PAIMON_OPS_SPARK_MASTER", "local[*]"))
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)

    from dagster import DagsterInstance, build_sensor_context

    from assets import build_paimon_definitions
    from paimon_ops.sample import build_sample_warehouse

    started = time.time()
    _say(f"1. building the sample warehouse at {args.warehouse}")
    tables = build_sample_warehouse(args.warehouse, rounds=args.rounds)
    _say("   tables: " + ", ".join(tables))
    for line in _table_state(args.warehouse):
        _say(line)

    defs = build_paimon_definitions(args.warehouse, spark_master=args.spark_master)
    instance = DagsterInstance.ephemeral()
    repo = defs.get_repository_def()

    _say("\n2. nightly maintenance (Dagster, in-process, Spark " + args.spark_master + ")")
    for job in sorted(repo.get_all_jobs(), key=lambda j: j.name):
        if not job.name.endswith("__nightly_job"):
            continue
        partitions = job.partitions_def.get_partition_keys() if job.partitions_def else []
        partition = _due_partition(args.warehouse, job, partitions)
        result = job.execute_in_process(instance=instance, partition_key=partition, run_config=QUIET,
                                         raise_on_error=False)
        _say(f"   {job.name} [{partition}]: {'ok' if result.success else 'FAILED'}")
        for key, meta in _materializations(result):
            _say(f"     {key}: {_summary(meta)}")
        if not result.success:
            for ev in result.all_events:
                if ev.is_failure:
                    _say(f"     error: {ev.message}")
            return 1

    _say("\n3. sensors → compaction")
    launched = 0
    for sensor_def in sorted(repo.sensor_defs, key=lambda s: s.name):
        ctx = build_sensor_context(instance=instance, definitions=defs, cursor=None,
                                   resources={k: v for k, v in (defs.resources or {}).items()})
        data = sensor_def.evaluate_tick(ctx)
        if not data.run_requests:
            reason = data.skip_message or "nothing to do"
            _say(f"   {sensor_def.name}: skip ({reason})")
            continue
        for req in data.run_requests:
            job = repo.get_job(req.job_name or sensor_def.job_name)
            result = job.execute_in_process(instance=instance, run_config=_quiet(req.run_config), tags=req.tags,
                                            asset_selection=req.asset_selection, raise_on_error=False)
            launched += 1
            _say(f"   {sensor_def.name} → {job.name} (run_key {req.run_key}): {'ok' if result.success else 'FAILED'}")
            for key, meta in _materializations(result):
                _say(f"     {key}: {_summary(meta)}")
            if not result.success:
                return 1

    _say("\n4. the warehouse afterwards")
    for line in _table_state(args.warehouse):
        _say(line)
    _say(f"\ndone in {time.time() - started:.0f}s ({launched} sensor-requested run(s)).")
    _say(f"UI: PAIMON_OPS_WAREHOUSE={args.warehouse} .venv/bin/dagster dev -w workspace.yaml")
    return 0


if __name__ == "__main__":
    sys.exit(main())
