"""Inconsistent tables are refused, never "cleaned". With every snapshot and tag file gone while
EARLIEST/LATEST still name them (Java 0.9's orphan removal then deletes every file of the table: apache/paimon#7710 —
shown here with Java's own dry run), with the latest snapshot files gone, a hole in the snapshot ids, `snapshot/` or
`tag/` replaced by a file, a tag file that is a symbolic link, an unreadable snapshot or a missing manifest of a
snapshot that stays: orphan removal, snapshot expiry, tag expiry and tag deletion each refuse in one line naming what
is wrong, and nothing changes. Undamaged again (or, for the symlinked tag, as it is: Java follows the link), Java
Paimon 0.9 reads every copy exactly as before."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from paimon_ops.table.table import FileStoreTable
from tests.cli.conftest import cli
from tests.interop import java_harness as jh
from tests.interop.java_harness import JavaTable
from tests.safety.java_proof import java_view, java_views
from tests.safety.util import age, digest_changes, exact_digest, tree_digest

pytestmark = [pytest.mark.java]

SCHEMA = {"fields": [{"name": "pt", "type": "STRING NOT NULL"}, {"name": "id", "type": "INT NOT NULL"},
                     {"name": "v", "type": "STRING"}],
          "partition_keys": ["pt"], "primary_keys": ["pt", "id"], "options": {"bucket": "2"}}
COMMANDS = {
    "remove-orphans": ["remove-orphans", "--min-age", "1 d"],
    "expire-snapshots": ["expire-snapshots", "--retain-min", "1", "--min-age", "1 ms"],
    "expire-tags": ["expire-tags", "--min-age", "1 ms"],
    "delete-tag": ["delete-tag", "t2"],
}


@pytest.fixture(scope="module")
def java_src(tmp_path_factory) -> Path:
    """Snapshots 1..6 by Java (a full compaction in the middle), tags t2 (snapshot 2) and t4 (snapshot 4), snapshots
    1 and 2 expired by Java (so deleting or expiring t2 reclaims files); every file older than a day, so that orphan
    removal considers all of them."""
    wh = tmp_path_factory.mktemp("inconsistent_java")
    t = JavaTable(wh, "db", "t")
    batches = [{"rows": [[p, i, f"v{n}-{i}"] for p in ("a", "b") for i in range(15)]} for n in range(5)]
    batches[2]["compact"] = True
    jh.run_many([("create_table", t.payload(schema=SCHEMA)), ("write", t.payload(batches=batches[:2])),
                 ("create_tag", t.payload(tag="t2", snapshot_id=2)),
                 ("write", t.payload(batches=batches[2:4], first_commit_identifier=3)),
                 ("create_tag", t.payload(tag="t4", snapshot_id=4)),
                 ("write", t.payload(batches=batches[4:], first_commit_identifier=5)),
                 ("expire_snapshots", t.payload(retain_min=1, retain_max=4))])
    assert not (wh / "db.db" / "t" / "snapshot" / "snapshot-2").exists()
    age(str(wh), days=5)
    return wh


def _move_away(t: Path, rels: list[str]):
    def damage() -> str:
        for rel in rels:
            shutil.move(t / rel, t.parent / ("moved-" + rel.replace("/", "_")))
        return rels[0].split("/")[-1]

    def undo() -> None:
        for rel in rels:
            shutil.move(t.parent / ("moved-" + rel.replace("/", "_")), t / rel)
    return damage, undo


def _all_history_gone(t: Path):
    rels = [f"snapshot/{p.name}" for p in (t / "snapshot").glob("snapshot-*")] +\
        [f"tag/{p.name}" for p in (t / "tag").glob("tag-*")]
    damage, undo = _move_away(t, rels)
    return (lambda: (damage(), "snapshot")[1]), undo


def _latest_gone(t: Path):
    latest = FileStoreTable(str(t)).snapshots.latest_id()
    damage, undo = _move_away(t, [f"snapshot/snapshot-{latest}", f"snapshot/snapshot-{latest - 1}"])
    return (lambda: (damage(), "LATEST")[1]), undo


def _replaced_by_file(t: Path, name: str):
    damage0, undo0 = _move_away(t, [name])

    def damage() -> str:
        damage0()
        (t / name).write_text("not a directory")
        return str(t / name)

    def undo() -> None:
        os.unlink(t / name)
        undo0()
    return damage, undo


def _corrupt(t: Path, rel: str, data: bytes = b"{ not json"):
    state = {}

    def damage() -> str:
        state["bytes"] = (t / rel).read_bytes()
        (t / rel).write_bytes(data)
        return rel.split("/")[-1]

    def undo() -> None:
        (t / rel).write_bytes(state["bytes"])
    return damage, undo


def _missing_manifest(t: Path):
    """A manifest list of the latest snapshot (which every command keeps) goes missing."""
    table = FileStoreTable(str(t))
    name = table.snapshots.latest().base_manifest_list
    damage, undo = _move_away(t, [f"manifest/{name}"])
    return (lambda: (damage(), name)[1]), undo


CASES = {
    "all-history-gone": (_all_history_gone, ["remove-orphans", "expire-snapshots"]),
    "latest-gone": (_latest_gone, list(COMMANDS)),
    "hole-in-ids": (lambda t: _move_away(t, ["snapshot/snapshot-5"]), list(COMMANDS)),
    "snapshot-dir-is-a-file": (lambda t: _replaced_by_file(t, "snapshot"), list(COMMANDS)),
    "tag-dir-is-a-file": (lambda t: _replaced_by_file(t, "tag"), list(COMMANDS)),
    "unreadable-snapshot": (lambda t: _corrupt(t, "snapshot/snapshot-5"), list(COMMANDS)),
    "missing-manifest": (_missing_manifest, list(COMMANDS)),
}


def test_inconsistent_tables_are_refused(java_src, tmp_path):
    reference = java_view(java_src / "db.db" / "t")
    copies, failures = [], []
    for name, (make, commands) in CASES.items():
        wh = tmp_path / name / "wh"
        shutil.copytree(java_src, wh)
        t = wh / "db.db" / "t"
        damage, undo = make(t)
        named = damage()
        before = tree_digest(str(wh.parent))
        for c in commands:
            argv = COMMANDS[c]
            r = cli(argv[0], wh, "db.t", *argv[1:], "--local") if c != "expire-tags" else\
                cli(argv[0], wh, "db.t", *argv[1:])
            lines = r.err.splitlines()
            if r.code != 2 or len(lines) != 1 or "Traceback" in r.err or named not in lines[0]:
                failures.append(f"{name} / {c}: exit {r.code}: {r.err.strip()[:300]}")
        if tree_digest(str(wh.parent)) != before:
            failures.append(f"{name}: the tree changed")
        undo()
        copies.append(t)
    assert not failures, "\n".join(failures)
    assert all(v == reference for v in java_views(copies))


def test_java_removes_every_file_of_a_table_without_history_and_we_refuse(java_src, tmp_path):
    """apache/paimon#7710 on Java 0.9: with the snapshot and tag files gone (hints still there), its orphan removal
    would delete every data file and manifest. Ours refuses."""
    wh = tmp_path / "wh"
    shutil.copytree(java_src, wh)
    t = wh / "db.db" / "t"
    damage, _ = _all_history_gone(t)
    damage()
    data = {str(p) for p in t.rglob("data-*") if p.is_file()}
    java = jh.run("remove_orphans", JavaTable(table_path=str(t)).payload(older_than_ms=4_102_444_800_000,
                                                                         dry_run=True))
    assert data <= {p.replace("file:", "") for p in java["deleted"]}  # Java: every data file is an orphan
    before = tree_digest(str(wh))
    r = cli("remove-orphans", wh, "db.t", "--min-age", "1 d", "--local")
    assert r.code == 2 and "EARLIEST names snapshot" in r.err and len(r.err.splitlines()) == 1, r.err
    assert tree_digest(str(wh)) == before


def test_symlinked_tag_file_is_refused_and_java_still_reads_it(java_src, tmp_path):
    """A tag file that is a symbolic link (to a copy of itself outside the table) was skipped with a warning, and the
    files only that tag protects were deleted. Now every destructive command refuses; Java follows the link and reads
    the tag as before."""
    wh = tmp_path / "wh"
    shutil.copytree(java_src, wh)
    t = wh / "db.db" / "t"
    reference = java_view(t)
    outside = tmp_path / "tag-t2-elsewhere"
    shutil.move(t / "tag" / "tag-t2", outside)
    os.symlink(outside, t / "tag" / "tag-t2")
    before = tree_digest(str(tmp_path))
    for c, argv in COMMANDS.items():
        if c == "delete-tag":
            argv = ["delete-tag", "t4"]
        r = cli(argv[0], wh, "db.t", *argv[1:])
        assert r.code == 2 and "tag-t2 is a symbolic link" in r.err and len(r.err.splitlines()) == 1, (c, r.err)
    assert tree_digest(str(tmp_path)) == before
    assert java_view(t) == reference


# ---------------------------------------------------------------------------------------------- crafted history
WRITES = {  # the commands that write (a tag, a commit) besides those that delete
    "compact": ["compact", "--mode", "full"],
    "compact-manifests": ["compact-manifests"],
    "create-tag": ["create-tag", "x"],
    "rollback": ["rollback", "--snapshot", "5", "--yes"],
    "rollback-as-latest": ["rollback", "--snapshot", "5", "--as-latest"],
    "replace-tag": ["replace-tag", "t4", "--snapshot", "5"],
    "rename-tag": ["rename-tag", "t4", "t5"],
    "create-branch": ["create-branch", "b", "--tag", "t4"],
    "repair": ["repair"],
}


@pytest.fixture(scope="module")
def twin_src(tmp_path_factory) -> Path:
    """java_src's history again, in another table by Java: the same schema, rows, commits, tags and expiry — so its
    manifest lists have the very sizes and file counts of java_src's, and only their contents tell them apart."""
    wh = tmp_path_factory.mktemp("inconsistent_twin")
    t = JavaTable(wh, "db", "twin")
    batches = [{"rows": [[p, i, f"v{n}-{i}"] for p in ("a", "b") for i in range(15)]} for n in range(5)]
    batches[2]["compact"] = True
    jh.run_many([("create_table", t.payload(schema=SCHEMA)), ("write", t.payload(batches=batches[:2])),
                 ("create_tag", t.payload(tag="t2", snapshot_id=2)),
                 ("write", t.payload(batches=batches[2:4], first_commit_identifier=3)),
                 ("create_tag", t.payload(tag="t4", snapshot_id=4)),
                 ("write", t.payload(batches=batches[4:], first_commit_identifier=5)),
                 ("expire_snapshots", t.payload(retain_min=1, retain_max=4))])
    age(str(wh), days=5)
    return wh / "db.db" / "twin"


