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
from tests.safety.util import age, tree_digest

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
