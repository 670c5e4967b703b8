"""The command line for the tests without its start-up: a process that has imported `paimon_ops.cli` (about 0.65
CPU-s, most of a refused command's cost) and forks a copy of itself for each command, as multiprocessing's forkserver
does. The copy takes the command's working directory, environment, arguments and standard streams, runs
`paimon_ops.cli.main()` as `python -m paimon_ops.cli` does, and exits through the interpreter (atexit handlers,
buffers flushed); its exit status is the command's. Used by `tests.cli.conftest.cli` (:func:`run`); a call that
cannot use it (the environment changed since the server started, an extra environment asked for, another thread
using it, PAIMON_CLI_FORKSERVER=0) runs in a new interpreter as before.

Protocol: one JSON request a line on stdin ({argv, cwd, env, out, err}: `out` / `err` are files the command's stdout
and stderr go to); two answer lines on stdout, {"pid"} when the command started and {"code"} when it ended (the
negative signal number when a signal ended it, as subprocess reports it).
"""
from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _command(request: dict) -> None:
    """In the forked copy: become the command, run it, exit with its status (never returns)."""
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    time.tzset()
    null = os.open(os.devnull, os.O_RDONLY)
    out = os.open(request["out"], os.O_WRONLY | os.O_TRUNC)
    err = os.open(request["err"], os.O_WRONLY | os.O_TRUNC)
    for fd, target in ((null, 0), (out, 1), (err, 2)):
        os.dup2(fd, target)
        os.close(fd)
    import paimon_ops.cli
    sys.argv = [paimon_ops.cli.__file__, *request["argv"]]
    sys.exit(paimon_ops.cli.main())  # what `python -m paimon_ops.cli` runs


def serve() -> None:
    import paimon_ops.cli  # noqa: F401 - the import each command would pay, paid once
    requests = os.fdopen(os.dup(0), "rb", buffering=0)
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)  # the commands' stdin is /dev/null; the request pipe is on a descriptor of its own
    sys.stdout.flush()
    os.dup2(2, 1)  # (nothing of ours is printed to the answer pipe but answers)
    pending = b""
    while True:
        while b"\n" not in pending:
            chunk = requests.read(1 << 16)
            if not chunk:
                return
            pending += chunk
        line, _, pending = pending.partition(b"\n")
        request = json.loads(line)
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            requests.close()
            answers.close()
            _command(request)
        answers.write(json.dumps({"pid": pid}) + "\n")
        _, status = os.waitpid(pid, 0)
        answers.write(json.dumps({"code": os.waitstatus_to_exitcode(status)}) + "\n")


# ------------------------------------------------------------------------------------------- the tests' side
def _environment() -> dict[str, str]:
    """The environment the server was started with must still be this process's (modules may read it when
    imported); pytest's PYTEST_CURRENT_TEST changes with every test phase and is passed to each command as it is."""
    return {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}


class _Client:
    _current: "_Client | None" = None
    _guard = threading.Lock()

    def __init__(self) -> None:
        from tests import lanes
        self.pid = os.getpid()
        self.env = _environment()
        self.lock = threading.Lock()
        self.log = tempfile.TemporaryFile()
        outer = lanes.set_current(None)  # a process of the session, not of the test that happened to start it
        try:
            self.proc = subprocess.Popen([sys.executable, "-m", "tests.cli_forkserver"], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=self.log, cwd=REPO)
        finally:
            lanes.set_current(outer)
        self.buffer = b""
        atexit.register(self.stop)

    @classmethod
    def acquire(cls) -> "_Client | None":
        """The server for a call now, its lock held; None when the call must start an interpreter of its own."""
        if os.environ.get("PAIMON_CLI_FORKSERVER", "1") == "0":
            return None
        with cls._guard:
            client = cls._current
            if client is not None and (client.pid != os.getpid() or client.proc.poll() is not None
                                       or client.env != _environment()):
                if client.pid == os.getpid():
                    client.retire()
                client = cls._current = None
            if client is None:
                client = cls._current = _Client()
            return client if client.lock.acquire(blocking=False) else None

    def _answer(self, deadline: float | None) -> dict | None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    self.log.seek(0)
                    raise RuntimeError("the command-line fork server ended; its log:\n"
                                       + self.log.read().decode(errors="replace")[-3000:])
                self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return json.loads(line)

    def call(self, argv: list[str], timeout: float) -> subprocess.CompletedProcess:
        """Run one command (the caller holds `lock`); raises subprocess.TimeoutExpired as subprocess.run does."""
        try:
            with tempfile.TemporaryDirectory(prefix="paimon-ops-cli-") as d:
                out, err = os.path.join(d, "out"), os.path.join(d, "err")
                open(out, "wb").close()
                open(err, "wb").close()
                assert self.proc.stdin is not None
                self.proc.stdin.write(json.dumps({"argv": argv, "cwd": str(REPO), "env": dict(os.environ),
                                                  "out": out, "err": err}).encode() + b"\n")
                self.proc.stdin.flush()
                deadline = time.monotonic() + timeout
                started = self._answer(deadline + 30)
                assert started is not None, "the command-line fork server did not start the command"
                ended = self._answer(deadline)
                if ended is None:
                    os.kill(started["pid"], signal.SIGKILL)
                    self._answer(None)
                with open(out, encoding="utf-8", errors="replace") as f:
                    stdout = f.read()
                with open(err, encoding="utf-8", errors="replace") as f:
                    stderr = f.read()
                cmd = [sys.executable, "-m", "paimon_ops.cli", *argv]
                if ended is None:
                    raise subprocess.TimeoutExpired(cmd, timeout, output=stdout, stderr=stderr)
                return subprocess.CompletedProcess(cmd, ended["code"], stdout, stderr)
        finally:
            self.lock.release()

    def stop(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except Exception:  # noqa: BLE001 - it is going away either way
                self.proc.kill()
                self.proc.wait()

    def retire(self) -> None:
        """Stop it for good when it is replaced (a changed environment): its log's descriptor closed, its exit hook
        gone, as the Java harness retires its servers."""
        self.stop()
        self.log.close()
        atexit.unregister(self.stop)


def run(argv: list[str], timeout: float) -> subprocess.CompletedProcess | None:
    """`python -m paimon_ops.cli *argv` in REPO with this process's environment, through the fork server; None when
    it cannot serve this call (the caller then starts the interpreter itself)."""
    from tests import lanes
    lanes.check_start([sys.executable, "-m", "paimon_ops.cli", *argv])  # the lanes see the command as it is
    client = _Client.acquire()
    return None if client is None else client.call(argv, timeout)


if __name__ == "__main__":
    serve()
