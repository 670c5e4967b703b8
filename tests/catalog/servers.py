"""Real catalog databases for the tests: PostgreSQL and MariaDB from Debian's packages (installed by dev.sh), each
initialised into a temporary directory, listening on 127.0.0.1 on a free port, stopped by its pid. As root the
servers run as the `postgres` user (initdb refuses root) and with `--user=root` (mariadbd)."""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tests.net import free_port, patient

USER, PASSWORD, DATABASE = "paimon", "paimon-secret", "catalog"
SQLITE_JDBC_JARS = ("/usr/share/java/sqlite-jdbc.jar", "/usr/share/java/xerial-sqlite-jdbc.jar")
POSTGRES_JDBC_JARS = ("/usr/share/java/postgresql.jar",)
MARIADB_JDBC_JARS = ("/usr/share/java/mariadb-java-client.jar",)


def first_file(paths: tuple[str, ...]) -> str | None:
    return next((p for p in paths if os.path.isfile(p)), None)


def postgres_bin() -> str | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return os.path.dirname(found[-1]) if found else None


def mariadb_bins() -> tuple[str, str] | None:
    install = shutil.which("mariadb-install-db") or shutil.which("mysql_install_db")
    server = shutil.which("mariadbd") or (os.path.isfile("/usr/sbin/mariadbd") and "/usr/sbin/mariadbd") or None
    return (install, server) if install and server else None


def _wait_port(port: int, proc_alive, log: Path, what: str, deadline_s: float) -> None:
    import socket
    end = time.monotonic() + patient(deadline_s)
    while time.monotonic() < end:
        with socket.socket() as s:
            s.settimeout(0.5)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        if not proc_alive():
            break
        time.sleep(0.2)
    text = log.read_text(errors="replace")[-3000:] if log.exists() else "(no log)"
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port}; its log:\n{text}")


def _retry(fn, log: Path, what: str, deadline_s: float = 30) -> None:
    """`fn` until the server accepts it (it listens before it is ready: "the database system is starting up")."""
    end = time.monotonic() + patient(deadline_s)
    while True:
        try:
            return fn()
        except Exception as e:  # noqa: BLE001
            if time.monotonic() > end:
                text = log.read_text(errors="replace")[-3000:] if log.exists() else "(no log)"
                raise RuntimeError(f"{what} is not ready: {e}; its log:\n{text}") from e
            time.sleep(0.3)


