"""Proof: stale or garbage LATEST / EARLIEST hints never change what latest / earliest are, and a
commit made while the LATEST hint is wrong still takes the next free snapshot id and repairs the hint."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from paimon_ops.table.table import FileSystemCatalog
from paimon_ops.table.writer import write_rows
from tests import pypaimon_util as pu

IDENT = "db.h"


@pytest.fixture
def table_dir(tmp_path) -> tuple[str, Path]:
    wh = str(tmp_path / "wh")
    t = pu.create_table(wh, IDENT, pa.schema([("k", pa.int32())]), options={"bucket": "-1"})
    for i in range(4):
        pu.write(t, {"k": [i]})
    return wh, Path(wh) / "db.db" / "h" / "snapshot"


GARBAGE = [b"", b"abc", b"\xff\xfe", b"-1", b"0", b"3.5", b" ", b"99999999999999999999999", b"\n"]


@pytest.mark.parametrize("hint", GARBAGE + [b"1", b"2", b"3", b"5", b"99", b"4\n", b" 4 "],
                         ids=lambda b: repr(b))
def test_latest_hint(table_dir, hint):
    wh, snap = table_dir
    (snap / "LATEST").write_bytes(hint)
    table = FileSystemCatalog(wh).get_table(IDENT)
    assert table.snapshots.latest_id() == 4
    assert table.snapshots.latest().id == 4


def test_latest_hint_missing_or_a_directory(table_dir):
    wh, snap = table_dir
    (snap / "LATEST").unlink()
    assert FileSystemCatalog(wh).get_table(IDENT).snapshots.latest_id() == 4
    (snap / "LATEST").mkdir()
    assert FileSystemCatalog(wh).get_table(IDENT).snapshots.latest_id() == 4


@pytest.mark.parametrize("hint", GARBAGE + [b"2", b"3", b"4", b"99"], ids=lambda b: repr(b))
def test_earliest_hint(table_dir, hint):
    wh, snap = table_dir
    (snap / "EARLIEST").write_bytes(hint)
    table = FileSystemCatalog(wh).get_table(IDENT)
    assert table.snapshots.earliest_id() == 1
    assert table.snapshots.earliest().id == 1


def test_earliest_hint_stale_after_expiry(table_dir):
    wh, snap = table_dir
    (snap / "EARLIEST").write_bytes(b"1")
    (snap / "snapshot-1").unlink()
    (snap / "snapshot-2").unlink()
    table = FileSystemCatalog(wh).get_table(IDENT)
    assert table.snapshots.earliest_id() == 3
    (snap / "EARLIEST").write_bytes(b"4")  # ahead of the real earliest
    assert table.snapshots.earliest_id() == 3
    (snap / "EARLIEST").unlink()
    assert table.snapshots.earliest_id() == 3


@pytest.mark.parametrize("hint", [b"2", b"abc", b"99", b""], ids=lambda b: repr(b))
def test_commit_with_a_wrong_latest_hint(table_dir, hint):
    wh, snap = table_dir
    (snap / "LATEST").write_bytes(hint)
    table = FileSystemCatalog(wh).get_table(IDENT)
    s = write_rows(table, {"k": [10]})
    assert s.id == 5 and s.total_record_count == 5
    assert (snap / "LATEST").read_bytes() == b"5"
    assert sorted(r["k"] for r in pu.read(wh, IDENT).to_pylist()) == [0, 1, 2, 3, 10]
