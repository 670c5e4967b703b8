"""Proof: commit behaviour under concurrency, conflicts and injected faults.

* racing committers (separate processes, and threads) all commit APPEND with consecutive snapshot ids;
* a COMPACT-style commit whose DELETE files a concurrent commit already removed raises CommitConflictError,
  writes no snapshot and leaves no manifest behind (also when it first loses the race for the snapshot id);
* a fault injected at every write / rename of a commit leaves the table readable by pypaimon at the old
  snapshot with no new metadata left over, and a retry succeeds.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pyarrow as pa
import pytest

from paimon_ops.errors import CommitConflictError, PaimonOpsError
from paimon_ops.format.manifest import FileKind, ManifestEntry
from paimon_ops.table.commit import CommitChanges, FileStoreCommit
from paimon_ops.table.fileio import InjectedFault, fault_after
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import FileSystemCatalog
from paimon_ops.table.writer import TableWriter, write_rows
from tests import pypaimon_util as pu

REPO = Path(__file__).resolve().parents[2]


def _names(d: Path) -> set[str]:
    return set(os.listdir(d)) if d.is_dir() else set()


def _rows(wh: str, ident: str, **kw) -> list[tuple]:
    return sorted(tuple(r.values()) for r in pu.read(wh, ident, **kw).to_pylist())


@pytest.fixture
def append_table(tmp_path) -> tuple[str, str]:
    wh = str(tmp_path / "wh")
    t = pu.create_table(wh, "db.ap", pa.schema([("w", pa.int32()), ("i", pa.int32())]), options={"bucket": "-1"})
    pu.write(t, {"w": [-1], "i": [0]})
    return wh, "db.ap"


@pytest.fixture
def pk_table(tmp_path) -> tuple[str, str]:
    wh = str(tmp_path / "wh")
    t = pu.create_table(wh, "db.pk", pa.schema([("k", pa.int32()), ("v", pa.string())]), primary_keys=["k"],
                        options={"bucket": "1"})
    pu.write(t, {"k": [1, 2, 3], "v": ["a", "b", "c"]})
    pu.write(t, {"k": [4, 5], "v": ["d", "e"]})
    return wh, "db.pk"


_COMMITTER = textwrap.dedent("""
    import os, sys, time
    import pyarrow as pa
    from paimon_ops.table.table import FileSystemCatalog
    from paimon_ops.table.writer import TableWriter
    wh, ident, who, rounds, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    ids = []
    for r in range(rounds):
        w = TableWriter(FileSystemCatalog(wh).get_table(ident))
        w.write(pa.table({"w": pa.array([who] * 3, pa.int32()), "i": pa.array([r * 10 + j for j in range(3)], pa.int32())}))
        while not os.path.exists(go):
            time.sleep(0.001)
        ids.append(w.commit().id)
    print(" ".join(map(str, ids)))
