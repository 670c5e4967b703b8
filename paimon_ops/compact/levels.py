"""The LSM tree of one primary-key bucket, on the driver (metadata only): sorted runs, Paimon's compaction pickers,
key-range sections and the walk that decides, file by file, between a metadata-only level upgrade and a rewrite
(maintenance.md §5.1, §5.3-§5.7, §5.10, §6.7).

    runs = sorted_runs(files)                        # level-0 files newest first, then one run per level
    unit = pick_minor(runs, config)                  # UniversalCompaction (+ ForceUpLevel0 for lookup tables)
    unit = pick_full(runs, config.num_levels)        # CompactStrategy.pickFullCompaction
    steps = plan_steps(unit, rewriter, ...)          # MergeTreeCompactTask: rewrite / upgrade / read-and-upgrade

Everything here is a pure function of file metadata (sizes, levels, min/max keys, sequence numbers): the plan a
driver prints is exactly what the executor does.

Java behaviour followed (apache/paimon; master unless said otherwise — Java 0.9, the version the interop tests run,
differs only where noted, and never in which rows or changelog a compaction produces):
* ``UniversalCompaction.pick``: early full compaction (``compaction.optimization-interval``,
  ``compaction.total-size-threshold``, ``compaction.incremental-size-threshold``; the interval clock starts at the
  newest creation time among max-level files, as master's ``estimateLastFullCompactionTime``), size amplification,
  size ratio, run count; ``pickForSizeRatio`` with off-peak hours and master's "once triggered, keep absorbing
  level <= 1 runs" rule (0.9 had neither: it only changes how deep a minor compaction reaches).
* ``ForceUpLevel0Compaction`` for tables that need lookup and for ``compaction.force-up-level-0``: when universal
  picks nothing, all level-0 files are picked (``lookup-compact=radical``, the default). For
  ``lookup-compact=gentle`` Java counts triggers inside one long-lived writer and force-picks every
  ``lookup-compact.max-interval`` triggers; a dedicated compaction run is one trigger of a fresh counter, so level 0
  is force-picked only when that interval is 1 (otherwise only universal picks apply).
* ``MergeTreeCompactManager.triggerCompaction``: an empty unit or a single file already at the output level is
  discarded; ``dropDelete = outputLevel != 0 && (outputLevel >= highest non-empty level || deletion vectors)``.
* ``IntervalPartition`` sections and ``MergeTreeCompactTask.doCompact``: small files (< target-file-size x
  ``compaction.small-file-ratio``) and multi-run sections are rewritten together, a large single-run file first
  flushes the pending rewrite and is then upgraded; a lone single-run candidate is upgraded too. An upgrade to the
  max level of a file that may hold retract rows, or any upgrade under ``compaction.force-rewrite-all-files``, is a
  rewrite (master; 0.9 skipped files already at the output level first, which only differs for max-level files
  holding retract rows, which no compaction writes).
* the rewriter's own rules (``ChangelogMergeTreeRewriter`` subclasses): lookup tables read level-0 files they upgrade
  (lookups, deletion vectors, changelog) and rewrite them when deletion vectors are on and the file may hold retract
  rows, or when the output is below the max level and the engine is not deduplicate-without-sequence-field;
  ``changelog-producer=full-compaction`` reads files upgraded to the max level to emit their changelog.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

# Rewriters (which Java CompactRewriter a bucket uses).
PLAIN = "plain"                    # MergeTreeCompactRewriter
LOOKUP = "lookup"                  # LookupMergeTreeCompactRewriter (deletion vectors, lookup changelog, force-lookup)
FIRST_ROW = "first-row"            # LookupMergeTreeCompactRewriter with the first-row contains-check
FULL_CHANGELOG = "full-changelog"  # FullChangelogMergeTreeCompactRewriter (changelog-producer=full-compaction)

# How the records of a step are merged.
MERGE = "merge"                    # ReducerMergeFunctionWrapper: single records pass unchanged
LOOKUP_MERGE = "lookup"            # LookupChangelogMergeFunctionWrapper / FirstRowMergeFunctionWrapper
FULL_MERGE = "full-changelog"      # FullChangelogMergeFunctionWrapper

# Step operations.
REWRITE = "rewrite"                # merge files, write new files at the output level
UPGRADE = "upgrade"                # metadata only: same file, new level
READ = "read"                      # read one level-0 file through the lookup / changelog wrapper; rewrite or upgrade


@dataclass(frozen=True)
class LsmFile:
    """What the pickers need to know of a data file. Keys are Python tuples in the table's key order."""

    name: str
    level: int
    size: int
    min_key: tuple
    max_key: tuple
    min_seq: int
    max_seq: int
    creation_time: int = 0
    delete_rows: int | None = None     # None: unknown (files written before 0.9 stats)
    has_dv: bool = False
    # Reads the file's _VALUE_KIND column when its writer claims no delete rows: a wrong claim (pypaimon 2.1.0
    # writes _DELETE_ROW_COUNT = 0 for level-0 files full of deletes) must not let a file be upgraded unread.
    retract_probe: Callable[[], bool] | None = field(default=None, compare=False, repr=False)

    @property
    def may_hold_retracts(self) -> bool:
        if self.delete_rows is None or self.delete_rows > 0:
            return True
        return self.retract_probe() if self.retract_probe is not None else False


