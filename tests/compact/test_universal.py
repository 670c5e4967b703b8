"""The per-bucket LSM picker against the rules of maintenance.md §5.1, §5.3-§5.7, §5.10, §6.7 (metadata only)."""
from __future__ import annotations

import pytest

import paimon_ops.compact.levels as lv
from paimon_ops.compact.levels import LsmFile, PickConfig, SortedRun

MB = 1 << 20


def f(name: str, level: int, size: int, lo: int = 0, hi: int = 100, seq: int = 0, dv: bool = False,
      deletes: int | None = 0, created: int = 0) -> LsmFile:
    return LsmFile(name, level, size, (lo,), (hi,), seq, seq, created, deletes, dv)


def run(level: int, *files: LsmFile) -> SortedRun:
    return SortedRun(level, tuple(files))


def l0(name: str, size: int, seq: int) -> SortedRun:
    return run(0, f(name, 0, size, seq=seq))


CFG = PickConfig(num_levels=6)  # trigger 5, max size amp 200 %, size ratio 1 %


def names(unit: lv.Unit | None) -> list[str]:
    return [x.name for x in unit.files] if unit else []


# ---------------------------------------------------------------------------------------------- §5.1 runs

def test_sorted_runs_level0_newest_first_then_levels_in_key_order():
    files = [f("a", 0, 1, seq=5), f("b", 0, 1, seq=9), f("c", 3, 1, lo=50, hi=60), f("d", 3, 1, lo=0, hi=10),
             f("e", 5, 1), LsmFile("t2", 0, 1, (0,), (1,), 1, 9, 0, 0), LsmFile("t1", 0, 1, (0,), (1,), 0, 9, 0, 0)]
    runs = lv.sorted_runs(files)
    assert [(r.level, [x.name for x in r.files]) for r in runs] == [
        (0, ["t1"]), (0, ["t2"]), (0, ["b"]), (0, ["a"]), (3, ["d", "c"]), (5, ["e"])]


# ---------------------------------------------------------------------------------------------- §5.4 universal

def test_fewer_runs_than_trigger_pick_nothing():
    runs = [l0("a", MB, 3), l0("b", MB, 2), run(5, f("z", 5, 100 * MB))]
    assert lv.pick_universal(runs, CFG) is None
    assert lv.pick_minor(runs, CFG) is None


def test_size_amplification_takes_everything_to_max_level():
    runs = [l0(str(i), 30 * MB, 10 - i) for i in range(4)] + [run(5, f("z", 5, 50 * MB))]
    unit = lv.pick_universal(runs, CFG)
    assert unit.output_level == 5 and len(unit.files) == 5 and "amplification" in unit.reason
    # 120 MB x 100 <= 200 x 60 MB: no size amplification
    runs[-1] = run(5, f("z", 5, 60 * MB))
    unit = lv.pick_universal(runs, CFG)
    assert unit is None or "amplification" not in unit.reason


def test_size_ratio_absorbs_runs_not_much_bigger_than_the_candidates():
    # sizes 1, 1, 2, 100(level 4), 1000(level 5): 1 -> +1 (2) -> +2 (4) -> 100 > 4 x 1.01 stop
    runs = [l0("a", MB, 9), l0("b", MB, 8), l0("c", 2 * MB, 7), run(4, f("d", 4, 100 * MB)),
            run(5, f("e", 5, 1000 * MB))]
    unit = lv.pick_universal(runs, CFG)
    assert names(unit) == ["a", "b", "c"] and unit.reason == "size ratio"
    assert unit.output_level == 3  # next run's level - 1


def test_size_ratio_single_candidate_not_triggered():
    # the first run alone is not a unit: 1 MB x 1.01 < 50 MB, and nothing absorbed
    runs = [l0("a", MB, 9), run(1, f("b", 1, 50 * MB)), run(2, f("c", 2, 60 * MB)), run(3, f("d", 3, 200 * MB)),
            run(4, f("e", 4, 400 * MB))]
    cfg = PickConfig(num_levels=6, max_size_amp=100000)
    assert lv.pick_universal(runs, cfg) is None