""")


def test_racing_processes_commit_with_consecutive_ids(append_table, tmp_path):
    wh, ident = append_table
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", _COMMITTER, wh, ident, str(who), "3", str(go)], cwd=REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for who in range(3)]
    time.sleep(0.3)
    go.write_text("go")
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [o[1][-2000:] for o in outs]
    ids = sorted(int(x) for o, _ in outs for x in o.split())
    assert ids == list(range(2, 11)), ids  # snapshot 1 is pypaimon's; 9 commits, no gaps, no duplicates
    table = FileSystemCatalog(wh).get_table(ident)
    assert [s.id for s in table.snapshots.iter_snapshots()] == list(range(1, 11))
    assert table.snapshots.latest_id() == 10
    expected = sorted([(-1, 0)] + [(who, r * 10 + j) for who in range(3) for r in range(3) for j in range(3)])
    assert _rows(wh, ident) == expected
    assert table.snapshots.latest().total_record_count == len(expected)
    # every manifest file on disk is referenced: the losers of each race cleaned up after themselves
    scanner = TableScanner(table)
    referenced = set()
    for s in table.snapshots.iter_snapshots():
        for lst in (s.base_manifest_list, s.delta_manifest_list):
            referenced.add(lst)
            referenced |= {m.file_name for m in scanner.store.manifest_list(lst)}
    assert _names(Path(table.manifest_dir)) <= referenced


def test_racing_threads_commit_with_consecutive_ids(append_table):
    wh, ident = append_table
    n = 4
    barrier = threading.Barrier(n)
    results: list = [None] * n

    def run(who: int) -> None:
        try:
            w = TableWriter(FileSystemCatalog(wh).get_table(ident))
            w.write(pa.table({"w": pa.array([who], pa.int32()), "i": pa.array([who], pa.int32())}))
            barrier.wait()
            results[who] = w.commit().id
        except BaseException as e:  # noqa: BLE001
            results[who] = e

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == list(range(2, 2 + n)), results
    assert _rows(wh, ident) == sorted([(-1, 0)] + [(i, i) for i in range(n)])


def _upgrade_changes(table, result, level):
    out = []
    for f in result.files:
        out.append(f.entry(FileKind.DELETE))
        out.append(ManifestEntry(FileKind.ADD, f.partition, f.bucket, f.total_buckets, f.meta.with_level(level)))
    return CommitChanges(data=tuple(out))


def test_compact_conflict_after_concurrent_removal(pk_table):
    wh, ident = pk_table
    table = FileSystemCatalog(wh).get_table(ident)
    base = table.snapshots.latest()
    planned = TableScanner(table).scan(base)
    # a concurrent job moves the second file up first (its level-0 identity is gone afterwards)
    other = planned.files[1]
    first = FileStoreCommit(table).commit(CommitChanges(data=(
        other.entry(FileKind.DELETE),
        ManifestEntry(FileKind.ADD, other.partition, other.bucket, other.total_buckets, other.meta.with_level(4)))),
        "COMPACT", base.id)
    manifests, snaps = _names(Path(table.manifest_dir)), _names(Path(table.root) / "snapshot")
    with pytest.raises(CommitConflictError, match=r"no longer live") as ei:
        FileStoreCommit(table).commit(_upgrade_changes(table, planned, 5), "COMPACT", base.id)
    assert ei.value.base_snapshot == base.id and ei.value.latest_snapshot == first.id
    assert "Nothing was committed" in str(ei.value)
    assert _names(Path(table.manifest_dir)) == manifests and _names(Path(table.root) / "snapshot") == snaps
    assert table.snapshots.latest_id() == first.id
    assert _rows(wh, ident) == [(1, "a"), (2, "b"), (3, "c"), (4, "d"), (5, "e")]


def test_compact_conflict_when_losing_the_race(pk_table):
    """Two committers plan the same compaction on the same base; one wins, the other conflicts on retry."""
    wh, ident = pk_table
    table = FileSystemCatalog(wh).get_table(ident)
    base = table.snapshots.latest()
    planned = TableScanner(table).scan(base)
    manifests = _names(Path(table.manifest_dir))
    barrier = threading.Barrier(2)
    out: list = [None, None]

    def run(i: int) -> None:
        t = FileSystemCatalog(wh).get_table(ident)
        c = FileStoreCommit(t)
        barrier.wait()
        try:
            out[i] = c.commit(_upgrade_changes(t, planned, 5), "COMPACT", base.id)
        except BaseException as e:  # noqa: BLE001
            out[i] = e

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    won = [o for o in out if not isinstance(o, BaseException)]
    lost = [o for o in out if isinstance(o, BaseException)]
    assert len(won) == 1 and len(lost) == 1 and isinstance(lost[0], CommitConflictError), out
    assert table.snapshots.latest_id() == base.id + 1
    s = won[0]
    new = _names(Path(table.manifest_dir)) - manifests
    scanner = TableScanner(table)
    referenced = {s.base_manifest_list, s.delta_manifest_list} |\
        {m.file_name for m in scanner.store.manifest_list(s.delta_manifest_list)} |\
        {m.file_name for m in scanner.store.manifest_list(s.base_manifest_list)}
    assert new <= referenced, new - referenced  # the loser left nothing behind
    assert {f.level for f in scanner.scan(s).files} == {5}
    assert _rows(wh, ident) == [(1, "a"), (2, "b"), (3, "c"), (4, "d"), (5, "e")]


@pytest.mark.parametrize("op", ["write", "rename"])
def test_fault_at_every_step_of_a_commit_then_retry(pk_table, op):
    wh, ident = pk_table
    table = FileSystemCatalog(wh).get_table(ident)
    base = table.snapshots.latest()
    old_rows = _rows(wh, ident)
    w = TableWriter(table)
    w.write(pa.table({"k": pa.array([2, 9], pa.int32()), "v": pa.array(["B", "i"])}))
    changes = CommitChanges(data=tuple(w.entries))
    meta_dirs = [Path(table.manifest_dir), Path(table.root) / "snapshot"]
    failures = 0
    for k in range(1, 50):
        before = [_names(d) for d in meta_dirs]
        latest_text = (Path(table.root) / "snapshot" / "LATEST").read_text()
        faulty = table.with_fault_hook(fault_after(op, k))
        try:
            snap = FileStoreCommit(faulty).commit(changes, "APPEND", base.id)
        except (PaimonOpsError, InjectedFault) as e:
            failures += 1
            assert "injected failure" in str(e) or isinstance(e.__cause__, InjectedFault), e
            assert table.snapshots.latest_id() == base.id
            assert [_names(d) for d in meta_dirs] == before, f"{op} #{k}: metadata left behind"
            assert (Path(table.root) / "snapshot" / "LATEST").read_text() == latest_text
            assert _rows(wh, ident) == old_rows
            continue
        # k is past the last `op` of the commit (or only the advisory LATEST hint failed): committed
        assert snap.id == base.id + 1
        break
    else:
        pytest.fail("the commit never succeeded")
    assert failures >= (4 if op == "write" else 1), failures  # manifest, base list, delta list, snapshot tmp
    table = table.refresh()
    assert table.snapshots.latest_id() == base.id + 1
    assert _rows(wh, ident) == [(1, "a"), (2, "B"), (3, "c"), (4, "d"), (5, "e"), (9, "i")]
    assert _rows(wh, ident, snapshot_id=base.id) == old_rows


def test_rename_fault_then_retry_with_the_same_writer(pk_table):
    """The brief's example: fault_after('rename', 1) during commit; pypaimon still reads the old snapshot."""
    wh, ident = pk_table
    table = FileSystemCatalog(wh).get_table(ident)
    old = _rows(wh, ident)
    w = TableWriter(table.with_fault_hook(fault_after("rename", 1)))
    w.write(pa.table({"k": pa.array([7], pa.int32()), "v": pa.array(["g"])}))
    with pytest.raises(PaimonOpsError, match="injected failure at rename #1"):
        w.commit()
    assert _rows(wh, ident) == old and table.snapshots.latest_id() == 2
    snap = w.commit()  # the hook fires once only: the retry goes through
    assert snap.id == 3 and _rows(wh, ident) == sorted(old + [(7, "g")])
    assert write_rows(table.refresh(), {"k": [8], "v": ["h"]}).id == 4
