"""Cancelling leaves nothing behind. Ctrl-C (SIGINT) or SIGTERM during a compaction stops the
queued tasks at once and the running ones at their next batch, removes every file the run wrote, commits nothing,
and says so in one line (exit 130) within seconds — the table's files are exactly as before. A commit an S3 store
refuses (no conditional put) leaves neither its data files nor its manifests. (The Dagster side — terminating a
real run — is tests/safety/test_dagster_terminate.py.)"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from paimon_ops.table.table import FileStoreTable
from tests.cli.conftest import REPO
from tests.objectstore.conftest import bucket, s3_server  # noqa: F401 - fixtures
from tests.safety.util import slow_compaction_table, tree_digest


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    wh = tmp_path_factory.mktemp("cancel") / "wh"
    wh.mkdir()
    slow_compaction_table(str(wh))
    return wh


def _written_by_a_run(t: Path, before: set[str]) -> bool:
    return any(p.name.startswith("data-") and str(p) not in before for p in t.glob("bucket-*/*"))


@pytest.mark.parametrize("sig,where", [
    pytest.param(signal.SIGINT, "--local", id="SIGINT"), pytest.param(signal.SIGTERM, "--local", id="SIGTERM"),
    pytest.param(signal.SIGINT, "local[1]", id="SIGINT-on-Spark", marks=pytest.mark.spark),  # the CLI's Spark driver
])
def test_interrupting_a_compaction_cleans_up(big, tmp_path, sig, where):
    """In-process and on Spark (the job is cancelled and waited for; what its tasks wrote is removed)."""
    import shutil
    wh = tmp_path / "wh"
    shutil.copytree(big, wh)
    t = wh / "db.db" / "t"
    before_files = {str(p) for p in t.rglob("*")}
    before = tree_digest(str(wh))
    snapshots = FileStoreTable(str(t)).snapshots.list_ids()
    runner = ["--local"] if where == "--local" else ["--spark-master", where]
    p = subprocess.Popen([sys.executable, "-m", "paimon_ops.cli", "compact", str(wh), "db.t", *runner],
                         cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not _written_by_a_run(t, before_files) and p.poll() is None and time.time() < deadline:
        time.sleep(0.01)  # until the first task has written a file: tasks run, others are queued
    assert p.poll() is None, "the compaction finished before it could be interrupted"
    sent = time.time()
    p.send_signal(sig)
    out, err = p.communicate(timeout=60)
    took = time.time() - sent
    assert p.returncode == 130, err
    lines = [ln for ln in err.splitlines() if ln.startswith("paimon-ops:") or "Traceback" in ln]  # (Spark's banner)
    assert len(lines) == 1 and lines[0].startswith("paimon-ops: interrupted: compaction of db.t interrupted"), err
    assert "removed and nothing was committed" in lines[0] and "Traceback" not in err
    assert took < 15, f"stopping took {took:.1f} s"
    assert FileStoreTable(str(t)).snapshots.list_ids() == snapshots  # nothing committed
    after = tree_digest(str(wh))
    if where != "--local":
        # Spark: a cancelled task's Python worker stops at its next batch; the run's journal stays (abandoned) in
        # case one still closes a file after the driver's sweeps, and the next run of the table finishes it
        time.sleep(2)
        after = tree_digest(str(wh))
        assert {k for k in set(after) - set(before) if "/.paimon-ops/journal-" not in k} == set(), after.keys()
        r = subprocess.run([sys.executable, "-m", "paimon_ops.cli", "remove-orphans", str(wh), "db.t"], cwd=REPO,
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        after = tree_digest(str(wh))
    assert after == before  # every file it wrote is gone, nothing committed, no journal


def test_a_refused_s3_commit_leaves_nothing(s3_server, bucket, tmp_path):  # noqa: F811 - the fixtures
    """A store without conditional put (`s3.conditional-put=false`): the compaction's commit is refused, and the data
    files its tasks wrote and the manifests the commit wrote are removed again."""
    from tests.lifecycle.helpers import Sim, new_table
    local = tmp_path / "local"
    sim = Sim(new_table(str(local), kind="pk"))
    for i in range(3):
        sim.write([("a", i, f"v{i}"), ("b", i, f"w{i}")])
    s3_server.upload(local, bucket, "wh")
    keys = set(s3_server.keys(bucket))
    env = {**os.environ, **s3_server.env}
    r = subprocess.run([sys.executable, "-m", "paimon_ops.cli", "compact", f"s3://{bucket}/wh", "db.t", "--local",
                        "-o", "s3.conditional-put=false", "--json"], cwd=REPO, env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "conditional" in r.stderr, r.stderr
    assert set(s3_server.keys(bucket)) == keys  # no data file, manifest, snapshot or journal left
