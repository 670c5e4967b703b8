"""Spark endpoint checks before a session is started: a master URL is one Spark accepts, and the master or Spark
Connect server it names accepts a connection and answers like Spark within a timeout — unreachable infrastructure
fails fast in one line, never after Spark's own minute-long retries.
"""
from __future__ import annotations

import errno
import os
import re
import socket
import time
from urllib.parse import urlparse

from paimon_ops.errors import PaimonOpsError, UnreachableError

CONNECT_DEFAULT_PORT = 15002
SPARK_STANDALONE_DEFAULT_PORT = 7077
# How long a Spark master / Connect server may take to accept a TCP connection, and a session to become usable
# (PAIMON_OPS_CONNECT_TIMEOUT, or the caller's value): unreachable infrastructure fails fast, never hangs.
DEFAULT_CONNECT_TIMEOUT_S = float(os.environ.get("PAIMON_OPS_CONNECT_TIMEOUT", "10"))


def spark_endpoints(url: str) -> list[tuple[str, int]]:
    """TCP endpoints to probe for a master / Connect URL; [] when there is nothing to probe (local[*], yarn)."""
    if url.startswith("sc://"):
        parsed = urlparse(url.split(";", 1)[0].rstrip("/"))
        return [(parsed.hostname or "localhost", parsed.port or CONNECT_DEFAULT_PORT)]
    if url.startswith("spark://"):
        out = []
        for hp in url[len("spark://"):].split(","):  # standalone HA: spark://h1:7077,h2:7077
            host, _, port = hp.strip().rstrip("/").partition(":")
            try:
                out.append((host, int(port or SPARK_STANDALONE_DEFAULT_PORT)))
            except ValueError:
                raise PaimonOpsError(f"invalid Spark master URL {url!r}: port {port!r} is not a number") from None
        return out
    if url.startswith("k8s://"):
        parsed = urlparse(url[len("k8s://"):] if "://" in url[len("k8s://"):] else "https://" + url[len("k8s://"):])
        return [(parsed.hostname or "localhost", parsed.port or (443 if parsed.scheme == "https" else 80))]
    return []


_MASTER = re.compile(r"^(local(\[(\*|\d+)(,\s*\d+)?\])?|local-cluster\[\d+,\s*\d+,\s*\d+\]|yarn|"
                     r"spark://[^\s/]+|k8s://\S+)$")
# The HTTP/2 client preface and an empty SETTINGS frame: a gRPC (Spark Connect) server answers with its own SETTINGS.
_HTTP2_HELLO = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
# A frame of length 0: Spark's RPC server (TransportFrameDecoder) refuses it and closes the connection at once.
_SPARK_RPC_HELLO = b"\x00" * 8


def check_master_url(url: str, what: str = "--spark-master") -> None:
    """Refuse, in one line, what is no Spark master URL (local[N], local[*], spark://host:port, yarn, k8s://…)."""
    if not isinstance(url, str) or not _MASTER.match(url.strip()):
        raise PaimonOpsError(f"{what} {url!r} is not a Spark master URL: use local[N], local[*], spark://host:port, "
                             "yarn or k8s://https://host:port")


def check_spark_reachable(url: str, timeout_s: float | None = None, what: str = "") -> None:
    """Raise UnreachableError unless at least one TCP endpoint of a `spark://` / `sc://` / `k8s://` URL accepts a
    connection and answers like Spark within `timeout_s` (default PAIMON_OPS_CONNECT_TIMEOUT, 10 s): a port that
    accepts connections but never says a word fails in that time too, never after Spark's own minute-long retries.
    `what` names it in the caller's words (e.g. `--spark-master`)."""
    timeout_s = DEFAULT_CONNECT_TIMEOUT_S if timeout_s is None else timeout_s
    if not timeout_s > 0:
        raise PaimonOpsError(f"--connect-timeout must be a positive number of seconds, got {timeout_s:g}")
    endpoints = spark_endpoints(url)
    if not endpoints:
        return
    errors = []
    deadline = time.monotonic() + timeout_s
    for host, port in endpoints:
        try:
            with socket.create_connection((host, port), timeout=max(0.1, deadline - time.monotonic())) as sock:
                problem = _handshake(sock, url, max(0.1, deadline - time.monotonic()), timeout_s)
                if problem is None:
                    return
                errors.append(f"{host}:{port}: {problem}")
        except socket.timeout:
            errors.append(f"{host}:{port}: no answer within {timeout_s:g} s")
        except OSError as e:
            errors.append(f"{host}:{port}: {e.strerror or e}")
    kind = "Spark Connect server" if url.startswith("sc://") else "Spark master"
    raise UnreachableError(url, "; ".join(errors), f"{kind}{' (' + what + ')' if what else ''}")


def _handshake(sock: socket.socket, url: str, timeout_s: float, said_s: float) -> str | None:
    """None if the peer answers the way a Spark Connect server (HTTP/2 SETTINGS) or a Spark master (closes the
    connection on a malformed RPC frame) does, else what it did."""
    if url.startswith("sc://"):
        if "use_ssl=true" in url.lower():
            return None  # TLS: the TCP connection is all we check without a client certificate chain
        hello, want_settings = _HTTP2_HELLO, True
    elif url.startswith("spark://"):
        hello, want_settings = _SPARK_RPC_HELLO, False
    else:
        return None
    sock.settimeout(timeout_s)
    try:
        sock.sendall(hello)
        data = sock.recv(9)
    except socket.timeout:
        return f"accepts connections but does not answer within {said_s:g} s (is it a Spark " \
               f"{'Connect server' if want_settings else 'master'}?)"
    except OSError as e:
        if not want_settings and e.errno in (errno.ECONNRESET, errno.EPIPE):
            return None  # the master dropped our malformed frame: it speaks Spark RPC
        return e.strerror or str(e)
    if want_settings:
        return None if len(data) >= 4 and data[3] == 0x04 else "answers, but not as a gRPC (Spark Connect) server"
    return None
