"""Planning rules of row-tracking / data-evolution compaction (compact.rowtrack), on file metadata alone: adjacency,
Java's bins (target-file-size, source.split.open-file-cost, compaction.min.file-num), BLOB coverage, refusals. The tables
themselves are proven with pypaimon / pypaimon-rust in tests/interop/test_modern_rowtrack.py."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

import paimon_ops.compact.rowtrack as rowtrack
from paimon_ops.errors import UnsupportedError
from paimon_ops.format.manifest import EMPTY_ROW, EMPTY_STATS, DataFileMeta
from paimon_ops.options import Options


def info(name: str, first: int | None, rows: int, size: int = 100, seq: int = 1, write_cols=None, dv: bool = False):
    m = DataFileMeta(name, size, rows, EMPTY_ROW, EMPTY_ROW, EMPTY_STATS, EMPTY_STATS, seq, seq, 0, 0,
                     file_source=0, first_row_id=first, write_cols=write_cols)
    return SimpleNamespace(file=SimpleNamespace(meta=m, name=name), input=SimpleNamespace(has_dv=dv))


class FakeTable:
    identifier = "db.t"

    def __init__(self, evolution: bool, blob: str | None = None):
        opts = {"row-tracking.enabled": "true", "data-evolution.enabled": str(evolution).lower()}
        if blob:
            opts["blob-field"] = blob
        self.options = Options(opts, "table db.t")
        self.schema = SimpleNamespace(fields=())


def plan(infos, evolution=True, mode="full", target=1000, open_cost=10, min_files=5, blob=None):
    warnings: list[str] = []
    p = rowtrack.Planner(FakeTable(evolution, blob), target, 0.7, min_files, open_cost, warnings)  # type: ignore[arg-type]
    tasks, skipped = [], []
    p.bucket(b"", 0, infos, mode, lambda kind, part, b, files, why, **kw: tasks.append((kind, [f.file.name for f in files],
                                                                                         kw)), skipped.append)
    return tasks, skipped, warnings


def test_plain_row_tracking_joins_adjacent_runs_only():
    files = [info("a", 0, 2), info("b", 2, 2), info("c", 7, 1), info("d", 8, 3), info("e", 20, 1)]
    tasks, _, _ = plan(files, evolution=False)
    assert [(k, names) for k, names, _ in tasks] == [("rowtrack", ["a", "b"]), ("rowtrack", ["c", "d"])]
    # small-files: large files cut the segments; a remainder needs compaction.min.file-num files
    files = [info("a", 0, 1), info("b", 1, 1), info("big", 2, 1, size=900), info("c", 3, 1), info("d", 4, 1)]
    tasks, _, _ = plan(files, evolution=False, mode="small-files", min_files=2)
    assert [names for _, names, _ in tasks] == [["a", "b"], ["c", "d"]]
    tasks, skipped, _ = plan(files, evolution=False, mode="small-files", min_files=3)
    assert not tasks and skipped


def test_data_evolution_groups_bins_and_min_file_num():
    base = [info("b0", 0, 3, seq=1), info("b1", 3, 2, seq=2), info("b2", 5, 3, seq=3)]
    upd = [info("u0", 0, 3, seq=4, write_cols=("b",)), info("u0a", 0, 3, seq=5, write_cols=("a",))]
    tasks, _, _ = plan(base + upd, mode="small-files")  # 5 files >= 5
    [(kind, names, kw)] = tasks
    assert kind == "evolution" and sorted(names) == ["b0", "b1", "b2", "u0", "u0a"]
    groups = kw["row_groups"]
    assert [(g["start"], g["rows"], g["anchor"]) for g in groups] == [(0, 3, "b0"), (3, 2, "b1"), (5, 3, "b2")]
    assert not plan(base + upd[:1], mode="small-files")[0]  # 4 files < 5: Java waits
    assert plan(base + upd[:1], mode="full")[0]  # full: any bin with more than one file
    # target-file-size: a group heavier than the target is a bin of its own (merging its column updates)
    heavy = [info("b0", 0, 3, size=900, seq=1), info("u0", 0, 3, size=900, seq=4, write_cols=("b",)),
             info("b1", 3, 2, seq=2)]
    tasks, _, _ = plan(heavy, mode="full")
    assert [sorted(names) for _, names, _ in tasks] == [["b0", "u0"]]
    # a gap in row ids starts a new chunk
    tasks, _, _ = plan([info("b0", 0, 3), info("b1", 3, 2), info("b5", 10, 2), info("b6", 12, 1)])
    assert [names for _, names, _ in tasks] == [["b0", "b1"], ["b5", "b6"]]


def test_blob_files_must_cover_the_bin():
    base = [info("b0", 0, 2, seq=1), info("b1", 2, 1, seq=2)]
    blobs = [info("x0.blob", 0, 2, seq=1, write_cols=("pic",)), info("x1.blob", 2, 1, seq=2, write_cols=("pic",))]
    tasks, _, warnings = plan(base + blobs, blob="pic")
    assert [sorted(n) for _, n, _ in tasks] == [["b0", "b1"]] and not warnings  # BLOB files are not inputs
    tasks, skipped, warnings = plan(base + blobs[:1], blob="pic")
    assert not tasks and "BLOB column pic has no file for row ids 2..2" in warnings[0]


def test_refusals():
    with pytest.raises(UnsupportedError, match="no _FIRST_ROW_ID"):
        plan([info("a", None, 2), info("b", 2, 2)], evolution=False)
    with pytest.raises(UnsupportedError, match="overlap without being equal"):
        plan([info("a", 0, 3), info("b", 1, 3)])
    with pytest.raises(UnsupportedError, match="_ROW_ID"):
        plan([info("a", 0, 3, write_cols=("a", "_ROW_ID"))])
    with pytest.raises(UnsupportedError, match="deletion vector"):
        plan([info("a", 0, 3, dv=True), info("b", 3, 1)], evolution=False)
    with pytest.raises(UnsupportedError, match="not the oldest file of its row range"):
        plan([info("a", 0, 3, seq=1), info("u", 0, 3, seq=2, write_cols=("b",), dv=True)])
