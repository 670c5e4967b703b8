"""`paimon-ops` command line. Library code logs; only this module prints."""
from __future__ import annotations

import argparse
import dataclasses
import difflib
import itertools
import json
import logging
import os
import re
import signal
import sys
import threading
from datetime import datetime, timezone
from functools import partial
from typing import Any, Callable, NoReturn, Sequence

import paimon_ops.execution.fleet as fleet
from paimon_ops import __version__
from paimon_ops.api import OPERATIONS, Catalog, by_plan_type, plan_operation
from paimon_ops.catalog import Catalog as EngineCatalog
from paimon_ops.catalog.filesystem import FileSystemCatalog
from paimon_ops.errors import (
    CancelledError,
    CorruptMetadataError,
    InvalidOptionError,
    PaimonOpsError,
    PlanAlreadyAppliedError,
    StalePlanError,
    TableNotFoundError,
    cli_words,
)
from paimon_ops.execution.executor import open_plan_table
from paimon_ops.execution.fleet import Spool
from paimon_ops.execution.placement import make_runner, planning_on
from paimon_ops.execution.plan import Plan, human_bytes
from paimon_ops.execution.spark_session import stuck_start
from paimon_ops.health import missing_files
from paimon_ops.lifecycle.branches import branch_rows, list_branches
from paimon_ops.lifecycle.consumers import consumer_rows, list_consumers
from paimon_ops.lifecycle.rollback import require_confirmation
from paimon_ops.lifecycle.timeline import tag_local_zone
from paimon_ops.operations.model import BOOL, CHOICE, FLOAT, INT, NAMES, PARTITIONS, TASKS, Operation
from paimon_ops.options import CATALOG_CONNECT_TIMEOUT, format_duration
from paimon_ops.sample import build_sample_warehouse
from paimon_ops.schemas import ERROR, LIST, TABLES, envelope, format_of
from paimon_ops.table.fileio import FileIO
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import FileStoreTable
from paimon_ops.timeutil import iso, local_to_instant_millis, naive_to_local_millis


def _ts(ms: int | None) -> str:
    """A time for the text output (the JSON says ISO 8601, `timeutil.iso`)."""
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _list(args: argparse.Namespace, rows: list[dict[str, Any]], **context: Any) -> dict[str, Any]:
    """The --json envelope of a list command (paimon-ops-list/1): which command, on what, and its rows."""
    where = {"warehouse": args.warehouse}
    if getattr(args, "table", None):
        where["table"] = args.table
    return envelope(LIST, command=args.command, **where, **context, rows=rows)


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
    if dataclasses.is_dataclass(o) and not isinstance(o, type):
        return dataclasses.asdict(o)
    if isinstance(o, bytes):
        return o.hex()
    if isinstance(o, datetime):
        return o.isoformat()
    return str(o)


def _warehouse_options(args: argparse.Namespace) -> dict[str, str] | None:
    """--option KEY=VALUE pairs: catalog options (metastore, uri, lock.enabled, …), object-store settings such as
    s3.endpoint, and table options on top of every table's own (secrets are better left to AWS_* variables: a command
    line is visible to other users of the machine); --connect-timeout is the catalog's connect timeout too."""
    out = {}
    for text in getattr(args, "option", None) or ():
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            raise PaimonOpsError(f"--option {text.split('=')[0]!r}…: expected KEY=VALUE")
        out[key.strip()] = value.strip()
    timeout = getattr(args, "connect_timeout", None)
    if timeout is not None:
        if not timeout > 0:
            raise PaimonOpsError(f"--connect-timeout must be a positive number of seconds, got {timeout:g}")
        out[CATALOG_CONNECT_TIMEOUT.key] = f"{int(timeout * 1000)} ms"
    return out or None


def _po_catalog(args: argparse.Namespace) -> Any:
    """The command's catalog (one per run: a pattern over many tables opens it once), through the facade."""
    cat = getattr(args, "_po_catalog", None)
    if cat is None:
        cat = args._po_catalog = Catalog(args.warehouse, options=_warehouse_options(args))
    return cat


def _catalog(args: argparse.Namespace) -> EngineCatalog:
    return _po_catalog(args)._catalog


def _table(args: argparse.Namespace) -> FileStoreTable:
    catalog = _catalog(args)
    try:
        return catalog.get_table(args.table)
    except TableNotFoundError:
        _not_a_warehouse(catalog)  # the better error when the warehouse itself is wrong
        raise


# ---------------------------------------------------------------------- inspection commands
def cmd_tables(args: argparse.Namespace) -> None:
    catalog = _catalog(args)
    _not_a_warehouse(catalog)
    rows: list[dict[str, Any]] = []
    for ident in catalog.all_tables():
        try:
            t = catalog.get_table(ident)
            latest = t.snapshots.latest_id()
            rows.append({"table": ident, "primary_keys": list(t.schema.primary_keys),
                         "partition_keys": list(t.schema.partition_keys), "bucket": t.options.bucket,
                         "latest_snapshot": latest, "error": None})
        except PaimonOpsError as e:  # one broken table must not hide the others
            rows.append({"table": ident, "error": str(e)})
    _emit(args, _list(args, rows), lambda: _print_table(
        [{**r, "primary_keys": ",".join(r.get("primary_keys") or []) or "-",
          "partition_keys": ",".join(r.get("partition_keys") or []) or "-", "error": r["error"] or ""}
         for r in rows], ["table", "primary_keys", "partition_keys", "bucket", "latest_snapshot", "error"]))