def _stop(pid: int, timeout: float = 30, sig: int = signal.SIGTERM, proc: subprocess.Popen | None = None) -> None:
    """Signal `pid` and wait for it to end (SIGKILL after `timeout`). A server that is our own child (`proc`) is
    reaped here: until then its pid stays valid as a zombie, and waiting for the pid alone would always time out."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc is not None and proc.poll() is not None:
            return
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    if proc is not None:
        proc.wait()


def _stop_started(pid_file: Path, proc: subprocess.Popen, sig: int) -> None:
    """Stop a server whose start failed half way (the postmaster's own pid when it wrote one)."""
    try:
        pid = int(pid_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        pid = proc.pid
    _stop(pid, sig=sig, proc=proc if pid == proc.pid else None)
    if proc.poll() is None:
        _stop(proc.pid, proc=proc)


@dataclass
class Postgres:
    port: int
    pid: int
    root: Path

    @property
    def uri(self) -> str:
        return f"jdbc:postgresql://127.0.0.1:{self.port}/{DATABASE}"

    def options(self) -> dict[str, str]:
        return {"metastore": "jdbc", "uri": self.uri, "jdbc.user": USER, "jdbc.password": PASSWORD}

    def connect(self):
        import psycopg
        return psycopg.connect(host="127.0.0.1", port=self.port, dbname=DATABASE, user=USER, password=PASSWORD,
                               autocommit=True)

    def stop(self) -> None:
        _stop(self.pid, sig=signal.SIGINT)  # PostgreSQL's fast shutdown (SIGTERM waits for every client)

    @staticmethod
    def start(root: Path) -> Postgres:
        bin_dir = postgres_bin()
        assert bin_dir, "PostgreSQL is not installed (Debian: postgresql)"
        root.mkdir(parents=True, exist_ok=True)
        (root / "pw").write_text(PASSWORD + "\n")
        as_user: list[str] = []
        if os.geteuid() == 0:  # initdb and postgres refuse to run as root
            uid = pwd.getpwnam("postgres").pw_uid
            for p in [root, *root.rglob("*")]:
                os.chown(p, uid, -1)
            os.chmod(root, 0o700)
            as_user = ["runuser", "-u", "postgres", "--"]
        data, log = root / "data", root / "server.log"
        subprocess.run([*as_user, f"{bin_dir}/initdb", "-D", str(data), "-U", USER, "--auth=md5",
                        f"--pwfile={root / 'pw'}", "-E", "UTF8", "-N"], check=True, capture_output=True,
                       timeout=patient(60))
        port = free_port()
        proc = subprocess.Popen([*as_user, f"{bin_dir}/postgres", "-D", str(data), "-p", str(port), "-k", str(root),
                                 "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "logging_collector=off"],
                                stdout=open(log, "ab"), stderr=subprocess.STDOUT, start_new_session=True)
        try:
            _wait_port(port, lambda: proc.poll() is None, log, "PostgreSQL", 30)
            import psycopg

            def create() -> None:
                with psycopg.connect(host="127.0.0.1", port=port, dbname="postgres", user=USER, password=PASSWORD,
                                     autocommit=True, connect_timeout=5) as c:
                    c.execute(f"CREATE DATABASE {DATABASE}")
            _retry(create, log, "PostgreSQL")
        except BaseException:
            _stop_started(data / "postmaster.pid", proc, signal.SIGINT)
            raise
        pid = int((data / "postmaster.pid").read_text().split()[0])  # (runuser's child: the postmaster itself)
        return Postgres(port, pid, root)


@dataclass
class MariaDB:
    port: int
    pid: int
    root: Path
    proc: subprocess.Popen | None = None  # (the server is our child: reaped when it stops)

    @property
    def uri(self) -> str:
        return f"jdbc:mysql://127.0.0.1:{self.port}/{DATABASE}"

    def options(self) -> dict[str, str]:
        return {"metastore": "jdbc", "uri": self.uri, "jdbc.user": USER, "jdbc.password": PASSWORD}

    def connect(self):
        import pymysql
        return pymysql.connect(host="127.0.0.1", port=self.port, user=USER, password=PASSWORD, database=DATABASE,
                               autocommit=True)

    def stop(self) -> None:
        _stop(self.pid, proc=self.proc)

    @staticmethod
    def start(root: Path) -> MariaDB:
        bins = mariadb_bins()
        assert bins, "MariaDB is not installed (Debian: mariadb-server)"
        install, server = bins
        root.mkdir(parents=True, exist_ok=True)
        data, log, sock = root / "data", root / "server.log", root / "sock"
        subprocess.run([install, "--no-defaults", "--user=root", f"--datadir={data}",
                        "--auth-root-authentication-method=normal", "--skip-test-db"], check=True,
                       capture_output=True, timeout=patient(120))
        port = free_port()
        proc = subprocess.Popen([server, "--no-defaults", "--user=root", f"--datadir={data}", f"--port={port}",
                                 "--bind-address=127.0.0.1", f"--socket={sock}", f"--pid-file={root / 'pid'}",
                                 f"--log-error={log}", "--innodb-buffer-pool-size=16M", "--skip-log-bin",
                                 "--innodb-log-file-size=8M"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            _wait_port(port, lambda: proc.poll() is None, log, "MariaDB", 60)
            import pymysql

            def create() -> None:
                c = pymysql.connect(unix_socket=str(sock), user="root", autocommit=True, connect_timeout=5)
                with c.cursor() as cur:
                    cur.execute(f"CREATE DATABASE {DATABASE}")
                    cur.execute(f"CREATE USER '{USER}'@'127.0.0.1' IDENTIFIED BY '{PASSWORD}'")
                    cur.execute(f"GRANT ALL ON {DATABASE}.* TO '{USER}'@'127.0.0.1'")
                c.close()
            _retry(create, log, "MariaDB")
        except BaseException:
            _stop(proc.pid, proc=proc)
            raise
        return MariaDB(port, proc.pid, root, proc)
