"""A kill -9 at any file event of any destructive operation leaves nothing listed that cannot be
read, and a rerun reclaims whatever the killed run left.

Every destructive operation — snapshot expiry, tag expiry, tag deletion, orphan removal, rollback, compaction,
partition expiry, manifest compaction — runs once uninterrupted on a copy of a Java Paimon 0.9 table, counting its
file events (FileIO's fault seam: every write, rename and delete). Then, for every k, a forked child process runs it
on a fresh copy and is killed with SIGKILL at its k-th event: a real process death, no cleanup code runs. Afterwards:

* Java Paimon 0.9 finds every file of every snapshot and tag that is still listed (`check_files`): the kill left
  nothing listed that cannot be read (tag deletion: the tag goes first; expiry: the snapshots go first — a journal
  records their files);
* a rerun (uninterrupted) converges: the delete operations reach exactly the files of the uninterrupted run, the
  write operations leave no file that nothing references, and no journal;
* Java reads the latest snapshot and every tag exactly as after the uninterrupted run.

`test_the_cli_killed_from_outside` kills real `paimon-ops` processes from outside, mid-compaction and mid-expiry."""
from __future__ import annotations

import datetime as dt
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

import paimon_ops as po
from paimon_ops.table.fileio import FileIO
from paimon_ops.table.references import branch_tables, collect_used
from paimon_ops.table.table import FileStoreTable
from tests.cli.conftest import REPO
from tests.interop import java_harness as jh
from tests.interop.java_harness import JavaTable
from tests.lifecycle.helpers import fast_tmpdir
from tests.safety.java_proof import java_views
from tests.safety.util import age

pytestmark = [pytest.mark.java]

SCHEMA = {"fields": [{"name": "dt", "type": "STRING NOT NULL"}, {"name": "id", "type": "INT NOT NULL"},
                     {"name": "v", "type": "STRING"}],
          "partition_keys": ["dt"], "primary_keys": ["dt", "id"],
          "options": {"bucket": "1", "deletion-vectors.enabled": "true", "manifest.merge-min-count": "100"}}
NOW = int(time.time() * 1000)
ORPHANS = ("dt=2024-01-01/bucket-0/data-orphan-1.parquet", "manifest/manifest-orphan-1", "index/index-orphan-1")


def _plan(name: str, t: po.Table):
    m = t.maintenance
    return {
        "expire-snapshots": lambda: m.expire_snapshots(retain_min=1, min_age=dt.timedelta(milliseconds=1)),
        "expire-tags": lambda: m.expire_tags(older_than=NOW + 86_400_000),
        "delete-tag": lambda: t.tags.delete("t1"),
        "remove-orphans": lambda: m.remove_orphans(min_age=dt.timedelta(days=1)),
        "rollback": lambda: m.rollback(tag="t3"),
        "compact": lambda: m.compact(mode="full"),
        "expire-partitions": lambda: m.expire_partitions(expiration_time=dt.timedelta(days=1), now=NOW),
        "compact-manifests": lambda: m.compact_manifests(),
    }[name]()


OPS = ["expire-snapshots", "expire-tags", "delete-tag", "remove-orphans", "rollback", "compact", "expire-partitions",
       "compact-manifests"]
WRITES = {"compact", "expire-partitions", "compact-manifests"}  # new files with fresh names: compared by content


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    """Java-written history: 6 snapshots over two old partitions (a full compaction in the middle; deletion
    vectors), tags t1 (snapshot 1, expired by Java) and t3, unmerged manifests, a few old orphans."""
    root = Path(fast_tmpdir("kill9-base-"))
    wh = root / "wh"
    t = JavaTable(wh, "db", "t")
    batches = [{"rows": [[d, i, f"v{n}-{i}"] for d in ("2024-01-01", "2024-01-02") for i in range(n, n + 8)]}
               for n in range(5)]
    batches[3]["compact"] = True
    jh.run_many([("create_table", t.payload(schema=SCHEMA)), ("write", t.payload(batches=batches[:1])),
                 ("create_tag", t.payload(tag="t1", snapshot_id=1)),
                 ("write", t.payload(batches=batches[1:3], first_commit_identifier=2)),
                 ("create_tag", t.payload(tag="t3", snapshot_id=3)),
                 ("write", t.payload(batches=batches[3:], first_commit_identifier=4)),
                 ("expire_snapshots", t.payload(retain_min=1, retain_max=5))])
    table = wh / "db.db" / "t"
    assert not (table / "snapshot" / "snapshot-1").exists()
    for rel in ORPHANS:
        (table / rel).write_bytes(b"an old leftover")
    age(str(wh), days=3)
    yield wh
    shutil.rmtree(root, ignore_errors=True)


