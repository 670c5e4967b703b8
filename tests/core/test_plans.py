"""One operation core. For every operation, plan -> to_json -> from_json -> execute does exactly what a
direct run does (same files on disk afterwards, same report counts); a plan made stale by a concurrent commit, a
deleted or created tag or a new snapshot is refused with StalePlanError and nothing changes."""
from __future__ import annotations

import datetime as dt
import os
import shutil
import time

import pyarrow as pa
import pytest

import paimon_ops as po
from paimon_ops.errors import StalePlanError
from paimon_ops.execution.plan import Plan
from paimon_ops.table.writer import TableWriter
from tests.safety.util import age, partitioned_table, tree_digest

NOW = int(time.time() * 1000)
LATER = NOW + 10 * 86_400_000


def _history(wh: str) -> po.Table:
    raw = partitioned_table(wh, commits=4, **{"snapshot.num-retained.min": "1", "tag.create-time": "00:30",
                                             "tag.num-retained-max": "1"})
    t = po.Catalog(wh).get_table("db.t")
    t.tags.create("t2", snapshot_id=2).execute()
    t.tags.create("t3", snapshot_id=3, time_retained=dt.timedelta(milliseconds=1)).execute()
    t.maintenance.compact(mode="full").execute(runner=po.LocalRunner())
    w = TableWriter(raw.refresh())
    w.write(pa.table({"dt": ["2024-01-03"], "k": [99], "v": ["late"]}))
    w.commit()
    orphan = os.path.join(raw.root, "dt=2024-01-01", "bucket-0", "data-orphan.parquet")
    open(orphan, "wb").write(b"orphan")
    age(wh, days=10)
    return po.Catalog(wh).get_table("db.t")


# (name, plan factory on a facade table)
OPERATIONS = {
    "compact": lambda t: t.maintenance.compact(mode="full"),
    "expire_snapshots": lambda t: t.maintenance.expire_snapshots(retain_min=1, retain_max=2, now=LATER),
    "expire_tags": lambda t: t.maintenance.expire_tags(now=LATER),
    "delete_tags": lambda t: t.tags.delete("t2"),
    "remove_orphans": lambda t: t.maintenance.remove_orphans(min_age=dt.timedelta(days=3)),
    "auto_tag": lambda t: t.maintenance.create_auto_tags(now=LATER),
    "create_tag": lambda t: t.tags.create("v1", snapshot_id=5),
    "replace_tag": lambda t: t.tags.replace("t2", snapshot_id=4),
    "rename_tag": lambda t: t.tags.rename("t2", "two"),
    "rollback": lambda t: t.maintenance.rollback(tag="t3"),
    "expire_partitions": lambda t: t.maintenance.expire_partitions(expiration_time=dt.timedelta(days=1), now=LATER),
    "compact_manifests": lambda t: t.maintenance.compact_manifests(),
}


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    wh = str(tmp_path_factory.mktemp("plans") / "wh")
    os.makedirs(wh)
    _history(wh)
    return wh


def _copy(src: str, dst) -> str:
    shutil.copytree(src, dst, symlinks=True)
    return str(dst)


@pytest.mark.parametrize("op", sorted(OPERATIONS))
def test_plan_json_round_trip_executes_like_a_direct_run(source, tmp_path, op):
    a = po.Catalog(_copy(source, tmp_path / "a")).get_table("db.t")
    b = po.Catalog(_copy(source, tmp_path / "b")).get_table("db.t")
    direct_plan = OPERATIONS[op](a)
    assert direct_plan.operation == op
    assert direct_plan.files, f"{op}: the scenario must give the plan something to do"
    direct = direct_plan.execute(runner=po.LocalRunner())

    plan_b = OPERATIONS[op](b)
    text = plan_b.to_json()
    loaded = Plan.from_json(text)
    assert type(loaded) is type(plan_b) and loaded == plan_b  # typed, and nothing lost
    assert po.load_plan(text) == plan_b
    applied = loaded.execute(runner=po.LocalRunner())

    assert (direct.deleted, direct.written) == (applied.deleted, applied.written)
    da, db = tree_digest(str(tmp_path / "a")), tree_digest(str(tmp_path / "b"))
    if op in ("compact", "expire_partitions", "compact_manifests"):
        # new files get fresh UUID names: compare the shape, and what the table reads
        assert sorted(v for k, v in da.items() if "data-" not in k and "manifest" not in k and "snapshot-" not in k) \
            == sorted(v for k, v in db.items() if "data-" not in k and "manifest" not in k and "snapshot-" not in k)
        assert _rows(a) == _rows(b)
    elif op in ("create_tag", "replace_tag", "auto_tag"):
        assert set(da) == set(db)
    else:
        assert da == db


