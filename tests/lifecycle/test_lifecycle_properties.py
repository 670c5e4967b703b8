"""Property tests: random table histories (writes, COMPACT rewrites, metadata-only level upgrades, overwrites,
deletion vectors, changelog files, tags) interleaved with random expiries, tag deletions, rollbacks and orphan
removals. After every destructive step:

* every file referenced by a retained snapshot, tag or long-lived changelog exists (so every deleted file was
  unreferenced by all of them);
* (row histories) every retained snapshot and tag reads exactly as when it was committed;
* nothing leaks: without rollback, every non-metadata file on disk is still referenced (expiry and tag deletion
  reclaim everything they make unreachable); with rollback, orphan removal brings the table back to that state.

Two scales: metadata-level histories (placeholder files; 2,600 examples) and histories with real Parquet data
read back through our raw reader, deletion vectors applied (250 examples). Longer hunts (15,000+ examples with
several seeds) passed; raise max_examples locally to hunt further.
"""
from __future__ import annotations

import datetime as dt
import shutil
import time

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import paimon_ops as po
from tests.lifecycle.helpers import DAY_MS, MetaSim, Sim, check_references, fast_tmpdir, leaks, new_table, write_consumer

PROPS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

expire_args = st.fixed_dictionaries({
    "retain_min": st.integers(1, 4),
    "extra_max": st.one_of(st.none(), st.integers(0, 4)),
    "max_deletes": st.integers(1, 8),
    "time_retained_min": st.sampled_from([0, 1, 30, 90, 240]),
    "consumer": st.one_of(st.none(), st.integers(0, 6)),
})

meta_op = st.one_of(
    st.tuples(st.just("write"), st.integers(0, 11)),
    st.tuples(st.just("write"), st.integers(0, 11)),
    st.tuples(st.just("compact"), st.integers(0, 5)),
    st.tuples(st.just("upgrade"), st.integers(0, 7)),
    st.tuples(st.just("overwrite"), st.integers(0, 7)),
    st.tuples(st.just("dv"), st.integers(0, 7)),
    st.tuples(st.just("tag"), st.integers(0, 7)),
    st.tuples(st.just("untag"), st.integers(0, 7)),
    st.tuples(st.just("tick"), st.integers(1, 180)),
    st.tuples(st.just("expire"), expire_args),
    st.tuples(st.just("expire"), expire_args),
)

ORPHAN_NOW_OFFSET = 2 * DAY_MS  # placeholder files are fresh: look at them from two days later


def _expire(sim, args: dict) -> None:
    table = sim.table
    latest = table.snapshots.latest_id()
    for cid in table.consumers.consumers():
        table.io.delete_file(f"{table.consumers.dir}/consumer-{cid}")
    if args["consumer"] is not None and latest is not None:
        write_consumer(table, "c", max(1, latest - args["consumer"]))
    rmax = None if args["extra_max"] is None else args["retain_min"] + args["extra_max"]
    po.Table(table).maintenance.expire_snapshots(now=sim.now, retain_min=args["retain_min"], retain_max=rmax,
        max_deletes=args["max_deletes"], min_age=dt.timedelta(minutes=args["time_retained_min"])).execute()


def _untag(sim, pick: int) -> None:
    names = sim.table.tags.names()
    if names:
        po.Table(sim.table).maintenance.delete_tags([names[pick % len(names)]]).execute()


def _tag(sim, pick: int, n: int) -> None:
    ids = sim.table.snapshots.list_ids()
    if ids:
        sim.tag(f"tag-{n}", ids[pick % len(ids)])


def _rollback(sim, pick: int) -> None:
    ids = sim.table.snapshots.list_ids()
    names = sim.table.tags.names()
    if not ids:
        return
    if pick % 2 and names:
        po.Table(sim.table).maintenance.rollback(tag=names[pick % len(names)]).execute()
    else:
        po.Table(sim.table).maintenance.rollback(snapshot_id=ids[pick % len(ids)]).execute()
    sim.had_rollback = True


def _orphans(sim) -> None:
    po.Table(sim.table).maintenance.remove_orphans(min_age=dt.timedelta(days=1), now=int(time.time() * 1000) + ORPHAN_NOW_OFFSET).execute()


def _run_meta(ops, options: dict, changelog: bool, allow_rollback: bool) -> None:
    wh = fast_tmpdir()
    try:
        table = new_table(wh, kind="append", options=options)
        sim = MetaSim(table)
        n_tags = 0
        for op, arg in ops:
            if op == "write":
                sim.write(arg, n=1 + arg % 2, extra=arg % 3 == 0, changelog=changelog)
            elif op == "compact":
                sim.compact(arg)
            elif op == "upgrade":
                sim.upgrade(arg)
            elif op == "overwrite":
                sim.overwrite(arg)
            elif op == "dv":
                sim.dv(arg)
            elif op == "tag":
                n_tags += 1
                _tag(sim, arg, n_tags)
            elif op == "untag":
                _untag(sim, arg)
                check_references(table)
            elif op == "tick":
                sim.tick(arg * 60_000)
            elif op == "expire":
                _expire(sim, arg)
                check_references(table)
            elif op == "rollback":
                _rollback(sim, arg)
                check_references(table)
            elif op == "orphans":
                _orphans(sim)
                check_references(table)
        refs = check_references(table)
        if not sim.had_rollback:
            assert not leaks(table, refs), f"expiry / tag deletion leaked files: {sorted(leaks(table, refs))[:5]}"
        _orphans(sim)
        refs = check_references(table)
        assert not leaks(table, refs), f"orphan removal left unreferenced files: {sorted(leaks(table, refs))[:5]}"
    finally:
        shutil.rmtree(wh, ignore_errors=True)