def cmd_snapshots(args: argparse.Namespace) -> None:
    t = _table(args)
    snapshots = list(t.snapshots.iter_snapshots())
    rows = [{"id": s.id, "kind": s.commit_kind, "schema_id": s.schema_id, "time": iso(s.time_millis),
             "total_records": s.total_record_count, "delta_records": s.delta_record_count,
             "watermark": s.watermark, "commit_user": s.commit_user} for s in snapshots]
    _emit(args, _list(args, rows), lambda: _print_table(
        [{**r, "time": _ts(s.time_millis)} for r, s in zip(rows, snapshots)],
        ["id", "kind", "schema_id", "time", "total_records", "delta_records"]))


def cmd_tags(args: argparse.Namespace) -> None:
    t = _table(args)
    tags = t.tags.tags()
    zone = tag_local_zone(t) if any(tag.tag_create_time for _, tag in tags) else None

    def created(tag: Any) -> str | None:  # Paimon stores a zone-less local time: the table's tag zone gives it one
        ct = tag.tag_create_time
        return None if ct is None or zone is None else iso(local_to_instant_millis(naive_to_local_millis(ct), zone),
                                                           zone)
    rows = [{"name": n, "snapshot_id": tag.id, "snapshot_time": iso(tag.time_millis), "create_time": created(tag),
             "time_retained_s": _seconds(tag.tag_time_retained)} for n, tag in tags]
    text_rows = [{"name": n, "snapshot_id": tag.id, "snapshot_time": _ts(tag.time_millis),
                  "create_time": created(tag) or "-",
                  "time_retained": format_duration(tag.tag_time_retained) if tag.tag_time_retained else "-"}
                 for n, tag in tags]
    _emit(args, _list(args, rows), lambda: _print_table(
        text_rows, ["name", "snapshot_id", "snapshot_time", "create_time", "time_retained"]))


def cmd_branches(args: argparse.Namespace) -> None:
    infos = list_branches(_table(args))
    rows = branch_rows(infos)
    _emit(args, _list(args, rows), lambda: _print_table(
        [{**r, "earliest_snapshot": _dash(r["earliest_snapshot"]), "latest_snapshot": _dash(r["latest_snapshot"]),
          "tags": ",".join(r["tags"]) or "-", "created": _ts(i.created_millis) if i.created_millis else "-",
          "behind_main": "-" if r["behind_main"] is None else "yes" if r["behind_main"] else "no"}
         for r, i in zip(rows, infos)],
        ["branch", "earliest_snapshot", "latest_snapshot", "snapshots", "tags", "consumers", "created",
         "behind_main"]))


def cmd_consumers(args: argparse.Namespace) -> None:
    infos = list_consumers(_table(args))
    rows = consumer_rows(infos)
    _emit(args, _list(args, rows), lambda: _print_table(
        [{**r, "modified": _ts(i.modified_millis), "pins_from": _dash(r["pins_from"]),
          "expires": _ts(i.expires_millis) if i.expires_millis is not None else "never"}
         for r, i in zip(rows, infos)], ["consumer", "next_snapshot", "state", "pins_from", "modified", "expires"]))


def _dash(v: Any) -> Any:
    return "-" if v is None else v


def _seconds(d: Any) -> int | float | None:
    """A duration as the JSON contract says it: seconds, an integer when whole."""
    if d is None:
        return None
    s = round(d.total_seconds(), 3)
    return int(s) if s == int(s) else s


def cmd_files(args: argparse.Namespace) -> None:
    t = _table(args)
    if args.check:
        _check_files(args, t)
        return
    scanner = TableScanner(t)
    if args.tag:
        result = scanner.scan_tag(args.tag)
    else:
        snap = t.snapshots.snapshot(args.snapshot) if args.snapshot else t.snapshots.latest()
        if snap is None:
            _emit(args, _list(args, [], snapshot_id=None), lambda: print("table has no snapshot"))
            return
        result = scanner.scan(snap)
    rows: list[dict[str, Any]] = []
    for f in sorted(result.files, key=lambda f: (scanner.partition_dir(f.partition), f.bucket, f.level, f.name)):
        hit = result.dv_of(f)
        dv_card = None
        if hit is not None:
            dv_card = hit[1].cardinality if hit[1].cardinality is not None else scanner.deletion_vector(*hit).cardinality
        rows.append({"partition": scanner.partition_json(f.partition), "bucket": f.bucket,
                     "level": f.level, "file": f.name, "rows": f.meta.row_count, "size": f.meta.file_size,
                     "deleted_rows": dv_card or 0, "delete_row_count": f.meta.delete_row_count,
                     "min_seq": f.meta.min_sequence_number, "max_seq": f.meta.max_sequence_number,
                     "schema_id": f.meta.schema_id})
    payload = _list(args, rows, snapshot_id=result.snapshot.id)

    def text() -> None:
        print(f"snapshot {result.snapshot.id}: {len(rows)} files, {sum(r['rows'] for r in rows)} rows, "
              f"{human_bytes(sum(r['size'] for r in rows))}")
        _print_table([{**r, "size": human_bytes(r["size"]),
                       "partition": ",".join(f"{k}={v}" for k, v in r["partition"].items()) or "-"} for r in rows],
                     ["partition", "bucket", "level", "file", "rows", "size", "deleted_rows"])
    _emit(args, payload, text)


