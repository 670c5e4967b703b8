"""The CLI on object stores, in a subprocess as a user runs it: an unreachable endpoint and missing credentials are
one-line errors (exit 2, no traceback, well under 30 s); `paimon-ops compact s3://bucket/warehouse db.t` works
against the S3 server unchanged (endpoint and credentials from the AWS variables or from --option); no output,
report, plan or log line ever contains the secret key."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.lifecycle.helpers import new_table
from tests.objectstore.conftest import ACCESS_KEY, SECRET_KEY, free_port

CLI = [sys.executable, "-m", "paimon_ops.cli"]
REPO = Path(__file__).resolve().parents[2]


def _env(tmp_path, **aws) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    # no profile files, no instance metadata: nothing but what the test sets
    env.update(HOME=str(tmp_path), AWS_CONFIG_FILE=str(tmp_path / "none"), AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
               AWS_EC2_METADATA_DISABLED="true", PYTHONPATH=str(REPO))
    env.update(aws)
    return env


def _run(args, env, timeout=120) -> tuple[subprocess.CompletedProcess, float]:
    started = time.time()
    r = subprocess.run(CLI + list(args), env=env, capture_output=True, text=True, timeout=timeout, cwd=REPO)
    return r, time.time() - started


def _one_line_error(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("paimon-ops: error: "), r.stderr
    return lines[0]


def test_unreachable_endpoint_is_one_line_exit_2_fast(tmp_path):
    closed = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    env = _env(tmp_path, AWS_ENDPOINT_URL=closed, AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY)
    r, took = _run(["compact", "s3://bucket/warehouse", "db.t", "--local"], env)
    line = _one_line_error(r)
    assert took < 30
    assert closed in line and "s3://bucket/warehouse" in line and SECRET_KEY not in line


def test_missing_credentials_is_one_line_exit_2_fast(tmp_path, s3_server):
    env = _env(tmp_path, AWS_ENDPOINT_URL=s3_server.endpoint)
    r, took = _run(["tables", "s3://bucket/warehouse"], env)
    line = _one_line_error(r)
    assert took < 30
    assert "no credentials for s3://bucket/warehouse" in line and "AWS_ACCESS_KEY_ID" in line


def test_cli_maintenance_on_s3_never_prints_the_secret(tmp_path, s3_server, bucket):
    wh = tmp_path / "wh"
    wh.mkdir()
    t = new_table(str(wh), kind="pk")
    from paimon_ops.table.writer import write_rows
    for i in range(4):
        write_rows(t, {"pt": ["a", "b"], "k": [i, i], "v": [f"v{i}", None]})
    s3_server.upload(wh, bucket, "warehouse")
    loc = f"s3://{bucket}/warehouse"
    env = _env(tmp_path, **s3_server.env)
    outputs = []
    r, _ = _run(["-v", "compact", loc, "db.t", "--local", "--json"], env)
    assert r.returncode == 0, r.stderr
    outputs.append(r.stdout + r.stderr)
    report = json.loads(r.stdout)
    assert report["written"]  # compaction wrote files and committed a snapshot on S3
    r, _ = _run(["-v", "create-tag", loc, "db.t", "t1", "--json"], env)
    assert r.returncode == 0, r.stderr
    outputs.append(r.stdout + r.stderr)
    # the same with options instead of variables (dry run prints the plan, then the real run)
    opt_env = _env(tmp_path)
    opts = [f"--option=s3.{k}={v}" for k, v in (("endpoint", s3_server.endpoint), ("access-key", ACCESS_KEY),
                                                   ("secret-key", SECRET_KEY))]
    for extra in (["--dry-run"], []):
        r, _ = _run(["-v", "expire-snapshots", loc, "db.t", "--retain-max", "1", "--retain-min", "1", "--local",
                     "--json", *opts, *extra], opt_env)
        assert r.returncode == 0, r.stderr
        outputs.append(r.stdout + r.stderr)
    r, _ = _run(["snapshots", loc, "db.t", "--json", *opts], opt_env)
    assert r.returncode == 0, r.stderr
    assert [s["id"] for s in json.loads(r.stdout)["rows"]] == [5]  # 4 appends + 1 compaction: only the latest kept
    outputs.append(r.stdout + r.stderr)
    r, _ = _run(["tags", loc, "db.t", "--json"], env)
    assert [x["name"] for x in json.loads(r.stdout)["rows"]] == ["t1"]
    for out in outputs:
        assert SECRET_KEY not in out


@pytest.mark.parametrize("bad", ["s3.max-retries=lots", "noequals"])
def test_bad_store_option_is_one_line(tmp_path, bad):
    r, _ = _run(["tables", "s3://bucket/warehouse", "-o", bad], _env(tmp_path))
    _one_line_error(r)