class _Kill:
    """The fault hook: counts file events; SIGKILLs its own process at event `k` (0: never)."""

    def __init__(self, k: int = 0):
        self.k = k
        self.n = 0

    def __call__(self, op: str, path: str) -> None:
        self.n += 1
        if self.n == self.k:
            os.kill(os.getpid(), signal.SIGKILL)


def _run(table_root: Path, op: str, hook: Callable | None = None) -> None:
    """Plan and execute `op`; with `hook`, every FileIO the run opens — the driver's and each compaction task's —
    reports its file events to it."""
    raw = FileStoreTable(str(table_root), identifier="db.t")
    if hook is None:
        _plan(op, po.Table(raw)).execute(runner=po.LocalRunner(workers=1))
        return
    original = FileIO.resolve

    def resolve(location: str, fault_hook=None, options=None):  # type: ignore[no-untyped-def]
        return original(location, fault_hook or hook, options)
    FileIO.resolve = staticmethod(resolve)  # type: ignore[method-assign]
    try:
        _plan(op, po.Table(raw.with_fault_hook(hook))).execute(runner=po.LocalRunner(workers=1))
    finally:
        FileIO.resolve = staticmethod(original)  # type: ignore[method-assign]


def _copy(wh: Path, dst: Path) -> Path:
    shutil.copytree(wh, dst, symlinks=True)
    return dst / "db.db" / "t"


def _state(t: Path, op: str) -> dict[str, bytes | None]:
    """Every file (metadata files with their bytes); for write operations only what does not carry a fresh name."""
    out: dict[str, bytes | None] = {}
    for p in sorted(t.rglob("*")):
        if p.is_dir():
            continue
        rel = str(p.relative_to(t))
        meta = rel.split("/")[0] in ("snapshot", "tag", "changelog")
        if op in WRITES and (meta or rel.startswith("manifest/") or "/data-" in rel or rel.startswith("index/")):
            continue
        out[rel] = p.read_bytes() if meta and op not in WRITES else None
    return out


def _unreferenced(t: Path) -> set[str]:
    """Files in the table's file directories that no snapshot, tag or changelog names (planted orphans excluded)."""
    table = FileStoreTable(str(t))
    used = collect_used(table, branch_tables(table)).names
    out = set()
    for sub in ("manifest", "index", "dt=2024-01-01", "dt=2024-01-02"):
        for p in (t / sub).rglob("*"):
            rel = str(p.relative_to(t))
            if p.is_file() and p.name not in used and rel not in ORPHANS:
                out.add(rel)
    return out


def _journals(t: Path) -> list[str]:
    d = t / ".paimon-ops"
    return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


