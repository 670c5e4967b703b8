"""Branch life cycle on our own tables (fast, in-process): create from a tag / an expired tag / a snapshot / empty,
delete with reclamation of exactly what only the branch named, rename, fast-forward by Java's rules (refused when
the branch is behind), plans through JSON and `apply`, and for delete, fast-forward and create every fault point: a
crash leaves the table readable and a rerun converges to the uninterrupted result. The Java 0.9 twin-table proofs are
in tests/interop/test_branches_java.py."""
from __future__ import annotations

import os
import shutil

import pytest

import paimon_ops as po
from paimon_ops.errors import BranchNotFoundError, InvalidArgumentError, StalePlanError, UnsafeOperationError
from paimon_ops.lifecycle.branches import list_branches
from paimon_ops.table.fileio import InjectedFault, fault_after
from paimon_ops.table.table import FileStoreTable
from tests.lifecycle.helpers import (
    HOUR_MS,
    Sim,
    all_files,
    check_references,
    fast_tmpdir,
    leaks,
    new_table,
    rel_files,
    views,
)


@pytest.fixture
def wh():
    d = fast_tmpdir("branches-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _history(wh: str, kind: str = "pk") -> tuple[Sim, Sim]:
    """main: 3 snapshots, tag base@2, more writes and a compaction; branch dev from base with its own writes,
    compactions and a tag."""
    sim = Sim(new_table(wh, kind=kind))
    sim.write([("a", 1, "m1"), ("a", 2, "m2")])
    sim.write([("b", 3, "m3")])
    sim.tag("base", 2)
    po.Table(sim.table).maintenance.create_branch("dev", tag="base").execute()
    sim.write([("a", 4, "m4")])
    sim.compact(0)
    bsim = Sim(sim.table.for_branch("dev"), start_ms=sim.now)
    bsim.expected.update({k: v for k, v in sim.expected.items() if k[0] == "snapshot" and k[1] == 2})
    bsim.write([("a", 5, "b5")])
    bsim.compact(0)
    bsim.write([("c", 6, "b6")])
    bsim.tag("bt", bsim.table.snapshots.latest_id())
    bsim.write([("c", 7, "b7")])
    return sim, bsim


def _state(root: str) -> dict[str, bytes | None]:
    """Every file; metadata (snapshots, tags, schemas, hints, consumers: of main and branches) with its bytes."""
    out = {}
    for rel in rel_files(root):
        parts = rel.split("/")
        meta = parts[0] in ("snapshot", "tag", "schema", "consumer", "changelog", "branch")
        out[rel] = open(os.path.join(root, rel), "rb").read() if meta else None
    return out


# ---------------------------------------------------------------------------------------------- create
def test_create_from_tag_copies_schema_snapshot_and_tag_and_the_branch_reads_the_tag(wh):
    sim, bsim = _history(wh)
    main = sim.table
    broot = os.path.join(main.root, "branch", "branch-dev")
    assert {"schema/schema-0", "tag/tag-base", "snapshot/snapshot-2"} <= rel_files(broot)
    assert open(os.path.join(broot, "tag", "tag-base"), "rb").read() ==\
        open(os.path.join(main.root, "tag", "tag-base"), "rb").read()
    assert bsim.check_reads() >= 3 and sim.check_reads() >= 3
    info = {i.branch: i for i in list_branches(main)}
    assert info["dev"].earliest_snapshot == 2 and info["dev"].tags == ("base", "bt") and info["main"].tags == ("base",)
    assert po.Catalog(wh).get_table("db.t$branch_dev").branch == "dev"


def test_create_from_an_expired_tag_writes_the_snapshot_from_the_tag(wh):
    sim = Sim(new_table(wh))
    for i in range(4):
        sim.write([("a", i, f"v{i}")])
    sim.tag("old", 1)
    po.Table(sim.table).maintenance.expire_snapshots(retain_min=1, retain_max=1, now=sim.now + 10 * HOUR_MS).execute()
    assert not sim.table.snapshots.exists(1)
    plan = po.Table(sim.table).maintenance.create_branch("old-state", tag="old")
    assert any("expired on the source" in a.reason for a in plan.writes)
    plan.execute()
    b = sim.table.for_branch("old-state")
    assert b.snapshots.list_ids() == [1]
    assert views(b)[("snapshot", 1, b.snapshots.snapshot(1).base_manifest_list)] ==\
        views(sim.table)[("tag old", 1, sim.table.tags.tag("old").base_manifest_list)]


def test_create_from_a_snapshot_warns_unless_a_tag_holds_it_and_empty_branch_has_only_schemas(wh):
    sim = Sim(new_table(wh))
    sim.write([("a", 1, "v")])
    sim.write([("a", 2, "w")])
    plan = po.Table(sim.table).maintenance.create_branch("s1", snapshot_id=1)
    assert any("no tag holds snapshot 1" in w for w in plan.warnings)
    plan.execute()
    assert sim.table.for_branch("s1").snapshots.list_ids() == [1]
    sim.tag("t2", 2)
    assert not po.Table(sim.table).maintenance.create_branch("s2", snapshot_id=2).warnings
    po.Table(sim.table).maintenance.create_branch("empty").execute()
    assert rel_files(os.path.join(sim.table.root, "branch", "branch-empty")) == {"schema/schema-0"}
    again = po.Table(sim.table).maintenance.create_branch("empty")  # exactly as it is: nothing to do
    assert again.is_empty and "nothing to do" in again.warnings[0]
    with pytest.raises(InvalidArgumentError, match="branch 's1' of db.t already exists"):
        po.Table(sim.table).maintenance.create_branch("s1", snapshot_id=2)
    with pytest.raises(InvalidArgumentError, match="snapshot 9 .* does not exist"):
        po.Table(sim.table).maintenance.create_branch("x", snapshot_id=9)
    with pytest.raises(InvalidArgumentError, match="tag 'nope' does not exist"):
        po.Table(sim.table).maintenance.create_branch("x", tag="nope")


@pytest.mark.parametrize("name", ["", " ", "main", "12", "../x", "a/b", "a\\b", "x$y", "..", "a\nb"])
def test_a_branch_name_must_be_a_plain_name(wh, name):
    sim = Sim(new_table(wh))
    sim.write([("a", 1, "v")])
    before = _state(sim.table.root)
    with pytest.raises(InvalidArgumentError):
        po.Table(sim.table).maintenance.create_branch(name)
    assert _state(sim.table.root) == before


# ---------------------------------------------------------------------------------------------- delete
def test_delete_reclaims_exactly_what_only_the_branch_named(wh):
    sim, bsim = _history(wh)
    main = sim.table
    # a second branch from the first branch's tag shares the branch's files: they must survive its deletion
    po.Table(bsim.table).maintenance.create_branch("child", tag="bt").execute()
    child = main.for_branch("child")
    child_views = views(child)
    main_views = views(main)
    assert not leaks(main)
    plan = po.Table(main).maintenance.delete_branch("dev")
    po.load_plan(plan.to_json()).execute()  # a saved plan re-plans and runs the same
    assert "dev" not in main.branches() and not os.path.exists(os.path.join(main.root, "branch", "branch-dev"))
    check_references(main)  # everything main, its tags and branch child reference still exists
    assert views(main) == main_views and views(child) == child_views
    assert not leaks(main)  # and nothing only dev named is left
    deleted = {os.path.basename(a.path) for a in plan.deletes if a.kind == "data"}
    child_files = {os.path.basename(p) for p in all_files(main.root)}
    assert deleted and not deleted & child_files
    # the child branch goes too: then the dev-only files it kept are reclaimed
    po.Table(main).maintenance.delete_branch("child").execute()
    check_references(main)
    assert not leaks(main) and views(main) == main_views
    assert not os.listdir(os.path.join(main.root, "branch"))


def test_delete_refuses_a_fallback_branch_and_an_unknown_one(wh):
    sim, _ = _history(wh)
    main = sim.table
    schema = main.schemas.latest()
    import dataclasses
    main.schemas.commit(dataclasses.replace(schema, id=schema.id + 1,
                                            options={**schema.options, "scan.fallback-branch": "dev"}))
    before = _state(main.root)
    with pytest.raises(UnsafeOperationError, match="scan.fallback-branch of main"):
        po.Table(main.refresh()).maintenance.delete_branch("dev")
    with pytest.raises(BranchNotFoundError, match="branch 'nope' of db.t does not exist .*branches: dev"):
        po.Table(main).maintenance.delete_branch("nope")
    assert _state(main.root) == before


def test_delete_refuses_what_is_not_branch_metadata(wh):
    sim, _ = _history(wh)
    stray = os.path.join(sim.table.root, "branch", "branch-dev", "notes.txt")
    open(stray, "w").write("mine")
    before = _state(sim.table.root)
    with pytest.raises(UnsafeOperationError, match="notes.txt: a file directly in the branch directory"):
        po.Table(sim.table).maintenance.delete_branch("dev")
    assert _state(sim.table.root) == before


def test_a_stale_delete_plan_is_refused(wh):
    sim, bsim = _history(wh)
    plan = po.load_plan(po.Table(sim.table).maintenance.delete_branch("dev").to_json())
    bsim.write([("d", 8, "late")])  # a writer commits to the branch meanwhile
    with pytest.raises(StalePlanError, match="branch 'dev' changed"):
        plan.execute()
    assert "dev" in sim.table.branches()


# ---------------------------------------------------------------------------------------------- fast-forward
def test_fast_forward_takes_the_branch_and_removes_main_history_after_the_branch_point(wh):
    sim, bsim = _history(wh)
    main = sim.table
    sim.tag("late", main.snapshots.latest_id())
    branch_views = {k: v for k, v in views(bsim.table).items() if k[0] == "snapshot"}
    plan = po.Table(main).maintenance.fast_forward("dev")
    assert plan.details["branch_point"] == 2 and plan.details["removed_tags"] == ["late"]
    assert plan.details["removed_snapshots"] == [3, 4]  # snapshot 2 is the branch's own copy: kept as it is
    plan.execute()
    main = main.refresh()
    assert main.snapshots.list_ids() == bsim.table.snapshots.list_ids()[:0] + [1] + bsim.table.snapshots.list_ids()
    assert [n for n, _ in main.tags.tags()] == ["base", "bt"]
    assert {k: v for k, v in views(main).items() if k[0] == "snapshot" and k[1] >= 2} == branch_views
    assert main.snapshots.latest_id() == bsim.table.snapshots.latest_id() and main.snapshots.earliest_id() == 1
    check_references(main)


def test_fast_forward_to_a_branch_behind_main_is_refused(wh):
    sim, bsim = _history(wh)
    b_latest = bsim.table.snapshots.latest_id()
    while sim.table.snapshots.latest_id() <= b_latest:
        sim.write([("z", 9, "m")])  # main moves past the branch's latest
    before = _state(sim.table.root)
    with pytest.raises(UnsafeOperationError, match=f"branch 'dev' is behind main .* latest snapshot {b_latest} is "
                                                   f"older than main's latest {b_latest + 1}"):
        po.Table(sim.table).maintenance.fast_forward("dev")
    with pytest.raises(InvalidArgumentError, match="to itself"):
        po.Table(bsim.table).maintenance.fast_forward("dev")
    assert _state(sim.table.root) == before


# ---------------------------------------------------------------------------------------------- rename
def test_rename_moves_the_branch_and_a_saved_plan_refuses_once_done(wh):
    sim, bsim = _history(wh)
    want = views(bsim.table)
    plan = po.Table(sim.table).maintenance.rename_branch("dev", "prod")
    text = plan.to_json()
    plan.execute()
    assert sim.table.branches() == ["prod"] and views(sim.table.for_branch("prod")) == want
    with pytest.raises(StalePlanError):
        po.load_plan(text).execute()
    with pytest.raises(InvalidArgumentError, match="already exists"):
        po.Table(sim.table).maintenance.create_branch("prod")
    check_references(sim.table)


# ---------------------------------------------------------------------------------------------- every fault point
def _run_delete(t: FileStoreTable) -> None:
    po.Table(t).maintenance.delete_branch("dev").execute(table=t)


def _run_fast_forward(t: FileStoreTable) -> None:
    po.Table(t).maintenance.fast_forward("dev").execute(table=t)


def _run_create(t: FileStoreTable) -> None:
    po.Table(t).maintenance.create_branch("again", tag="bt").execute(table=t)


def _run_create_from_branch_tag(t: FileStoreTable) -> None:
    _run_create(FileStoreTable(t.root, t.identifier, "dev", io=t.io))


class _Counter:
    def __init__(self) -> None:
        self.n = {"write": 0, "rename": 0, "delete": 0}

    def __call__(self, op: str, path: str) -> None:
        self.n[op] += 1


@pytest.mark.parametrize("run", [_run_delete, _run_fast_forward, _run_create_from_branch_tag],
                         ids=["delete-branch", "fast-forward", "create-branch"])
def test_every_fault_point_converges(run):
    work = fast_tmpdir("branch-faults-")
    try:
        base = os.path.join(work, "base")
        sim, _ = _history(base)
        base_views = views(sim.table)
        dev_views = views(sim.table.for_branch("dev"))

        def copy(name: str) -> FileStoreTable:
            shutil.copytree(base, os.path.join(work, name))
            return FileStoreTable(os.path.join(work, name, "db.db", "t"))

        clean = copy("clean")
        counter = _Counter()
        run(clean.with_fault_hook(counter))
        want = _state(clean.root)
        check_references(clean)
        n = 0
        for kind, total in counter.n.items():
            for k in range(1, total + 1):
                t = copy(f"{kind}-{k}")
                try:
                    run(t.with_fault_hook(fault_after(kind, k)))
                except Exception as e:  # noqa: BLE001 - the injected fault, possibly wrapped
                    chain = [e]
                    while chain[-1].__cause__ or chain[-1].__context__:
                        chain.append(chain[-1].__cause__ or chain[-1].__context__)
                    assert any(isinstance(x, InjectedFault) for x in chain), repr(e)
                t = FileStoreTable(t.root)
                if run is _run_create_from_branch_tag:  # the new branch may lack its schema file yet
                    assert views(t.for_branch("dev")) == dev_views
                else:
                    check_references(t)  # after the crash nothing referenced is missing
                assert views(t).items() >= {k_: v for k_, v in base_views.items()
                                            if k_[0] != "snapshot" or k_[1] < 2}.items()
                run(t)
                assert _state(t.root) == want, f"{kind} #{k}: the rerun did not converge"
                shutil.rmtree(os.path.join(work, f"{kind}-{k}"))
                n += 1
        assert n == sum(counter.n.values()) > 0
    finally:
        shutil.rmtree(work, ignore_errors=True)
