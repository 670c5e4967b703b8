"""Many tables at once: worker processes, each maintaining one table at a time, the outcomes in the tables' order.

A table's maintenance is a whole run on that table alone — plan, verify at the moment of acting, journal, delete or
commit — so a table that fails (an error, or a worker process that dies) fails alone and the others go on.

Processes, not threads: planning is mostly Python (JSON and Avro metadata, path logic) and holds the GIL. Measured on
1,000 of bench_fleet.py's Java-written tables on 2 cores (`remove-orphans`): 10.0 s one after the other, 8.5 s with
two threads, 4.4 s with two processes. The workers are forked when the pool starts — before this process has touched
any storage, so that no client state (an object store's runtime, its connection pools and threads) is inherited
half made; each worker opens its own. pyarrow's thread pools and its allocator's background thread re-initialise in
a forked child. Each worker's share of the cores (`runner.use_cores`) bounds its task threads, so N workers use
about as many threads, and as much memory, as one run with all the cores; a worker holds one table's plan at a time,
and an output too large to pass back whole (a big table's JSON plan) is handed over in a temporary file (`Spool`).

Interrupts: while tables run, SIGINT (Ctrl-C reaches every process of the terminal's group) and SIGTERM are taken by
this process, which stops the workers itself: each worker ignores SIGINT, and a SIGTERM interrupts the table in
progress exactly as it interrupts a run on that table alone (the current delete finishes, nothing listed is left
unreadable, a journal lets the next run finish) and starts no further table. A second interrupt kills the workers
(SIGKILL: what a kill -9 of a single-table run leaves, which the next run finishes). A worker whose parent dies gets
SIGTERM (PR_SET_PDEATHSIG).
"""
from __future__ import annotations

import ctypes
import multiprocessing
import os
import shutil
import signal
import sys
import tempfile
import threading
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Iterator, Sequence

from paimon_ops.execution.tasks import use_cores

OK, ERROR, INTERRUPTED, NOT_STARTED, LOST = "ok", "error", "interrupted", "not started", "lost"


@dataclass
class Outcome:
    """One item's outcome: `value` is what the work returned (status ok); otherwise `message` says what happened
    (error: an exception the work let through; interrupted; not started; lost: its worker process died)."""

    index: int
    item: str
    status: str
    value: Any = None
    message: str = ""


