"""File names read from metadata must be plain file names. A crafted manifest entry naming
`../../<partition>/<bucket>/<live file>` (Java 0.9 resolves it and deletes another bucket's live file) makes every
operation stop with CorruptMetadataError naming the metadata file — before anything is deleted."""
from __future__ import annotations

import dataclasses
import io
import json
import os
import posixpath
import time

import fastavro
import pytest

import paimon_ops as po
from paimon_ops.errors import CorruptMetadataError, UnsafeNameError
from paimon_ops.execution.runner import LocalRunner
from paimon_ops.format import manifest as mf
from paimon_ops.format.manifest import FileKind, ManifestEntry, ManifestFileMeta
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import FileStoreTable
from tests.lifecycle.helpers import Sim, new_table
from tests.safety.util import age, partitioned_table, tree_digest

FAR_FUTURE = int(time.time() * 1000) + 30 * 86_400_000


def rewrite_avro(path: str, change) -> None:
    """Rewrite an Avro metadata file record by record (`change(record) -> record`), same schema and codec."""
    with open(path, "rb") as f:
        reader = fastavro.reader(f)
        schema, codec = reader.writer_schema, reader.codec
        records = [change(r) for r in reader]
    out = io.BytesIO()
    fastavro.writer(out, schema, records, codec=codec)
    with open(path, "wb") as f:
        f.write(out.getvalue())


def _live_file_elsewhere(table: FileStoreTable) -> tuple[str, str]:
    """(relative path from a bucket dir to a live file of another partition/bucket, its absolute path)."""
    scanner = TableScanner(table)
    f = sorted(scanner.scan(table.snapshots.latest()).files, key=lambda f: (f.partition, f.bucket))[-1]
    rel = posixpath.relpath(f.path, posixpath.join(table.root, "dt=2024-01-01", "bucket-0"))
    return rel, f.path


def _operations(table: FileStoreTable):
    return {
        "expire-snapshots": lambda: po.Table(table.refresh()).maintenance.expire_snapshots(now=FAR_FUTURE, retain_min=1,
            retain_max=1).execute(runner=LocalRunner()),
        "remove-orphans": lambda: po.Table(table.refresh()).maintenance.remove_orphans(now=FAR_FUTURE).execute(),
        "delete-tag": lambda: po.Table(table.refresh()).maintenance.delete_tags(["t1"]).execute(),
        "compact": lambda: po.Table(table.refresh()).maintenance.compact(mode="full").execute(runner=LocalRunner()),
        "rollback": lambda: po.Table(table.refresh()).maintenance.rollback(tag="t1").execute(),
    }


def _build(tmp_path) -> FileStoreTable:
    """Snapshots 1-3 append, tag t1 on 2, snapshot 4 a full compaction, snapshot 5 another append."""
    wh = tmp_path / "wh"
    wh.mkdir()
    table = partitioned_table(str(wh), commits=3)
    from paimon_ops.format.snapshot import Tag
    table.tags.write("t1", Tag.from_snapshot(table.snapshots.snapshot(2)))
    po.Table(table).maintenance.compact(mode="full").execute(runner=LocalRunner())
    import pyarrow as pa

    from paimon_ops.table.writer import TableWriter
    w = TableWriter(table.refresh())
    w.write(pa.table({"dt": ["2024-01-03"], "k": [1], "v": ["x"]}))
    w.commit()
    return table.refresh()


def _craft(table: FileStoreTable, owner, kind: int, which: str = "delta") -> tuple[str, str]:
    """Rename the first entry of `kind` in the `which` ('base'/'delta') manifests of `owner` (a snapshot or tag) to
    a relative path reaching a live file of another partition/bucket. Returns (manifest path, that live file)."""
    rel, victim = _live_file_elsewhere(table)
    store = TableScanner(table).store
    metas = store.manifest_list(owner.delta_manifest_list if which == "delta" else owner.base_manifest_list)
    meta = next(m for m in metas if any(e.kind == kind for e in store.manifest(m.file_name)))
    manifest = table.manifest_path(meta.file_name)
    done = []

    def change(r):
        if r["_KIND"] == kind and not done:
            done.append(r["_FILE"]["_FILE_NAME"])
            r["_FILE"]["_FILE_NAME"] = rel
        return r
    rewrite_avro(manifest, change)
    return manifest, victim


