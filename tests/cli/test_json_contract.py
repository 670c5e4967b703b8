"""The JSON contract (docs/guides/json-and-upgrading.md): every command's --json output — success, dry run and error — is
validated against the JSON Schema shipped in the package for the kind it declares (`format`), on the sample
warehouse (our writer) plus a postpone-bucket table written by pypaimon 2.1.0; the Java-written tables are validated
the same way in tests/interop/test_cli_proof.py. Every registered operation has its case here (a test says so), and
the text output of each is checked for debug dumps (`dict of 14`, Python reprs)."""
from __future__ import annotations

import datetime as dt
import json
import os
import re
import time

import pyarrow as pa
import pytest

import paimon_ops.schemas as schemas
from paimon_ops.api import OPERATIONS
from paimon_ops.cli import main
from paimon_ops.execution.plan import Plan
from tests import pypaimon_util as pu
from tests.cli.json_contract import errors, validated

DAY_MS = 86_400_000

# command -> (setup command lines, the command's arguments after the warehouse). Setup runs first, on the same copy.
CASES: dict[str, tuple[list[list[str]], list[str]]] = {
    "compact": ([], ["shop.orders", "--local"]),
    "compact-postpone": ([], ["shop.postponed", "--local"]),
    "rescale": ([], ["shop.customers", "--bucket-num", "3", "--local"]),
    "expire-snapshots": ([], ["shop.orders", "--retain-min", "1", "--retain-max", "2"]),
    # (snapshots expired with a longer changelog retention leave long-lived changelogs: the decoupled life cycle)
    "expire-changelogs": ([["expire-snapshots", "shop.orders", "--retain-min", "1", "--retain-max", "2", "-o",
                            "changelog.num-retained.max=50"]], ["shop.orders", "--retain-min", "1", "--retain-max", "2"]),
    "expire-tags": ([["create-tag", "shop.orders", "brief", "--time-retained", "1 ms"]], ["shop.orders"]),
    "expire-partitions": ([], ["logs.events", "--expiration-time", "1 d"]),
    "compact-manifests": ([], ["shop.orders"]),
    "remove-orphans": ([], ["shop.orders", "--min-age", "1 d"]),
    "create-tag": ([], ["shop.orders", "t1", "--time-retained", "7 d"]),
    "create-tag-from-timestamp": ([], ["logs.events", "t1", "--timestamp", "0"]),  # the first snapshot
    "create-tag-from-watermark": ([], ["logs.events", "t1", "--watermark", "1970-01-01T00:00:00Z"]),
    "replace-tag": ([["create-tag", "shop.orders", "t1", "--snapshot", "1"]], ["shop.orders", "t1"]),
    "delete-tag": ([["create-tag", "shop.orders", "t1"]], ["shop.orders", "t1"]),
    "rename-tag": ([["create-tag", "shop.orders", "t1"]], ["shop.orders", "t1", "t2"]),
    "auto-tag": ([], ["shop.daily_sales"]),
    "rollback": ([], ["shop.customers", "--snapshot", "2", "--yes"]),
    "mark-partition-done": ([], ["logs.events", "--partition", "dt=marked-by-the-test"]),  # (no such day: a warning)
    "remove-unexisting-files": ([lambda wh: _lose_a_data_file(wh, "shop.orders")], ["shop.orders", "--yes"]),
    "repair": ([lambda wh: _stale_latest_hint(wh, "shop.orders")], ["shop.orders"]),
    "rewrite-file-index": ([lambda wh: _index_options(wh, "logs.events", "user_id")], ["logs.events"]),
    "create-branch": ([["create-tag", "shop.orders", "t1"]], ["shop.orders", "b1", "--tag", "t1"]),
    "delete-branch": ([["create-tag", "shop.orders", "t1"], ["create-branch", "shop.orders", "b1", "--tag", "t1"]],
                      ["shop.orders", "b1"]),
    "rename-branch": ([["create-branch", "shop.orders", "b1"]], ["shop.orders", "b1", "b2"]),
    "fast-forward": ([["create-tag", "shop.orders", "t1"], ["create-branch", "shop.orders", "b1", "--tag", "t1"],
                      ["compact", "shop.orders$branch_b1", "--local"]], ["shop.orders", "b1", "--yes"]),
    "reset-consumer": ([], ["shop.customers", "reader", "--snapshot", "2"]),
    "clear-consumers": ([], ["shop.customers", "--including", "read.*"]),
}
DEBUG_DUMPS = re.compile(r"\b(dict|list|tuple|set) of \d+|\{'|\[\{|\bNone\b|\bTrue\b|\bFalse\b|task_pids")


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv, code: int = 0):
    rc, out, err = run(capsys, *argv, "--json")
    assert rc == code, (argv, out, err)
    return validated(json.loads(out))


def readable(text: str) -> None:
    """Text output for people: no debug dumps, no Python reprs."""
    bad = DEBUG_DUMPS.findall(text)
    assert not bad, f"{bad} in:\n{text}"