def _check_files(args: argparse.Namespace, t: FileStoreTable) -> None:
    """`files --check`: every file the latest snapshot and every tag of the table (or branch) reference exists; else
    exit 2 naming the first missing one."""
    found = missing_files(t)
    if found.missing:
        path, why = found.missing[0]
        more = f" (and {len(found.missing) - 1} more)" if len(found.missing) > 1 else ""
        raise CorruptMetadataError(path, f"referenced by {t.full_name} ({why}) but missing{more}")
    payload = _list(args, [], snapshot_id=t.snapshots.latest_id(), checked=found.checked, sources=found.sources)
    _emit(args, payload, lambda: print(f"{t.full_name}: all {found.checked} files referenced by "
                                       f"{', '.join(found.sources) or 'nothing'} exist"))


def cmd_options(args: argparse.Namespace) -> None:
    t = _table(args)
    schema = t.schema
    payload = _list(args, [{"option": k, "value": v} for k, v in sorted(schema.options.items())],
                    location=t.location, schema_id=schema.id, primary_keys=list(schema.primary_keys),
                    partition_keys=list(schema.partition_keys),
                    fields=[{"id": f.id, "name": f.name, "type": str(f.type)} for f in schema.fields])

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
    """--local: in-process; --spark-master / --spark-remote: that Spark (probed now, before anything is planned);
    neither: the default AutoRunner, which runs in-process unless the plan is large (then the embedded local[*])."""
    if getattr(args, "local", False):
        return make_runner("local")
    if args.spark_master or args.spark_remote:
        return make_runner("spark", master=args.spark_master, remote=args.spark_remote,
                           connect_timeout_s=args.connect_timeout,
                           what="--spark-remote" if args.spark_remote else "--spark-master")
    return make_runner("auto", connect_timeout_s=args.connect_timeout)


def _facade(args: argparse.Namespace, table: str | None = None):
    catalog = _po_catalog(args)
    try:
        return catalog.get_table(table or args.table)
    except TableNotFoundError:
        _not_a_warehouse(catalog._catalog)  # the better error when the warehouse itself is wrong
        raise


TABLES_FORMAT = format_of(TABLES)  # the --json envelope of a maintenance command over a table pattern
_GLOB = set("*?[")


def is_pattern(table: str) -> bool:
    return bool(_GLOB & set(table))


def _not_a_warehouse(catalog: EngineCatalog) -> None:
    """A directory holding no DATABASE.db directory is not a warehouse (a database directory or an empty one given
    by mistake): said naming it, rather than listing no tables."""
    if not isinstance(catalog, FileSystemCatalog) or not catalog.io.has_directories or catalog.databases():
        return
    where = str(catalog.warehouse).rstrip("/")
    hint = (f"; {where} looks like a database directory: give its parent as the warehouse"
            if where.endswith(".db") else "")
    raise PaimonOpsError(f"{catalog.warehouse} is not a Paimon warehouse: it holds no DATABASE.db directory{hint}")


def matching_tables(catalog: EngineCatalog, pattern: str, exclude: Sequence[str] = ()) -> list[str]:
    """The tables (db.table, sorted) matching an fnmatch pattern (`db.*`, `*.*`, `shop.ord*`) and none of `exclude`,
    or with `$branch_…` their branches (`db.*$branch_wap`, `db.t$branch_*`: `Catalog.matching`); a pattern matching
    nothing is an error naming it."""
    _not_a_warehouse(catalog)
    found = catalog.matching(pattern)
    if not found:
        every = catalog.all_tables()
        raise PaimonOpsError(f"table pattern {pattern!r} matches no table in {catalog.endpoint}; tables: "
                             + (", ".join(every) or "none"))
    kept = catalog.matching(pattern, exclude)
    if not kept:
        raise PaimonOpsError(f"--exclude {' '.join(exclude)} leaves none of the {len(found)} table(s) matching "
                             f"{pattern!r}")
    return kept


class _Listing:
    """A dry run's text, printed line by line (`_say`): a listing of millions of files is never held whole."""

    def __init__(self, plan: Any, limit: int | None, files: bool) -> None:
        self.plan, self.limit, self.files = plan, limit, files

    def __str__(self) -> str:
        return "\n".join(self.plan.summary_lines(self.limit, self.files))

    def write(self, end: str = "\n", out: Any = None) -> None:
        """As print(str(self), end=end, file=out)."""
        out = out or sys.stdout
        lines = self.plan.summary_lines(self.limit, self.files)
        sep = ""
        while chunk := list(itertools.islice(lines, 4096)):  # (a few writes per thousand lines)
            out.write(sep + "\n".join(chunk))
            sep = "\n"
        out.write(end)


def _say(text: str | _Listing, end: str = "\n", out: Any = None) -> None:
    if isinstance(text, _Listing):
        text.write(end, out)
    else:
        print(text, end=end, file=out)


def _result(args: argparse.Namespace, plan: Any, label: str, confirm: bool = True,
            runner: Any = None, table: Any = None) -> tuple[dict[str, Any], str | _Listing]:
    """The plan (a dry run: text lists every file, or --limit of them, or --summary's counts) or the report of
    executing it: as JSON and as text."""
    if args.dry_run:
        text = _Listing(plan, getattr(args, "limit", None), not getattr(args, "summary", False))
        if not args.json:  # (the plan's JSON of a 10 M-entry table holds millions of dicts: only when printed)
            return {"dry_run_files": sum(len(s.files) for s in plan.steps),
                    "dry_run_bytes": sum(s.files.total_bytes() for s in plan.steps)}, text
        return plan.to_dict(), text
    if not confirm:
        require_confirmation(plan, False)
    if runner is None and hasattr(args, "local"):
        runner = _runner(args)
    # (a fleet run's text is a line a table: progress of each table's files only when asked for)
    shown = args.progress or args.verbose if getattr(args, "fleet", False) else not args.json or args.progress
    report = plan.execute(table=table, runner=runner, progress=_Progress(label, shown))
    if not args.json:  # text: the report's own words, and the figures of a table pattern's summary line
        return {"snapshot_id": report.snapshot_id, "deleted": dict(report.deleted),
                "written": dict(report.written)}, report.summary()
    return report.to_dict(files=True), report.summary()


