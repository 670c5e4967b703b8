"""The command line for fleets of tables, through `python -m paimon_ops.cli` on copies of the sample warehouse:
table patterns with --exclude (a per-table summary, one JSON envelope, exit status 2 naming the failed table while
the others still run), tables in worker processes (`--parallel`: the same outcomes in the same order; an interrupt
or a killed worker stops cleanly, judged by Java Paimon 0.9), --summary / --limit for dry runs, a second `apply` of
an applied plan, and a directory that is not a warehouse."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from tests.cli.conftest import REPO, cli
from tests.net import patient
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


# ---------------------------------------------------------------------------------------------- tables in parallel
def _fleet(sample, copies: int = 6) -> None:
    """More tables: copies of shop.orders as fleet.t0… (a table carries no name inside: a copy is a table of its own)."""
    for i in range(copies):
        shutil.copytree(sample / "shop.db" / "orders", sample / "fleet.db" / f"t{i}", symlinks=True)


def _relative(digest: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in digest.items() if not k.split("/")[-1].startswith("journal-")}


def test_tables_in_worker_processes_give_the_same_outcomes_in_order(sample, tmp_path):
    """`--parallel 3` against `--parallel 1` on two copies: the same envelope (table order, statuses, errors, the
    files each table deleted), byte for byte as json.dumps writes it, the same files left; text output is a line a
    table (the whole output of each table with --verbose)."""
    _fleet(sample)
    (sample / "shop.db" / "customers" / "snapshot" / "snapshot-4").write_text("garbage")
    other = tmp_path / "other"
    shutil.copytree(sample, other, symlinks=True)
    runs = {}
    for wh, n in ((sample, "1"), (other, "3")):
        r = cli("expire-snapshots", wh, "*.*", *RETAIN, "--parallel", n, "--json")
        assert r.code == 2 and r.err.strip().splitlines()[-1].endswith("failed on 1 of 10 table(s): shop.customers")
        assert r.out == json.dumps(json.loads(r.out), indent=2) + "\n"
        runs[n] = r.json
    assert _relative(tree_digest(str(sample))) == _relative(tree_digest(str(other)))

    def outcome(env, wh):
        return [(t["table"], t["status"], t.get("error", {}).get("type"),
                 sorted(os.path.relpath(f["path"], wh) for f in t.get("result", {}).get("files", ())))
                for t in env["tables"]]
    assert outcome(runs["1"], sample) == outcome(runs["3"], other)
    assert [t["table"] for t in runs["3"]["tables"]] == sorted(t["table"] for t in runs["3"]["tables"])
    assert runs["3"]["failed"] == ["shop.customers"] and sum(bool(t[3]) for t in outcome(runs["3"], other)) >= 7

    text = cli("expire-snapshots", other, "*.*", *RETAIN, "--parallel", "2", "--dry-run")
    lines = text.out.splitlines()
    assert lines[0] == "expire-snapshots on 10 table(s) matching '*.*':" and len(lines) == 11
    assert [ln.split()[0] for ln in lines[1:]] == sorted(ln.split()[0] for ln in lines[1:])
    assert "FAILED: " in lines[1 + [ln.split()[0] for ln in lines[1:]].index("shop.customers")]
    verbose = cli("expire-snapshots", other, "fleet.*", *RETAIN, "--parallel", "2", "--dry-run", "--verbose")
    assert verbose.code == 0 and verbose.out.count("expire_snapshots on fleet.t") == 6
    assert verbose.out.index("expire_snapshots on fleet.t5") < verbose.out.index("expire-snapshots on 6 table(s)")

    r = cli("expire-snapshots", other, "*.*", "--parallel", "0")
    assert r.code == 2 and "--parallel must be at least 1, got 0" in r.err
    r = cli("expire-snapshots", other, "*.*", "--parallel", "2", "--spark-master", "local[1]")
    assert r.code == 2 and "--parallel 2 runs tables in worker processes" in r.err and r.err.count("\n") == 1


# A paimon-ops command on a slow disk (every file event takes PAIMON_TEST_EVENT_S), so that a fleet run is still in
# progress when it is interrupted; the worker processes are forked from it and inherit the slow disk.
SLOW_MAIN = """
import os, sys, time
from paimon_ops.table.fileio import FileIO
original = FileIO.resolve
pause = float(os.environ["PAIMON_TEST_EVENT_S"])
def resolve(location, fault_hook=None, options=None):
    return original(location, fault_hook or (lambda op, path: time.sleep(pause)), options)