@dataclass(frozen=True)
class SortedRun:
    level: int
    files: tuple[LsmFile, ...]

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)


@dataclass(frozen=True)
class Unit:
    """A compaction unit: the runs it takes and the level it writes (CompactUnit)."""

    output_level: int
    runs: tuple[SortedRun, ...]
    reason: str

    @property
    def files(self) -> list[LsmFile]:
        return [f for r in self.runs for f in r.files]


def sorted_runs(files: Iterable[LsmFile]) -> list[SortedRun]:
    """Level-0 files newest first (max sequence number descending; ties: min sequence number, creation time, name,
    as master's Levels), then one run per non-empty level >= 1 with its files in key order."""
    files = list(files)
    level0 = sorted((f for f in files if f.level == 0), key=lambda f: (-f.max_seq, f.min_seq, f.creation_time, f.name))
    runs = [SortedRun(0, (f,)) for f in level0]
    by_level: dict[int, list[LsmFile]] = {}
    for f in files:
        if f.level > 0:
            by_level.setdefault(f.level, []).append(f)
    for level in sorted(by_level):
        runs.append(SortedRun(level, tuple(sorted(by_level[level], key=lambda f: (f.min_key, f.max_key)))))
    return runs


@dataclass(frozen=True)
class PickConfig:
    """The options of Paimon's pickers for one table, resolved once (``now`` included)."""

    num_levels: int
    trigger: int = 5                                  # num-sorted-run.compaction-trigger
    max_size_amp: int = 200                           # compaction.max-size-amplification-percent
    size_ratio: int = 1                               # compaction.size-ratio
    offpeak_ratio: int = 0                            # compaction.offpeak-ratio when inside the off-peak hours now
    force_up_level0: bool = False                     # ForceUpLevel0Compaction around universal
    gentle_interval: int | None = None                # lookup-compact=gentle: lookup-compact.max-interval
    full_interval_ms: int | None = None               # compaction.optimization-interval
    total_size_threshold: int | None = None           # compaction.total-size-threshold
    incremental_size_threshold: int | None = None     # compaction.incremental-size-threshold
    now_ms: int = 0                                   # local wall clock as UTC millis, like _CREATION_TIME

    @property
    def max_level(self) -> int:
        return self.num_levels - 1


def offpeak_ratio(start_hour: int, end_hour: int, ratio: int, hour: int) -> int:
    """OffPeakHours.currentRatio: [start, end) in local hours, wrapping when start > end; off when -1 or equal."""
    if start_hour == -1 or end_hour == -1 or start_hour == end_hour:
        return 0
    if start_hour <= end_hour:
        inside = start_hour <= hour < end_hour
    else:
        inside = hour < end_hour or start_hour <= hour
    return ratio if inside else 0