@pytest.mark.parametrize("op", ["expire-snapshots", "remove-orphans", "delete-tag", "compact", "rollback"])
def test_crafted_data_file_name_stops_every_operation(tmp_path, op):
    table = _build(tmp_path)
    if op == "expire-snapshots":  # the DELETE entries of the compaction's delta are what expiry acts on
        manifest, victim = _craft(table, table.snapshots.snapshot(4), FileKind.DELETE)
    else:
        if op == "delete-tag":  # t1's own snapshot expires first: deleting the tag then reclaims through its files
            po.Table(table).maintenance.expire_snapshots(now=FAR_FUTURE, retain_min=2, retain_max=2).execute(runner=LocalRunner())
            table = table.refresh()
        # snapshot 1's delta manifest: the first of t1's base, and in the latest snapshot's base too
        manifest, victim = _craft(table, table.tags.tag("t1"), FileKind.ADD, "base")
    age(str(tmp_path / "wh"))
    before = tree_digest(str(tmp_path / "wh"))
    with pytest.raises(CorruptMetadataError) as e:
        _operations(table)[op]()
    assert manifest in str(e.value)
    assert "not a plain file name" in str(e.value)
    assert os.path.exists(victim)
    assert tree_digest(str(tmp_path / "wh")) == before


def _dv_table(tmp_path) -> tuple[FileStoreTable, Sim]:
    wh = tmp_path / "dvwh"
    wh.mkdir()
    table = new_table(str(wh), kind="dv")
    sim = Sim(table)
    sim.write([("a", k, f"v{k}") for k in range(10)])
    sim.compact(0)
    sim.write([("a", k, f"w{k}") for k in range(10, 20)])
    sim.compact(0)
    sim.delete_rows(0, 3)
    sim.tag("t1", 1)
    sim.write([("a", 30, "later")])  # the DV index manifest is carried on: rollback's target below reads it
    return table.refresh(), sim


@pytest.mark.parametrize("field", ["_FILE_NAME", "data-file"])
@pytest.mark.parametrize("op", ["expire-snapshots", "remove-orphans", "compact", "rollback"])
def test_crafted_index_entries_stop_every_operation(tmp_path, field, op):
    table, _ = _dv_table(tmp_path)
    latest = table.snapshots.latest()
    path = table.manifest_path(latest.index_manifest)

    def change(r):
        if field == "_FILE_NAME":
            r["_FILE_NAME"] = "../../../../etc/passwd"
        else:
            r["_DELETIONS_VECTORS_RANGES"][0]["f0"] = "../bucket-1/" + r["_DELETIONS_VECTORS_RANGES"][0]["f0"]
        return r
    rewrite_avro(path, change)
    age(str(tmp_path / "dvwh"))
    before = tree_digest(str(tmp_path / "dvwh"))
    run = (lambda: po.Table(table.refresh()).maintenance.rollback(snapshot_id=latest.id - 1).execute()) if op == "rollback" else\
        _operations(table)[op]
    with pytest.raises(CorruptMetadataError, match="not a plain file name") as e:
        run()
    assert path in str(e.value)
    assert tree_digest(str(tmp_path / "dvwh")) == before


def test_crafted_changelog_entry_stops_expiry(tmp_path):
    """A changelog manifest (decoupled from data, deleted with its snapshot by expiry) naming another file."""
    wh = tmp_path / "wh"
    wh.mkdir()
    table = partitioned_table(str(wh), commits=3)
    rel, victim = _live_file_elsewhere(table)
    s1 = table.snapshots.snapshot(1)
    store = TableScanner(table).store
    entries = store.manifest(store.manifest_list(s1.delta_manifest_list)[0].file_name)
    e0 = entries[0]
    crafted = ManifestEntry(FileKind.ADD, e0.partition, e0.bucket, e0.total_buckets,
                            dataclasses.replace(e0.file, file_name=rel))
    data = mf.write_manifest([crafted], store.field_set("manifest", s1))
    table.io.write_bytes(table.manifest_path("manifest-crafted-changelog-0"), data)
    meta = ManifestFileMeta("manifest-crafted-changelog-0", len(data), 1, 0, mf.EMPTY_STATS, 0, e0.bucket, e0.bucket,
                            0, 0, None, None)
    lst = mf.write_manifest_list([meta], store.field_set("manifest_list", s1))
    table.io.write_bytes(table.manifest_path("manifest-list-crafted-changelog"), lst)
    snap_path = table.snapshots.path(1)
    obj = json.loads(open(snap_path).read())
    obj["changelogManifestList"] = "manifest-list-crafted-changelog"
    with open(snap_path, "w") as f:
        json.dump(obj, f)
    age(str(wh))
    before = tree_digest(str(wh))
    with pytest.raises(CorruptMetadataError, match="not a plain file name") as e:
        po.Table(table.refresh()).maintenance.expire_snapshots(now=FAR_FUTURE, retain_min=1, retain_max=1).execute(runner=LocalRunner())
    assert "manifest-crafted-changelog-0" in str(e.value)
    assert os.path.exists(victim) and tree_digest(str(wh)) == before