@settings(max_examples=1200, **PROPS)
@given(ops=st.lists(meta_op, min_size=3, max_size=16))
def test_metadata_histories_expiry_and_tag_deletion(ops):
    _run_meta(ops, {}, changelog=False, allow_rollback=False)


@settings(max_examples=400, **PROPS)
@given(ops=st.lists(meta_op, min_size=3, max_size=16))
def test_metadata_histories_with_changelog_files(ops):
    """changelog-producer=input: changelog files deleted with their snapshots (tags do not protect them)."""
    _run_meta(ops, {"changelog-producer": "input"}, changelog=True, allow_rollback=False)


_EXPIRE_1 = ("expire", {"retain_min": 1, "extra_max": None, "max_deletes": 7, "time_retained_min": 0,
                        "consumer": None})


@settings(max_examples=500, **PROPS)
@given(ops=st.lists(meta_op, min_size=3, max_size=16), producer=st.sampled_from(["none", "input"]),
       cl_min=st.integers(2, 8))
# Found by this test (26 Nov): a long-lived changelog names its snapshot's index manifest, which snapshot expiry has
# deleted (as Java's does): tag deletion read it as a neighbour's and refused, or kept it (and its index files) for a
# changelog that does not own it. A changelog now protects only its lists and files (protection.lists_only).
@example(ops=[("write", 0), ("dv", 0)] + [("write", 0)] * 5 + [("compact", 0), ("tag", 0)] + [("write", 0)] * 3
         + [_EXPIRE_1, ("untag", 0)], producer="none", cl_min=2)
@example(ops=[("write", 0)] * 4 + [("dv", 0), ("compact", 0), ("tag", 4), ("write", 0),
                                   ("expire", {**_EXPIRE_1[1], "max_deletes": 5}), ("untag", 0)],
         producer="none", cl_min=2)
def test_metadata_histories_decoupled_changelog(ops, producer, cl_min):
    """Decoupled changelog lifecycle: expired snapshots become long-lived changelogs that keep their changelog
    (changelog files, or with producer=none the APPEND files) until changelog expiry removes them."""
    _run_meta(ops, {"changelog-producer": producer, "snapshot.num-retained.min": "1",
                    "changelog.num-retained.min": str(cl_min), "changelog.num-retained.max": "10"},
              changelog=producer == "input", allow_rollback=False)


rollback_op = st.one_of(meta_op, st.tuples(st.just("rollback"), st.integers(0, 9)),
                        st.tuples(st.just("orphans"), st.just(0)))


@settings(max_examples=500, **PROPS)
@given(ops=st.lists(rollback_op, min_size=3, max_size=16))
def test_metadata_histories_with_rollback_and_orphans(ops):
    _run_meta(ops, {}, changelog=False, allow_rollback=True)


# ---------------------------------------------------------------------------------------------- real rows

row_op = st.one_of(
    st.tuples(st.just("write"), st.lists(st.tuples(st.sampled_from("ab"), st.integers(0, 5), st.integers(0, 3)),
                                         min_size=1, max_size=4)),
    st.tuples(st.just("compact"), st.integers(0, 5)),
    st.tuples(st.just("upgrade"), st.integers(0, 5)),
    st.tuples(st.just("dv"), st.integers(0, 9)),
    st.tuples(st.just("tag"), st.integers(0, 7)),
    st.tuples(st.just("untag"), st.integers(0, 7)),
    st.tuples(st.just("tick"), st.integers(1, 180)),
    st.tuples(st.just("expire"), expire_args),
    st.tuples(st.just("expire"), expire_args),
    st.tuples(st.just("rollback"), st.integers(0, 9)),
    st.tuples(st.just("orphans"), st.just(0)),
)


@settings(max_examples=250, **PROPS)
@given(kind=st.sampled_from(["pk", "dv", "append"]), ops=st.lists(row_op, min_size=3, max_size=12))
def test_row_histories_reads_never_change(kind, ops):
    wh = fast_tmpdir()
    try:
        table = new_table(wh, kind=kind)
        sim = Sim(table)
        n_tags = 0
        for op, arg in ops:
            if op == "write":
                # x: 0/1 insert, 2 delete (-D), 3 update (+U); append tables take inserts only
                kinds = [0 if kind == "append" else {2: 3, 3: 2}.get(x, 0) for _, _, x in arg]
                sim.write([(p, k, f"v{x}") for p, k, x in arg], kinds)
            elif op == "compact":
                sim.compact(arg)
            elif op == "upgrade":
                sim.upgrade(arg)
            elif op == "dv":
                sim.delete_rows(arg, n=1 + arg % 2)
            elif op == "tag":
                n_tags += 1
                _tag(sim, arg, n_tags)
            elif op == "untag":
                _untag(sim, arg)
            elif op == "tick":
                sim.tick(arg * 60_000)
            elif op == "expire":
                _expire(sim, arg)
            elif op == "rollback":
                _rollback(sim, arg)
            elif op == "orphans":
                _orphans(sim)
            if op in ("untag", "expire", "rollback", "orphans"):
                check_references(table)
        refs = check_references(table)
        if not sim.had_rollback:
            assert not leaks(table, refs)
        sim.check_reads()
        _orphans(sim)
        refs = check_references(table)
        assert not leaks(table, refs)
        sim.check_reads()
    finally:
        shutil.rmtree(wh, ignore_errors=True)