def test_once_triggered_level_le_1_runs_are_absorbed_even_if_bigger():
    # run count rule: 6 runs > trigger 5 -> count = 2; the next level-0/1 runs join even though bigger (master)
    runs = [l0("a", MB, 9), l0("b", MB, 8), l0("c", 10 * MB, 7), run(1, f("d", 1, 50 * MB)),
            run(4, f("e", 4, 500 * MB)), run(5, f("z", 5, 5000 * MB))]
    unit = lv.pick_universal(runs, CFG)
    assert names(unit) == ["a", "b", "c", "d"] and unit.output_level == 3


def test_offpeak_ratio_makes_size_ratio_more_aggressive():
    runs = [l0("a", 10 * MB, 9), l0("b", 15 * MB, 8), run(2, f("c", 2, 500 * MB)), run(3, f("d", 3, 900 * MB)),
            run(5, f("z", 5, 5000 * MB))]
    assert lv.pick_universal(runs, CFG) is None  # 10 x 1.01 < 15
    cfg = PickConfig(num_levels=6, offpeak_ratio=60)
    unit = lv.pick_universal(runs, cfg)
    assert names(unit) == ["a", "b"] and unit.output_level == 1
    assert lv.offpeak_ratio(22, 6, 60, 23) == 60 and lv.offpeak_ratio(22, 6, 60, 5) == 60
    assert lv.offpeak_ratio(22, 6, 60, 6) == 0 and lv.offpeak_ratio(-1, 6, 60, 3) == 0
    assert lv.offpeak_ratio(3, 3, 60, 3) == 0 and lv.offpeak_ratio(1, 4, 60, 2) == 60


def test_run_count_rule():
    # 7 runs > trigger 5 -> the first 3 runs at least
    runs = [l0(str(i), (i + 1) * 10 * MB, 20 - i) for i in range(6)] + [run(5, f("z", 5, 10000 * MB))]
    unit = lv.pick_universal(runs, CFG)
    assert "sorted runs" in unit.reason and len(unit.files) >= 3


def test_create_unit_never_outputs_level0():
    runs = [l0("a", MB, 9), l0("b", MB, 8), l0("c", MB, 7), run(3, f("d", 3, MB)), run(5, f("e", 5, MB))]
    unit = lv.create_unit(runs, 1, CFG, "x")
    assert names(unit) == ["a", "b", "c", "d"] and unit.output_level == 3
    unit = lv.create_unit(runs, 4, CFG, "x")
    assert names(unit) == ["a", "b", "c", "d"] and unit.output_level == 4
    assert lv.create_unit(runs, 5, CFG, "x").output_level == 5
    only0 = [l0("a", MB, 9), l0("b", MB, 8)]
    assert lv.create_unit(only0, 1, CFG, "x").output_level == 5  # absorbing consumes everything -> max level


# ---------------------------------------------------------------------------------------------- §5.3 ForceUpLevel0

def test_force_up_level0_picks_all_level0_files():
    runs = [l0("a", MB, 3), l0("b", MB, 2), run(5, f("z", 5, 100 * MB))]
    cfg = PickConfig(num_levels=6, force_up_level0=True)
    unit = lv.pick_minor(runs, cfg)
    assert names(unit) == ["a", "b"] and unit.output_level == 4
    assert lv.pick_minor([run(5, f("z", 5, MB))], cfg) is None
    # gentle: one trigger of a fresh counter never reaches lookup-compact.max-interval (>= trigger)
    gentle = PickConfig(num_levels=6, force_up_level0=True, gentle_interval=10)
    assert lv.pick_minor(runs, gentle) is None


