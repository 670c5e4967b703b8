"""Bad input and broken infrastructure around a REST catalog, through the command line: an unreachable server, one
that accepts connections but never answers, wrong credentials, an expired bearer token or DLF key, an unknown table
or database — each is one line naming the endpoint (or table) on stderr, exit status 2, within --connect-timeout
(plus the interpreter's start-up), and nothing changed: no commit reached the server, no file in the table moved."""
from __future__ import annotations

import hashlib
import socket
import time
from pathlib import Path

import pytest

from tests.cli.conftest import cli
from tests.net import free_port, patient
from tests.rest.fixture import DLF_AK, DLF_SK, REGION, TOKEN, rest_server
from tests.rest.test_spec_server import create, write

TIMEOUT_S = 2.0
# a fresh interpreter imports paimon_ops (pyarrow, fastavro) before it asks anything
STARTUP_S = patient(6)


def files_of(path: Path) -> dict[str, str]:
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob("*")) if p.is_file()}


def run(command: str, *args: str, options: dict[str, str]):
    opts = [f"-o{k}={v}" for k, v in options.items()]
    return cli(command, *args, *opts, "--connect-timeout", str(TIMEOUT_S), timeout=120)


def one_line(r) -> str:
    assert r.code == 2, r.err + r.out
    lines = [ln for ln in r.err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in r.err, r.err
    return lines[0]


@pytest.fixture
def served(tmp_path):
    wh = tmp_path / "wh"
    wh.mkdir()
    with rest_server(str(wh), tmp_path / "state", bearer_tokens={TOKEN: None, "old-token": 1000},
                     dlf_keys={DLF_AK: {"secret": DLF_SK}, "LTAI-expired": {"secret": "s", "expires_at": 1000}}) as rest:
        create(rest.pypaimon_catalog(), "db.t")
        write(rest.pypaimon_catalog().get_table("db.t"), [(1, "a", "x")])
        write(rest.pypaimon_catalog().get_table("db.t"), [(2, "a", "y")])
        yield rest, wh / "db.db" / "t"


def test_unreachable_server():
    port = free_port()
    uri = f"http://127.0.0.1:{port}"
    r = run("compact", "spec-wh", "db.t", options={"metastore": "rest", "uri": uri, "token.provider": "bear",
                                                   "token": "x"})
    line = one_line(r)
    assert uri in line and "GET /v1/config" in line and "unreachable" in line and "refused" in line, line
    assert r.seconds < TIMEOUT_S + STARTUP_S


def test_server_that_never_answers_fails_within_the_connect_timeout():
    with socket.socket() as s:  # accepts connections (the kernel's backlog), never reads or answers
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        uri = f"http://127.0.0.1:{s.getsockname()[1]}"
        started = time.time()
        r = run("tables", "spec-wh", options={"metastore": "rest", "uri": uri, "token.provider": "bear", "token": "x"})
        line = one_line(r)
    assert uri in line and f"no answer within {TIMEOUT_S:g} s" in line, line
    assert time.time() - started < TIMEOUT_S + STARTUP_S


@pytest.mark.parametrize("case", ["wrong-token", "expired-token", "wrong-dlf-secret", "expired-dlf-key"])
def test_credentials_refused_nothing_changed(served, case):
    rest, path = served
    before = files_of(path)
    commits_before = sum(1 for q in rest.requests() if q["path"].endswith("/commit"))
    options = {"wrong-token": rest.options("bear", token="not-the-token"),
               "expired-token": rest.options("bear", token="old-token"),
               "wrong-dlf-secret": rest.options("dlf", **{"dlf.access-key-secret": "wrong"}),
               "expired-dlf-key": rest.options("dlf", **{"dlf.access-key-id": "LTAI-expired",
                                                         "dlf.access-key-secret": "s"})}[case]
    r = run("compact", rest.warehouse_name, "db.t", options=options)
    line = one_line(r)
    assert rest.uri in line and "HTTP 401" in line and "GET /v1/config" in line, line
    assert {"expired-token": "expired", "expired-dlf-key": "expired", "wrong-token": "not known",
            "wrong-dlf-secret": "signature"}[case] in line, line
    for secret in ("not-the-token", "old-token", DLF_SK, "wrong"):
        assert f"={secret}" not in line and f" {secret} " not in line  # never a secret
    assert r.seconds < TIMEOUT_S + STARTUP_S
    assert files_of(path) == before
    assert sum(1 for q in rest.requests() if q["path"].endswith("/commit")) == commits_before


def test_unknown_table_and_database(served):
    rest, path = served
    before = files_of(path)
    r = run("expire-snapshots", rest.warehouse_name, "db.nope", options=rest.options())
    line = one_line(r)
    assert "db.nope" in line and "not found" in line and "db.t" in line, line  # names what the database holds
    r = run("compact", rest.warehouse_name, "nodb.t", options=rest.options())
    line = one_line(r)
    assert "nodb.t" in line and "database" in line, line
    r = run("compact", rest.warehouse_name, "zzz.*", options=rest.options())
    line = one_line(r)
    assert "zzz.*" in line and "db.t" in line, line
    assert files_of(path) == before


def test_wrong_warehouse_name_and_dlf_signing_through_the_cli(served):
    rest, _ = served
    options = {k: v for k, v in rest.options().items() if k != "warehouse"}  # the command line's WAREHOUSE says it
    r = run("tables", "another-warehouse", options=options)
    line = one_line(r)
    assert "another-warehouse" in line and "HTTP 404" in line, line
    r = run("tables", rest.warehouse_name, options=rest.options("dlf"))  # our DLF signer, verified by the server
    assert r.code == 0, r.err
    assert "db.t" in r.out
    assert any(q["who"] == f"dlf:{DLF_AK}" for q in rest.requests())
    assert REGION  # the region the server verifies signatures for