def _partitions(table_dir) -> list:
    """The table's partition directories as the sample built them (relative to the day it was built: never a literal
    day, which expires with the calendar)."""
    found = sorted(p for p in table_dir.iterdir() if p.is_dir() and p.name.startswith("dt="))
    assert found, f"no partition under {table_dir}"
    return found


def _lose_a_data_file(warehouse, ident: str) -> None:
    """A live data file of the table deleted by hand (a bucket lifecycle rule)."""
    from paimon_ops.table.scan import TableScanner
    from paimon_ops.table.table import FileSystemCatalog
    table = FileSystemCatalog(str(warehouse)).get_table(ident)
    os.unlink(TableScanner(table).scan_latest().files[0].path)


def _stale_latest_hint(warehouse, ident: str) -> None:
    """The LATEST hint a crashed writer left behind: an older snapshot."""
    db, name = ident.split(".")
    (warehouse / f"{db}.db" / name / "snapshot" / "LATEST").write_text("1")


def _index_options(warehouse, ident: str, column: str) -> None:
    """The file-index options set (a new schema, as ALTER TABLE SET writes it): a bitmap on `column`."""
    import dataclasses

    from paimon_ops.table.table import FileSystemCatalog
    table = FileSystemCatalog(str(warehouse)).get_table(ident)
    s = table.schema
    table.schemas.commit(dataclasses.replace(s, id=s.id + 1, options={**s.options, "file-index.bitmap.columns": column}))


def _a_partition(table_dir):
    return _partitions(table_dir)[0]


@pytest.fixture
def warehouse(sample):
    """The sample warehouse, plus a postpone-bucket table pypaimon 2.1.0 wrote and an orphan file two days old."""
    schema = pa.schema([("pt", pa.string()), ("id", pa.int32()), ("v", pa.string())])
    t = pu.create_table(str(sample), "shop.postponed", schema, ["pt"], ["pt", "id"], {"bucket": "-2"})
    pu.write(t, {"pt": ["a"] * 5 + ["b"] * 5, "id": list(range(10)), "v": [f"v{i}" for i in range(10)]})
    orphan = _a_partition(sample / "shop.db" / "orders") / "bucket-0" / "data-orphan-0.parquet"
    orphan.write_bytes(b"not referenced")
    old = time.time() - 2 * 86_400
    os.utime(orphan, (old, old))
    consumers = sample / "shop.db" / "customers" / "consumer"
    consumers.mkdir()
    (consumers / "consumer-reader").write_text('{"nextSnapshot":3}')  # a streaming reader's progress
    return sample


def test_every_registered_operation_has_a_case():
    assert set(CASES) == {op.command for op in OPERATIONS.values() if op.command}


@pytest.mark.parametrize("command", sorted(CASES))
def test_dry_run_run_and_error_follow_the_schemas(warehouse, capsys, command):
    setup, args = CASES[command]
    for line in setup:
        if callable(line):  # (a change no command makes: a file lost, a hint left behind)
            line(warehouse)
            continue
        assert run(capsys, line[0], warehouse, *line[1:])[0] == 0
    if command == "expire-tags":
        time.sleep(0.01)  # the tag's 1 ms retention is over
    rc, text, err = run(capsys, command, warehouse, *args, "--dry-run")
    assert rc == 0, err
    readable(text)
    plan = run_json(capsys, command, warehouse, *args, "--dry-run")
    assert schemas.kind_of(plan) == schemas.PLAN and plan["version"]
    assert plan["steps"], f"{command}: the case must do something"
    Plan.from_dict(plan)  # what a dry run prints loads as a plan
    old = {k: v for k, v in plan.items() if k != "version"}  # a plan saved before `version` was added still loads
    assert type(Plan.from_dict(old)) is type(Plan.from_dict(plan))

    report = run_json(capsys, command, warehouse, *args)
    assert schemas.kind_of(report) == schemas.REPORT and report["dry_run"] is False
    assert report["total_deleted"] or report["written"] or report["snapshot_id"], report
    err_doc = run_json(capsys, command, warehouse, "shop.nope", *args[1:], code=2)
    assert err_doc["command"] == command and err_doc["error"]["type"] == "TableNotFoundError"
    assert "shop.nope" in err_doc["error"]["message"]


def test_text_report_leads_with_what_was_written_and_replaced(warehouse, capsys):
    rc, out, err = run(capsys, "compact", warehouse, "shop.orders", "--local")
    assert rc == 0, err
    readable(out)
    lines = out.splitlines()
    assert lines[1].split() == ["kind", "wrote", "size", "replaced", "size"]  # the effects first, as a table
    assert lines[2].split()[:2] == ["data", lines[2].split()[1]] and "KiB" in lines[2]
    assert "replaced (the old files stay on disk until snapshot expiry)" in lines[3]
    assert not any(ln.lstrip().startswith(("units", "dv ratios", "settings")) for ln in lines)  # JSON only
    rc, out, _ = run(capsys, "expire-snapshots", warehouse, "shop.customers", "--retain-min", "1", "--retain-max", "1",
                     "--dry-run", "--summary")
    readable(out)
    header, *rows = [ln for ln in out.splitlines()[1:] if ln.startswith("  ") and not ln.startswith("   ")][:8]
    assert header.split() == ["kind", "would", "write", "size", "would", "delete", "size"]
    assert any(r.split()[0] == "total" and r.split()[-1] in ("B", "KiB", "MiB") for r in rows), out  # byte totals