# ---------------------------------------------------------------------------------------------- pickers

def _early_full(runs: Sequence[SortedRun], cfg: PickConfig) -> Unit | None:
    """EarlyFullCompaction.tryFullCompact (maintenance.md §5.5)."""
    if len(runs) <= 1:
        return None
    max_level = cfg.max_level
    if cfg.full_interval_ms is not None:
        times = [f.creation_time for r in runs if r.level == max_level for f in r.files if f.creation_time]
        last = max(times) if times else None
        if last is None or cfg.now_ms - last > cfg.full_interval_ms:
            return Unit(max_level, tuple(runs), "full compaction interval (compaction.optimization-interval)")
    if cfg.total_size_threshold is not None:
        total = sum(r.size for r in runs)
        if total < cfg.total_size_threshold:
            return Unit(max_level, tuple(runs), f"total size {total} < compaction.total-size-threshold")
    if cfg.incremental_size_threshold is not None:
        inc = sum(r.size for r in runs if r.level != max_level)
        if inc > cfg.incremental_size_threshold:
            return Unit(max_level, tuple(runs), f"incremental size {inc} > compaction.incremental-size-threshold")
    return None


def create_unit(runs: Sequence[SortedRun], count: int, cfg: PickConfig, reason: str) -> Unit:
    """UniversalCompaction.createUnit: output = level of the next run - 1, never level 0 (absorb runs until a
    level > 0 run is taken and use its level); taking every run means the max level."""
    n = len(runs)
    if count == n:
        out = cfg.max_level
    else:
        out = max(0, runs[count].level - 1)
    if out == 0:
        for i in range(count, n):
            count += 1
            if runs[i].level != 0:
                out = runs[i].level
                break
    if count == n:
        out = cfg.max_level
    return Unit(out, tuple(runs[:count]), reason)


def pick_for_size_ratio(runs: Sequence[SortedRun], count: int, cfg: PickConfig, force: bool, reason: str) -> Unit | None:
    size = sum(r.size for r in runs[:count])
    triggered = force or count > 1
    for i in range(count, len(runs)):
        nxt = runs[i]
        if size * (100.0 + cfg.size_ratio + cfg.offpeak_ratio) / 100.0 < nxt.size:
            if not triggered or nxt.level > 1:
                break
        size += nxt.size
        count += 1
        triggered = True
    return create_unit(runs, count, cfg, reason) if triggered else None


def pick_universal(runs: Sequence[SortedRun], cfg: PickConfig) -> Unit | None:
    """UniversalCompaction.pick (maintenance.md §5.4): the first rule that yields a unit."""
    n = len(runs)
    if n == 0:
        return None
    unit = _early_full(runs, cfg)
    if unit is not None:
        return unit
    if n >= cfg.trigger:
        cand = sum(r.size for r in runs[:-1])
        last = runs[-1].size
        if cand * 100 > cfg.max_size_amp * last:
            return Unit(cfg.max_level, tuple(runs), f"size amplification {cand} x 100 > {cfg.max_size_amp} x {last}")
        unit = pick_for_size_ratio(runs, 1, cfg, False, "size ratio")
        if unit is not None:
            return unit
    if n > cfg.trigger:
        return pick_for_size_ratio(runs, n - cfg.trigger + 1, cfg, False,
                                   f"{n} sorted runs > num-sorted-run.compaction-trigger {cfg.trigger}")
    return None


def force_pick_level0(runs: Sequence[SortedRun], cfg: PickConfig) -> Unit | None:
    """UniversalCompaction.forcePickL0: every level-0 file (then the size-ratio absorption)."""
    count = 0
    for r in runs:
        if r.level > 0:
            break
        count += 1
    if count == 0:
        return None
    return pick_for_size_ratio(runs, count, cfg, True, "level 0 forced up (lookup compaction)")