FileIO.resolve = staticmethod(resolve)
from paimon_ops.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _children(pid: int) -> set[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return {int(x) for x in f.read().split()}
    except OSError:
        return set()


def _slow_fleet(wh, *argv: str, event_s: float = 0.05) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", SLOW_MAIN, *argv[:1], str(wh), *argv[1:]], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "PAIMON_TEST_EVENT_S": str(event_s)})


def _lines_until(p: subprocess.Popen, n: int) -> list[str]:
    """stdout lines until `n` tables have a summary line (the header first)."""
    got: list[str] = []
    deadline = time.time() + patient(120)
    while len(got) < n + 1 and time.time() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        got.append(line)
    return got


@pytest.mark.java
@pytest.mark.parametrize("how", ["SIGTERM", "Ctrl-C"])
def test_an_interrupted_fleet_run_stops_every_table_cleanly(sample, tmp_path, how):
    """SIGTERM to the command, or Ctrl-C (SIGINT to the terminal's whole process group): the tables in progress stop
    as a run on that table alone stops, no further table starts, exit 130 with one line; no worker is left; Java
    finds every file of every listed snapshot and tag; the same command again finishes, converging to what an
    uninterrupted run leaves."""
    from tests.safety.java_proof import java_views
    _fleet(sample)
    clean = tmp_path / "clean"
    shutil.copytree(sample, clean, symlinks=True)
    argv = ("expire-snapshots", "*.*", *RETAIN, "--parallel", "2")
    p = _slow_fleet(sample, *argv)
    head = _lines_until(p, 2)
    workers = _children(p.pid)
    assert len(head) == 3 and len(workers) == 2, (head, p.stderr.read() if p.poll() is not None else "")
    if how == "SIGTERM":
        p.send_signal(signal.SIGTERM)
    else:
        os.killpg(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=patient(60))
    assert p.returncode == 130, err
    lines = [ln for ln in err.splitlines() if ln.startswith("paimon-ops:") or "Traceback" in ln]
    assert len(lines) == 1 and lines[0].startswith("paimon-ops: interrupted: expire-snapshots on 10 table(s): "), err
    summary = (("".join(head) + out).splitlines())[1:]
    assert len(summary) == 10
    stopped = [ln for ln in summary if "INTERRUPTED: " in ln]
    assert stopped and all(" ok: " in ln for ln in summary[:2])
    deadline = time.time() + patient(30)
    while any(os.path.exists(f"/proc/{w}") and _zombie_or_alive(w) for w in workers) and time.time() < deadline:
        time.sleep(0.05)
    assert not any(_zombie_or_alive(w) for w in workers), "a worker process outlived the command"
    tables = sorted(sample.glob("*.db/*"))
    assert all(v["missing"] == [] for v in java_views(tables)), "an interrupted table left a listed file missing"
    again = cli(argv[0], sample, *argv[1:])
    assert again.code == 0, again.err
    assert cli(argv[0], clean, *argv[1:]).code == 0
    assert _relative(tree_digest(str(sample))) == _relative(tree_digest(str(clean)))
    assert not list(sample.glob("*.db/*/.paimon-ops/journal-*"))


def _zombie_or_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.java
def test_a_killed_worker_fails_only_its_table(sample, tmp_path):
    """A worker process killed with SIGKILL (the OOM killer, say) mid-table: that table is reported failed naming the
    signal, the others are done, exit 2; Java finds nothing listed missing, and a rerun converges."""
    from tests.safety.java_proof import java_views
    _fleet(sample)
    clean = tmp_path / "clean"
    shutil.copytree(sample, clean, symlinks=True)
    argv = ("expire-snapshots", "*.*", *RETAIN, "--parallel", "2", "--json")
    p = _slow_fleet(sample, *argv)
    deadline = time.time() + patient(60)
    while not list(sample.glob("*.db/*/.paimon-ops/journal-*")) and p.poll() is None and time.time() < deadline:
        time.sleep(0.01)  # until a table is mid-way (its journal exists)
    victim = min(_children(p.pid))
    os.kill(victim, signal.SIGKILL)
    out, err = p.communicate(timeout=patient(120))
    assert p.returncode == 2, err
    env = json.loads(out)
    lost = [t for t in env["tables"] if t["status"] == "failed" and "worker process" in t["error"]["message"]]
    assert len(lost) == 1 and "killed by signal 9" in lost[0]["error"]["message"], env["failed"]
    assert env["failed"] == [lost[0]["table"]] and sum(t["status"] == "ok" for t in env["tables"]) == 9
    assert all(v["missing"] == [] for v in java_views(sorted(sample.glob("*.db/*"))))
    assert cli(argv[0], sample, *argv[1:-1]).code == 0
    assert cli(argv[0], clean, *argv[1:-1]).code == 0
    assert _relative(tree_digest(str(sample))) == _relative(tree_digest(str(clean)))
