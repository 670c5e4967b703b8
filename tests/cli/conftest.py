"""The command line as users run it: `python -m paimon_ops.cli` in a subprocess, on copies of one sample
warehouse built by `paimon-ops sample` (our own writer; no Java needed)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import cli_forkserver

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Run:
    code: int
    out: str
    err: str
    seconds: float

    @property
    def json(self):
        """The --json output, validated against the schema of the kind it declares (tests/cli/json_contract.py)."""
        from tests.cli.json_contract import validated
        return validated(json.loads(self.out))


def cli(*args: str, timeout: float = 120, env: dict | None = None) -> Run:
    """`python -m paimon_ops.cli *args` in a process of its own; without `env`, a copy forked from a process that
    has already imported the command line (tests/cli_forkserver.py: the same command, without 0.65 CPU-s of
    imports each time)."""
    started = time.time()
    argv = list(map(str, args))
    p = None if env else cli_forkserver.run(argv, timeout)
    if p is None:
        p = subprocess.run([sys.executable, "-m", "paimon_ops.cli", *argv], capture_output=True, text=True,
                           timeout=timeout, cwd=REPO, env={**os.environ, **(env or {})})
    return Run(p.returncode, p.stdout, p.stderr, time.time() - started)


@pytest.fixture(scope="session")
def sample_src(tmp_path_factory) -> Path:
    wh = tmp_path_factory.mktemp("cli-sample") / "wh"
    r = cli("sample", wh, "--rounds", "4")
    assert r.code == 0, r.err
    return wh


@pytest.fixture
def sample(sample_src, tmp_path) -> Path:
    dst = tmp_path / "wh"
    shutil.copytree(sample_src, dst, symlinks=True)
    return dst
