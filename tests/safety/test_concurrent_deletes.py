"""Deletes past one unlink at a time: a phase's files are deleted by `file-operation.thread-num` threads (in batches per
directory), and the crash-safe order still holds — owners first, then data files, then manifests, then manifest
lists, each phase complete before the next starts (maintenance.md §2.3–2.4).

On a Java Paimon 0.9 table with a few hundred files to expire over eight bucket directories, every delete passing
through FileIO's fault seam (which records it and waits a little, so that batches overlap):

* the threads really overlap, never more than the option allows, and the phases never do; the files left are
  exactly a one-thread run's;
* a delete that fails stops the other batches and no later phase starts; the rerun converges;
* a kill -9 while several deletes are in flight: Java finds every file of every listed snapshot and tag, and the
  rerun converges to the uninterrupted run's files, read the same by Java;
* an HDFS-like file system (not local, no bulk delete: one round trip a file) deletes concurrently too, and ends
  where the local run ends."""
from __future__ import annotations

import datetime as dt
import os
import posixpath
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest

import paimon_ops as po
from paimon_ops.errors import PaimonOpsError
from paimon_ops.table.arrow_fileio import ArrowFileIO
from paimon_ops.table.fileio import InjectedFault
from paimon_ops.table.table import FileStoreTable
from tests.interop import java_harness as jh
from tests.interop.java_harness import JavaTable
from tests.lifecycle.helpers import fast_tmpdir
from tests.safety.java_proof import java_views

pytestmark = [pytest.mark.java]

THREADS = 4
SCHEMA = {"fields": [{"name": "dt", "type": "STRING NOT NULL"}, {"name": "id", "type": "INT NOT NULL"},
                     {"name": "v", "type": "STRING"}],
          "partition_keys": ["dt"], "primary_keys": ["dt", "id"],
          "options": {"bucket": "4", "file-operation.thread-num": str(THREADS),
                      "num-sorted-run.compaction-trigger": "100", "manifest.merge-min-count": "5"}}


@pytest.fixture(scope="module")
def base():
    """Java-written: 24 commits over two partitions and four buckets (eight bucket directories, ~190 data files),
    then a full compaction; tag t1 on snapshot 2 keeps its files."""
    root = Path(fast_tmpdir("concurrent-deletes-"))
    t = JavaTable(root / "wh", "db", "t")
    batches = [{"rows": [[d, i, f"v{n}-{i}"] for d in ("2024-01-01", "2024-01-02") for i in range(n, n + 40)]}
               for n in range(24)]
    batches[-1]["compact"] = True
    jh.run_many([("create_table", t.payload(schema=SCHEMA)), ("write", t.payload(batches=batches[:2])),
                 ("create_tag", t.payload(tag="t1", snapshot_id=2)),
                 ("write", t.payload(batches=batches[2:], first_commit_identifier=3))])
    yield root / "wh" / "db.db" / "t"
    shutil.rmtree(root, ignore_errors=True)


class Seam:
    """The fault hook: records every delete (path, in order), how many are in flight at once, and waits `pause`
    seconds in each; at the `kill_at`-th delete (once another is in flight too) SIGKILLs its process, at the
    `fail_at`-th raises an injected failure."""

    def __init__(self, pause: float = 0.002, kill_at: int = 0, fail_at: int = 0):
        self.pause, self.kill_at, self.fail_at = pause, kill_at, fail_at
        self.lock = threading.Lock()
        self.deleted: list[str] = []
        self.in_flight = self.most = 0

    def __call__(self, op: str, path: str) -> None:
        if op != "delete":
            return
        with self.lock:
            self.deleted.append(path)
            n = len(self.deleted)
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
            overlapping = self.in_flight > 1
        try:
            if self.kill_at and n >= self.kill_at and overlapping:
                os.kill(os.getpid(), signal.SIGKILL)
            if n == self.fail_at:
                raise InjectedFault(f"injected failure at delete #{n}: {path}")
            time.sleep(self.pause)
        finally:
            with self.lock:
                self.in_flight -= 1


def _expire(table_root: Path, hook=None, threads: int | None = None):
    raw = FileStoreTable(str(table_root), identifier="db.t")
    if threads is not None:
        raw = FileStoreTable(str(table_root), identifier="db.t",
                             options_override={"file-operation.thread-num": str(threads)})
    if hook is not None:
        raw = raw.with_fault_hook(hook)
    plan = po.Table(raw).maintenance.expire_snapshots(retain_min=1, min_age=dt.timedelta(milliseconds=1))
    return plan.execute(table=raw, runner=po.LocalRunner())


PHASES = ("snapshot", "data", "manifest", "list", "journal")


def _phase(path: str) -> str:
    d, name = posixpath.split(path)
    if posixpath.basename(d) == "snapshot":
        return "snapshot"
    if ".paimon-ops" in (posixpath.basename(d), name):  # the journal, then its emptied directory
        return "journal"
    if name.startswith(("manifest-list-", "index-manifest-")):
        return "list"
    if posixpath.basename(d) in ("manifest", "index"):
        return "manifest"
    return "data"


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and ".paimon-ops" not in p.parts}


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src.parent.parent, dst, symlinks=True)
    return dst / "db.db" / "t"


