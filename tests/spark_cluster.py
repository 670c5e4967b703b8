"""A real Spark standalone cluster on 127.0.0.1 — a Master and Workers, each its own JVM process, stopped by pid —
for the cluster tests and the scaling benchmark."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import IO

from tests.net import free_port


def spark_class() -> str:
    import pyspark
    return str(Path(pyspark.__file__).parent / "bin" / "spark-class")


class StandaloneCluster:
    """`with StandaloneCluster(dir) as c: c.add_worker(cores=1)`; `c.url` is the master URL."""

    def __init__(self, work_dir: Path, start_timeout_s: float = 90.0):
        self.dir = Path(work_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.timeout = start_timeout_s
        self.env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
                        SPARK_LOG_DIR=str(self.dir / "logs"), SPARK_WORKER_DIR=str(self.dir / "work"))
        self.port, self.ui = free_port(), free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.master: subprocess.Popen | None = None
        self.workers: list[subprocess.Popen] = []
        self._logs: list[IO[str]] = []

    def _log(self, name: str) -> IO[str]:
        f = open(self.dir / name, "w")
        self._logs.append(f)
        return f

    def state(self) -> dict:
        return json.loads(urllib.request.urlopen(f"http://127.0.0.1:{self.ui}/json/", timeout=2).read())

    def start(self) -> StandaloneCluster:
        self.master = subprocess.Popen(
            [spark_class(), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(self.port),
             "--webui-port", str(self.ui)], env=self.env, stdout=self._log("master.log"), stderr=subprocess.STDOUT)
        deadline = time.time() + self.timeout
        while True:
            try:
                self.state()
                return self
            except OSError:
                if time.time() > deadline or self.master.poll() is not None:
                    raise RuntimeError("Spark master did not start: "
                                       + (self.dir / "master.log").read_text()[-2000:]) from None
                time.sleep(0.5)

    def add_worker(self, cores: int = 2, memory: str = "2g") -> int:
        """Start one more Worker and wait until the master counts it alive; its pid."""
        name = f"worker-{len(self.workers)}.log"
        w = subprocess.Popen(
            [spark_class(), "org.apache.spark.deploy.worker.Worker", self.url, "--host", "127.0.0.1", "--cores",
             str(cores), "--memory", memory, "--webui-port", str(free_port())],
            env=self.env, stdout=self._log(name), stderr=subprocess.STDOUT)
        self.workers.append(w)
        deadline = time.time() + self.timeout
        while self.state().get("aliveworkers", 0) < len(self.workers):
            if time.time() > deadline or w.poll() is not None:
                raise RuntimeError("Spark worker did not register: " + (self.dir / name).read_text()[-2000:])
            time.sleep(0.5)
        return w.pid

    def stop(self) -> None:
        for p in [*self.workers, self.master]:
            if p is not None and p.poll() is None:
                p.terminate()
                try:
                    p.wait(20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        for f in self._logs:
            f.close()

    def __enter__(self) -> StandaloneCluster:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()
