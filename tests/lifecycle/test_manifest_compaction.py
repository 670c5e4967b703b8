"""Manifest compaction on tables we write (the Java 0.9 proof is test_manifest_compaction_java.py): data unchanged,
older snapshots and tags untouched, Java's keep-the-large-clean-prefix rule, plan JSON round trip, stale plans, a
concurrent commit carried over, the health hook, the CLI, and snapshot expiry reclaiming the old manifests."""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil

import pytest

import paimon_ops as po
from paimon_ops.cli import main
from paimon_ops.errors import StalePlanError
from paimon_ops.execution.plan import Plan
from paimon_ops.execution.runner import LocalRunner
from paimon_ops.lifecycle.manifest_compaction import (
    ManifestCompactionPlan,
    data_manifests,
    manifest_count,
    manifest_health,
    plan_compact_manifests,
)
from paimon_ops.table.scan import ManifestStore, TableScanner
from paimon_ops.table.table import FileStoreTable
from tests.safety.util import tree_digest
from tests.tables import make_table, write


def _write(t: FileStoreTable, dt_: str, keys: list[int], tag: str) -> None:
    write(t, {"dt": [dt_] * len(keys), "k": keys, "v": [tag] * len(keys)})


def _views(t: FileStoreTable) -> dict:
    """Live files of every snapshot and tag (what a reader sees), by owner."""
    t = t.refresh()
    s = TableScanner(t)
    out = {f"snapshot-{snap.id}": sorted((f.partition, f.bucket, f.name, f.level) for f in s.scan(snap).files)
           for snap in t.snapshots.iter_snapshots()}
    out.update({f"tag-{n}": sorted((f.partition, f.bucket, f.name, f.level) for f in s.scan(tag).files)
                for n, tag in t.tags.tags()})
    return out


@pytest.fixture
def busy(warehouse) -> FileStoreTable:
    """Many small commits, a compaction (DELETE + ADD entries) and a tag: many small manifests."""
    t = make_table(warehouse, "db.t", [("dt", "STRING"), ("k", "INT"), ("v", "STRING")], partition_keys=["dt"],
                   primary_keys=["dt", "k"], options={"bucket": "1", "manifest.merge-min-count": "1000"})
    for i in range(10):
        _write(t, "a" if i % 2 else "b", [i % 4, (i + 1) % 4], f"v{i}")
        if i == 5:
            po.Table(t.refresh()).maintenance.compact().execute(runner=LocalRunner())
    po.Catalog(warehouse).get_table("db.t").tags.create("mid", snapshot_id=4).execute()
    return t.refresh()


def test_compaction_keeps_data_and_history(busy):
    before = _views(busy)
    latest = busy.snapshots.latest()
    assert manifest_count(busy) == 11
    plan = plan_compact_manifests(busy)
    assert isinstance(plan, ManifestCompactionPlan) and not plan.is_empty
    assert plan.details["manifests_before"] == 11 and plan.details["manifests_after"] == 1
    assert plan.details["cancelled_pairs"] > 0
    assert [a.kind for a in plan.writes] == ["manifest", "manifest-list", "manifest-list"]
    report = plan.execute()
    t = busy.refresh()
    snap = t.snapshots.latest()
    assert report.snapshot_id == snap.id == latest.id + 1 and snap.commit_kind == "COMPACT"
    assert (snap.total_record_count, snap.delta_record_count) == (latest.total_record_count, 0)
    assert snap.index_manifest == latest.index_manifest and snap.schema_id == latest.schema_id
    assert manifest_count(t) == 1 and ManifestStore(t).manifest_list(snap.delta_manifest_list) == []
    after = _views(t)
    assert after.pop(f"snapshot-{snap.id}") == before[f"snapshot-{latest.id}"]   # the data did not change
    assert after == before                                                       # history untouched
    assert [a.path for a in plan.writes] == [a.path for a in report.files]       # wrote exactly what it planned
    # the merged manifests stay: older snapshots and the tag use them
    assert len(plan.merged_manifests) == 11 and all(os.path.exists(a.path) for a in plan.merged_manifests)


def test_round_trip_and_apply_later(busy, tmp_path):
    plan = plan_compact_manifests(busy)
    loaded = Plan.from_json(plan.to_json())
    assert type(loaded) is ManifestCompactionPlan and loaded == plan
    _write(busy, "c", [1], "later")
    # a saved plan is re-planned on the live table: after a commit it is not what the operation decides now
    with pytest.raises(StalePlanError, match="base_snapshot is 11 in the plan, 12 now"):
        loaded.execute()
    # the plan made in this process: a commit since only appended a manifest, carried over after the merged ones
    report = plan.execute()
    t = busy.refresh()
    assert report.details["manifests_after"] == 2
    names = [m.file_name for m in data_manifests(ManifestStore(t), t.snapshots.latest())]
    prev = t.snapshots.snapshot(t.snapshots.latest_id() - 1)
    assert names[1:] == [m.file_name for m in ManifestStore(t).manifest_list(prev.delta_manifest_list)]
    assert _views(t)[f"snapshot-{t.snapshots.latest_id()}"] == _views(t)[f"snapshot-{prev.id}"]


