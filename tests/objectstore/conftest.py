"""A real S3-compatible server for the object-store tests: moto's standalone server (`moto_server`, installed by the
project's test extra), started once per session on 127.0.0.1 on a free port, waited for with a readiness probe and
stopped by its pid. With CI=true a server that does not start fails the run; elsewhere the tests are skipped.

Helpers upload/download whole directories with boto3 (independent of the code under test), and `S3Proxy` sits
between our client and the server to record requests (headers, counts) and inject throttling or failures.
"""
from __future__ import annotations

import http.client
import http.server
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

from tests.net import free_port

ACCESS_KEY = "paimon-test-access"
SECRET_KEY = "paimon-test-secret-do-not-print-7f3a9c"
REGION = "us-east-1"


@dataclass
class S3Server:
    endpoint: str
    pid: int

    @property
    def options(self) -> dict[str, str]:
        """Warehouse options that point paimon-ops at this server."""
        return {"s3.endpoint": self.endpoint, "s3.access-key": ACCESS_KEY, "s3.secret-key": SECRET_KEY,
                "s3.region": REGION}

    @property
    def env(self) -> dict[str, str]:
        """The same as the standard AWS variables."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
                "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": REGION}

    def boto(self, endpoint: str | None = None):
        import boto3
        return boto3.client("s3", endpoint_url=endpoint or self.endpoint, aws_access_key_id=ACCESS_KEY,
                            aws_secret_access_key=SECRET_KEY, region_name=REGION)

    def new_bucket(self, prefix: str = "t") -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:12]}"
        self.boto().create_bucket(Bucket=name)
        return name

    def upload(self, local_dir: str | Path, bucket: str, prefix: str) -> int:
        """Every file under local_dir to s3://bucket/prefix/<relative path> (no directory markers)."""
        from concurrent.futures import ThreadPoolExecutor
        s3 = self.boto()
        root = Path(local_dir)
        files = [p for p in sorted(root.rglob("*")) if p.is_file()]
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda p: s3.put_object(Bucket=bucket, Key=f"{prefix}/{p.relative_to(root).as_posix()}",
                                                  Body=p.read_bytes()), files))
        return len(files)

    def download(self, bucket: str, prefix: str, local_dir: str | Path) -> int:
        s3 = self.boto()
        root = Path(local_dir)
        n = 0
        for key in self.keys(bucket, prefix):
            rel = key[len(prefix):].lstrip("/")
            if not rel or key.endswith("/"):
                continue
            dst = root / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
            n += 1
        return n

    def put_many(self, bucket: str, keys, body: bytes = b"x") -> None:
        """Create many small objects (8 requests in flight)."""
        from concurrent.futures import ThreadPoolExecutor
        s3 = self.boto()
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda k: s3.put_object(Bucket=bucket, Key=k, Body=body), keys))

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        out = []
        for page in self.boto().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            out += [o["Key"] for o in page.get("Contents", [])]
        return out


def _start_moto() -> tuple[subprocess.Popen, str]:
    exe = Path(sys.executable).with_name("moto_server")
    if not exe.exists():
        raise RuntimeError(f"{exe} not found (moto[server] is in the project's test extra)")
    port = free_port()
    proc = subprocess.Popen([str(exe), "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"moto_server exited with {proc.returncode}")
        try:
            urllib.request.urlopen(url + "/", timeout=2).read()  # readiness: ListBuckets answers
            return proc, url
        except OSError:
            time.sleep(0.1)
    os.kill(proc.pid, signal.SIGKILL)
    raise RuntimeError("moto_server did not answer within 60 s")


@pytest.fixture(scope="session")
def s3_server():
    try:
        proc, url = _start_moto()
    except Exception as e:  # noqa: BLE001
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"the S3 test server could not be started: {e}")
        pytest.skip(f"the S3 test server could not be started: {e}")
    yield S3Server(url, proc.pid)
    os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.fixture
def bucket(s3_server) -> str:
    return s3_server.new_bucket()


@pytest.fixture
def s3_env(s3_server, monkeypatch) -> S3Server:
    """The standard AWS variables point at the server for this test (as a user's shell would)."""
    for k, v in s3_server.env.items():
        monkeypatch.setenv(k, v)
    return s3_server


# ---------------------------------------------------------------------------------------------- proxy


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    status: int = 0


@dataclass
class S3Proxy:
    """Forwards HTTP to the S3 server, recording every request. `inject(method, path, headers, body)` may return a
    (status, body) to answer instead of forwarding (throttling, failures)."""

    target: str
    requests: list[Recorded] = field(default_factory=list)
    inject: Callable[[str, str, dict, bytes], tuple[int, bytes] | None] | None = None
    endpoint: str = ""
    _server: http.server.ThreadingHTTPServer | None = None

    def start(self) -> S3Proxy:
        proxy = self
        host, port = self.target.split("://", 1)[1].split(":")

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *a):  # quiet
                pass

            def _body(self) -> bytes:
                if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():  # pyarrow's uploads
                    out = b""
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                        chunk = self.rfile.read(size + 2)[:size]  # (each chunk ends with CRLF)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):  # trailers
                                pass
                            return out
                        out += chunk
                n = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(n) if n else b""

            def _do(self):
                body = self._body()
                headers = {k.lower(): v for k, v in self.headers.items() if k.lower() != "transfer-encoding"}
                if body:
                    headers["content-length"] = str(len(body))
                rec = Recorded(self.command, self.path, headers)
                proxy.requests.append(rec)
                answer = proxy.inject(self.command, self.path, headers, body) if proxy.inject else None
                if answer is not None:
                    status, payload = answer
                    rec.status = status
                    self.send_response(status)
                    self.send_header("Content-Length", str(len(payload)))
                    self.send_header("Content-Type", "application/xml")
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                conn = http.client.HTTPConnection(host, int(port), timeout=60)
                conn.connect()
                conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                conn.request(self.command, self.path, body=body, headers=headers)
                r = conn.getresponse()
                data = r.read()
                rec.status = r.status
                self.send_response(r.status)
                for k, v in r.getheaders():
                    if k.lower() not in ("content-length", "transfer-encoding", "connection", "server", "date"):
                        self.send_header(k, v)
                # a HEAD answer has no body but says the object's size
                self.send_header("Content-Length", r.getheader("Content-Length", "0") if self.command == "HEAD"
                                 else str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                conn.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _do

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()

    def count(self, method: str, contains: str = "") -> int:
        return sum(1 for r in self.requests if r.method == method and contains in r.path)


@pytest.fixture
def s3_proxy(s3_server):
    p = S3Proxy(s3_server.endpoint).start()
    yield p
    p.stop()
