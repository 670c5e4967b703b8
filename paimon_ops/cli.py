"""`paimon-ops` command line. Library code logs; only this module prints."""
from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from datetime import datetime, timezone
from typing import Any, Callable, Sequence

from paimon_ops.errors import PaimonOpsError
from paimon_ops.plan import human_bytes
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import Catalog, Table


def _ts(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _print_table(rows: list[dict[str, Any]], columns: Sequence[str]) -> None:
    if not rows:
        print("(none)")
        return
    cells = [[str(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths)))
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths)))


def _emit(args: argparse.Namespace, payload: Any, text: Callable[[], None]) -> None:
    if args.json:
        print(json.dumps(payload, indent=2, default=_json_default))
    else:
        text()


def _json_default(o: Any) -> Any:
    if dataclasses.is_dataclass(o):
        return dataclasses.asdict(o)
    if isinstance(o, bytes):
        return o.hex()
    if isinstance(o, datetime):
        return o.isoformat()
    return str(o)


def _warehouse_options(args: argparse.Namespace) -> dict[str, str] | None:
    """--option KEY=VALUE pairs: warehouse options such as s3.endpoint (secrets are better left to AWS_* variables:
    a command line is visible to other users of the machine)."""
    out = {}
    for text in getattr(args, "option", None) or ():
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            raise PaimonOpsError(f"--option {text.split('=')[0]!r}…: expected KEY=VALUE")
        out[key.strip()] = value.strip()
    return out or None


def _catalog(args: argparse.Namespace) -> Catalog:
    return Catalog(args.warehouse, options=_warehouse_options(args))


def _table(args: argparse.Namespace) -> Table:
    return _catalog(args).get_table(args.table)


# ---------------------------------------------------------------------- inspection commands
def cmd_tables(args: argparse.Namespace) -> None:
    catalog = _catalog(args)
    rows = []
    for ident in catalog.all_tables():
        try:
            t = catalog.get_table(ident)
            latest = t.snapshots.latest_id()
            rows.append({"table": ident, "primary_keys": list(t.schema.primary_keys),
                         "partition_keys": list(t.schema.partition_keys), "bucket": t.options.bucket,
                         "latest_snapshot": latest, "error": None})
        except PaimonOpsError as e:  # one broken table must not hide the others
            rows.append({"table": ident, "error": str(e)})
    _emit(args, rows, lambda: _print_table(
        [{**r, "primary_keys": ",".join(r.get("primary_keys") or []) or "-",
          "partition_keys": ",".join(r.get("partition_keys") or []) or "-", "error": r["error"] or ""}
         for r in rows], ["table", "primary_keys", "partition_keys", "bucket", "latest_snapshot", "error"]))


def cmd_snapshots(args: argparse.Namespace) -> None:
    t = _table(args)
    rows = [{"id": s.id, "kind": s.commit_kind, "schema_id": s.schema_id, "time_millis": s.time_millis,
             "time": _ts(s.time_millis), "total_records": s.total_record_count, "delta_records": s.delta_record_count,
             "watermark": s.watermark, "commit_user": s.commit_user}
            for s in t.snapshots.iter_snapshots()]
    _emit(args, rows, lambda: _print_table(rows, ["id", "kind", "schema_id", "time", "total_records", "delta_records"]))


def cmd_tags(args: argparse.Namespace) -> None:
    t = _table(args)
    rows = [{"name": n, "snapshot_id": tag.id, "snapshot_time": _ts(tag.time_millis),
             "create_time": tag.tag_create_time.isoformat() if tag.tag_create_time else None,
             "time_retained_s": tag.tag_time_retained.total_seconds() if tag.tag_time_retained else None}
            for n, tag in t.tags.tags()]
    _emit(args, rows, lambda: _print_table([{k: ("-" if v is None else v) for k, v in r.items()} for r in rows],
                                           ["name", "snapshot_id", "snapshot_time", "create_time", "time_retained_s"]))


