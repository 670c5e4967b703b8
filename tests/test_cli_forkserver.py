"""The tests' command line forked from a warm process (tests/cli_forkserver.py) is the command line: for the same
arguments and environment it gives the same exit status, stdout and stderr as a new `python -m paimon_ops.cli` in the
same working directory; a deadline raises subprocess.TimeoutExpired as subprocess.run does, and the server goes on; a
changed environment gets a server started in it; a second thread gets an interpreter of its own."""
from __future__ import annotations

import os
import subprocess
import sys
import threading

from tests import cli_forkserver
from tests.cli.conftest import REPO, cli


def _fresh(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "paimon_ops.cli", *argv], capture_output=True, text=True, cwd=REPO,
                          timeout=120)


def _same(argv: list[str]) -> None:
    forked, fresh = cli_forkserver.run(argv, 120), _fresh(*argv)
    assert forked is not None
    assert (forked.returncode, forked.stdout, forked.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr), argv


def test_the_same_outcome_as_a_new_interpreter(tmp_path):
    wh = tmp_path / "wh"
    assert cli("sample", wh, "--rounds", "2").code == 0
    for argv in (["tables", str(wh), "--json"], ["compact", str(wh), "shop.orders", "--dry-run"],
                 ["expire-tags", str(tmp_path / "none"), "db.t", "--min-age", "1 ms"],
                 ["compact", str(wh), "shop.orders", "--mode", "sideways"], ["--version"],
                 ["tables", "no-such-warehouse"]):  # (a relative path: the working directory is the same)
        _same(argv)
    server = cli_forkserver._Client._current
    assert server is not None and cli("--version").code == 0 and cli_forkserver._Client._current is server


def test_a_changed_environment_and_a_deadline(tmp_path, monkeypatch):
    before = cli_forkserver._Client._current
    monkeypatch.setenv("COLUMNS", "50")  # argparse wraps help to it
    _same(["compact", "--help"])
    server = cli_forkserver._Client._current
    assert server is not None and server is not before and server.env["COLUMNS"] == "50"
    try:
        cli_forkserver.run(["sample", str(tmp_path / "slow"), "--rounds", "4"], 0.05)
    except subprocess.TimeoutExpired:
        pass
    else:
        raise AssertionError("a command past its deadline raises TimeoutExpired")
    assert cli_forkserver._Client._current is server and server.proc.poll() is None  # the server goes on
    _same(["--version"])


def test_a_second_thread_runs_its_own_interpreter():
    client = cli_forkserver._Client.acquire()
    assert client is not None
    try:
        out: list = []
        t = threading.Thread(target=lambda: out.append(cli_forkserver.run(["--version"], 60)))
        t.start()
        t.join(60)
        assert out == [None]  # the server is busy: the caller starts an interpreter itself (tests.cli.conftest.cli)
    finally:
        client.lock.release()
    assert cli_forkserver.run(["--version"], 60) is not None
    assert os.environ.get("PAIMON_CLI_FORKSERVER", "1") != "0"
