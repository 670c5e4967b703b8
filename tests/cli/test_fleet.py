"""The command line for fleets of tables, through `python -m paimon_ops.cli` on copies of the sample warehouse:
table patterns with --exclude (a per-table summary, one JSON envelope, exit status 2 naming the failed table while
the others still run), --summary / --limit for dry runs, a second `apply` of an applied plan, and a directory that
is not a warehouse."""
from __future__ import annotations

import subprocess
import sys

from tests.cli.conftest import REPO, cli
from tests.safety.util import tree_digest

RETAIN = ("--retain-min", "1", "--retain-max", "2")


def _snapshots(wh, table: str) -> int:
    db, name = table.split(".")
    return len(list((wh / f"{db}.db" / name / "snapshot").glob("snapshot-*")))


def test_table_patterns_run_each_table_and_name_the_failures(sample):
    before = tree_digest(str(sample))
    dry = cli("expire-snapshots", sample, "shop.*", *RETAIN, "--exclude", "shop.daily_sales", "--dry-run", "--json")
    assert dry.code == 0, dry.err
    env = dry.json
    assert env["format"] == "paimon-ops-tables/1" and env["command"] == "expire-snapshots"
    assert [t["table"] for t in env["tables"]] == ["shop.customers", "shop.orders"] and env["failed"] == []
    assert all(t["status"] == "ok" and t["result"]["format"] == "paimon-ops-plan/1" for t in env["tables"])
    text = cli("expire-snapshots", sample, "shop.ord*", *RETAIN, "--dry-run")
    assert text.code == 0 and "expire-snapshots on 1 table(s) matching 'shop.ord*':" in text.out
    assert tree_digest(str(sample)) == before  # dry runs over a pattern change nothing

    # one broken table: reported and named, exit 2, and every other table is still maintained
    (sample / "shop.db" / "customers" / "snapshot" / "snapshot-4").write_text("garbage")
    before_customers = _snapshots(sample, "shop.customers")
    r = cli("expire-snapshots", sample, "*.*", *RETAIN, "--local")
    assert r.code == 2 and r.err.strip().splitlines()[-1].endswith("failed on 1 of 4 table(s): shop.customers")
    summary = r.out[r.out.index("expire-snapshots on 4 table(s) matching '*.*':"):].splitlines()
    assert len(summary) == 5 and "shop.customers    FAILED: " in summary[2] and "snapshot-4" in summary[2]
    assert all(" ok: " in line for line in summary[1:] if "customers" not in line)
    for table in ("logs.events", "shop.daily_sales", "shop.orders"):
        assert _snapshots(sample, table) <= 2, table
    assert _snapshots(sample, "shop.customers") == before_customers
    j = cli("expire-snapshots", sample, "*.*", *RETAIN, "--exclude", "logs.*", "--local", "--json")
    assert j.code == 2 and j.json["failed"] == ["shop.customers"]
    failed = next(t for t in j.json["tables"] if t["status"] == "failed")
    assert failed["table"] == "shop.customers" and "snapshot-4" in failed["error"]["message"]

    # patterns that select nothing, and --exclude without a pattern, are errors naming them
    r = cli("compact", sample, "nope.*")
    assert r.code == 2 and "'nope.*' matches no table" in r.err and "shop.orders" in r.err
    r = cli("compact", sample, "shop.*", "--exclude", "shop.*")
    assert r.code == 2 and "--exclude shop.* leaves none" in r.err
    r = cli("compact", sample, "shop.orders", "--exclude", "shop.x")
    assert r.code == 2 and "--exclude needs a table pattern" in r.err


def test_dry_run_summary_and_limit(sample):
    plan = cli("expire-snapshots", sample, "shop.orders", *RETAIN, "--dry-run", "--json").json
    paths = [f["path"] for s in plan["steps"] for f in s["files"] + s.get("creates", [])]
    assert len(paths) > 5
    limited = cli("expire-snapshots", sample, "shop.orders", *RETAIN, "--dry-run", "--limit", "3")
    assert limited.code == 0
    assert sum(p in limited.out for p in paths) == 3
    assert f"… and {len(paths) - 3} more file(s)" in limited.out
    summary = cli("expire-snapshots", sample, "shop.orders", *RETAIN, "--dry-run", "--summary")
    assert summary.code == 0 and not any(p in summary.out for p in paths)
    data = [f for s in plan["steps"] for f in s["files"] if f["kind"] == "data"]
    assert any(line.split()[:3] == ["data", str(len(data)), "file(s),"] for line in summary.out.splitlines())
    assert "total: " in summary.out and "KiB" in summary.out
    assert cli("expire-snapshots", sample, "shop.orders", "--summary").code == 2  # shortens a dry run only
    r = cli("expire-snapshots", sample, "shop.orders", "--dry-run", "--limit", "-1")
    assert r.code == 2 and "--limit must be at least 0" in r.err


def test_second_apply_says_already_applied_and_non_warehouses_are_errors(sample, tmp_path):
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(cli("expire-snapshots", sample, "shop.orders", *RETAIN, "--dry-run", "--json").out)
    assert cli("apply", plan_file, "--local").code == 0
    again = cli("apply", plan_file, "--local")
    assert again.code == 2 and again.err.count("\n") == 1 and "was already applied to shop.orders" in again.err
    j = cli("apply", plan_file, "--local", "--json")
    assert j.code == 2 and j.json["error"]["type"] == "PlanAlreadyAppliedError"
    assert "file(s) it deletes are gone" in j.json["error"]["message"]
    tag_plan = tmp_path / "tag.json"
    tag_plan.write_text(cli("create-tag", sample, "shop.orders", "t1", "--dry-run", "--json").out)
    assert cli("apply", tag_plan).code == 0
    again = cli("apply", tag_plan)
    assert again.code == 2 and "was already applied to shop.orders: the 1 file(s) it writes are there" in again.err
    # a plan refused for another reason stays a stale plan (the same tag made otherwise: other contents)
    tag_plan.write_text(cli("create-tag", sample, "shop.orders", "t2", "--dry-run", "--json").out)
    assert cli("create-tag", sample, "shop.orders", "t2", "--time-retained", "1 d").code == 0
    stale = cli("apply", tag_plan, "--json")
    assert stale.code == 2 and stale.json["error"]["type"] == "StalePlanError"

    db_dir = sample / "shop.db"
    for argv in (("tables", db_dir), ("snapshots", db_dir, "shop.orders"), ("compact", db_dir, "shop.orders")):
        r = cli(*argv)
        assert r.code == 2 and f"{db_dir} is not a Paimon warehouse" in r.err and "database directory" in r.err
    (tmp_path / "empty").mkdir()
    r = cli("tables", tmp_path / "empty")
    assert r.code == 2 and f"{tmp_path / 'empty'} is not a Paimon warehouse" in r.err and "(none)" not in r.out


def test_a_reader_closing_the_pipe_gets_no_traceback(sample):
    """`paimon-ops … --json | head -1`: the reader closes the pipe before the output is written."""
    for args in (["snapshots", sample, "shop.orders", "--json"], ["delete-tag", sample, "shop.orders", "nosuch", "--json"]):
        p = subprocess.Popen([sys.executable, "-m", "paimon_ops.cli", *map(str, args)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, cwd=REPO)
        p.stdout.close()  # long before the interpreter has started
        err = p.stderr.read().decode()
        p.wait(timeout=60)
        assert "Traceback" not in err and "BrokenPipe" not in err, err