def cmd_files(args: argparse.Namespace) -> None:
    t = _table(args)
    scanner = TableScanner(t)
    if args.tag:
        result = scanner.scan_tag(args.tag)
    else:
        snap = t.snapshots.snapshot(args.snapshot) if args.snapshot else t.snapshots.latest()
        if snap is None:
            _emit(args, {"snapshot_id": None, "files": []}, lambda: print("table has no snapshot"))
            return
        result = scanner.scan(snap)
    rows = []
    for f in sorted(result.files, key=lambda f: (scanner.partition_dir(f.partition), f.bucket, f.level, f.name)):
        hit = result.dv_of(f)
        dv_card = None
        if hit is not None:
            dv_card = hit[1].cardinality if hit[1].cardinality is not None else scanner.deletion_vector(*hit).cardinality
        rows.append({"partition": scanner.partition_dir(f.partition).rstrip("/") or "-", "bucket": f.bucket,
                     "level": f.level, "file": f.name, "rows": f.meta.row_count, "size": f.meta.file_size,
                     "deleted_rows": dv_card or 0, "delete_row_count": f.meta.delete_row_count,
                     "min_seq": f.meta.min_sequence_number, "max_seq": f.meta.max_sequence_number,
                     "schema_id": f.meta.schema_id})
    payload = {"snapshot_id": result.snapshot.id, "files": rows}

    def text() -> None:
        print(f"snapshot {result.snapshot.id}: {len(rows)} files, {sum(r['rows'] for r in rows)} rows, "
              f"{human_bytes(sum(r['size'] for r in rows))}")
        _print_table([{**r, "size": human_bytes(r["size"])} for r in rows],
                     ["partition", "bucket", "level", "file", "rows", "size", "deleted_rows"])
    _emit(args, payload, text)


def cmd_options(args: argparse.Namespace) -> None:
    t = _table(args)
    schema = t.schema
    payload = {"table": t.identifier, "location": t.location, "schema_id": schema.id,
               "primary_keys": list(schema.primary_keys), "partition_keys": list(schema.partition_keys),
               "fields": [{"id": f.id, "name": f.name, "type": str(f.type)} for f in schema.fields],
               "options": dict(sorted(schema.options.items()))}

    def text() -> None:
        print(f"{t.identifier} at {t.location} (schema {schema.id})")
        print("primary keys: " + (", ".join(schema.primary_keys) or "-"))
        print("partition keys: " + (", ".join(schema.partition_keys) or "-"))
        _print_table([{"option": k, "value": v} for k, v in sorted(schema.options.items())], ["option", "value"])
    _emit(args, payload, text)


# ---------------------------------------------------------------------- maintenance commands
class _Progress:
    """Progress on stderr for long work (one line per update, so it also reads well in CI logs)."""

    def __init__(self, label: str, enabled: bool):
        self.label = label
        self.enabled = enabled
        self._last = -1.0

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total <= 0:
            return
        pct = 100.0 * done / total
        if done == total or pct - self._last >= 5:
            self._last = pct
            print(f"{self.label}: {done}/{total} ({pct:.0f}%)", file=sys.stderr, flush=True)


def _runner(args: argparse.Namespace):
    from paimon_ops.runner import LazySparkRunner, LocalRunner
    if getattr(args, "local", False):
        return LocalRunner()
    return LazySparkRunner(master=args.spark_master, remote=args.spark_remote)


def _result(args: argparse.Namespace, outcome: Any) -> None:
    """Print a Plan (dry run) or a Report."""
    _emit(args, outcome.to_dict(), lambda: print(outcome.summary()))


def _now_ms(args: argparse.Namespace) -> int | None:
    return getattr(args, "now_ms", None)


def cmd_compact(args: argparse.Namespace) -> None:
    from paimon_ops.compact.api import compact
    t = _table(args)
    partitions = [_partition_arg(p) for p in args.partition] if args.partition else None
    outcome = compact(t, mode=args.mode, partitions=partitions, where=args.where,
                      order_by=args.order_by.split(",") if args.order_by else None, strategy=args.strategy,
                      threshold=args.threshold, dry_run=args.dry_run, runner=_runner(args), force=args.force,
                      progress=_Progress(f"compact {t.identifier}", not args.json or args.progress))
    _result(args, outcome)


def _partition_arg(text: str) -> dict[str, str]:
    out = {}
    for part in text.split(","):
        if "=" not in part:
            raise PaimonOpsError(f"--partition {text!r}: expected key=value[,key=value]")
        k, v = part.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def cmd_expire_snapshots(args: argparse.Namespace) -> None:
    from paimon_ops.lifecycle.expire import expire_snapshots
    from paimon_ops.options import parse_duration
    t = _table(args)
    outcome = expire_snapshots(
        t, now_millis=_now_ms(args), retain_min=args.retain_min, retain_max=args.retain_max,
        time_retained=parse_duration(args.older_than, "--older-than") if args.older_than else None,
        max_deletes=args.max_deletes, dry_run=args.dry_run, runner=_runner(args),
        progress=_Progress(f"expire {t.identifier}", not args.json or args.progress))
    _result(args, outcome)