def test_single_file_already_at_output_level_is_discarded():
    cfg = PickConfig(num_levels=6, total_size_threshold=10 * MB)
    runs = [run(5, f("z", 5, MB))]
    assert lv.pick_minor(runs, cfg) is None


# ---------------------------------------------------------------------------------------------- §5.5 early full

def test_early_full_compaction_rules():
    runs = [l0("a", MB, 3), run(5, f("z", 5, 100 * MB, created=1_000))]
    assert lv.pick_universal(runs, PickConfig(num_levels=6, full_interval_ms=500, now_ms=1_400)) is None
    unit = lv.pick_universal(runs, PickConfig(num_levels=6, full_interval_ms=500, now_ms=1_600))
    assert unit.output_level == 5 and len(unit.files) == 2
    no_max = [l0("a", MB, 3), l0("b", MB, 2)]  # no max-level file: the clock never started -> full
    assert lv.pick_universal(no_max, PickConfig(num_levels=6, full_interval_ms=500, now_ms=0)).output_level == 5
    assert lv.pick_universal(runs, PickConfig(num_levels=6, total_size_threshold=200 * MB)).output_level == 5
    assert lv.pick_universal(runs, PickConfig(num_levels=6, total_size_threshold=100 * MB)) is None
    assert lv.pick_universal(runs, PickConfig(num_levels=6, incremental_size_threshold=MB // 2)).output_level == 5
    assert lv.pick_universal([runs[1]], PickConfig(num_levels=6, total_size_threshold=200 * MB)) is None


# ---------------------------------------------------------------------------------------------- §5.6 full

def test_full_pick():
    assert lv.pick_full([], CFG) is None
    assert lv.pick_full([run(5, f("z", 5, MB))], CFG) is None  # single max-level run: the caller's §5.6 (c)
    unit = lv.pick_full([l0("a", MB, 1), run(3, f("b", 3, MB))], CFG)
    assert unit.output_level == 5 and names(unit) == ["a", "b"]
    assert lv.pick_full([run(3, f("b", 3, MB))], CFG).output_level == 5


# ---------------------------------------------------------------------------------------------- §6.7 dropDelete

@pytest.mark.parametrize("out,highest,dv,expected", [
    (0, 5, True, False), (4, 5, False, False), (5, 5, False, True), (3, 3, False, True), (2, 5, True, True)])
def test_drop_delete(out, highest, dv, expected):
    assert lv.drop_delete(out, highest, dv) is expected


# ---------------------------------------------------------------------------------------------- §5.7 sections

def test_interval_partition_sections_and_runs():
    a = f("a", 0, 1, 0, 10)
    b = f("b", 0, 1, 5, 20)
    c = f("c", 1, 1, 21, 30)
    d = f("d", 1, 1, 31, 40)
    e = f("e", 0, 1, 35, 50)
    sections = lv.interval_partition([e, d, c, b, a])
    assert [[[x.name for x in r] for r in s] for s in sections] == [[["a"], ["b"]], [["c"]], [["d"], ["e"]]]
    # non-overlapping files chain into one run
    s = lv.interval_partition([f("x", 0, 1, 0, 50), f("y", 1, 1, 0, 10), f("z", 1, 1, 11, 20)])
    assert [[[x.name for x in r] for r in sec] for sec in s] == [[["y", "z"], ["x"]]]


# ---------------------------------------------------------------------------------------------- steps

PLAIN = lv.RewriterSpec(lv.PLAIN)
LOOKUP_DV = lv.RewriterSpec(lv.LOOKUP, deletion_vectors=True, dedup_without_sequence=True)
LOOKUP_CL = lv.RewriterSpec(lv.LOOKUP, produce_changelog=True, dedup_without_sequence=False)
FULL_CL = lv.RewriterSpec(lv.FULL_CHANGELOG, produce_changelog=True)


def steps(files, out, rw, small=10, max_level=5, dd=True):
    unit = lv.Unit(out, tuple(SortedRun(x.level, (x,)) for x in files), "t")
    return [(s.op, list(s.files), s.merge, s.write) for s in lv.plan_steps(unit, max_level, dd, small, rw)]


def test_large_non_overlapping_files_are_upgraded_small_ones_rewritten():
    files = [f("a", 0, 5, 0, 10), f("b", 0, 50, 20, 30), f("c", 0, 5, 40, 50), f("d", 0, 5, 45, 60)]
    assert steps(files, 4, PLAIN) == [("upgrade", ["a"], None, True), ("upgrade", ["b"], None, True),
                                      ("rewrite", ["c", "d"], "merge", True)]
    # a lone small single-run candidate is upgraded, a pending candidate list is flushed before a large file
    files = [f("a", 0, 5, 0, 10), f("x", 0, 5, 11, 12), f("b", 0, 50, 20, 30)]
    assert steps(files, 4, PLAIN) == [("rewrite", ["a", "x"], "merge", True), ("upgrade", ["b"], None, True)]


def test_upgrade_to_max_level_rewrites_files_that_may_hold_retracts():
    assert steps([f("a", 3, 50, deletes=2)], 5, PLAIN) == [("rewrite", ["a"], "merge", True)]
    assert steps([f("a", 3, 50, deletes=None)], 5, PLAIN) == [("rewrite", ["a"], "merge", True)]
    assert steps([f("a", 3, 50, deletes=0)], 5, PLAIN) == [("upgrade", ["a"], None, True)]
    assert steps([f("a", 3, 50, deletes=2)], 4, PLAIN) == [("upgrade", ["a"], None, True)]
    assert steps([f("a", 4, 50)], 4, PLAIN) == []  # already at the output level
    forced = lv.RewriterSpec(lv.PLAIN, force_rewrite_all=True)
    assert steps([f("a", 3, 50)], 4, forced) == [("rewrite", ["a"], "merge", True)]


def test_lookup_rewriter_upgrade_rules():
    # level 0, DVs, may hold retracts -> read and rewrite
    assert steps([f("a", 0, 50, deletes=1)], 4, LOOKUP_DV) == [("read", ["a"], "lookup", True)]
    # level 0, DVs, no retracts, dedup without sequence field -> read, then upgrade
    assert steps([f("a", 0, 50)], 4, LOOKUP_DV) == [("read", ["a"], "lookup", False)]
    # other engines below the max level must rewrite; at the max level read then upgrade
    assert steps([f("a", 0, 50)], 4, LOOKUP_CL) == [("read", ["a"], "lookup", True)]
    assert steps([f("a", 0, 50)], 5, LOOKUP_CL) == [("read", ["a"], "lookup", False)]
    # level > 0 files are plain upgrades
    assert steps([f("a", 2, 50)], 4, LOOKUP_CL) == [("upgrade", ["a"], None, True)]
    # a rewrite holding level-0 files goes through the lookup wrapper; without level 0 it is a plain merge
    assert steps([f("a", 0, 5, 0, 10), f("b", 2, 5, 5, 20)], 4, LOOKUP_CL) == [("rewrite", ["a", "b"], "lookup", True)]
    assert steps([f("a", 1, 5, 0, 10), f("b", 2, 5, 5, 20)], 4, LOOKUP_CL) == [("rewrite", ["a", "b"], "merge", True)]


def test_full_changelog_rewriter():
    assert steps([f("a", 0, 5, 0, 10), f("b", 2, 5, 5, 20)], 5, FULL_CL) == [
        ("rewrite", ["a", "b"], "full-changelog", True)]
    assert steps([f("a", 0, 5, 0, 10), f("b", 2, 5, 5, 20)], 4, FULL_CL) == [("rewrite", ["a", "b"], "merge", True)]
    assert steps([f("a", 2, 50)], 5, FULL_CL) == [("read", ["a"], "full-changelog", False)]
    assert steps([f("a", 2, 50)], 4, FULL_CL) == [("upgrade", ["a"], None, True)]