def _implant(t: Path, twin: Path, owner: str, field: str, with_manifests: bool = True):
    """`owner` (snapshot/snapshot-N or tag/tag-X) of `t` names in `field` the list of the same owner of the twin,
    copied in with its manifests (a list 'belonging' to another table)."""
    import json as _json

    from paimon_ops.table.scan import ManifestStore
    state: dict = {}

    def damage() -> str:
        mine, theirs = _json.loads((t / owner).read_text()), _json.loads((twin / owner).read_text())
        lst = theirs[field]
        copied = [lst] + ([m.file_name for m in ManifestStore(FileStoreTable(str(twin))).manifest_list(lst)]
                          if with_manifests else [])
        state.update(bytes=(t / owner).read_bytes(), copied=[c for c in copied if not (t / "manifest" / c).exists()])
        for c in state["copied"]:
            shutil.copy2(twin / "manifest" / c, t / "manifest" / c)
        mine[field] = lst
        (t / owner).write_text(_json.dumps(mine))
        return lst

    def undo() -> None:
        (t / owner).write_bytes(state["bytes"])
        for c in state["copied"]:
            os.unlink(t / "manifest" / c)
    return damage, undo


def _implant_snapshot(t: Path, twin: Path, owner: str):
    """`owner` names both lists of the twin's snapshot of that id, each copied in with its manifests: a whole snapshot
    of another table with the same history (counts, sizes, a merge of its own — nothing its names give away)."""
    damage_base, undo_base = _implant(t, twin, owner, "baseManifestList")
    damage_delta, undo_delta = _implant(t, twin, owner, "deltaManifestList")

    def damage() -> str:
        base = damage_base()
        damage_delta()
        return base

    def undo() -> None:
        undo_delta()
        undo_base()
    return damage, undo