def _run(args: argparse.Namespace, plan: Any, label: str, confirm: bool = True, table: Any = None) -> None:
    """A dry run prints the plan (text: every file with kind and reason; --json: the plan itself, which
    `paimon-ops apply` executes later); otherwise the plan is executed and the report printed."""
    payload, text = _result(args, plan, label, confirm, table=table)
    _emit(args, payload, lambda: _say(text))


def _maintenance_command(op: Operation) -> Callable[[argparse.Namespace], int | None]:
    """The command of a registered operation: its flags, converted and validated by the registry (errors name the
    flags), plan on the facade, then dry run or execute — on one table, or on each table matching a pattern."""

    def one(args: argparse.Namespace, table: str | None = None) -> tuple[dict[str, Any], str | _Listing]:
        t = _facade(args, table)
        values = {p.name: getattr(args, p.name) for p in op.params if p.cli}
        if op.takes_now:
            values["now"] = getattr(args, "now_ms", None)
        # the runner the flags choose places the planning's manifest reading too (expiry, orphan removal)
        runner = _runner(args) if hasattr(args, "local") else None
        with planning_on(runner):
            plan = plan_operation(t, op, values, {**op.cli_words(), "now": "--now-ms"})
        if op.cli_check is not None:
            op.cli_check(plan, t)
        return _result(args, plan, f"{op.command} {t.identifier}", confirm=not op.confirm or args.yes, runner=runner,
                       table=t.raw)

    def command(args: argparse.Namespace) -> int | None:
        if (args.summary or args.limit is not None) and not args.dry_run:
            raise PaimonOpsError(f"{'--summary' if args.summary else '--limit'} shortens a dry run: add --dry-run")
        if args.limit is not None and args.limit < 0:
            raise PaimonOpsError(f"--limit must be at least 0, got {args.limit}")
        if args.parallel is not None and args.parallel < 1:
            raise PaimonOpsError(f"--parallel must be at least 1, got {args.parallel}")
        if not is_pattern(args.table):
            if args.exclude:
                raise PaimonOpsError(f"--exclude needs a table pattern (db.*, *.*), not the table {args.table!r}")
            payload, text = one(args)
            _emit(args, payload, lambda: _say(text))
            return None
        return _each_table(args, op, one)

    command.__doc__ = op.summary
    return command


def _each_table(args: argparse.Namespace, op: Operation,
                one: Callable[[argparse.Namespace, str], tuple[dict[str, Any], str | _Listing]]) -> int:
    """Plan / run `op` on every table matching the pattern, `--parallel` tables at a time (each in a worker process,
    execution/fleet.py; 1: one after the other here). A failing table is reported and the others still run. Text:
    a summary line per table as the tables finish, in the tables' order (with --verbose, each table's whole output
    first, then the summary); --json: one envelope listing every table, written as they finish. Exit status 2 if
    any table failed (named on stderr), 130 if interrupted (no further table starts; the ones in progress stop as
    a run on that table alone stops)."""
    spark = getattr(args, "spark_master", None) or getattr(args, "spark_remote", None)
    if spark and (args.parallel or 1) > 1:
        raise PaimonOpsError(f"--parallel {args.parallel} runs tables in worker processes of this machine; with "
                             f"{'--spark-master' if args.spark_master else '--spark-remote'} the tables run one at a "
                             "time on that Spark (each table's work in parallel there): leave --parallel out")
    parallel = 1 if spark else args.parallel or fleet.default_processes()
    args.fleet = True
    work = partial(_table_outcome, args, op, one)
    # the workers are forked before anything here touches storage (fleet.py) or opens the catalog: each worker opens
    # its own connection (a Hive, JDBC or REST catalog's connection is never shared between processes)
    if getattr(args, "_po_catalog", None) is not None and parallel > 1:
        raise PaimonOpsError("internal error: the catalog was opened before the table workers were started")
    pool = fleet.Workers(work, parallel) if parallel > 1 else None
    try:
        tables = matching_tables(_catalog(args), args.table, args.exclude or ())
        if pool is not None and len(tables) > 1:
            for w in pool.workers[len(tables):]:  # (more workers than tables: the spare ones end now)
                w.conn.send(None)
            outcomes = pool.run(tables)
        else:
            outcomes = fleet.run_here(work, tables, lambda v: v["status"] == "interrupted")
        return _report_tables(args, op, tables, outcomes, pool)
    finally:
        if pool is not None:
            pool.close()