def cmd_expire_tags(args: argparse.Namespace) -> None:
    from paimon_ops.lifecycle.autotag import expire_tags
    t = _table(args)
    older = _timestamp_arg(args.older_than) if args.older_than else None
    _result(args, expire_tags(t, now_millis=_now_ms(args), older_than=older, dry_run=args.dry_run,
                              runner=_runner(args)))


def _timestamp_arg(text: str) -> int:
    """Epoch millis from digits, or an ISO date/time (UTC unless it carries an offset)."""
    if text.isdigit():
        return int(text)
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        raise PaimonOpsError(f"invalid timestamp {text!r}: use epoch millis or ISO 8601 (2026-11-20T00:00:00Z)")
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)


def cmd_remove_orphans(args: argparse.Namespace) -> None:
    from paimon_ops.lifecycle.orphans import remove_orphans
    from paimon_ops.options import parse_duration
    t = _table(args)
    outcome = remove_orphans(t, older_than=parse_duration(args.older_than, "--older-than"), now_millis=_now_ms(args),
                             allow_short=args.allow_short, dry_run=args.dry_run, runner=_runner(args))
    _result(args, outcome)


def cmd_create_tag(args: argparse.Namespace) -> None:
    from paimon_ops.lifecycle.tags import create_tag
    from paimon_ops.options import parse_duration
    t = _table(args)
    outcome = create_tag(t, args.name, snapshot_id=args.snapshot,
                         timestamp_millis=_timestamp_arg(args.timestamp) if args.timestamp else None,
                         time_retained=parse_duration(args.time_retained, "--time-retained") if args.time_retained else None,
                         dry_run=args.dry_run)
    _result(args, outcome)


def cmd_delete_tag(args: argparse.Namespace) -> None:
    from paimon_ops.lifecycle.reclaim import delete_tags
    t = _table(args)
    _result(args, delete_tags(t, args.names, dry_run=args.dry_run, runner=_runner(args)))


def cmd_rename_tag(args: argparse.Namespace) -> None:
    from paimon_ops.lifecycle.tags import rename_tag
    _result(args, rename_tag(_table(args), args.old, args.new, dry_run=args.dry_run))


def cmd_auto_tag(args: argparse.Namespace) -> None:
    from paimon_ops.lifecycle.autotag import create_auto_tags, create_tag_for_period
    t = _table(args)
    if args.period:
        outcome = create_tag_for_period(t, args.period, now_millis=_now_ms(args), dry_run=args.dry_run)
    else:
        outcome = create_auto_tags(t, now_millis=_now_ms(args), dry_run=args.dry_run)
    _result(args, outcome)


def cmd_rollback(args: argparse.Namespace) -> None:
    from paimon_ops.lifecycle.rollback import rollback
    t = _table(args)
    _result(args, rollback(t, snapshot_id=args.snapshot, tag=args.tag, confirm=args.yes, dry_run=args.dry_run))


def cmd_sample(args: argparse.Namespace) -> None:
    from paimon_ops.sample import build_sample_warehouse
    tables = build_sample_warehouse(args.warehouse, rounds=args.rounds)
    _emit(args, {"warehouse": args.warehouse, "tables": tables},
          lambda: print(f"sample warehouse at {args.warehouse}: " + ", ".join(tables)))