def _missing_list(t: Path, owner: str, field: str):
    """The issue's case: a snapshot's list is renamed to one that does not exist (the old list stays, unnamed)."""
    import json as _json
    state: dict = {}

    def damage() -> str:
        state["bytes"] = (t / owner).read_bytes()
        d = _json.loads(state["bytes"])
        d[field] = "manifest-list-00000000-0000-0000-0000-000000000000-1"
        (t / owner).write_text(_json.dumps(d))
        return d[field]

    def undo() -> None:
        (t / owner).write_bytes(state["bytes"])
    return damage, undo


CRAFTED = {
    # (damage, what the one line names besides the file)
    "foreign-base-of-latest": (lambda t, w: _implant(t, w, "snapshot/snapshot-6", "baseManifestList"), "snapshot 6"),
    "foreign-delta-of-latest": (lambda t, w: _implant(t, w, "snapshot/snapshot-6", "deltaManifestList"),
                                "snapshot 6"),
    "foreign-snapshot-as-latest": (lambda t, w: _implant_snapshot(t, w, "snapshot/snapshot-6"), "snapshot 6"),
    "foreign-delta-in-history": (lambda t, w: _implant(t, w, "snapshot/snapshot-4", "deltaManifestList"),
                                 "snapshot 4"),
    "foreign-lists-of-tag": (lambda t, w: _implant(t, w, "tag/tag-t4", "baseManifestList"), "tag t4"),
    "foreign-delta-of-expired-tag": (lambda t, w: _implant(t, w, "tag/tag-t2", "deltaManifestList"), "tag t2"),
    "missing-delta-list": (lambda t, w: _missing_list(t, "snapshot/snapshot-4", "deltaManifestList"), "snapshot 4"),
    "missing-base-list-of-tag": (lambda t, w: _missing_list(t, "tag/tag-t2", "baseManifestList"), "tag t2"),
}