def _table_outcome(args: argparse.Namespace, op: Operation,
                   one: Callable[[argparse.Namespace, str], tuple[dict[str, Any], str | _Listing]],
                   name: str) -> dict[str, Any]:
    """One table of a fleet run (in a worker process, or here): {status ok | failed | interrupted, line: the summary
    line, error: its error payload, out: what it prints (--json: its envelope entry; --verbose: its whole text)}."""
    out = Spool() if args.json or args.verbose else None
    try:
        payload, text = one(args, name)
    except (CancelledError, KeyboardInterrupt) as e:
        err: BaseException = e if isinstance(e, CancelledError) else\
            CancelledError(f"{op.command} of {name} interrupted before it changed anything")
        return _failed_entry(args, name, err, out, "interrupted")
    except Exception as e:  # noqa: BLE001 - a failing table fails alone; the others still run
        if isinstance(e, PaimonOpsError):
            err = e
        elif isinstance(e, OSError):
            err = _in_table(args, e, name)
        else:  # a fault of ours: worded as the command's internal error, the stack in the log with -v
            logging.getLogger("paimon_ops.cli").info("%s failed", name, exc_info=True)
            err = _in_table(args, e, name)
            err = err if args.verbose else PaimonOpsError(f"internal error: {err} (-v shows the stack trace)")
        return _failed_entry(args, name, err, out, "failed")
    if args.json:
        assert out is not None
        for piece in json.JSONEncoder(indent=2, default=_json_default).iterencode(
                {"table": name, "status": "ok", "result": payload}):
            out.write(piece.replace("\n", _ENTRY_BREAK))
    elif out is not None:
        _say(text, "\n\n", out)
    return {"status": "ok", "line": _table_line(args, payload), "out": out}


_ENTRY_BREAK = "\n    "  # (an entry of the envelope's "tables" list, as json.dumps(indent=2) indents it)


def _failed_entry(args: argparse.Namespace, name: str, err: BaseException, out: Any, status: str) -> dict[str, Any]:
    error = _error_payload(err)
    if out is not None:
        if args.json:
            out.write(json.dumps({"table": name, "status": "failed", **error}, indent=2).replace("\n", _ENTRY_BREAK))
        else:
            out.write(f"{name}: {status}: {error['error']['message']}\n\n")
    what = "FAILED" if status == "failed" else "INTERRUPTED"
    return {"status": status, "line": f"{what}: {error['error']['message']}", "error": error, "out": out}


def _report_tables(args: argparse.Namespace, op: Operation, tables: Sequence[str], outcomes: Any,
                   pool: Any) -> int:
    """Print each table's outcome in the tables' order as it comes (module docstring of `_each_table`); the exit
    status."""
    head = (f"{op.command} on {len(tables)} table(s) matching {args.table!r}"
            + (f" (excluding {', '.join(args.exclude)})" if args.exclude else "") + ":")
    width = max(map(len, tables))
    lines: list[str] = []  # (--verbose: the summary comes after every table's text)
    failed: list[str] = []
    stopped: list[str] = []  # interrupted, or not started
    progress = _Progress(f"{op.command} {args.table}", bool(args.progress))
    out = sys.stdout
    if args.json:
        doc = json.dumps(envelope(TABLES, command=op.command, pattern=args.table, exclude=list(args.exclude or ()),
                                  dry_run=bool(args.dry_run), tables=None), indent=2)
        out.write(doc[:doc.rindex("null")] + "[")  # the envelope up to its "tables", then each table as it comes
    elif not args.verbose:
        print(head, flush=True)
    for n, o in enumerate(outcomes):
        r = o.value if o.status == fleet.OK else _failed_entry(
            args, o.item, CancelledError(f"{op.command} of {o.item}: {o.message}") if o.status != fleet.ERROR else
            PaimonOpsError(f"{o.item}: internal error: {o.message}"), fleet.Spool() if args.json or args.verbose else None,
            "failed" if o.status in (fleet.ERROR, fleet.LOST) else "interrupted")
        if r["status"] != "ok":
            (failed if r["status"] == "failed" else stopped).append(o.item)
        if r.get("out") is not None:
            if args.json:
                out.write(("\n    " if n == 0 else ",\n    "))
            r["out"].copy_to(out)
        line = f"  {o.item:<{width}}  {r['line']}"
        if args.json:
            pass
        elif args.verbose:
            lines.append(line)
        else:
            print(line)
        out.flush()
        progress(n + 1, len(tables))
    if args.json:
        failed_all = [t for t in tables if t in set(failed) | set(stopped)]
        out.write(("\n  ]" if tables else "]") + ',\n  "failed": '
                  + json.dumps(failed_all, indent=2).replace("\n", "\n  ") + "\n}\n")
    elif args.verbose:
        print(head)
        print("\n".join(lines))
    interrupted = bool(stopped) or (pool is not None and pool.interrupted)
    if interrupted:
        print(f"paimon-ops: interrupted: {op.command} on {len(tables)} table(s): {len(tables) - len(failed) - len(stopped)}"
              f" done, {len(failed)} failed, {len(stopped)} interrupted or not started; nothing listed is left "
              "unreadable and the next run finishes what is left", file=sys.stderr)
        return 130
    if failed:
        print(f"paimon-ops: error: {op.command} failed on {len(failed)} of {len(tables)} table(s): "
              f"{', '.join(failed)}", file=sys.stderr)
        return 2
    return 0


