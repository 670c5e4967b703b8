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
    started = time.time()
    p = subprocess.run([sys.executable, "-m", "paimon_ops.cli", *map(str, args)], capture_output=True, text=True,
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