@pytest.mark.parametrize("case", sorted(CRAFTED))
def test_crafted_manifest_lists_are_refused_before_anything_changes(java_src, twin_src, tmp_path, case):
    """A snapshot or tag naming another table's manifest list (copied in with its manifests, from a Java table with
    the same history, so sizes and counts match) or a list that does not exist: every command that writes or deletes
    refuses in one line naming the snapshot or tag and the file, before anything is written or deleted — every path,
    size, time and byte of the table stays. Undone, Java reads the table exactly as before."""
    reference = java_view(java_src / "db.db" / "t")
    wh = tmp_path / "wh"
    shutil.copytree(java_src, wh)
    t = wh / "db.db" / "t"
    make, owner = CRAFTED[case]
    damage, undo = make(t, twin_src)
    named = damage()
    before = exact_digest(str(t))
    failures = []
    for c, argv in {**COMMANDS, **WRITES}.items():
        r = cli(argv[0], wh, "db.t", *argv[1:], *(["--local"] if c in ("compact", "remove-orphans") else []))
        line = r.err.strip().splitlines()[-1] if r.err.strip() else ""
        if r.code != 2 or "Traceback" in r.err or not line.startswith("paimon-ops: error:") or owner not in line \
                or not (named in line or ".parquet" in line):
            failures.append(f"{c}: exit {r.code}: {r.err.strip()[-400:]}")
    assert not failures, "\n".join(failures)
    assert digest_changes(before, exact_digest(str(t))) == []
    undo()
    assert java_view(t) == reference


def _rust_write(wh: Path, ident: str, rows: dict) -> None:
    import pyarrow as pa
    from pypaimon_rust.datafusion import PaimonCatalog
    t = PaimonCatalog({"warehouse": str(wh)}).get_table(ident)
    wb = t.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    w.write_arrow(pa.RecordBatch.from_pydict(rows, schema=pa.schema([("pt", pa.string()), ("id", pa.int32()),
                                                                      ("v", pa.string())])))
    c.commit(w.prepare_commit())
    w.close()
    c.close()


