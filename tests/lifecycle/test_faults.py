"""Fault injection: for every destructive operation (snapshot expiry, decoupled expiry, tag deletion, orphan removal,
rollback) and every k, a FileIO that fails at the k-th write / rename / delete. After the failure the table reads
correctly (pypaimon reads the latest snapshot; our reader reads every snapshot and tag that the operation keeps), and
a rerun without faults converges to exactly the state of an uninterrupted run (same files, same metadata bytes).
"""
from __future__ import annotations

import datetime as dt
import os
import shutil
import time
from dataclasses import dataclass
from typing import Callable

import pytest

import paimon_ops as po
from paimon_ops.table.fileio import InjectedFault, fault_after
from paimon_ops.table.table import FileStoreTable
from tests import pypaimon_util as pu
from tests.lifecycle.helpers import HOUR_MS, Sim, age_files, check_references, fast_tmpdir, new_table, rel_files, view_of, views

NOW_WALL = int(time.time() * 1000)


def _plant(root: str, rel: str) -> None:
    p = os.path.join(root, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(b"junk")


def _build(wh: str, options: dict | None = None) -> tuple[Sim, int]:
    sim = Sim(new_table(wh, kind="dv", options=options))
    t = sim.table
    for i in range(3):
        sim.write([("a", i, f"v{i}"), ("b", i, f"w{i}")])
    sim.compact(0)
    sim.delete_rows(0)
    sim.tag("early", t.snapshots.latest_id())
    sim.write([("a", 7, "x"), ("b", 8, "y")])
    sim.compact(1)
    sim.delete_rows(1)
    sim.tag("mid", t.snapshots.latest_id())
    sim.write([("a", 9, "z")])
    sim.compact(0)
    sim.write([("b", 10, "q")])
    return sim, sim.now


@dataclass
class Base:
    root: str
    table_root: str
    now: int
    views: dict
    latest_rows: list


@pytest.fixture(scope="module")
def bases():
    root = fast_tmpdir("faults-")
    out = {}
    for name, opts in (("plain", None), ("decoupled", {"snapshot.num-retained.min": "1",
                                                       "changelog.num-retained.min": "6"})):
        wh = os.path.join(root, name)
        os.makedirs(wh)
        sim, now = _build(wh, opts)
        t = sim.table
        if name == "plain":
            # leftovers for orphan removal: old unreferenced files of several kinds
            for rel in ("pt=a/bucket-0/data-orphan.parquet", "manifest/manifest-orphan", "index/index-orphan",
                        "snapshot/.snapshot-3.tmp", "pt=c/bucket-0/data-orphan2.parquet"):
                _plant(t.root, rel)
            age_files(t.root, 4 * 86400)
        out[name] = Base(wh, t.root, now, views(t), pu.sorted_rows(pu.read(wh, "db.t")))
    yield out
    shutil.rmtree(root, ignore_errors=True)


@dataclass
class Op:
    name: str
    base: str
    run: Callable[[FileStoreTable, Base], object]


OPS = [
    Op("expire", "plain", lambda t, b: po.Table(t).maintenance.expire_snapshots(now=b.now + 10 * HOUR_MS, retain_min=2).execute(table=t)),
    Op("expire-decoupled", "decoupled",
       lambda t, b: po.Table(t).maintenance.expire_snapshots(now=b.now + 10 * HOUR_MS, retain_min=2).execute(table=t)),
    Op("delete-tags", "plain",
       lambda t, b: _expire_then(t, b, lambda: po.Table(t).maintenance.delete_tags(["mid", "early"], missing_ok=True).execute(table=t))),
    Op("remove-orphans", "plain",
       lambda t, b: po.Table(t).maintenance.remove_orphans(min_age=dt.timedelta(days=2), now=NOW_WALL).execute(table=t)),
    Op("rollback", "plain", lambda t, b: _expire_then(t, b, lambda: po.Table(t).maintenance.rollback(tag="early").execute(table=t))),
]


def _expire_then(t: FileStoreTable, b: Base, fn):
    """Tag deletion and rollback are interesting once the tagged snapshots have expired (reclamation, restore).
    The expiry itself runs without faults (its own faults are covered by the 'expire' case)."""
    clean = FileStoreTable(t.root)
    if clean.snapshots.exists(2):
        po.Table(clean).maintenance.expire_snapshots(now=b.now + 10 * HOUR_MS, retain_min=2).execute(table=clean)
    return fn()


class Counter:
    def __init__(self):
        self.n = {"write": 0, "rename": 0, "delete": 0}

    def __call__(self, op: str, path: str) -> None:
        self.n[op] += 1


def _copy(base: Base, dst_root: str) -> tuple[str, FileStoreTable]:
    wh = os.path.join(dst_root, "wh")
    shutil.copytree(base.root, wh)
    return wh, FileStoreTable(os.path.join(wh, "db.db", "t"))


def _state(root: str) -> dict[str, bytes | None]:
    """Every file; metadata files with their bytes (snapshots, tags, changelogs, hints)."""
    out = {}
    for rel in rel_files(root):
        meta = rel.split("/")[0] in ("snapshot", "tag", "changelog")
        out[rel] = open(os.path.join(root, rel), "rb").read() if meta else None
    return out


def _reads_ok(table: FileStoreTable, base: Base, keep: set) -> int:
    """Every owner the uninterrupted run keeps, and that exists now, reads exactly as before."""
    n = 0
    owners = [(("snapshot", i, s.base_manifest_list), s) for i in table.snapshots.list_ids()
              for s in [table.snapshots.snapshot(i)]]
    owners += [((f"tag {name}", t.id, t.base_manifest_list), t) for name, t in table.tags.tags()]
    for key, s in owners:
        if key in keep:
            assert view_of(table, s) == base.views[key], f"{key} reads differently"
            n += 1
    return n


@pytest.mark.parametrize("op", OPS, ids=[o.name for o in OPS])
def test_every_fault_point_converges(bases, op):
    base = bases[op.base]
    work = fast_tmpdir(f"fault-{op.name}-")
    try:
        # the uninterrupted run, counting I/O operations
        clean_wh, clean = _copy(base, os.path.join(work, "clean"))
        counter = Counter()
        op.run(clean.with_fault_hook(counter), base)
        want = _state(clean.root)
        check_references(clean)
        kept = set(views(clean)) & set(base.views)
        assert kept, "the operation keeps nothing to check"
        latest_after = pu.sorted_rows(pu.read(clean_wh, "db.t"))
        # pypaimon reads every snapshot and tag the operation keeps exactly as on the untouched table
        for i in clean.snapshots.list_ids():
            if FileStoreTable(base.table_root).snapshots.exists(i):
                assert pu.sorted_rows(pu.read(clean_wh, "db.t", snapshot_id=i)) ==\
                    pu.sorted_rows(pu.read(base.root, "db.t", snapshot_id=i)), f"snapshot {i}"
        for name in clean.tags.names():
            assert pu.sorted_rows(pu.read(clean_wh, "db.t", tag=name)) ==\
                pu.sorted_rows(pu.read(base.root, "db.t", tag=name)), f"tag {name}"
        assert sum(counter.n.values()) > 0
        runs = 0
        for kind, total in counter.n.items():
            for k in range(1, total + 1):
                wh, table = _copy(base, os.path.join(work, f"{kind}-{k}"))
                try:
                    op.run(table.with_fault_hook(fault_after(kind, k)), base)
                except Exception as e:  # noqa: BLE001 - the injected fault, possibly wrapped
                    chain = [e]
                    while chain[-1].__cause__ or chain[-1].__context__:
                        chain.append(chain[-1].__cause__ or chain[-1].__context__)
                    assert any(isinstance(x, InjectedFault) for x in chain), repr(e)
                # after the crash: retained snapshots and tags read as before; pypaimon reads the latest
                table = FileStoreTable(table.root)
                _reads_ok(table, base, kept)
                latest = pu.sorted_rows(pu.read(wh, "db.t"))
                assert latest in (base.latest_rows, latest_after), f"{kind} #{k}: latest reads wrongly"
                # a rerun without faults converges to the uninterrupted result
                op.run(table, base)
                assert _state(table.root) == want, f"{kind} #{k}: rerun did not converge"
                runs += 1
                shutil.rmtree(wh, ignore_errors=True)
        check_references(clean)
        assert _reads_ok(clean, base, kept) == len(kept)
        assert runs == sum(counter.n.values())
    finally:
        shutil.rmtree(work, ignore_errors=True)
