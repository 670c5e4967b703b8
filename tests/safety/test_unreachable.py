"""Unreachable infrastructure is a one-line `paimon-ops: error: …` with exit 2 in well under 30 s —
never a JVM stack trace, never a hang."""
from __future__ import annotations

import socket
import threading

import pytest

from tests.cli.conftest import cli

LIMIT_S = 30


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.fixture
def blackhole():
    """A TCP server on 127.0.0.1 that accepts connections and never says a word."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    conns = []
    stop = threading.Event()

    def accept():
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                conns.append(srv.accept()[0])
            except OSError:
                pass
    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield srv.getsockname()[1]
    stop.set()
    t.join()
    for c in conns:
        c.close()
    srv.close()


def _one_line_error(r, *needles: str) -> None:
    assert r.code == 2, (r.code, r.err)
    assert r.seconds < LIMIT_S, r.seconds
    assert "Traceback" not in r.err and "py4j" not in r.err.lower() and "at org." not in r.err
    lines = [ln for ln in r.err.splitlines() if ln.startswith("paimon-ops: error:")]
    assert len(lines) == 1, r.err
    for n in needles:
        assert n in lines[0], lines[0]


def test_unreachable_spark_master(sample):
    port = _closed_port()
    r = cli("compact", sample, "shop.orders", "--spark-master", f"spark://127.0.0.1:{port}")
    _one_line_error(r, "--spark-master", f"127.0.0.1:{port}", "unreachable")


def test_unreachable_spark_connect_server(sample):
    port = _closed_port()
    r = cli("compact", sample, "shop.orders", "--spark-remote", f"sc://127.0.0.1:{port}")
    _one_line_error(r, "--spark-remote", f"sc://127.0.0.1:{port}", "unreachable")


def test_spark_connect_server_that_never_answers(sample, blackhole):
    r = cli("compact", sample, "shop.orders", "--spark-remote", f"sc://127.0.0.1:{blackhole}", "--connect-timeout", "2")
    _one_line_error(r, "--spark-remote", "unreachable")


def test_unresolvable_spark_connect_host(sample):
    r = cli("expire-snapshots", sample, "shop.orders", "--spark-remote", "sc://no-such-host.invalid:15002")
    _one_line_error(r, "--spark-remote", "no-such-host.invalid")


def test_unknown_uri_scheme():
    r = cli("tables", "foo://bucket/warehouse")
    _one_line_error(r, "foo://bucket/warehouse", "unsupported URI scheme")
    r = cli("compact", "foo://bucket/warehouse", "db.t", "--json")
    assert r.code == 2 and r.json["error"]["type"] == "InvalidArgumentError"


@pytest.mark.parametrize("flag,scheme", [("--spark-remote", "sc"), ("--spark-master", "spark")])
def test_a_port_that_accepts_but_never_answers_fails_within_the_connect_timeout(sample, blackhole, flag, scheme):
    """the default --connect-timeout (10 s) bounds it — the connection must answer like Spark (a Connect
    server its HTTP/2 settings, a master by dropping a malformed frame), not only accept."""
    r = cli("compact", sample, "shop.orders", flag, f"{scheme}://127.0.0.1:{blackhole}")
    _one_line_error(r, flag, "does not answer within 10 s")
    assert r.seconds < 20, r.seconds