def test_every_writers_history_is_its_own(tmp_path):
    """No false refusal: histories written by Java 0.9 with a manifest merge at nearly every commit
    (manifest.merge-min-count=2) and full manifest compactions (a tiny manifest.full-compaction-threshold-size),
    tags and an expiry; by pypaimon 2.1.0 and pypaimon-rust 0.4.0 taking turns; by our own compaction and manifest
    compaction — each passes the history check, which compares what the merges replaced file by file, and every
    writing operation runs on it. Java, pypaimon and pypaimon-rust read the results."""
    import pyarrow as pa

    from paimon_ops.table.lineage import verify_lineage
    from paimon_ops.table.scan import ManifestStore
    from tests import pypaimon_util as pu
    wh = tmp_path / "wh"
    t = JavaTable(wh, "db", "t")
    schema = {**SCHEMA, "options": {**SCHEMA["options"], "manifest.merge-min-count": "2",
                                    "manifest.full-compaction-threshold-size": "1 b"}}
    batches = [{"rows": [[p, i, f"v{n}-{i}"] for p in ("a", "b") for i in range(n, n + 6)]} for n in range(8)]
    batches[3]["compact"] = True
    jh.run_many([("create_table", t.payload(schema=schema)), ("write", t.payload(batches=batches[:4])),
                 ("create_tag", t.payload(tag="t2", snapshot_id=2)),
                 ("write", t.payload(batches=batches[4:], first_commit_identifier=5)),
                 ("create_tag", t.payload(tag="t6", snapshot_id=6)),
                 ("expire_snapshots", t.payload(retain_min=1, retain_max=6))])
    py = pu.create_table(str(wh), "db.py", pa.schema([("pt", pa.string()), ("id", pa.int32()), ("v", pa.string())]),
                         partition_keys=["pt"], primary_keys=["pt", "id"],
                         options={"bucket": "2", "manifest.merge-min-count": "2"})
    for n in range(3):
        pu.write(pu.get_table(str(wh), "db.py"), {"pt": ["a", "b"], "id": [n, n], "v": [f"py{n}", f"py{n}"]})
        _rust_write(wh, "db.py", {"pt": ["a"], "id": pa.array([10 + n], pa.int32()), "v": [f"rust{n}"]})
    del py

    def merged(table: FileStoreTable) -> int:
        """How many consecutive snapshots' manifests differ (what the check compares entry by entry)."""
        store = ManifestStore(table)
        snaps = {i: table.snapshots.snapshot(i) for i in table.snapshots.list_ids()}
        names = {i: sorted(m.file_name for m in store.manifest_list(s.base_manifest_list)) for i, s in snaps.items()}
        return sum(1 for i in names if i - 1 in snaps and names[i] != sorted(
            m.file_name for lst in (snaps[i - 1].base_manifest_list, snaps[i - 1].delta_manifest_list)
            for m in store.manifest_list(lst)))
    java = FileStoreTable(str(wh / "db.db" / "t"), identifier="db.t")
    assert len(java.snapshots.list_ids()) == 6 and merged(java) >= 2
    ours = {"db.t": java, "db.py": FileStoreTable(str(wh / "db.db" / "py"), identifier="db.py")}
    for table in ours.values():
        verify_lineage(table, "a check")
    for name in ours:
        for argv in (["create-tag", "x"], ["compact", "--mode", "full", "--local"], ["compact-manifests"],
                     ["rollback", "--tag", "x", "--yes"], ["compact", "--mode", "full", "--local"],
                     ["expire-snapshots", "--retain-min", "2", "--min-age", "1 ms"],
                     ["expire-tags", "--min-age", "1 ms"], ["remove-orphans", "--min-age", "1 d", "--local"]):
            r = cli(argv[0], wh, name, *argv[1:])
            assert r.code == 0, (name, argv, r.err)
    for table in ours.values():
        verify_lineage(table, "a check")
        assert merged(table) >= 1
    assert java_view(java.root)["missing"] == []
    assert sorted(pu.both_read(str(wh), "db.py", ["pt", "id", "v"])) == sorted(
        [("a", n, f"py{n}") for n in range(3)] + [("b", n, f"py{n}") for n in range(3)] +
        [("a", 10 + n, f"rust{n}") for n in range(3)])
