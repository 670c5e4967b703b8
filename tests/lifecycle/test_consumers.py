"""Consumers on our own tables: listing with their state, reset to an existing snapshot or removal, clearing by
including / excluding regular expressions (whole-id match, as Java's clear_consumers), on main and on a branch; a
reset or clear changes what expiry keeps; unknown consumers, bad patterns and stale plans are refused with nothing
changed. The Java 0.9 proofs are in tests/interop/test_branches_java.py."""
from __future__ import annotations

import os
import shutil

import pytest

import paimon_ops as po
from paimon_ops.errors import InvalidArgumentError, StalePlanError
from tests.lifecycle.helpers import HOUR_MS, Sim, fast_tmpdir, new_table, rel_files, write_consumer


@pytest.fixture
def sim():
    d = fast_tmpdir("consumers-")
    s = Sim(new_table(d))
    for i in range(5):
        s.write([("a", i, f"v{i}")])
    yield s
    shutil.rmtree(d, ignore_errors=True)


def _ids(t) -> dict[str, int]:
    return {c.consumer: c.next_snapshot for c in po.Table(t).consumers()}


def test_list_reset_and_delete(sim):
    t = sim.table
    write_consumer(t, "flink-a", 2)
    write_consumer(t, "flink-b", 6)
    write_consumer(t, "old", 9)
    rows = {c.consumer: c for c in po.Table(t).consumers()}
    assert {k: (c.next_snapshot, c.state, c.pins_from) for k, c in rows.items()} == {
        "flink-a": (2, "reading", 2), "flink-b": (6, "caught-up", None), "old": (9, "ahead", None)}
    # flink-a pins snapshot 2: expiry keeps 2..5
    plan = po.Table(t).maintenance.expire_snapshots(retain_min=1, retain_max=1, now=sim.now + 10 * HOUR_MS)
    assert plan.details["expired_snapshots"] == [1]
    po.Table(t).maintenance.reset_consumer("flink-a", snapshot_id=4).execute()
    assert _ids(t)["flink-a"] == 4
    assert open(t.consumers.path("flink-a")).read() == '{\n  "nextSnapshot" : 4\n}'  # as Java writes it
    plan = po.Table(t).maintenance.expire_snapshots(retain_min=1, retain_max=1, now=sim.now + 10 * HOUR_MS)
    assert plan.details["expired_snapshots"] == [1, 2, 3]
    po.Table(t).maintenance.reset_consumer("old", delete=True).execute()
    assert set(_ids(t)) == {"flink-a", "flink-b"}


def test_reset_refuses_unknown_consumers_missing_snapshots_and_both_or_neither(sim):
    t = sim.table
    write_consumer(t, "c", 2)
    before = {p: open(os.path.join(t.root, p), "rb").read() for p in rel_files(t.root)}
    m = po.Table(t).maintenance
    with pytest.raises(InvalidArgumentError, match="consumer 'nope' does not exist on db.t; its consumers: c"):
        m.reset_consumer("nope", snapshot_id=3)
    with pytest.raises(InvalidArgumentError, match="snapshot 99 of db.t does not exist"):
        m.reset_consumer("c", snapshot_id=99)
    with pytest.raises(InvalidArgumentError, match="give snapshot_id.* or delete"):
        m.reset_consumer("c")
    with pytest.raises(InvalidArgumentError, match="give snapshot_id.* or delete"):
        m.reset_consumer("c", snapshot_id=3, delete=True)
    for bad in ("../x", "a/b", ""):
        with pytest.raises(InvalidArgumentError, match="consumer id"):
            m.reset_consumer(bad, delete=True)
    assert {p: open(os.path.join(t.root, p), "rb").read() for p in rel_files(t.root)} == before


def test_clear_with_including_and_excluding_whole_id_patterns(sim):
    t = sim.table
    for cid in ("job-1", "job-2", "job-keep", "other", "xjob-3"):
        write_consumer(t, cid, 3)
    m = po.Table(t).maintenance
    plan = m.clear_consumers(including="job-.*", excluding=".*keep")
    assert plan.details["removed"] == ["job-1", "job-2"]  # whole-id matches: xjob-3 does not match job-.*
    plan.execute()
    assert set(_ids(t)) == {"job-keep", "other", "xjob-3"}
    nothing = m.clear_consumers(including="zzz")
    assert nothing.is_empty and "no consumer matches" in nothing.warnings[0]
    with pytest.raises(InvalidArgumentError, match="including '\\(' is not a regular expression"):
        m.clear_consumers(including="(")
    m.clear_consumers().execute()  # all
    assert _ids(t) == {}


def test_a_stale_clear_plan_is_refused_and_consumers_of_a_branch_are_its_own(sim):
    t = sim.table
    write_consumer(t, "c", 3)
    saved = po.load_plan(po.Table(t).maintenance.clear_consumers().to_json())
    write_consumer(t, "c", 4)  # the reader moved on meanwhile
    with pytest.raises(StalePlanError, match="consumer 'c' moved on to snapshot 4"):
        saved.execute()
    po.Table(t).maintenance.create_branch("b", snapshot_id=5).execute()
    b = t.for_branch("b")
    write_consumer(b, "on-branch", 5)
    assert _ids(b) == {"on-branch": 5} and _ids(t) == {"c": 4}
    po.Catalog(os.path.dirname(os.path.dirname(t.root))).get_table("db.t$branch_b").maintenance.clear_consumers()\
        .execute()
    assert _ids(b) == {} and _ids(t) == {"c": 4}