def pick_minor(runs: Sequence[SortedRun], cfg: PickConfig) -> Unit | None:
    """What a writer's normal compaction trigger picks: universal, then ForceUpLevel0 when configured; units that
    are empty or a single file already at the output level are discarded (MergeTreeCompactManager)."""
    unit = pick_universal(runs, cfg)
    if unit is None and cfg.force_up_level0:
        if cfg.gentle_interval is None or cfg.gentle_interval <= 1:
            unit = force_pick_level0(runs, cfg)
    if unit is None:
        return None
    files = unit.files
    if not files or (len(files) == 1 and files[0].level == unit.output_level):
        return None
    return unit


def pick_full(runs: Sequence[SortedRun], cfg: PickConfig) -> Unit | None:
    """CompactStrategy.pickFullCompaction for more than one run or a run below the max level: everything to the max
    level. (A single max-level run is the caller's: §5.6 rewrites its files with deletion vectors one by one.)"""
    if not runs or (len(runs) == 1 and runs[0].level == cfg.max_level):
        return None
    return Unit(cfg.max_level, tuple(runs), "full compaction")


def drop_delete(output_level: int, highest_level: int, deletion_vectors: bool) -> bool:
    """maintenance.md §6.7 (forceKeepDelete is only for chain tables, which we do not maintain)."""
    return output_level != 0 and (output_level >= highest_level or deletion_vectors)


# ---------------------------------------------------------------------------------------------- sections

def interval_partition(files: Iterable[LsmFile]) -> list[list[list[LsmFile]]]:
    """IntervalPartition: sections of transitively key-overlapping files in key order, each split into the fewest
    sorted runs (greedy: a file joins the run whose last max key is smallest, if it starts after it)."""
    fs = sorted(files, key=lambda f: (f.min_key, f.max_key))
    sections: list[list[list[LsmFile]]] = []
    cur: list[LsmFile] = []
    bound: tuple | None = None
    for f in fs:
        if cur and bound is not None and f.min_key > bound:
            sections.append(_section_runs(cur))
            cur, bound = [], None
        cur.append(f)
        if bound is None or f.max_key > bound:
            bound = f.max_key
    if cur:
        sections.append(_section_runs(cur))
    return sections


def _section_runs(files: list[LsmFile]) -> list[list[LsmFile]]:
    heap: list[tuple[tuple, int, list[LsmFile]]] = [(files[0].max_key, 0, [files[0]])]
    counter = 1
    for f in files[1:]:
        last_max, c, run = heapq.heappop(heap)
        if f.min_key > last_max:
            run.append(f)
            heapq.heappush(heap, (f.max_key, c, run))
        else:
            heapq.heappush(heap, (last_max, c, run))
            heapq.heappush(heap, (f.max_key, counter, [f]))
            counter += 1
    return [run for _, _, run in sorted(heap, key=lambda t: t[1])]


# ---------------------------------------------------------------------------------------------- steps

@dataclass(frozen=True)
class UnitStep:
    """One action of a unit, in key order. `files` are names; `write` says whether new files are written (a READ
    step without write upgrades its file after reading it); `drop_delete` applies to what is written."""

    op: str
    files: tuple[str, ...]
    merge: str | None = None
    write: bool = True
    drop_delete: bool = False
    changelog: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "files": list(self.files), "merge": self.merge, "write": self.write,
                "drop_delete": self.drop_delete, "changelog": self.changelog}

    @staticmethod
    def from_json(d: dict[str, Any]) -> UnitStep:
        return UnitStep(d["op"], tuple(d["files"]), d.get("merge"), bool(d.get("write", True)),
                    bool(d.get("drop_delete")), bool(d.get("changelog")))


@dataclass(frozen=True)
class RewriterSpec:
    """Which rewriter a bucket uses and the table facts its upgrade rules need."""

    kind: str                          # PLAIN | LOOKUP | FIRST_ROW | FULL_CHANGELOG
    deletion_vectors: bool = False
    produce_changelog: bool = False    # changelog-producer=lookup (LOOKUP / FIRST_ROW) or full-compaction
    dedup_without_sequence: bool = False
    force_rewrite_all: bool = False    # compaction.force-rewrite-all-files


