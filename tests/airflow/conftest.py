"""A real Airflow 3 for the provider's tests, in its own virtualenv (`.venv-airflow`, made by `./dev.sh airflow-env`:
Airflow cannot share `.venv` with pypaimon 2.1.0). Tests drive it through subprocesses — `airflow db migrate`,
`airflow dags test`, a scheduler / dag-processor / API server / triggerer, `airflow backfill create` — in a temporary
AIRFLOW_HOME on SQLite; Java Paimon 0.9 (tests/interop) writes tables before and reads them after."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests import lanes
from tests.conftest import REPO

VENV = REPO / ".venv-airflow"
EXAMPLE_DAGS = REPO / "paimon_ops" / "airflow" / "example_dags"
TEST_DAGS = Path(__file__).resolve().parent / "dags"


@pytest.fixture(scope="session")
def airflow_bin() -> Path:
    """The Airflow env's bin/ (created or updated on first need; a failure fails the tests, never skips them)."""
    lanes.require("airflow")
    proc = subprocess.run(["bash", str(REPO / "dev.sh"), "airflow-env"], cwd=REPO, capture_output=True, text=True,
                          timeout=1200)
    if proc.returncode != 0 or not (VENV / "bin" / "airflow").exists():
        pytest.fail(f"./dev.sh airflow-env failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return VENV / "bin"


@dataclass
class AirflowHome:
    """One AIRFLOW_HOME (SQLite) with a dags folder and a `paimon_default` connection to `warehouse`."""

    bin: Path
    home: Path
    dags: Path
    warehouse: str
    extra_env: dict[str, str] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PYTHONPATH", "VIRTUAL_ENV"))}
        env.update({
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(self.dags),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
            # SQLite shared by four processes: wait for a lock (30 s) rather than failing at once (default 5 s)
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{self.home / 'airflow.db'}?timeout=120",
            "AIRFLOW_CONN_PAIMON_DEFAULT": json.dumps({"conn_type": "paimon", "host": self.warehouse,
                                                      "extra": {"placement": "local"}}),
            "PATH": f"{self.bin}:{env.get('PATH', '')}",
            "PYTHONPATH": str(REPO),  # the test DAGs import tests.* helpers
        })
        env.update(self.extra_env)
        return env

    def run(self, *args: str, timeout: float = 180, check: bool = True) -> subprocess.CompletedProcess:
        for attempt in range(3):
            proc = subprocess.run([str(self.bin / "airflow"), *args], cwd=self.home, env=self.env(),
                                  capture_output=True, text=True, timeout=timeout)
            # SQLite has one writer at a time: with a scheduler, a DAG processor and a triggerer writing on a loaded
            # 2-core machine, a CLI write can wait past the busy timeout; its transaction was rolled back, so retry
            if proc.returncode == 0 or "database is locked" not in proc.stdout + proc.stderr:
                break
            time.sleep(2 * (attempt + 1))
        if check and proc.returncode != 0:
            raise AssertionError(f"airflow {' '.join(args)} exited {proc.returncode}:\n{proc.stdout[-6000:]}\n"
                                 f"{proc.stderr[-6000:]}")
        return proc

    def python(self, code: str, timeout: float = 120) -> subprocess.CompletedProcess:
        proc = subprocess.run([str(self.bin / "python"), "-c", code], cwd=REPO, env=self.env(), capture_output=True,
                              text=True, timeout=timeout)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
        return proc

    def sql(self, query: str, *params: object) -> list[tuple]:
        import sqlite3
        with sqlite3.connect(self.home / "airflow.db", timeout=30) as db:
            return db.execute(query, params).fetchall()


_migrated: dict[Path, Path] = {}


def _migrated_db(airflow_bin: Path, root: Path) -> Path:
    """An airflow.db that `airflow db migrate` made, once per test process: each home starts from a copy (the schema
    holds nothing of the home's; a migration costs about 3 CPU-s, a copy milliseconds)."""
    if airflow_bin not in _migrated:
        template = AirflowHome(airflow_bin, root / "airflow-template", root / "airflow-template" / "dags", "")
        template.dags.mkdir(parents=True)
        template.run("db", "migrate", timeout=300)
        template.sql("pragma journal_mode=wal")  # readers never block the writer (kept in the file)
        _migrated[airflow_bin] = template.home / "airflow.db"
    return _migrated[airflow_bin]


def make_home(airflow_bin: Path, root: Path, warehouse: str, dags: list[Path]) -> AirflowHome:
    home = root / "airflow-home"
    folder = home / "dags"
    folder.mkdir(parents=True)
    for d in dags:
        shutil.copy(d, folder / d.name)
    shutil.copy(_migrated_db(airflow_bin, root), home / "airflow.db")
    return AirflowHome(airflow_bin, home, folder, warehouse)


def java_or_fail() -> None:
    from tests.interop import java_harness as jh
    reason = jh.skip_reason()
    if reason:
        pytest.skip(reason)  # fails under CI=true (tests/conftest.py)


__all__ = ["AirflowHome", "make_home", "EXAMPLE_DAGS", "TEST_DAGS", "java_or_fail", "sys"]
