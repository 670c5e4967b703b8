"""External data paths (`data-file.external-paths`) on tables pypaimon 2.1.0 writes: compaction reads and
writes them as Java does, expiry / tag deletion / rollback reclaim them, orphan removal scans them (symlinks left
alone, a root shared with another table refused); pypaimon 2.1.0 and pypaimon-rust 0.4.0 read every snapshot and
tag as before, and pypaimon writes on."""
from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

import paimon_ops as po
from paimon_ops.errors import UnsafeOperationError
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import FileSystemCatalog
from tests import pypaimon_util as pu

S = pa.schema([("pt", pa.string()), ("id", pa.int32()), ("a", pa.int64())])
COLS = ["pt", "id", "a"]
FAR_FUTURE = 2 ** 45


def _ms(rows: list[tuple]) -> list[tuple]:
    """The order pu.multiset gives."""
    return sorted(rows, key=lambda r: tuple((v is None, repr(v)) for v in r))


def _ext_files(root: Path) -> set[str]:
    return {p.name for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A partitioned PK table whose data files pypaimon writes round-robin into two external roots; a tag on the
    first snapshot; the rows every snapshot reads."""
    top = tmp_path_factory.mktemp("ext")
    wh, e1, e2 = top / "wh", top / "ext1", top / "ext2"
    for d in (wh, e1, e2):
        d.mkdir()
    t = pu.create_table(str(wh), "db.t", S, partition_keys=["pt"], primary_keys=["pt", "id"],
                        options={"bucket": "2", "data-file.external-paths": f"file://{e1},file://{e2}",
                                 "data-file.external-paths.strategy": "round-robin"})
    pu.write(t, {"pt": ["x"] * 6 + ["y"] * 4, "id": list(range(6)) + list(range(4)), "a": list(range(10))})
    pu.write(t, {"pt": ["x", "y"], "id": [1, 2], "a": [100, 200]})
    pu.write(t, {"pt": ["x"], "id": [7], "a": [7]})
    po.Table(FileSystemCatalog(str(wh)).get_table("db.t")).tags.create("t1", snapshot_id=1).execute()
    expected = {sid: pu.both_read(str(wh), "db.t", COLS, snapshot_id=sid) for sid in (1, 2, 3)}
    return top, expected


def test_compaction_expiry_tags_orphans_rollback_on_external_paths(base):
    top, expected = base
    wh, e1, e2 = str(top / "wh"), top / "ext1", top / "ext2"
    table = FileSystemCatalog(wh).get_table("db.t")
    assert all(f.meta.external_path for f in TableScanner(table).scan_latest().files)
    written_by_pypaimon = _ext_files(e1) | _ext_files(e2)

    r = po.Table(table).maintenance.compact().execute()  # full: every bucket to the max level
    assert r.snapshot_id == 4 and r.details["files_out"] >= 2
    files = TableScanner(table.refresh()).scan_latest().files
    outputs = [f for f in files if f.meta.file_source == 1 and f.name not in written_by_pypaimon]
    assert outputs and all(f.meta.external_path.startswith(("file:" + str(e1), "file:" + str(e2))) for f in outputs)
    assert all(os.path.exists(f.path) for f in files)
    assert not any((top / "wh" / "db.db" / "t").rglob("data-*"))  # nothing was written into the table directory
    assert pu.both_read(wh, "db.t", COLS) == expected[3]
    for sid, rows in expected.items():
        assert pu.both_read(wh, "db.t", COLS, snapshot_id=sid) == rows
    assert pu.both_read(wh, "db.t", COLS, tag="t1") == expected[1]

    # pypaimon writes on; minor compaction; expiry keeps only the latest snapshot and the tag
    pu.write(pu.get_table(wh, "db.t"), {"pt": ["y"], "id": [9], "a": [9]})
    latest_rows = _ms(expected[3] + [("y", 9, 9)])
    po.Table(table.refresh()).maintenance.compact(mode="minor").execute()
    assert pu.both_read(wh, "db.t", COLS) == latest_rows
    before = _ext_files(e1) | _ext_files(e2)
    r = po.Table(table.refresh()).maintenance.expire_snapshots(retain_min=1, retain_max=1, now=FAR_FUTURE).execute()
    gone = {Path(f.path).name for f in r.files if f.kind == "data"}
    assert gone and all(f.path.startswith((str(e1), str(e2))) for f in r.files if f.kind == "data")
    assert (_ext_files(e1) | _ext_files(e2)) == before - gone
    assert pu.both_read(wh, "db.t", COLS) == latest_rows
    assert pu.both_read(wh, "db.t", COLS, tag="t1") == expected[1]

    # orphans: an old stray file in an external bucket directory goes; a symlink there is left alone
    bucket_dir = next(p for p in e1.rglob("bucket-*") if p.is_dir())
    stray = bucket_dir / "data-stray-0.parquet"
    stray.write_bytes(b"x")
    os.utime(stray, (1, 1))
    (bucket_dir / "link.parquet").symlink_to(top / "wh" / "db.db" / "t" / "schema" / "schema-0")
    r = po.Table(table.refresh()).maintenance.remove_orphans(older_than=10_000, allow_short=True).execute()
    assert [f.path for f in r.files if f.kind == "orphan"] == [str(stray)]
    assert (bucket_dir / "link.parquet").is_symlink()
    assert str(bucket_dir / "link.parquet") in {s["path"] for s in r.details["symlinks"]}
    assert pu.both_read(wh, "db.t", COLS, tag="t1") == expected[1]

    # deleting the tag reclaims the external files only it kept
    tag_files = {f.name for f in TableScanner(table.refresh()).scan_tag("t1").files}
    live = {f.name for f in TableScanner(table.refresh()).scan_latest().files}
    po.Table(table.refresh()).maintenance.delete_tags(["t1"]).execute()
    assert not (tag_files - live) & (_ext_files(e1) | _ext_files(e2))
    assert pu.both_read(wh, "db.t", COLS) == latest_rows

    # rollback to a tag on the latest snapshot, after one more write
    latest = table.refresh().snapshots.latest_id()
    po.Table(table.refresh()).tags.create("t2", snapshot_id=latest).execute()
    pu.write(pu.get_table(wh, "db.t"), {"pt": ["x"], "id": [50], "a": [50]})
    po.Table(table.refresh()).maintenance.rollback(tag="t2").execute()
    assert pu.both_read(wh, "db.t", COLS) == latest_rows
    pu.write(pu.get_table(wh, "db.t"), {"pt": ["x"], "id": [51], "a": [51]})
    assert pu.both_read(wh, "db.t", COLS) == _ms(latest_rows + [("x", 51, 51)])


def test_strategies_and_shared_roots(tmp_path):
    wh, ext = tmp_path / "wh", tmp_path / "ext"
    wh.mkdir()
    ext.mkdir()
    for name, opts in {"none": {"data-file.external-paths.strategy": "none"},
                       "fs": {"data-file.external-paths.strategy": "specific-fs",
                              "data-file.external-paths.specific-fs": "file"}}.items():
        t = pu.create_table(str(wh), f"db.{name}", S, primary_keys=["pt", "id"],
                            options={"bucket": "1", "data-file.external-paths": f"file://{ext}", **opts})
        pu.write(t, {"pt": ["x", "x"], "id": [1, 2], "a": [1, 2]})
        pu.write(t, {"pt": ["x"], "id": [1], "a": [3]})
        po.Table(FileSystemCatalog(str(wh)).get_table(f"db.{name}")).maintenance.compact().execute()
        out = [f for f in TableScanner(FileSystemCatalog(str(wh)).get_table(f"db.{name}")).scan_latest().files]
        assert pu.both_read(str(wh), f"db.{name}", COLS) == [("x", 1, 3), ("x", 2, 2)]
        if name == "none":  # strategy none (Java's default): new files go into the table, existing ones are read
            assert [f.meta.external_path for f in out] == [None]
        else:
            assert out[0].meta.external_path.startswith(f"file:{ext}/")
    # both tables name the same root: orphan removal cannot tell their files apart
    with pytest.raises(UnsafeOperationError, match="also an external path of db.fs"):
        po.Table(FileSystemCatalog(str(wh)).get_table("db.none")).maintenance.remove_orphans(allow_short=True, older_than=0).execute()


def test_partitions_emptied_under_an_external_path_are_removed_like_the_tables(tmp_path):
    """An append table pypaimon 2.1.0 writes into an external path: a partition expires, snapshots expire to one,
    every tag is deleted, and orphan removal then removes the partition's emptied directories under the external
    path as it does in the table directory (it refused the whole run: 'a directory file cannot be in …'); pypaimon and
    pypaimon-rust read the partition that stays."""
    import datetime as dt

    from tests.cli.conftest import cli
    from tests.safety.util import age
    wh, ext = tmp_path / "wh", tmp_path / "e1"
    wh.mkdir()
    ext.mkdir()
    today = dt.date.today()
    old, new = (today - dt.timedelta(days=400)).strftime("%Y%m%d"), today.strftime("%Y%m%d")
    s = pa.schema([("dt", pa.string()), ("id", pa.int32()), ("a", pa.int64())])
    t = pu.create_table(str(wh), "db.e", s, partition_keys=["dt"],
                        options={"bucket": "-1", "data-file.external-paths": f"file://{ext}",
                                 "data-file.external-paths.strategy": "round-robin",
                                 "partition.timestamp-formatter": "yyyyMMdd"})
    pu.write(t, {"dt": [old] * 3, "id": [1, 2, 3], "a": [1, 2, 3]})
    pu.write(pu.get_table(str(wh), "db.e"), {"dt": [new] * 2, "id": [4, 5], "a": [4, 5]})
    assert (ext / f"dt={old}").is_dir() and not any((wh / "db.db" / "e").rglob("data-*"))
    for argv in (["create-tag", "t1", "--snapshot", "1"], ["create-tag", "t2"],
                 ["expire-partitions", "--expiration-time", "30 d"],
                 ["expire-snapshots", "--retain-min", "1", "--retain-max", "1"],
                 ["delete-tag", "t1", "t2"]):
        r = cli(argv[0], wh, "db.e", *argv[1:])
        assert r.code == 0, (argv, r.err)
    assert not any((ext / f"dt={old}").rglob("data-*"))  # its files are gone, its directories stay for now
    age(str(tmp_path), days=3)
    r = cli("remove-orphans", wh, "db.e", "--json")
    assert r.code == 0, r.err
    removed = {f["path"] for f in r.json["files"] if f["kind"] == "directory"}
    assert str(ext / f"dt={old}") in removed and not (ext / f"dt={old}").exists()
    assert ext.is_dir() and (ext / f"dt={new}").is_dir()  # the external root and the live partition stay
    rows = [(new, 4, 4), (new, 5, 5)]
    assert pu.both_read(str(wh), "db.e", ["dt", "id", "a"]) == rows
