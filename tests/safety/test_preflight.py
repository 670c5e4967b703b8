"""Every path of every delete step is validated before the first delete. With `snapshot/` or
`manifest/` a symbolic link, one expiring data file a symbolic link or a directory, a bucket directory read-only
(the command run without the privilege to override permissions), or a 310-character file name in a manifest,
snapshot expiry — run directly, or as a reviewed plan applied after the damage — refuses in one line naming the
path, and the table is exactly as it was (hash of every file and link). Once the damage is undone, Java Paimon 0.9
reads every copy as before (every file present, rows of the latest snapshot and of the tag), and the expiry runs."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from paimon_ops.format.manifest import FileKind
from paimon_ops.table.scan import ManifestStore
from paimon_ops.table.table import FileStoreTable
from tests.cli.conftest import REPO, Run, cli
from tests.interop import java_harness as jh
from tests.interop.java_harness import JavaTable
from tests.safety.java_proof import java_view, java_views
from tests.safety.test_crafted_names import rewrite_avro
from tests.safety.util import tree_digest

pytestmark = [pytest.mark.java]

SCHEMA = {"fields": [{"name": "pt", "type": "STRING NOT NULL"}, {"name": "id", "type": "INT NOT NULL"},
                     {"name": "v", "type": "STRING"}],
          "partition_keys": ["pt"], "primary_keys": ["pt", "id"], "options": {"bucket": "2"}}
EXPIRE = ["--retain-min", "1", "--min-age", "1 ms"]


@pytest.fixture(scope="module")
def java_src(tmp_path_factory) -> Path:
    """snapshots 1..5 written by Java (the third batch fully compacted: 3 APPEND, 4 COMPACT), tag 'keep' on 1."""
    wh = tmp_path_factory.mktemp("preflight_java")
    t = JavaTable(wh, "db", "t")
    batches = [{"rows": [[p, i, f"v{n}-{i}"] for p in ("a", "b") for i in range(20)]} for n in range(4)]
    batches[2]["compact"] = True
    jh.run_many([("create_table", t.payload(schema=SCHEMA)), ("write", t.payload(batches=batches[:1])),
                 ("create_tag", t.payload(tag="keep", snapshot_id=1)),
                 ("write", t.payload(batches=batches[1:], first_commit_identifier=2))])
    return wh


@pytest.fixture(scope="module")
def reference(java_src):
    return java_view(java_src / "db.db" / "t")


def unprivileged(*args: str) -> Run:
    """The CLI as a user without the power to override file permissions (root: capabilities dropped)."""
    import time
    cmd = [sys.executable, "-m", "paimon_ops.cli", *map(str, args)]
    if os.geteuid() == 0:
        cmd = ["setpriv", "--inh-caps=-all", "--bounding-set=-dac_override,-dac_read_search,-fowner", *cmd]
    started = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=REPO)
    return Run(p.returncode, p.stdout, p.stderr, time.time() - started)


def _expiring_data(t: Path) -> list[str]:
    r = cli("expire-snapshots", t.parent.parent, "db.t", *EXPIRE, "--dry-run", "--json")
    assert r.code == 0, r.err
    paths = [f["path"] for s in r.json["steps"] if s["name"] == "data files" for f in s["files"]]
    assert len(paths) >= 2, "the scenario must expire data files"
    return paths


def _symlinked_dir(t: Path, name: str):
    def damage() -> str:
        shutil.move(t / name, t.parent / f"{name}-moved")
        os.symlink(t.parent / f"{name}-moved", t / name)
        return str(t / name)

    def undo() -> None:
        os.unlink(t / name)
        shutil.move(t.parent / f"{name}-moved", t / name)
    return damage, undo


def _file_replaced(t: Path, how: str):
    state = {}

    def damage() -> str:
        victim = _expiring_data(t)[-1]
        state["path"] = victim
        shutil.move(victim, victim + ".real")
        if how == "symlink":
            os.symlink(victim + ".real", victim)
        else:
            os.mkdir(victim)
        return victim

    def undo() -> None:
        p = state["path"]
        os.unlink(p) if how == "symlink" else os.rmdir(p)
        shutil.move(p + ".real", p)
    return damage, undo


def _read_only_dir(t: Path):
    state = {}

    def damage() -> str:
        d = os.path.dirname(_expiring_data(t)[-1])
        state["dir"] = d
        os.chmod(d, 0o555)
        return d

    def undo() -> None:
        os.chmod(state["dir"], 0o755)
    return damage, undo


def _long_name(t: Path):
    """A DELETE entry of an expiring snapshot's delta renamed to 310 characters (no such file can exist)."""
    state = {}

    def damage() -> str:
        table = FileStoreTable(str(t))
        snap = table.snapshots.snapshot(4)  # the COMPACT snapshot deletes the compacted files
        store = ManifestStore(table)
        meta = next(m for m in store.manifest_list(snap.delta_manifest_list) if m.num_deleted_files)
        path = table.manifest_path(meta.file_name)
        state["path"], state["bytes"] = path, open(path, "rb").read()
        entries = store.manifest(meta.file_name)
        victim = next(e for e in entries if e.kind == FileKind.DELETE).file.file_name
        long = "data-" + "x" * 300 + ".parquet"

        def change(r: dict) -> dict:
            if r["_FILE"]["_FILE_NAME"] == victim and r["_KIND"] == 1:
                r["_FILE"]["_FILE_NAME"] = long
            return r
        rewrite_avro(path, change)
        return long

    def undo() -> None:
        with open(state["path"], "wb") as f:
            f.write(state["bytes"])
    return damage, undo