def _table_line(args: argparse.Namespace, payload: dict[str, Any]) -> str:
    """One table's outcome in a few words, for the summary of a run over a pattern."""
    if args.dry_run:
        if "dry_run_files" in payload:  # text output: the counts `_result` kept instead of the plan's JSON
            n, size = payload["dry_run_files"], payload["dry_run_bytes"]
        else:
            files = [f for s in payload.get("steps") or () for f in (s.get("files") or [])]
            n, size = len(files), sum(f.get("size") or 0 for f in files)
        if not n:
            return "nothing to do"
        return f"would touch {n} file(s), {human_bytes(size)}"
    parts = []
    if payload.get("snapshot_id"):
        parts.append(f"committed snapshot {payload['snapshot_id']}")
    for key, verb in (("deleted", "deleted"), ("written", "wrote")):
        counts = payload.get(key) or {}
        if counts:
            parts.append(f"{verb} " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    return "ok: " + ("; ".join(parts) or "nothing to do")


def cmd_apply(args: argparse.Namespace) -> None:
    """Execute exactly a plan saved with --dry-run --json, or refuse it (StalePlanError) if the table changed."""
    path = args.plan
    try:
        if path == "-":
            text = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as f:
                text = f.read()
    except OSError as e:
        raise PaimonOpsError(f"cannot read plan {path}: {e.strerror or e}") from None
    plan = Plan.from_json(text, where=path)
    args.dry_run = False
    op = by_plan_type(plan.operation)
    table = None
    if plan.catalog:  # made through a catalog: re-opened through it (-o gives what the plan does not record)
        table = open_plan_table(plan, _warehouse_options(args))
    try:
        _run(args, plan, f"apply {plan.operation} {plan.table}", confirm=op is None or not op.confirm or args.yes,
             table=table)
    except StalePlanError:
        done = _already_applied(args, plan)
        if done:
            raise PlanAlreadyAppliedError(plan.operation, plan.table, path, done) from None
        raise


def _already_applied(args: argparse.Namespace, plan: Any, sample: int = 200) -> str | None:
    """Whether a plan refused as stale is done already: every file it deletes is gone and every file it writes with
    given contents (tag files) holds them — checked on up to `sample` files. A plan whose outcome is decided only
    when it runs (compaction) cannot be recognised: it stays stale."""
    writes = [(a, text) for s in plan.steps if s.writes and "contents" in s.params
              for a, text in zip(s.files, s.params["contents"])]
    if not plan.deletes and not writes or len(writes) != sum(len(s.files) for s in plan.steps if s.writes):
        return None
    try:
        io, _ = FileIO.resolve(plan.location, options=_warehouse_options(args))

        def fs(p: str) -> str:
            return p.split("://", 1)[1] if "://" in p else p
        if any(io.exists(fs(a.path)) for a in plan.deletes[:sample]) or not all(
                io.is_file(fs(a.path)) and io.read_text(fs(a.path)) == text for a, text in writes[:sample]):
            return None
    except (OSError, PaimonOpsError):  # cannot tell: the stale-plan error stands
        return None
    return " and ".join(([f"the {len(plan.deletes)} file(s) it deletes are gone"] if plan.deletes else [])
                        + ([f"the {len(writes)} file(s) it writes are there"] if writes else []))


def cmd_sample(args: argparse.Namespace) -> None:
    tables = build_sample_warehouse(args.warehouse, rounds=args.rounds)
    _emit(args, _list(args, [{"table": t} for t in tables]),
          lambda: print(f"sample warehouse at {args.warehouse}: " + ", ".join(tables)))


# ---------------------------------------------------------------------- parser
# Per command: the flag that stands for each keyword argument of the engine, so that its messages speak the
# command line's words (errors.arg); derived from the registry's parameters.
_COMMON_WORDS = {"dry_run": "--dry-run"}
WORDS: dict[str, dict[str, str]] = {
    **{op.command: {**op.cli_words(), **({"confirm": "--yes"} if op.confirm else {})} for op in OPERATIONS.values()},
    "apply": {"confirm": "--yes"},
}


class UsageError(PaimonOpsError):
    """A command line argparse refuses: said in one line, naming the flag (with a suggestion for a misspelt one)."""


class _Parser(argparse.ArgumentParser):
    """argparse, but errors are one line (no usage block) and name the closest flag or command for a misspelt one."""

    def error(self, message: str) -> NoReturn:  # type: ignore[override]
        where = self.prog.split(" ", 1)[1] + ": " if " " in self.prog else ""
        see = f"; see {self.prog} --help"
        m = re.search(r"unrecognized arguments?: (.*)", message)
        if m:
            words = m.group(1).split()
            flags = [o for a in self._actions for o in a.option_strings if o.startswith("--")]
            unknown = next((w for w in words if w.startswith("-")), words[0] if words else "")
            close = difflib.get_close_matches(unknown.split("=", 1)[0], flags, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]}?)" if close else see
            what = "unknown flag" if unknown.startswith("-") else "unexpected argument"
            raise UsageError(f"{where}{what} {unknown}{hint}")
        m = re.search(r"argument (\S+): invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if m:
            choices = re.findall(r"'([^']*)'", m.group(3))
            close = difflib.get_close_matches(m.group(2), choices, n=1, cutoff=0.5)
            hint = f" (did you mean {close[0]}?)" if close else f" (one of {', '.join(choices)})"
            name = "command" if m.group(1) == "command" else m.group(1)
            raise UsageError(f"{where}unknown {name} {m.group(2)!r}{hint}")
        raise UsageError(f"{where}{message}{see if 'required' in message else ''}")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="paimon-ops", description="Maintenance for Apache Paimon tables")
    p.add_argument("--version", action="version", version=f"paimon-ops {__version__}")
    p.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    sub = p.add_subparsers(dest="command", required=True)

    def add(name: str, fn: Callable, help_text: str, with_table: bool = True) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help_text)
        sp.add_argument("warehouse", help="warehouse root: local path or URI (s3://…, hdfs://…)")
        if with_table:
            sp.add_argument("table", help="DATABASE.TABLE, or DATABASE.TABLE$branch_NAME for a branch")
        sp.add_argument("--json", action="store_true", help="machine-readable output")
        _catalog_flags(sp)
        sp.set_defaults(fn=fn)
        return sp

    add("tables", cmd_tables, "list the tables of a warehouse", with_table=False)
    add("snapshots", cmd_snapshots, "list snapshots")
    add("tags", cmd_tags, "list tags")
    files = add("files", cmd_files, "live data files of a snapshot or tag")
    g = files.add_mutually_exclusive_group()
    g.add_argument("--snapshot", type=int, help="snapshot id (default: latest)")
    g.add_argument("--tag", help="tag name")
    g.add_argument("--check", action="store_true",
                   help="instead of listing: check that every file the latest snapshot and every tag reference "
                        "exists (exit 2 naming the first missing one)")
    add("options", cmd_options, "schema and options of a table")
    add("branches", cmd_branches, "main and the branches of a table: snapshots, tags, consumers")
    add("consumers", cmd_consumers, "consumers of a table (or branch): the snapshot each reads next")
    def execution(sp: argparse.ArgumentParser) -> None:
        g = sp.add_argument_group("execution")
        g.add_argument("--spark-master", default=None, metavar="URL",
                       help="run on this Spark master (spark://…, yarn, k8s://…, local[N])")
        g.add_argument("--spark-remote", default=None, metavar="URL", help="run on Spark Connect, e.g. sc://host:15002")
        g.add_argument("--local", action="store_true", help="run in this process")

    def maint(name: str, fn: Callable, help_text: str, spark: bool = True) -> argparse.ArgumentParser:
        sp = add(name, fn, help_text)
        table = next(a for a in sp._actions if a.dest == "table")
        table.help = ("DATABASE.TABLE (DATABASE.TABLE$branch_NAME for a branch), or a pattern (db.*, *.*, shop.ord*; "
                      "db.*$branch_NAME, db.t$branch_*: branches): each matching table in turn, a summary line per "
                      "table, exit status 2 if any failed")
        sp.add_argument("--exclude", action="append", metavar="PATTERN",
                        help="with a table pattern: leave out the tables matching PATTERN (repeatable)")
        sp.add_argument("--dry-run", action="store_true",
                        help="plan only: print every file it would write or delete, with kind and reason; with --json "
                             "the plan itself, for `paimon-ops apply`")
        sp.add_argument("--summary", action="store_true",
                        help="with --dry-run: counts and bytes per kind of file instead of the file list")
        sp.add_argument("--limit", type=int, metavar="N",
                        help="with --dry-run: list the first N files, then how many more")
        sp.add_argument("--progress", action="store_true", help="progress on stderr even with --json (with a "
                        "table pattern: the tables done so far)")
        sp.add_argument("--parallel", type=int, metavar="N",
                        help="with a table pattern: maintain N tables at a time, each in a worker process (default: "
                             "one per CPU core; 1: one after the other in this process)")
        sp.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                        help="log progress to stderr; with a table pattern also each table's whole output")
        sp.add_argument("--now-ms", type=int, help=argparse.SUPPRESS)  # tests drive time
        if spark:
            execution(sp)
        return sp

    for op in OPERATIONS.values():
        sp = maint(op.command, _maintenance_command(op), op.summary, spark=op.placement == TASKS)
        _add_params(sp, op)
        if op.confirm:
            sp.add_argument("--yes", action="store_true", help=f"confirm: {op.title} cannot be undone")

    ap = sub.add_parser("apply", help="execute a plan saved with --dry-run --json (refused if the table changed)")
    ap.add_argument("plan", help="plan file (or - for standard input)")
    ap.add_argument("--json", action="store_true", help="machine-readable output")
    ap.add_argument("--progress", action="store_true", help="progress on stderr even with --json")
    ap.add_argument("--yes", action="store_true", help="confirm a rollback plan")
    _catalog_flags(ap)
    execution(ap)
    ap.set_defaults(fn=cmd_apply)

    sample = sub.add_parser("sample", help="build (or rebuild) a sample warehouse with a week of churn")
    sample.add_argument("warehouse", help="directory to create (replaced if it exists)")
    sample.add_argument("--rounds", type=int, default=6, help="days of churn")
    sample.add_argument("--json", action="store_true", help="machine-readable output")
    sample.set_defaults(fn=cmd_sample)
    return p


