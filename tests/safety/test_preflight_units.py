"""The preflight's rules one by one (deleter.preflight / Layout): every kind of file only where that kind lives, plain
names, the table's roots (a configured external data path included), and what the live table keeps."""
from __future__ import annotations

import os

import pytest

from paimon_ops.errors import PreflightError
from paimon_ops.execution.deleter import preflight
from paimon_ops.execution.plan import DELETE_FILES, DELETE_ORDERED, FileAction, Step
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import FileStoreTable
from tests.safety.util import partitioned_table


@pytest.fixture
def table(tmp_path) -> FileStoreTable:
    return partitioned_table(str(tmp_path / "wh"))


def _check(table: FileStoreTable, path: str, kind: str, action: str = DELETE_FILES) -> None:
    preflight(table, [Step("x", action, (FileAction(path, kind, "test"),))])


@pytest.mark.parametrize("rel,kind,why", [
    ("schema/schema-0", "data", "cannot be in"),
    ("snapshot/snapshot-1", "data", "cannot be in"),
    ("dt=2024-01-01/bucket-0/data-x.parquet", "snapshot", "not a snapshot file name"),
    ("manifest/snapshot-1", "snapshot", "cannot be in"),
    ("snapshot/LATEST", "temp", "not a temporary file"),
    ("snapshot/.snapshot-3.tmp", "manifest", "cannot be in"),
    ("dt=2024-01-01/data-x.parquet", "data", "cannot be in"),
    ("bucket-0/data-x.parquet", "data", "cannot be in"),  # a partitioned table: no bucket at the root
    ("dt=2024-01-01/bucket-0/" + "x" * 300, "data", "longer than 255 bytes"),
    ("dt=2024-01-01/bucket-0/a\nb", "data", "control characters"),
    ("dt=2024-01-01/../schema/schema-0", "data", "normalised"),
    ("tag/tag-x", "index", "cannot be in"),
    (".paimon-ops/journal-x", "data", "cannot be in"),
    ("snapshot/snapshot-1", "leftover", "only temporary files"),
    ("dt=2024-01-01", "data", "cannot be in"),
])
def test_files_only_where_their_kind_lives(table, rel, kind, why):
    with pytest.raises(PreflightError, match=why):
        _check(table, os.path.join(table.root, rel), kind)
    # among many valid files (checked per directory and per batch of names), the same refusal, naming
    # exactly the offending path
    good = [FileAction(os.path.join(table.root, f"dt=2024-01-0{1 + i % 2}", "bucket-0", f"data-{i}.parquet"), "data",
                       "test") for i in range(100)]
    bad = FileAction(os.path.join(table.root, rel), kind, "test")
    with pytest.raises(PreflightError, match=why) as e:
        preflight(table, [Step("x", DELETE_FILES, tuple(good[:50] + [bad] + good[50:]))], check_references=False)
    assert repr(bad.path) in str(e.value) or bad.path in str(e.value)
    preflight(table, [Step("x", DELETE_FILES, tuple(good))], check_references=False)  # (the valid ones pass)


def test_outside_the_table_and_live_files_are_refused(table, tmp_path):
    with pytest.raises(PreflightError, match="cannot be in|outside"):
        _check(table, str(tmp_path / "elsewhere" / "bucket-0" / "data-x.parquet"), "orphan")
    live = TableScanner(table).scan(table.snapshots.latest()).files[0].path
    with pytest.raises(PreflightError, match=r"snapshot \d+ still uses it"):
        _check(table, live, "data")
    with pytest.raises(PreflightError, match="still uses it"):  # an orphan must not even be named by anything
        _check(table, live, "orphan")
    latest = table.snapshots.latest_id()
    _check(table, table.snapshots.path(latest), "snapshot", DELETE_ORDERED)  # (owners: the step's own checks decide)


def test_a_configured_external_path_is_a_root(tmp_path):
    ext = tmp_path / "ext"
    t = partitioned_table(str(tmp_path / "wh"), **{"data-file.external-paths": f"file://{ext}"})
    f = ext / "dt=2024-01-01" / "bucket-0" / "data-old.parquet"
    f.parent.mkdir(parents=True)
    f.write_bytes(b"x")
    _check(t, str(f), "data")  # accepted: a bucket directory under a configured external path
    with pytest.raises(PreflightError, match="cannot be in|outside"):
        _check(t, str(tmp_path / "other" / "bucket-0" / "data-old.parquet"), "data")