def default_processes() -> int:
    """One worker per CPU core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # (not Linux)
        return max(1, os.cpu_count() or 1)


_spool_dir: str | None = None  # in a worker: where a large output goes (its pool's temporary directory)


class Spool:
    """Text made in a worker and written out by the parent: held in memory up to `limit` characters, beyond that in
    a temporary file of the pool's directory (the parent copies it out and removes it). In the parent itself it
    stays in memory."""

    limit = 1 << 20

    def __init__(self) -> None:
        self.directory = _spool_dir
        self.parts: list[str] = []
        self.size = 0
        self.path: str | None = None
        self._file: Any = None

    def write(self, text: str) -> None:
        if self._file is not None:
            self._file.write(text)
            return
        self.parts.append(text)
        self.size += len(text)
        if self.size > self.limit and self.directory is not None:
            fd, self.path = tempfile.mkstemp(prefix="out-", dir=self.directory)
            self._file = os.fdopen(fd, "w", encoding="utf-8")
            self._file.write("".join(self.parts))
            self.parts = []

    def __getstate__(self) -> dict[str, Any]:
        if self._file is not None:
            self._file.close()
            self._file = None
        return {"text": "".join(self.parts), "path": self.path}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.directory, self._file, self.size = None, None, 0
        self.parts, self.path = [state["text"]], state["path"]

    def copy_to(self, out: Any) -> None:
        """Write the text to `out` (and remove its file)."""
        self.__getstate__()
        if self.path is None:
            out.write("".join(self.parts))
            return
        try:
            with open(self.path, encoding="utf-8") as f:
                shutil.copyfileobj(f, out, 1 << 20)
        finally:
            os.unlink(self.path)


class _Worker:
    def __init__(self, process: multiprocessing.process.BaseProcess, conn: Connection) -> None:
        self.process, self.conn = process, conn
        self.busy: int | None = None  # the index of the item it maintains


class Workers:
    """`processes` worker processes running `work(item)` (a picklable result) for items given to `run`. Start it
    before touching storage (module docstring); close it when done (a context manager)."""

    def __init__(self, work: Callable[[str], Any], processes: int) -> None:
        self.work = work
        self.interrupted = False  # the run was interrupted (SIGINT / SIGTERM)
        self.killed = False  # a second interrupt killed the workers
        self.spool_dir = tempfile.mkdtemp(prefix="paimon-ops-fleet-")
        self.workers: list[_Worker] = []
        share = max(1, default_processes() // processes)
        context = multiprocessing.get_context("fork")
        sys.stdout.flush()  # (a child must not inherit unwritten output: it would be written twice)
        sys.stderr.flush()
        for _ in range(processes):
            mine, theirs = context.Pipe()
            others = [w.conn for w in self.workers]
            p = context.Process(target=_serve, args=(theirs, mine, others, work, share, os.getpid(), self.spool_dir),
                                daemon=True)
            p.start()
            theirs.close()
            self.workers.append(_Worker(p, mine))

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------ running
    def run(self, items: Sequence[str]) -> Iterator[Outcome]:
        """Every item's outcome, in the items' order, each as soon as it and all before it are done."""
        done: dict[int, Outcome] = {}
        idle = [w for w in self.workers]
        given = emitted = 0
        restore = self._take_signals()
        try:
            while emitted < len(items):
                while idle and given < len(items) and not self.interrupted:
                    w = idle.pop(0)
                    try:
                        w.conn.send((given, items[given]))
                    except OSError:  # died while idle
                        continue
                    w.busy = given
                    given += 1
                busy = [w for w in self.workers if w.busy is not None]
                if not busy:  # interrupted, or no worker left: the rest do not start
                    why = "the run was interrupted" if self.interrupted else "no worker process is left"
                    for i in range(given, len(items)):
                        done[i] = Outcome(i, items[i], NOT_STARTED, message=f"not started: {why}")
                    given = len(items)
                else:
                    for conn in wait([w.conn for w in busy]):
                        w = next(w for w in busy if w.conn is conn)
                        outcome = self._receive(w, items)
                        done[outcome.index] = outcome
                        if w.busy is None and not self.interrupted:
                            idle.append(w)
                while emitted in done:
                    yield done.pop(emitted)
                    emitted += 1
        finally:
            restore()

    def _receive(self, w: _Worker, items: Sequence[str]) -> Outcome:
        index = w.busy
        assert index is not None
        try:
            got, status, value = w.conn.recv()
        except (EOFError, OSError):  # the worker died: its table is as a killed run leaves it
            w.process.join(timeout=30)
            code = w.process.exitcode
            how = (f"was killed by signal {-code}" if code is not None and code < 0 else
                   f"exited with status {code}" if code is not None else "stopped answering")
            w.busy = None
            self.workers.remove(w)
            w.conn.close()
            return Outcome(index, items[index], LOST, message=f"the worker process maintaining it {how}; nothing "
                           "listed is left unreadable (crash-safe order and journal) and the next run finishes it")
        w.busy = None
        return Outcome(got, items[got], status, value if status == OK else None,
                       "" if status == OK else str(value))

    def _take_signals(self) -> Callable[[], None]:
        """SIGINT / SIGTERM stop the workers (module docstring) until the returned function restores the handlers."""
        if threading.current_thread() is not threading.main_thread():
            return lambda: None

        def stop(signum: int, frame: Any) -> None:
            if not self.interrupted:
                self.interrupted = True
                self._signal(signal.SIGTERM)
            elif not self.killed:
                self.killed = True
                self._signal(signal.SIGKILL)

        before = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}

        def restore() -> None:
            for s, h in before.items():
                signal.signal(s, h)
        return restore

    def _signal(self, sig: int) -> None:
        for w in self.workers:
            if w.process.pid is not None:
                try:
                    os.kill(w.process.pid, sig)
                except ProcessLookupError:
                    pass

    def close(self) -> None:
        for w in self.workers:
            try:
                w.conn.send(None)
            except OSError:
                pass
        for w in self.workers:
            w.process.join(timeout=30)
            if w.process.is_alive():
                w.process.kill()
                w.process.join()
            w.conn.close()
        self.workers = []
        shutil.rmtree(self.spool_dir, ignore_errors=True)


def run_here(work: Callable[[str], Any], items: Sequence[str], stopped: Callable[[Any], bool]) -> Iterator[Outcome]:
    """`Workers.run` in this process, one item after the other (`--parallel 1`): an interrupt reaches the item in
    progress (`stopped(value)` tells the work was interrupted), and no further item starts."""
    interrupted = False
    for i, item in enumerate(items):
        if interrupted:
            yield Outcome(i, item, NOT_STARTED, message="not started: the run was interrupted")
            continue
        try:
            value = work(item)
        except KeyboardInterrupt as e:
            interrupted = True
            yield Outcome(i, item, INTERRUPTED, message=f"interrupted ({e or 'Ctrl-C'})")
            continue
        interrupted = stopped(value)
        yield Outcome(i, item, OK, value)


# ---------------------------------------------------------------------------------------------- the worker side
_stopping = False


def _stop(signum: int, frame: Any) -> None:
    """SIGTERM in a worker: interrupt the table in progress (once); no further table starts."""
    global _stopping
    if not _stopping:
        _stopping = True
        raise KeyboardInterrupt(f"signal {signum}")


def _die_with_parent(parent: int) -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (AttributeError, OSError):  # (not Linux)
        pass
    if os.getppid() != parent:  # the parent died before that
        os.kill(os.getpid(), signal.SIGTERM)


def _serve(conn: Connection, parent_end: Connection, others: Sequence[Connection], work: Callable[[str], Any],
           cores: int, parent: int, spool_dir: str) -> None:
    """A worker's loop: items in, results out, until told to stop (None), stopped by SIGTERM, or orphaned."""
    global _spool_dir
    _spool_dir = spool_dir
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _stop)
    parent_end.close()
    for c in others:
        c.close()
    sys.stdout = sys.stderr  # (what a worker prints must not interleave with the parent's ordered output)
    code = 0
    try:
        _die_with_parent(parent)
        use_cores(cores)
        while not _stopping:
            msg = conn.recv()
            if msg is None:
                break
            index, item = msg
            try:
                result: tuple[int, str, Any] = (index, OK, work(item))
            except KeyboardInterrupt as e:
                result = (index, INTERRUPTED, f"interrupted ({e})")
            except Exception as e:  # noqa: BLE001 - the work words its own errors; anything else still fails alone
                result = (index, ERROR, f"{type(e).__name__}: {e}")
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})  # (a result is sent whole)
            try:
                conn.send(result)
            finally:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    except (KeyboardInterrupt, EOFError, OSError):
        pass
    except BaseException:  # noqa: BLE001 - never a traceback from a worker
        code = 1
    finally:
        try:
            sys.stderr.flush()
        finally:
            os._exit(code)


__all__ = ["Workers", "Outcome", "Spool", "run_here", "default_processes", "OK", "ERROR", "INTERRUPTED",
           "NOT_STARTED", "LOST"]