# ---------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="paimon-ops", description="Maintenance for Apache Paimon tables")
    p.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    sub = p.add_subparsers(dest="command", required=True)

    def add(name: str, fn: Callable, help_text: str, with_table: bool = True) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help_text)
        sp.add_argument("warehouse", help="warehouse root: local path or URI (s3://…, hdfs://…)")
        if with_table:
            sp.add_argument("table", help="DATABASE.TABLE")
        sp.add_argument("--json", action="store_true", help="machine-readable output")
        sp.add_argument("-o", "--option", action="append", metavar="KEY=VALUE",
                        help="warehouse option, e.g. s3.endpoint=http://host:9000 (repeatable)")
        sp.set_defaults(fn=fn)
        return sp

    add("tables", cmd_tables, "list the tables of a warehouse", with_table=False)
    add("snapshots", cmd_snapshots, "list snapshots")
    add("tags", cmd_tags, "list tags")
    files = add("files", cmd_files, "live data files of a snapshot or tag")
    g = files.add_mutually_exclusive_group()
    g.add_argument("--snapshot", type=int, help="snapshot id (default: latest)")
    g.add_argument("--tag", help="tag name")
    add("options", cmd_options, "schema and options of a table")
    def maint(name: str, fn: Callable, help_text: str, spark: bool = True) -> argparse.ArgumentParser:
        sp = add(name, fn, help_text)
        sp.add_argument("--dry-run", action="store_true", help="plan only: show what would be written/deleted and why")
        sp.add_argument("--progress", action="store_true", help="progress on stderr even with --json")
        sp.add_argument("--now-ms", type=int, help=argparse.SUPPRESS)  # tests drive time
        if spark:
            g = sp.add_argument_group("execution")
            g.add_argument("--spark-master", default=None, help="Spark master URL (default: embedded local[*])")
            g.add_argument("--spark-remote", default=None, help="Spark Connect URL, e.g. sc://host:15002")
            g.add_argument("--local", action="store_true", help="run tasks in this process instead of Spark")
        return sp

    c = maint("compact", cmd_compact, "compact a table (full, dv-ratio, sort, small-files)")
    c.add_argument("--mode", choices=["full", "dv-ratio", "sort", "small-files"], default="full")
    c.add_argument("--partition", action="append", help="k=v[,k2=v2]; repeat for several partitions")
    c.add_argument("--where", help="predicate on partition columns, e.g. \"dt >= '2024-01-01'\"")
    c.add_argument("--order-by", help="sort mode: comma-separated columns")
    c.add_argument("--strategy", choices=["order", "zorder", "hilbert"], default="order")
    c.add_argument("--threshold", type=float, help="dv-ratio mode: deleted-row ratio threshold")
    c.add_argument("--force", action="store_true", help="compact even a write-only table")
    e = maint("expire-snapshots", cmd_expire_snapshots, "expire snapshots and reclaim their files")
    e.add_argument("--retain-min", type=int)
    e.add_argument("--retain-max", type=int)
    e.add_argument("--older-than", help="time retention, e.g. '1 d' (default: snapshot.time-retained)")
    e.add_argument("--max-deletes", type=int)
    et = maint("expire-tags", cmd_expire_tags, "expire tags by count / retention, reclaiming files")
    et.add_argument("--older-than", help="also delete tags created before this time (epoch ms or ISO 8601)")
    o = maint("remove-orphans", cmd_remove_orphans, "delete files nothing references")
    o.add_argument("--older-than", default="3 d", help="only files older than this (default 3 d)")
    o.add_argument("--allow-short", action="store_true", help="allow --older-than below 1 day")
    ct = maint("create-tag", cmd_create_tag, "create a tag", spark=False)
    ct.add_argument("name")
    g = ct.add_mutually_exclusive_group()
    g.add_argument("--snapshot", type=int)
    g.add_argument("--timestamp", help="tag the snapshot current at this time (epoch ms or ISO 8601)")
    ct.add_argument("--time-retained", help="retention, e.g. '7 d'")
    dt_ = maint("delete-tag", cmd_delete_tag, "delete tags, reclaiming files only they kept alive")
    dt_.add_argument("names", nargs="+")
    rt = maint("rename-tag", cmd_rename_tag, "rename a tag", spark=False)
    rt.add_argument("old")
    rt.add_argument("new")
    at = maint("auto-tag", cmd_auto_tag, "create the automatic tags that are due", spark=False)
    at.add_argument("--period", help="create (or backfill) the tag of one period, e.g. 2026-11-21")
    rb = maint("rollback", cmd_rollback, "roll back to a snapshot or tag (metadata only)", spark=False)
    g = rb.add_mutually_exclusive_group(required=True)
    g.add_argument("--snapshot", type=int)
    g.add_argument("--tag")
    rb.add_argument("--yes", action="store_true", help="confirm: snapshots and tags newer than the target are removed")

    sample = sub.add_parser("sample", help="build (or rebuild) a sample warehouse with a week of churn")
    sample.add_argument("warehouse", help="directory to create (replaced if it exists)")
    sample.add_argument("--rounds", type=int, default=6, help="days of churn")
    sample.add_argument("--json", action="store_true")
    sample.set_defaults(fn=cmd_sample)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        args.fn(args)
    except PaimonOpsError as e:
        print(f"paimon-ops: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