def test_a_phase_is_deleted_concurrently_within_bounds_and_phases_keep_their_order(base, tmp_path):
    t, one = _copy(base, tmp_path / "a"), _copy(base, tmp_path / "b")
    seam = Seam()
    report = _expire(t, seam)
    assert report.deleted["data"] >= 150 and report.deleted["manifest"] > 0, report.deleted
    assert 2 <= seam.most <= THREADS, seam.most
    order = [PHASES.index(_phase(p)) for p in seam.deleted]
    early = [(p, seam.deleted[i - 1]) for i, p in enumerate(seam.deleted) if i and order[i] < order[i - 1]]
    assert not early, f"a phase started before the one before it was complete: {early}"
    assert {"snapshot", "data", "manifest", "list"} <= {_phase(p) for p in seam.deleted}
    single = Seam()
    _expire(one, single, threads=1)
    assert single.most == 1
    assert _files(t) == _files(one)
    a, b = java_views([t, one])
    assert a == b and a["missing"] == []


def test_a_failing_delete_stops_the_phase_and_no_later_phase_starts(base, tmp_path):
    t, clean = _copy(base, tmp_path / "a"), _copy(base, tmp_path / "clean")
    first_data = next(i for i, p in enumerate(_order(base, tmp_path)) if _phase(p) == "data")
    seam = Seam(fail_at=first_data + 40)
    with pytest.raises((PaimonOpsError, InjectedFault)):
        _expire(t, seam)
    phases = {_phase(p) for p in seam.deleted}
    assert "manifest" not in phases and "list" not in phases, "a later phase started after a failure"
    manifests = {p.name for p in (t / "manifest").iterdir()}
    assert {p.name for p in (base / "manifest").iterdir()} == manifests
    assert java_views([t])[0]["missing"] == []
    _expire(t)  # the rerun finishes (its journal names the files the failed run did not delete)
    _expire(clean)
    assert _files(t) == _files(clean)
    assert not (t / ".paimon-ops").exists() or not list((t / ".paimon-ops").iterdir())


def _order(base: Path, tmp_path: Path) -> list[str]:
    """The deletes of an uninterrupted run (on a copy of its own), in order."""
    seam = Seam(pause=0)
    _expire(_copy(base, tmp_path / "order"), seam)
    return seam.deleted


@pytest.mark.parametrize("where", [0.05, 0.5, 0.95])
def test_kill_9_in_the_middle_of_a_concurrent_batch_then_rerun(base, tmp_path, where):
    """A forked child expires the table and SIGKILLs itself at a delete while another delete thread is mid-batch
    (at 5 %, 50 % and 95 % of the data-file phase): a real process death, no cleanup runs."""
    deletes = _order(base, tmp_path)
    data = [i for i, p in enumerate(deletes) if _phase(p) == "data"]
    k = data[int(len(data) * where)] + 1
    t, clean = _copy(base, tmp_path / "k"), _copy(base, tmp_path / "clean")
    pid = os.fork()
    if pid == 0:
        try:
            _expire(t, Seam(kill_at=k))
        finally:
            os._exit(3)  # not killed: the test fails below
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, status
    left = _files(t)
    assert 0 < len(_files(base) - left) < len(deletes), "the kill did not land mid-phase"
    killed = _copy(t, tmp_path / "as-killed")
    _expire(t)
    assert not list((t / ".paimon-ops").glob("journal-*"))
    _expire(clean)
    assert _files(t) == _files(clean)
    after_kill, after_rerun, reference = java_views([killed, t, clean])
    assert after_kill["missing"] == [], f"the kill left unreadable history: {after_kill['missing'][:3]}"
    assert after_rerun == reference and reference["missing"] == []


@pytest.fixture
def hdfs_like():
    """A scheme whose FileIO is not local and deletes one file a round trip (pyarrow's generic file system path, as
    for hdfs://), over the local disk."""
    import pyarrow.fs as pafs

    from paimon_ops.table import fileio

    def opener(scheme, rest, options, hook):
        authority, _, path = rest.partition("/")
        return ArrowFileIO(pafs.SubTreeFileSystem("/", pafs.LocalFileSystem()), scheme, authority, hook), "/" + path
    fileio.register_opener(["hdfslike"], opener)
    yield "hdfslike://namenode"
    fileio._OPENERS.pop("hdfslike", None)


def test_an_hdfs_like_file_system_deletes_concurrently(base, tmp_path, hdfs_like):
    t, local = _copy(base, tmp_path / "a"), _copy(base, tmp_path / "b")
    seam = Seam()
    raw = FileStoreTable(f"{hdfs_like}{t}", identifier="db.t").with_fault_hook(seam)
    assert not raw.io.is_local and not raw.io.bulk_delete
    report = po.Table(raw).maintenance.expire_snapshots(retain_min=1, min_age=dt.timedelta(milliseconds=1)).execute(
        table=raw)
    assert report.deleted["data"] >= 150 and 2 <= seam.most <= THREADS, (report.deleted, seam.most)
    order = [PHASES.index(_phase(p)) for p in seam.deleted]
    assert order == sorted(order)
    _expire(local)
    assert _files(t) == _files(local)
    assert java_views([t])[0]["missing"] == []
