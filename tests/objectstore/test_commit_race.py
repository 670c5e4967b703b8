"""Two processes committing to the same table on the S3 server at once, many rounds (in lockstep, so each round they
race for the same snapshot id): every commit wins a distinct
snapshot id (conditional put: the loser of a round retries with the next id), no snapshot file is overwritten (each
one names the committer that won it), ids are contiguous and every committed row is read back (by pypaimon, from
the downloaded warehouse)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from paimon_ops.table.table import FileSystemCatalog
from paimon_ops.table.writer import create_table
from tests import pypaimon_util as pu

ROUNDS = 15
REPO = Path(__file__).resolve().parents[2]

WRITER = r"""
import json, os, sys, time
from paimon_ops.table.table import FileSystemCatalog
from paimon_ops.table.writer import TableWriter
import pyarrow as pa
name, start_file, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
table = FileSystemCatalog(os.environ["WH"]).get_table("db.t")
while not os.path.exists(start_file):
    time.sleep(0.005)
won = []
other = "p2" if name == "p1" else "p1"
for r in range(rounds):
    w = TableWriter(table.refresh(), commit_user=f"{name}-{r}")
    w.write(pa.table({"who": [name] * 3, "round": [r] * 3, "i": [0, 1, 2]}))
    # lockstep: both commit each round at the same moment, so they race for the same snapshot id
    open(f"{start_file}-{r}-{name}", "w").close()
    while not os.path.exists(f"{start_file}-{r}-{other}"):
        time.sleep(0.001)
    s = w.commit()
    won.append([s.id, s.commit_user])
print(json.dumps(won))
"""


def test_two_processes_commit_concurrently_without_losing_a_snapshot(s3_server, bucket, tmp_path, monkeypatch,
                                                                     s3_proxy):
    for k, v in s3_server.env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_proxy.endpoint)  # record what the committers send and get
    wh = f"s3://{bucket}/wh"
    create_table(wh, "db.t", [("who", "STRING"), ("round", "INT"), ("i", "INT")], options={"bucket": "-1"})
    start = tmp_path / "go"
    env = {**os.environ, "WH": wh, "PYTHONPATH": str(REPO)}
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, name, str(start), str(ROUNDS)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
             for name in ("p1", "p2")]
    time.sleep(1.0)  # both imported and waiting
    start.write_text("go")
    won = {}
    for name, p in zip(("p1", "p2"), procs):
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0, err[-3000:]
        won[name] = json.loads(out)
    ids = [sid for w in won.values() for sid, _ in w]
    assert sorted(ids) == list(range(1, 2 * ROUNDS + 1))  # distinct, contiguous: nothing lost, nothing shared
    table = FileSystemCatalog(wh).get_table("db.t")
    assert table.snapshots.list_ids() == list(range(1, 2 * ROUNDS + 1))
    for w in won.values():
        for sid, user in w:
            assert table.snapshots.snapshot(sid).commit_user == user  # the file is the winner's, not overwritten
    # they really raced: some conditional snapshot PUTs were refused (412) and retried with the next id
    snapshot_puts = [r for r in s3_proxy.requests if r.method == "PUT" and "/snapshot/snapshot-" in r.path]
    assert all(r.headers.get("if-none-match") == "*" for r in snapshot_puts)
    assert sum(r.status == 412 for r in snapshot_puts) >= 1
    assert sum(r.status == 200 for r in snapshot_puts) == 2 * ROUNDS
    out = tmp_path / "down"
    s3_server.download(bucket, "wh", out)
    rows = pu.sorted_rows(pu.read(str(out), "db.t"))
    assert len(rows) == 2 * ROUNDS * 3
    assert {(r["who"], r["round"], r["i"]) for r in rows} ==\
        {(n, r, i) for n in ("p1", "p2") for r in range(ROUNDS) for i in range(3)}
