"""The engine passes the linter (ruff) and the type checker (mypy), configured in pyproject.toml."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True, timeout=600)


def test_ruff():
    r = _run("ruff", "check", "paimon_ops")
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy():
    r = _run("mypy", "paimon_ops")
    assert r.returncode == 0, r.stdout + r.stderr
