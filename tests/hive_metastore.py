"""A real Hive Metastore for the tests: the standalone Hive 2.3 metastore that pyspark's `jars/` carry
(`org.apache.hadoop.hive.metastore.HiveMetaStore`, with Derby, DataNucleus and HikariCP), on embedded Derby, one JVM
process stopped by pid.

What makes it work (each setting was needed):
* `hive.async.log.enabled=false` (else NoClassDefFoundError com/lmax/disruptor),
* `datanucleus.connectionPoolingType=HikariCP` (else the lock API fails on BoneCP's missing classes),
* `hive.in.test=true` on the first start only: the first transaction call then creates the TXN and lock tables
  (TxnDbUtil.prepDb); the server must then be restarted with it off, because in test mode it rejects the lock
  requests Java's HiveCatalogLock and we send (operationType UNSET),
* the config directory on the server's classpath only.

The Derby database with the lock tables is built once per machine under `$PAIMON_OPS_CACHE/hive-metastore/` (keyed
by the metastore jar) and copied for each server, so a session pays one start (~10 s), not two. Hive 2.3 has no
bind-host option and listens on all interfaces: the port is random.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import logging
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import IO, Iterator

from tests.net import free_port, patient

REPO = Path(__file__).resolve().parents[1]
MAIN_CLASS = "org.apache.hadoop.hive.metastore.HiveMetaStore"
START_TIMEOUT_S = 60.0  # a deadline, stretched by PAIMON_TEST_PATIENCE; an idle machine needs 7-20 s
logging.getLogger("thrift.transport.TSocket").setLevel(logging.CRITICAL)  # every refused try while it starts


def pyspark_jars() -> Path:
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("pyspark is not installed: its jars/ carry the Hive 2.3 metastore the tests run")
    jars = Path(list(spec.submodule_search_locations)[0]) / "jars"
    if not list(jars.glob("hive-metastore-*.jar")):
        raise RuntimeError(f"no hive-metastore-*.jar in {jars}")
    return jars


def java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise RuntimeError("the Hive Metastore needs `java` (17) on PATH or JAVA_HOME")
    return found


def cache_dir() -> Path:
    return Path(os.environ.get("PAIMON_OPS_CACHE", str(REPO / ".cache"))) / "hive-metastore"


def _site(db_dir: Path, warehouse: Path, in_test: bool) -> str:
    props = {
        "javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={db_dir};create=true",
        "javax.jdo.option.ConnectionDriverName": "org.apache.derby.jdbc.EmbeddedDriver",
        "datanucleus.schema.autoCreateAll": "true",
        "hive.metastore.schema.verification": "false",
        "hive.async.log.enabled": "false",
        "datanucleus.connectionPoolingType": "HikariCP",
        "hive.in.test": "true" if in_test else "false",
        "hive.metastore.warehouse.dir": str(warehouse),
    }
    body = "".join(f"  <property><name>{k}</name><value>{v}</value></property>\n" for k, v in props.items())
    return f'<?xml version="1.0"?>\n<configuration>\n{body}</configuration>\n'


class HiveMetastore:
    """`with HiveMetastore(dir) as hms: hms.uri` — a running metastore; `hms.log()` is its log so far."""

    def __init__(self, work_dir: Path, start_timeout_s: float = START_TIMEOUT_S):
        self.dir = Path(work_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.timeout = patient(start_timeout_s)
        self.port = 0
        self.proc: subprocess.Popen | None = None
        self._log_file: IO[str] | None = None

    @property
    def uri(self) -> str:
        return f"thrift://127.0.0.1:{self.port}"

    @property
    def warehouse(self) -> Path:
        return self.dir / "hive-warehouse"

    # ------------------------------------------------------------------ process
    def _launch(self, db_dir: Path, in_test: bool, log_name: str) -> subprocess.Popen:
        conf = self.dir / ("conf-test" if in_test else "conf")
        conf.mkdir(exist_ok=True)
        (conf / "hive-site.xml").write_text(_site(db_dir, self.warehouse, in_test))
        self.port = free_port()
        logs = self.dir / "logs"
        logs.mkdir(exist_ok=True)
        if self._log_file is not None:
            self._log_file.close()
        self._log_file = open(self.dir / log_name, "w")
        cmd = [java(), "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               f"-Dhive.log.dir={logs}", "-Dhive.log.file=hive.log", f"-Dderby.stream.error.file={logs / 'derby.log'}",
               f"-Djava.io.tmpdir={self.dir}", "-cp", f"{conf}{os.pathsep}{pyspark_jars()}/*", MAIN_CLASS,
               "-p", str(self.port)]
        self.proc = subprocess.Popen(cmd, cwd=self.dir, stdout=self._log_file, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        return self.proc

    def log(self, tail: int = 4000) -> str:
        parts = []
        for f in (self.dir / "server.log", self.dir / "logs" / "hive.log"):
            if f.is_file():
                parts.append(f"--- {f}\n{f.read_text(errors='replace')[-tail:]}")
        return "\n".join(parts)

    def _client(self):
        from pymetastore.hive_metastore import ThriftHiveMetastore
        from thrift.protocol import TBinaryProtocol
        from thrift.transport import TSocket, TTransport
        sock = TSocket.TSocket("127.0.0.1", self.port)
        sock.setTimeout(10_000)
        transport = TTransport.TBufferedTransport(sock)
        transport.open()
        return transport, ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocol(transport))

    def _wait_ready(self) -> None:
        """Until the metastore answers a call (an open port is not enough: it listens before Derby is ready)."""
        deadline = time.monotonic() + self.timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"the Hive Metastore exited with {self.proc.returncode}:\n{self.log()}")
            try:
                transport, client = self._client()
                try:
                    client.get_all_databases()
                    return
                finally:
                    transport.close()
            except Exception as e:  # noqa: BLE001 - not up yet
                last = e
                time.sleep(0.3)
        raise RuntimeError(f"the Hive Metastore did not answer on port {self.port} within {self.timeout:.0f} s "
                           f"({last!r}):\n{self.log()}")

    def _stop_process(self) -> None:
        p = self.proc
        if p is not None and p.poll() is None:
            p.terminate()
            try:
                p.wait(patient(20))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.proc = None

    # ------------------------------------------------------------------ the Derby database
    def _pristine(self) -> Path:
        """The Derby database with the metastore schema and the TXN/lock tables, built once (see the module doc)."""
        jar = sorted(pyspark_jars().glob("hive-metastore-*.jar"))[-1]
        key = hashlib.sha256(f"{jar.name}|{jar.stat().st_size}|{_site(Path('x'), Path('y'), True)}".encode())
        base = cache_dir()
        base.mkdir(parents=True, exist_ok=True)
        built = base / f"metastore_db-{key.hexdigest()[:12]}"
        with open(base / ".lock", "a+") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            if built.is_dir():
                return built
            with tempfile.TemporaryDirectory(prefix="build-", dir=base) as tmp:
                db = Path(tmp) / "metastore_db"
                self._launch(db, in_test=True, log_name="server-first-start.log")
                try:
                    self._wait_ready()
                    from pymetastore.hive_metastore.ttypes import ShowLocksRequest
                    transport, client = self._client()
                    try:
                        client.show_locks(ShowLocksRequest())  # creates the TXN and lock tables (test mode only)
                    finally:
                        transport.close()
                finally:
                    self._stop_process()
                for old in base.glob("metastore_db-*"):
                    shutil.rmtree(old, ignore_errors=True)
                shutil.copytree(db, Path(tmp) / "copy")
                os.replace(Path(tmp) / "copy", built)
            return built

    def start(self) -> HiveMetastore:
        db = self.dir / "metastore_db"
        if not db.exists():
            shutil.copytree(self._pristine(), db)
        self._launch(db, in_test=False, log_name="server.log")
        self._wait_ready()
        return self

    def stop(self) -> None:
        self._stop_process()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def __enter__(self) -> HiveMetastore:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def running_metastore(work_dir: Path) -> Iterator[HiveMetastore]:
    with HiveMetastore(work_dir) as hms:
        yield hms