@dataclass
class _Walk:
    unit_output: int
    max_level: int
    drop_delete: bool
    min_file_size: int
    rw: RewriterSpec
    steps: list[UnitStep] = field(default_factory=list)

    # -- MergeTreeCompactTask
    def run(self, sections: list[list[list[LsmFile]]]) -> list[UnitStep]:
        candidate: list[list[list[LsmFile]]] = []
        for section in sections:
            if len(section) > 1:
                candidate.append(section)
            else:
                for f in section[0]:
                    if f.size < self.min_file_size:
                        candidate.append([[f]])
                    else:
                        self.flush(candidate)
                        self.upgrade(f)
        self.flush(candidate)
        return self.steps

    def flush(self, candidate: list[list[list[LsmFile]]]) -> None:
        if not candidate:
            return
        if len(candidate) == 1 and len(candidate[0]) == 1:
            for f in candidate[0][0]:
                self.upgrade(f)
        else:
            self.rewrite([f for section in candidate for run in section for f in run])
        candidate.clear()

    def upgrade(self, f: LsmFile) -> None:
        out = self.unit_output
        if (out == self.max_level and f.may_hold_retracts) or self.rw.force_rewrite_all:
            self.rewrite([f])
            return
        if f.level == out:
            return
        self.rewriter_upgrade(f)

    # -- the rewriters
    def rewrite(self, files: list[LsmFile]) -> None:
        out = self.unit_output
        kind = self.rw.kind
        if kind in (LOOKUP, FIRST_ROW) and out != 0 and any(f.level == 0 for f in files):
            self.steps.append(UnitStep(REWRITE, tuple(f.name for f in files), LOOKUP_MERGE, True, self.drop_delete,
                                   self.rw.produce_changelog))
        elif kind == FULL_CHANGELOG and out == self.max_level:
            self.steps.append(UnitStep(REWRITE, tuple(f.name for f in files), FULL_MERGE, True, self.drop_delete, True))
        else:
            self.steps.append(UnitStep(REWRITE, tuple(f.name for f in files), MERGE, True, self.drop_delete, False))

    def rewriter_upgrade(self, f: LsmFile) -> None:
        out = self.unit_output
        kind = self.rw.kind
        if kind in (LOOKUP, FIRST_ROW) and f.level == 0:
            # LookupMergeTreeCompactRewriter.upgradeStrategy; forceDropDelete = deletion vectors on.
            if self.rw.deletion_vectors and f.may_hold_retracts:
                rewrite = True
            elif out == self.max_level:
                rewrite = False
            elif kind == LOOKUP and self.rw.dedup_without_sequence:
                rewrite = False
            else:
                rewrite = True
            self.steps.append(UnitStep(READ, (f.name,), LOOKUP_MERGE, rewrite, self.rw.deletion_vectors,
                                   self.rw.produce_changelog))
        elif kind == FULL_CHANGELOG and out == self.max_level:
            self.steps.append(UnitStep(READ, (f.name,), FULL_MERGE, False, False, True))
        else:
            self.steps.append(UnitStep(UPGRADE, (f.name,)))


def plan_steps(unit: Unit, max_level: int, drop_delete_: bool, min_file_size: int, rewriter: RewriterSpec) -> list[UnitStep]:
    """The actions of a unit in key order (MergeTreeCompactTask.doCompact with the bucket's rewriter)."""
    walk = _Walk(unit.output_level, max_level, drop_delete_, min_file_size, rewriter)
    return walk.run(interval_partition(unit.files))


__all__ = ["LsmFile", "SortedRun", "Unit", "PickConfig", "UnitStep", "RewriterSpec", "sorted_runs", "pick_minor",
           "pick_full", "pick_universal", "force_pick_level0", "pick_for_size_ratio", "create_unit",
           "interval_partition", "plan_steps", "drop_delete", "offpeak_ratio",
           "PLAIN", "LOOKUP", "FIRST_ROW", "FULL_CHANGELOG", "MERGE", "LOOKUP_MERGE", "FULL_MERGE",
           "REWRITE", "UPGRADE", "READ"]
