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
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import Catalog, Table


def _ts(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _human(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


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


def _table(args: argparse.Namespace) -> Table:
    return Catalog(args.warehouse).get_table(args.table)


# ---------------------------------------------------------------------- inspection commands
def cmd_tables(args: argparse.Namespace) -> None:
    catalog = Catalog(args.warehouse)
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
    _emit(args, rows, lambda: _print_table(rows, ["name", "snapshot_id", "snapshot_time", "create_time", "time_retained_s"]))


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
              f"{_human(sum(r['size'] for r in rows))}")
        _print_table([{**r, "size": _human(r["size"])} for r in rows],
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


def cmd_demo(args: argparse.Namespace) -> None:
    from paimon_ops.demo import run_demo  # heavy imports only when asked
    run_demo(args.warehouse, json_output=args.json)


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
    demo = sub.add_parser("demo", help="build a sample warehouse and run maintenance on it end to end")
    demo.add_argument("--warehouse", default="demo-warehouse", help="where to build the sample warehouse")
    demo.add_argument("--json", action="store_true")
    demo.set_defaults(fn=cmd_demo)
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
