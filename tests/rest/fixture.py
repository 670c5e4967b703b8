"""Start the spec REST catalog server (tests/rest/server.py) as a real process on 127.0.0.1 and a free port, wait
for it with a deadline (printing its log on timeout), read what it recorded, stop it by its pid."""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from tests.net import free_port, patient

REPO = Path(__file__).resolve().parents[2]
TOKEN = "paimon-ops-test-bearer-7c1e"
DLF_AK = "LTAI-paimon-ops-test"
DLF_SK = "paimon-ops-dlf-secret-9d2b"
REGION = "cn-hangzhou"


@dataclass
class RestServer:
    uri: str
    pid: int
    state_dir: Path
    warehouse: str
    warehouse_name: str
    config: dict[str, Any]
    proc: subprocess.Popen = field(repr=False)

    # ------------------------------------------------------------------ client options
    def options(self, auth: str = "bear", **extra: str) -> dict[str, str]:
        """Catalog options for a client of this server (pypaimon's and ours take the same)."""
        opts = {"metastore": "rest", "uri": self.uri, "warehouse": self.warehouse_name}
        if auth == "bear":
            opts.update({"token.provider": "bear", "token": TOKEN})
        elif auth == "dlf":
            opts.update({"token.provider": "dlf", "dlf.access-key-id": DLF_AK, "dlf.access-key-secret": DLF_SK,
                         "dlf.region": REGION})
        opts.update(extra)
        return opts

    def pypaimon_catalog(self, auth: str = "bear", **extra: str):
        from pypaimon import CatalogFactory
        return CatalogFactory.create(self.options(auth, **extra))

    # ------------------------------------------------------------------ records
    def _jsonl(self, name: str) -> list[dict[str, Any]]:
        p = self.state_dir / name
        if not p.exists():
            return []
        return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]

    def writes(self) -> list[dict[str, Any]]:
        return self._jsonl("writes.jsonl")

    def requests(self) -> list[dict[str, Any]]:
        return self._jsonl("requests.jsonl")

    def tokens(self) -> list[dict[str, Any]]:
        return self._jsonl("tokens.jsonl")

    def log(self) -> str:
        p = self.state_dir / "server.log"
        return p.read_text() if p.exists() else ""

    def foreign_metadata(self, table_path: str | Path) -> list[str]:
        """Files under the table's snapshot/ named `snapshot-*`, `LATEST` or `EARLIEST` whose content is not what
        this server last wrote there: written (or overwritten) by someone else. Empty means none."""
        last: dict[str, str | None] = {}
        for w in self.writes():
            if w["op"] in ("write", "create"):
                last[w["path"]] = w["sha256"]
            elif w["op"] == "delete":
                last[w["path"]] = None
        out = []
        sdir = Path(table_path) / "snapshot"
        for p in sorted(sdir.iterdir()) if sdir.is_dir() else []:
            if p.name.startswith("snapshot-") or p.name in ("LATEST", "EARLIEST"):
                digest = hashlib.sha256(p.read_bytes()).hexdigest()
                if last.get(str(p)) != digest:
                    out.append(p.name)
        return out

    # ------------------------------------------------------------------ raw access (tests of the server itself)
    def call(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None,
             auth: bool = True) -> tuple[int, Any]:
        h = {"Content-Type": "application/json"} if body is not None else {}
        if auth:
            h["Authorization"] = f"Bearer {TOKEN}"
        h.update(headers or {})
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.uri + path, data=data, method=method, headers=h)
        try:
            with urllib.request.urlopen(req, timeout=patient(10)) as r:
                text = r.read()
                return r.status, json.loads(text) if text else None
        except urllib.error.HTTPError as e:
            text = e.read()
            return e.code, json.loads(text) if text else None

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=patient(5))
            except subprocess.TimeoutExpired:
                os.kill(self.pid, signal.SIGKILL)
                self.proc.wait()


def server_config(warehouse: str, state_dir: Path, **overrides: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "warehouse": warehouse, "state_dir": str(state_dir), "warehouse_name": "spec-wh", "prefix": "paimon",
        "bearer_tokens": {TOKEN: None},
        "dlf_keys": {DLF_AK: {"secret": DLF_SK}}, "dlf_region": REGION,
    }
    cfg.update(overrides)
    return cfg


@contextlib.contextmanager
def rest_server(warehouse: str, state_dir: Path, **overrides: Any) -> Iterator[RestServer]:
    """The spec server over `warehouse`, started now and stopped on exit (by pid)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    cfg = server_config(warehouse, state_dir, port=port, **overrides)
    cfg_path = state_dir / "config.json"
    cfg_path.write_text(json.dumps(cfg, indent=2))
    log = open(state_dir / "server.log", "w")
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "tests.rest.server", str(cfg_path)], cwd=str(REPO), env=env,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    server = RestServer(f"http://127.0.0.1:{port}", proc.pid, state_dir, warehouse, cfg["warehouse_name"], cfg,
                        proc)
    try:
        deadline = time.time() + patient(30)
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the spec REST server exited with {proc.returncode}:\n{server.log()}")
            try:
                server.call("GET", f"/v1/config?warehouse={cfg['warehouse_name']}")
                break  # any answer (a 401 with other credentials) means it listens
            except OSError:
                pass
            if time.time() > deadline:
                raise RuntimeError(f"the spec REST server did not answer on {server.uri} in time:\n{server.log()}")
            time.sleep(0.1)
        yield server
    finally:
        server.stop()
        log.close()
