"""Rollback reads the target's whole metadata first and refuses an unreadable target — it would
become the latest snapshot, and a table whose latest snapshot cannot be read is broken for every reader."""
from __future__ import annotations

import pytest

import paimon_ops as po
from paimon_ops.errors import CorruptMetadataError
from paimon_ops.format.snapshot import Tag
from paimon_ops.table.scan import TableScanner
from tests.lifecycle.helpers import Sim, new_table
from tests.safety.util import partitioned_table, tree_digest


def _break(path: str, how: str) -> None:
    if how == "missing":
        import os
        os.remove(path)
    else:
        with open(path, "r+b") as f:
            f.seek(0)
            f.write(b"garbage!" * 8)


@pytest.mark.parametrize("how", ["missing", "corrupt"])
@pytest.mark.parametrize("what", ["base-list", "delta-list", "manifest"])
def test_unreadable_target_is_refused(tmp_path, what, how):
    wh = tmp_path / "wh"
    wh.mkdir()
    table = partitioned_table(str(wh), commits=4)
    target = table.snapshots.snapshot(2)
    store = TableScanner(table).store
    if what == "base-list":
        path = table.manifest_path(target.base_manifest_list)
    elif what == "delta-list":
        path = table.manifest_path(target.delta_manifest_list)
    else:
        path = table.manifest_path(store.manifest_list(target.delta_manifest_list)[0].file_name)
    _break(path, how)
    before = tree_digest(str(wh))
    with pytest.raises(CorruptMetadataError, match="refusing to roll"):
        po.Table(table).maintenance.rollback(snapshot_id=2).execute()
    with pytest.raises(CorruptMetadataError, match="refusing to roll"):
        po.Table(table).maintenance.rollback(snapshot_id=2).dry_run_report()
    assert tree_digest(str(wh)) == before
    assert table.refresh().snapshots.latest_id() == 4


def test_unreadable_index_manifest_of_the_target_is_refused(tmp_path):
    table = new_table(str(tmp_path), kind="dv")
    sim = Sim(table)
    sim.write([("a", k, "v") for k in range(5)])
    sim.compact(0)
    sim.delete_rows(0, 2)
    sim.write([("a", 9, "x")])
    target = table.snapshots.snapshot(3)
    _break(table.manifest_path(target.index_manifest), "corrupt")
    before = tree_digest(str(tmp_path))
    with pytest.raises(CorruptMetadataError, match="refusing to roll"):
        po.Table(table).maintenance.rollback(snapshot_id=3).execute()
    assert tree_digest(str(tmp_path)) == before


def test_a_tag_whose_changelog_was_expired_restores_without_it(tmp_path):
    """Tags never kept changelogs (expiry deletes them): the restored snapshot drops the dangling reference."""
    wh = tmp_path / "wh"
    wh.mkdir()
    table = partitioned_table(str(wh), commits=3)
    s = table.snapshots.snapshot(2)
    import dataclasses
    tag = Tag.from_snapshot(dataclasses.replace(s, changelog_manifest_list="manifest-list-expired-changelog",
                                                changelog_manifest_list_size=10))
    table.tags.write("old", tag)
    import os
    os.remove(table.snapshots.path(2))
    os.remove(table.snapshots.path(1))
    plan = po.Table(table).maintenance.rollback(tag="old").dry_run_report()
    assert any("changelog" in w for w in plan.warnings)
    po.Table(table).maintenance.rollback(tag="old").execute()
    restored = table.refresh().snapshots.latest()
    assert restored.id == 2 and restored.changelog_manifest_list is None
    TableScanner(table.refresh()).scan(restored)  # readable