@pytest.mark.parametrize("key", ["baseManifestList", "indexManifest", "statistics"])
def test_crafted_snapshot_file_names_are_refused(tmp_path, key):
    wh = tmp_path / "wh"
    wh.mkdir()
    table = partitioned_table(str(wh), commits=2)
    snap_path = table.snapshots.path(1)
    obj = json.loads(open(snap_path).read())
    obj[key] = "../../../outside"
    with open(snap_path, "w") as f:
        json.dump(obj, f)
    before = tree_digest(str(wh))
    with pytest.raises(UnsafeNameError, match=key):
        po.Table(table.refresh()).maintenance.expire_snapshots(now=FAR_FUTURE, retain_min=1, retain_max=1).execute(runner=LocalRunner())
    with pytest.raises(CorruptMetadataError, match=key):
        po.Table(table.refresh()).maintenance.remove_orphans(now=FAR_FUTURE).execute()
    assert tree_digest(str(wh)) == before


def test_external_path_outside_the_configured_external_paths_is_refused(tmp_path):
    wh = tmp_path / "wh"
    wh.mkdir()
    table = partitioned_table(str(wh), commits=2)
    scanner = TableScanner(table)
    f = scanner.scan(table.snapshots.latest()).files[0]
    outside = dataclasses.replace(f.meta, external_path="file:" + str(tmp_path / "victim" / f.name))
    with pytest.raises(CorruptMetadataError, match="external-paths"):
        scanner.data_file_path(f.partition, f.bucket, outside)
    configured = FileStoreTable(table.root, options_override={"data-file.external-paths": f"file://{tmp_path}/ext"})
    inside = dataclasses.replace(f.meta, external_path=f"file:{tmp_path}/ext/{f.name}")
    # (resolved to the real path of the configured root: the FileIO's own convention, never the URI text)
    assert TableScanner(configured).data_file_path(f.partition, f.bucket, inside) ==\
        os.path.join(os.path.realpath(tmp_path / "ext"), f.name)
    sneaky = dataclasses.replace(f.meta, external_path=f"file:{tmp_path}/ext/../victim/{f.name}")
    with pytest.raises(CorruptMetadataError, match="external-paths"):
        TableScanner(configured).data_file_path(f.partition, f.bucket, sneaky)


@pytest.mark.parametrize("op", ["expire-snapshots", "remove-orphans"])
def test_crafted_data_file_name_stops_planning_on_spark(tmp_path, spark, op):
    """Placed on Spark (the executors decode the manifests: expiry's candidates streamed back, orphans' names joined
    there), the crafted name stops the plan the same way, before anything is deleted."""
    from paimon_ops.execution.placement import planning_on
    from paimon_ops.execution.runner import SparkRunner
    table = _build(tmp_path)
    if op == "expire-snapshots":
        manifest, victim = _craft(table, table.snapshots.snapshot(4), FileKind.DELETE)
    else:
        manifest, victim = _craft(table, table.tags.tag("t1"), FileKind.ADD, "base")
    age(str(tmp_path / "wh"))
    before = tree_digest(str(tmp_path / "wh"))
    runner = SparkRunner(spark)
    m = po.Table(table.refresh()).maintenance
    with pytest.raises(CorruptMetadataError) as e, planning_on(runner):
        if op == "expire-snapshots":
            m.expire_snapshots(now=FAR_FUTURE, retain_min=1, retain_max=1).execute(runner=runner)
        else:
            m.remove_orphans(now=FAR_FUTURE).execute(runner=runner)
    assert "not a plain file name" in str(e.value) and os.path.basename(manifest) in str(e.value)
    assert os.path.exists(victim)
    assert tree_digest(str(tmp_path / "wh")) == before