def _catalog_flags(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("-o", "--option", action="append", metavar="KEY=VALUE",
                    help="catalog option (metastore=hive|jdbc|rest, uri=…, lock.enabled=…), object-store setting "
                         "(s3.endpoint=http://host:9000) or table option (repeatable)")
    sp.add_argument("--connect-timeout", type=float, default=None, metavar="SECONDS",
                    help="how long the catalog's server and a Spark master / Connect server may take to answer "
                         "(default 10)")


def _add_params(sp: argparse.ArgumentParser, op: Operation) -> None:
    """The flags (and positional names) of a registered operation's parameters."""
    groups: dict[str, Any] = {}
    for p in op.params:
        if not p.cli:
            continue
        target: Any = sp
        if p.group:
            if p.group not in groups:
                groups[p.group] = sp.add_mutually_exclusive_group(required=p.group in op.required_groups)
            target = groups[p.group]
        help_text = argparse.SUPPRESS if p.cli_hidden else p.described
        if p.positional:
            target.add_argument(p.name, nargs="+" if p.kind == NAMES else None, help=help_text)
            continue
        kw: dict[str, Any] = {"dest": p.name, "help": help_text}
        if p.kind == BOOL:
            kw["action"] = "store_true"
        else:
            kw["metavar"] = p.metavar
            if p.kind == PARTITIONS:
                kw["action"] = "append"
            elif p.kind == INT:
                kw["type"] = int
            elif p.kind == FLOAT:
                kw["type"] = float
            elif p.kind == CHOICE:
                kw.update(choices=list(p.choices), metavar=None)
            if p.default is not None and p.kind != BOOL:
                kw["default"] = p.default
                kw["help"] = help_text if p.cli_hidden else f"{help_text} (default {p.default})"
        target.add_argument(p.cli_flag, **kw)


def _error_payload(e: BaseException) -> dict[str, Any]:
    """`{"error": {type, message, path?, option?, endpoint?}}`: a failure, in an error envelope or per table."""
    err: dict[str, Any] = {"type": type(e).__name__, "message": _one_line(e)}
    path = getattr(e, "path", None) or (getattr(e, "filename", None) if isinstance(e, OSError) else None)
    if isinstance(path, str):
        err["path"] = path
    if isinstance(e, InvalidOptionError):
        err["option"] = e.name
    endpoint = getattr(e, "endpoint", None)
    if endpoint:
        err["endpoint"] = endpoint
    return {"error": err}


def _error_document(args: argparse.Namespace, e: BaseException) -> dict[str, Any]:
    """The --json output of a failed command (paimon-ops-error/1)."""
    return envelope(ERROR, command=getattr(args, "command", None), **_error_payload(e))


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return text or type(e).__name__


def _fail(args: argparse.Namespace, e: BaseException, prefix: str = "error") -> None:
    """One line on stderr; under --json also the error as a JSON object on stdout."""
    if getattr(args, "json", False):
        print(json.dumps(_error_document(args, e), indent=2))
    print(f"paimon-ops: {prefix}: {_one_line(e)}", file=sys.stderr)


def _interrupt(signum: int, frame: Any) -> None:
    """SIGTERM behaves like Ctrl-C: the run stops, removes what it wrote and did not commit, and says so."""
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: Sequence[str] | None = None) -> int:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)
    try:
        code = _main(argv)
    except BrokenPipeError:  # the reader went away (`… --json | head`): no traceback, and none at exit either
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as a shell reports a process its pipe closed
    if stuck_start():  # an abandoned Spark start-up would keep the interpreter from exiting: leave now
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser()
        args, extra = parser.parse_known_args(argv)
        if extra:  # said by the subcommand's parser, which knows its flags (for the suggestion)
            sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
            sub.choices[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    except UsageError as e:
        if "--json" in argv:  # the command line asked for JSON: the error says so too
            print(json.dumps(envelope(ERROR, command=next((a for a in argv if not a.startswith("-")), None),
                                      **_error_payload(e)), indent=2))
        print(f"paimon-ops: error: {_one_line(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    # Warnings are part of every report (the text and --json); the log shows only errors unless -v asks for more,
    # so that a failure is exactly one line on stderr.
    logging.basicConfig(level=logging.INFO if args.verbose else logging.ERROR, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not args.verbose:  # Spark's Python client logs interrupted calls with their stack: ours is the one line
        logging.getLogger("py4j").setLevel(logging.CRITICAL + 1)
    log = logging.getLogger("paimon_ops.cli")
    try:
        with cli_words({**_COMMON_WORDS, **WORDS.get(args.command, {})}):
            code = args.fn(args)
    except CancelledError as e:
        if getattr(args, "json", False):
            print(json.dumps(_error_document(args, e), indent=2))
        print(f"paimon-ops: interrupted: {_one_line(e)}", file=sys.stderr)
        return 130
    except PaimonOpsError as e:
        if args.verbose:
            log.info("failed", exc_info=True)
        _fail(args, e)
        return 2
    except BrokenPipeError:
        return 0
    except OSError as e:  # I/O failures the engine did not name: still one line
        if args.verbose:
            log.info("failed", exc_info=True)
        _fail(args, _in_table(args, e))
        return 2
    except KeyboardInterrupt:
        print("paimon-ops: interrupted", file=sys.stderr)
        return 130
    except RecursionError as e:
        _fail(args, PaimonOpsError(f"input nested too deeply ({e})"))
        return 2
    except Exception as e:  # noqa: BLE001 - never a traceback: one line, the stack in the log with -v
        log.info("failed", exc_info=True)
        err = _in_table(args, e)
        _fail(args, err if args.verbose else PaimonOpsError(f"{err} (-v shows the stack trace)"),
              prefix="internal error")
        return 2
    return code or 0


def _in_table(args: argparse.Namespace, e: BaseException, table: str | None = None) -> BaseException:
    """An error the engine did not word itself, prefixed with the table (and, for I/O errors, the full path)."""
    where = table or getattr(args, "table", None) or getattr(args, "warehouse", None) or getattr(args, "plan", None)
    if isinstance(e, OSError) and e.filename:
        text = f"{e.strerror or e}: {e.filename}"
    else:
        text = f"{type(e).__name__}: {e}" if not isinstance(e, OSError) else str(e)
    return PaimonOpsError(f"{where}: {text}" if where else text)


if __name__ == "__main__":
    sys.exit(main())