def _rows(t: po.Table) -> list:
    from paimon_ops.table.reader import read_snapshot_raw
    from paimon_ops.table.scan import TableScanner
    raw = t.raw.refresh()
    return sorted(tuple(r.values()) for _, data in read_snapshot_raw(TableScanner(raw), raw.snapshots.latest())
                  for r in data.select(["dt", "k", "v"]).to_pylist())


def _commit(t: po.Table, day: str = "2024-01-09") -> None:
    w = TableWriter(t.raw.refresh())
    w.write(pa.table({"dt": [day], "k": [7], "v": ["new"]}))
    w.commit()


STALE = [
    # (operation, what happens between plan and execute, words in the error)
    ("compact", lambda t: t.maintenance.compact(mode="full").execute(), "no longer live"),
    ("expire_snapshots", lambda t: t.tags.create("new", snapshot_id=3).execute(), "tag(s) new created"),
    ("expire_tags", lambda t: t.raw.tags.delete_file("t2"), "tag(s) t2 deleted"),
    ("delete_tags", lambda t: t.tags.create("other", snapshot_id=5).execute(), "tag(s) other created"),
    ("remove_orphans", None, "referenced by the table now"),
    ("auto_tag", None, "created meanwhile"),
    ("create_tag", lambda t: t.tags.create("v1", snapshot_id=4).execute(), "tag 'v1' was created meanwhile"),
    ("rename_tag", lambda t: t.tags.create("two", snapshot_id=4).execute(), "tag 'two' was created meanwhile"),
    ("rollback", _commit, "the latest snapshot is now 7"),
    ("expire_partitions", lambda t: _commit(t, "2024-01-02"), "partition dt=2024-01-02 changed since the plan"),
    ("compact_manifests", lambda t: t.maintenance.compact_manifests().execute(), "merged or replaced since the plan"),
]


@pytest.mark.parametrize("op,interfere,words", STALE, ids=[s[0] for s in STALE])
def test_stale_plans_are_refused_and_change_nothing(source, tmp_path, op, interfere, words):
    wh = _copy(source, tmp_path / "wh")
    t = po.Catalog(wh).get_table("db.t")
    plan = OPERATIONS[op](t)
    if op == "remove_orphans":  # a commit that starts to reference a file the plan deletes
        orphan = next(a for a in plan.deletes if a.kind == "orphan")
        _reference(t, orphan.path)
    elif op == "auto_tag":
        name = plan.details["created"][0]
        t.tags.create(name, snapshot_id=2).execute() if not name.isdigit() else None
    else:
        interfere(t)
    before = tree_digest(wh)
    with pytest.raises(StalePlanError, match=words.replace("(", r"\(").replace(")", r"\)")):
        Plan.from_json(plan.to_json()).execute(runner=po.LocalRunner())
    assert tree_digest(wh) == before


def _reference(t: po.Table, path: str) -> None:
    """Commit a manifest entry naming the planned orphan (as a slow writer finishing an old file would)."""
    import dataclasses

    from paimon_ops.format.manifest import FileKind
    from paimon_ops.table.commit import CommitChanges, FileStoreCommit
    from paimon_ops.table.scan import TableScanner
    raw = t.raw.refresh()
    f = TableScanner(raw).scan(raw.snapshots.latest()).files[0]
    entry = dataclasses.replace(f.entry(FileKind.ADD), file=dataclasses.replace(
        f.meta, file_name=os.path.basename(path), level=0))
    FileStoreCommit(raw).commit(CommitChanges(data=(entry,)), "APPEND", raw.snapshots.latest_id())