CASES = {
    "snapshot-dir-symlink": lambda t: _symlinked_dir(t, "snapshot"),
    "manifest-dir-symlink": lambda t: _symlinked_dir(t, "manifest"),
    "data-file-symlink": lambda t: _file_replaced(t, "symlink"),
    "data-file-directory": lambda t: _file_replaced(t, "directory"),
    "read-only-bucket-dir": _read_only_dir,
    "310-character-name": _long_name,
}


@pytest.mark.parametrize("via", ["command", "apply"])
def test_preflight_refuses_before_the_first_delete(java_src, reference, tmp_path, via):
    copies = []
    failures = []
    for name, make in CASES.items():
        wh = tmp_path / name / "wh"
        shutil.copytree(java_src, wh)
        t = wh / "db.db" / "t"
        plan_file = tmp_path / name / "plan.json"
        if via == "apply":  # reviewed before the damage, applied after it
            r = cli("expire-snapshots", wh, "db.t", *EXPIRE, "--dry-run", "--json")
            assert r.code == 0, r.err
            plan_file.write_text(r.out)
        damage, undo = make(t)
        named = damage()
        before = tree_digest(str(wh.parent))
        if via == "apply":
            r = unprivileged("apply", plan_file, "--local", "--json")
        else:
            r = unprivileged("expire-snapshots", wh, "db.t", *EXPIRE, "--local", "--json")
        lines = r.err.splitlines()
        if r.code != 2 or len(lines) != 1 or "Traceback" in r.err or named not in lines[0]:
            failures.append(f"{name} via {via}: exit {r.code}: {r.err.strip()}")
        if tree_digest(str(wh.parent)) != before:
            failures.append(f"{name} via {via}: the tree changed")
        undo()
        copies.append(t)
    assert not failures, "\n".join(failures)
    # undamaged again, every copy reads in Java exactly as the untouched table, and the expiry then runs
    assert all(v == reference for v in java_views(copies))
    r = cli("expire-snapshots", copies[0].parent.parent, "db.t", *EXPIRE, "--local", "--json")
    assert r.code == 0 and r.json["details"]["expired_snapshots"], r.err
    after = java_view(copies[0])
    assert after["missing"] == [] and after["latest"] == reference["latest"] and after["tags"] == reference["tags"]