def test_list_commands_follow_the_schema(warehouse, capsys):
    for argv in (["tables"], ["snapshots", "shop.orders"], ["tags", "shop.orders"], ["files", "shop.orders"],
                 ["files", "logs.events"], ["files", "shop.orders", "--check"], ["options", "shop.orders"],
                 ["branches", "shop.orders"],
                 ["consumers", "shop.customers"]):
        doc = run_json(capsys, argv[0], warehouse, *argv[1:])
        assert doc["format"] == "paimon-ops-list/1" and doc["command"] == argv[0]
        readable(run(capsys, argv[0], warehouse, *argv[1:])[1])
    files = run_json(capsys, "files", warehouse, "shop.orders")["rows"]
    days = [int(p.name.removeprefix("dt=")) for p in _partitions(warehouse / "shop.db" / "orders")]
    dates = {json.dumps({"dt": (dt.date(1970, 1, 1) + dt.timedelta(days=d)).isoformat()}) for d in days}
    assert {json.dumps(f["partition"]) for f in files} == dates  # DATEs, not their day numbers
    snaps = run_json(capsys, "snapshots", warehouse, "shop.orders")["rows"]
    assert all(s["time"].endswith("Z") for s in snaps)
    run(capsys, "create-tag", warehouse, "shop.orders", "kept", "--time-retained", "36 h")
    (tag,) = run_json(capsys, "tags", warehouse, "shop.orders")["rows"]
    assert tag["time_retained_s"] == 129_600 and tag["create_time"].endswith("Z") and tag["snapshot_time"]


def test_patterns_apply_and_usage_errors_follow_the_schemas(warehouse, capsys, tmp_path):
    env = run_json(capsys, "expire-snapshots", warehouse, "shop.*", "--retain-min", "1", "--retain-max", "2",
                   "--dry-run")
    assert env["format"] == "paimon-ops-tables/1" and env["version"]
    failed = run_json(capsys, "compact", warehouse, "shop.*", "--mode", "small-files", "--local", code=2)
    assert failed["failed"]  # the tables a small-files compaction refuses are errors in the envelope, still valid
    plan = run_json(capsys, "create-tag", warehouse, "shop.orders", "t9", "--dry-run")
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    report = run_json(capsys, "apply", path)
    assert report["operation"] == "create_tag"
    again = run_json(capsys, "apply", path, code=2)
    assert again["command"] == "apply" and again["error"]["type"] == "PlanAlreadyAppliedError"
    usage = run_json(capsys, "compact", warehouse, "shop.orders", "--bogus", code=2)
    assert usage["error"]["type"] == "UsageError" and "--bogus" in usage["error"]["message"]


def test_the_schemas_refuse_what_the_contract_rules_out():
    base = validated({"format": "paimon-ops-list/1", "version": "1", "command": "snapshots", "warehouse": "w",
                      "table": "d.t", "rows": [{"id": 1, "kind": "APPEND", "schema_id": 0,
                                                "time": "2026-11-25T09:01:00.000Z", "total_records": 1,
                                                "delta_records": 1, "watermark": None, "commit_user": "u"}]})
    row = base["rows"][0]
    for bad in ("2026-11-25 09:01:00 UTC", "2026-11-25T09:01:00", 1795424460000):  # no zone / not ISO
        assert errors({**base, "rows": [{**row, "time": bad}]})
    files = {"format": "paimon-ops-list/1", "version": "1", "command": "files", "warehouse": "w", "table": "d.t",
             "snapshot_id": 1, "rows": [{"partition": {"dt": "2026-11-24"}, "bucket": 0, "level": 0, "file": "f",
                                         "rows": 1, "size": 1, "deleted_rows": 0, "delete_row_count": 0,
                                         "min_seq": 0, "max_seq": 0, "schema_id": 0}]}
    assert not errors(files)
    assert errors({**files, "rows": [{**files["rows"][0], "partition": "dt=20781"}]})
    report = {"format": "paimon-ops-report/1", "version": "1", "operation": "compact", "table": "d.t",
              "dry_run": False, "duration_s": 0.5, "deleted": {}, "deleted_bytes": {}, "written": {},
              "written_bytes": {}, "snapshot_id": None, "details": {"expiration_time_s": 3600}, "files": [],
              "warnings": [], "runner": None, "deleted_as": "replaced", "total_deleted": 0, "total_deleted_bytes": 0}
    assert not errors(report)
    assert errors({**report, "deleted_as": "replaced (the old files stay on disk until snapshot expiry)"})
    assert errors({**report, "details": {"expiration_time_s": "1 h"}})
    assert errors({**report, "details": {"now": "2026-11-25T09:01:00"}})
    assert errors({**report, "details": {"units": [{"partition": "dt=20781"}]}})
    assert errors({"format": "paimon-ops-error/1", "version": "1", "command": "x", "error": {"message": "m"}})