def test_stale_when_someone_else_merged(busy, warehouse):
    plan = plan_compact_manifests(busy)
    po.Table(busy).maintenance.compact_manifests().execute()  # another job merged first
    before = tree_digest(warehouse)
    with pytest.raises(StalePlanError, match="merged or replaced since the plan"):
        Plan.from_json(plan.to_json()).execute()
    assert tree_digest(warehouse) == before


def test_large_clean_prefix_is_kept(warehouse):
    """Java's rule: leading manifests without DELETE entries and at least manifest.target-file-size stay as they
    are unless a later manifest deletes one of their files."""
    t = make_table(warehouse, "db.t", [("dt", "STRING"), ("k", "INT"), ("v", "STRING")], partition_keys=["dt"],
                   primary_keys=["dt", "k"],
                   options={"bucket": "1", "manifest.target-file-size": "1 b", "manifest.merge-min-count": "1000"})
    _write(t, "a", [1, 2], "x")
    _write(t, "b", [1, 2], "x")
    _write(t, "b", [3], "y")
    po.Table(t.refresh()).maintenance.compact(partitions=[{"dt": "b"}]).execute(runner=LocalRunner())
    t = t.refresh()
    metas = data_manifests(ManifestStore(t), t.snapshots.latest())
    plan = plan_compact_manifests(t)
    assert plan.details["kept"] == [metas[0].file_name]  # partition a's manifest: nothing deletes from it
    assert [m["manifest"] for m in plan.details["merged"]] == [m.file_name for m in metas[1:]]
    before = _views(t)[f"snapshot-{t.snapshots.latest_id()}"]
    plan.execute()
    t = t.refresh()
    assert [m.file_name for m in data_manifests(ManifestStore(t), t.snapshots.latest())][0] == metas[0].file_name
    assert _views(t)[f"snapshot-{t.snapshots.latest_id()}"] == before
    # with the default 8 MiB target nothing counts as large: everything is merged into one
    plan = plan_compact_manifests(FileStoreTable(t.location, options_override={"manifest.target-file-size": "8 mb"}))
    assert plan.details["kept"] == [] and plan.details["manifests_after"] == 1 and len(plan.details["merged"]) == 2


def test_nothing_to_do(warehouse):
    t = make_table(warehouse, "db.t", [("k", "INT")], options={"bucket": "-1"})
    assert plan_compact_manifests(t).is_empty and manifest_count(t) == 0
    write(t, {"k": [1]})
    r = po.Table(t.refresh()).maintenance.compact_manifests().execute()
    assert r.snapshot_id is None and t.refresh().snapshots.latest_id() == 1


def test_health_hook(busy):
    h = manifest_health(busy)
    assert (h.manifests, h.trigger, h.due) == (11, 1000, False) and h.small_manifests == 11
    h = manifest_health(FileStoreTable(busy.location, options_override={"manifest.compaction-trigger": "10"}))
    assert h.due and h.to_dict()["manifests"] == 11
    assert manifest_health(FileStoreTable(busy.location, options_override={"manifest.merge-min-count": "5"})).trigger == 5
    assert manifest_count(po.Table.open(busy.location)) == 11  # the hooks take a facade table too


def test_snapshot_expiry_reclaims_merged_manifests(busy):
    plan = plan_compact_manifests(busy)
    plan.execute()
    t = busy.refresh()
    merged = [a.path for a in plan.merged_manifests]
    tag_manifests = {m.file_name for m in data_manifests(ManifestStore(t), t.tags.tag("mid"))}
    po.Table(t).maintenance.expire_snapshots(now=t.snapshots.latest().time_millis + 10**9, retain_min=1, retain_max=1,
        max_deletes=100).execute()
    t = t.refresh()
    gone = [p for p in merged if not os.path.exists(p)]
    kept = [p for p in merged if os.path.exists(p)]
    assert gone and all(os.path.basename(p) in tag_manifests for p in kept)  # only the tag still holds some
    s = TableScanner(t)
    assert s.scan(t.snapshots.latest()).files and s.scan(t.tags.tag("mid")).files


def test_cli(busy, warehouse, tmp_path):
    def run(*argv: str) -> tuple[int, str]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            rc = main(list(argv))
        return rc, out.getvalue()

    rc, text = run("compact-manifests", warehouse, "db.t", "--dry-run")
    assert rc == 0 and "would merge" in text and "~ manifest" in text and "+ manifest" in text
    rc, plan_json = run("compact-manifests", warehouse, "db.t", "--dry-run", "--json")
    assert rc == 0 and json.loads(plan_json)["operation"] == "compact_manifests"
    path = tmp_path / "plan.json"
    path.write_text(plan_json)
    rc, out = run("apply", str(path), "--json")
    assert rc == 0 and json.loads(out)["details"]["manifests_after"] == 1
    rc, out = run("apply", str(path), "--json")  # applied twice: the second is stale
    assert rc == 2 and json.loads(out)["error"]["type"] == "StalePlanError"
    shutil.rmtree(busy.root)