@pytest.mark.parametrize("op", OPS)
def test_kill_9_at_every_file_event_then_rerun(base, tmp_path, op):
    work = Path(fast_tmpdir(f"kill9-{op}-"))
    try:
        clean = _copy(base, work / "clean")
        counter = _Kill()
        _run(clean, op, counter)
        events = counter.n
        assert events > 0, "the operation must touch files"
        want = _state(clean, op)
        killed, rerun = [], []
        for k in range(1, events + 1):
            t = _copy(base, work / f"k{k}")
            pid = os.fork()
            if pid == 0:  # the child: run until the k-th file event kills it
                try:
                    _run(t, op, _Kill(k))
                finally:
                    os._exit(3)  # not killed: never reached the k-th event (the parent fails the test)
            _, status = os.waitpid(pid, 0)
            assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, f"event {k}: {status}"
            killed.append(_copy(t.parent.parent, work / f"k{k}-as-killed"))
            # the rerun, uninterrupted — unless the kill came after the run's last change (removing its emptied
            # journal directory): then it is done, and a rerun of a tag deletion would rightly find no tag. (A write
            # operation always reruns: its state leaves out the files it writes, so it cannot tell it is done.)
            if op in WRITES or _journals(t) or _state(t, op) != want:
                _run(t, op)
            assert not _journals(t), f"event {k}: a journal is left after the rerun"
            if op in WRITES:
                assert not _unreferenced(t), f"event {k}: unreferenced files after the rerun: {_unreferenced(t)}"
            assert _state(t, op) == want, f"event {k}: the rerun did not converge"
            rerun.append(t)
        # Java: nothing listed after a kill misses a file; after the reruns, every table reads as the clean run's
        views = java_views(killed + rerun + [clean])
        after_kill, after_rerun, reference = views[:events], views[events:-1], views[-1]
        for k, v in enumerate(after_kill, 1):
            assert v["missing"] == [], f"{op}: kill at event {k} left unreadable history: {v['missing'][:3]}"
        for k, v in enumerate(after_rerun, 1):
            assert v == reference, f"{op}: kill at event {k} then rerun reads differently in Java"
        assert reference["missing"] == []
    finally:
        shutil.rmtree(work, ignore_errors=True)


SLOW_DISK_MAIN = """
import sys, time
from paimon_ops.table.fileio import FileIO
original = FileIO.resolve
def resolve(location, fault_hook=None, options=None):
    return original(location, fault_hook or (lambda op, path: time.sleep(0.02)), options)
FileIO.resolve = staticmethod(resolve)
from paimon_ops.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    """A table with enough rows that compacting it takes seconds: 4 commits of 60,000 rows over 4 buckets."""
    import numpy as np
    import pyarrow as pa

    from paimon_ops.table.writer import TableWriter, create_table
    wh = tmp_path_factory.mktemp("kill9-big") / "wh"
    wh.mkdir()
    t = create_table(str(wh), "db.t", [("k", "INT"), ("v", "STRING")], [], ["k"], {"bucket": "4"})
    for i in range(4):
        w = TableWriter(t.refresh())
        keys = np.arange(i * 10_000, i * 10_000 + 60_000, dtype=np.int32)
        w.write(pa.table({"k": keys, "v": [f"v{i}-{k}" for k in keys.tolist()]}))
        w.commit()
    return wh


@pytest.mark.parametrize("argv", [
    ["compact", "--mode", "full", "--local"],
    ["expire-snapshots", "--retain-min", "1", "--min-age", "1 ms", "--local"],
])
def test_the_cli_killed_from_outside(big, tmp_path, argv):
    """A real `paimon-ops` process killed with SIGKILL by another process in the middle of its work (once its journal
    exists), then the same command again: Java finds every listed file after the kill, and reads the rerun's result
    as the uninterrupted run's."""
    if argv[0] == "expire-snapshots":  # something to expire: a compaction first (untouched)
        base = tmp_path / "base"
        shutil.copytree(big, base)
        assert subprocess.run([sys.executable, "-m", "paimon_ops.cli", "compact", str(base), "db.t", "--local"],
                              cwd=REPO, capture_output=True).returncode == 0
    else:
        base = big
    t = _copy(base, tmp_path / "k")
    cmd = [sys.executable, "-m", "paimon_ops.cli", argv[0], str(t.parent.parent), "db.t", *argv[1:]]
    # the CLI's own main, on a slow disk (every file event takes 20 ms), so that the kill lands mid-run
    slow = [sys.executable, "-c", SLOW_DISK_MAIN, *cmd[3:]]
    p = subprocess.Popen(slow, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while not _journals(t) and p.poll() is None and time.time() < deadline:
        time.sleep(0.002)
    time.sleep(0.1)
    p.send_signal(signal.SIGKILL)
    assert p.wait(timeout=30) == -signal.SIGKILL, "the command finished before it could be killed"
    assert java_views([t])[0]["missing"] == []
    r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert not _journals(t)
    clean = _copy(base, tmp_path / "clean")
    subprocess.run([*cmd[:4], str(clean.parent.parent), *cmd[5:]], cwd=REPO, check=True, capture_output=True)
    a, b = java_views([t, clean])
    assert a == b and a["missing"] == []
