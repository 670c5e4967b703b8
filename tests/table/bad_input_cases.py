"""Shared machinery for the bad-input proofs: damage one file of a table copy, then check that reading and
writing raise the right paimon_ops error naming the file and the problem, and that nothing was written."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pytest

from paimon_ops.errors import PaimonOpsError
from paimon_ops.format import manifest as mf
from paimon_ops.table.commit import CommitChanges, FileStoreCommit
from paimon_ops.table.reader import read_file
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import FileSystemCatalog
from paimon_ops.table.writer import TableWriter


def listing(root: str | Path) -> dict[str, tuple[int, int]]:
    out = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            p = os.path.join(dirpath, name)
            st = os.stat(p)
            out[os.path.relpath(p, root)] = (st.st_size, st.st_mtime_ns)
    return out


def latest_snapshot_json(table_dir: Path) -> dict:
    snap_dir = table_dir / "snapshot"
    n = max(int(x.split("-")[1]) for x in os.listdir(snap_dir) if x.startswith("snapshot-"))
    return json.loads((snap_dir / f"snapshot-{n}").read_text())


def first_manifest(table_dir: Path) -> str:
    """Name of a data manifest referenced by the latest snapshot (first of the delta list)."""
    snap = latest_snapshot_json(table_dir)
    data = (table_dir / "manifest" / snap["deltaManifestList"]).read_bytes()
    metas, _ = mf.read_manifest_list(data, snap["deltaManifestList"])
    return metas[0].file_name


def a_data_file(table_dir: Path) -> Path:
    for dirpath, _, files in os.walk(table_dir):
        for n in sorted(files):
            if n.startswith("data-") and "bucket-" in dirpath:
                return Path(dirpath) / n
    raise AssertionError("no data file")


def truncate(p: Path, keep: float = 0.5) -> None:
    data = p.read_bytes()
    p.write_bytes(data[: int(len(data) * keep)])


def garble(p: Path, at: float = 0.5, n: int = 16) -> None:
    data = bytearray(p.read_bytes())
    i = int(len(data) * at)
    for j in range(i, min(i + n, len(data))):
        data[j] ^= 0x5A
    p.write_bytes(bytes(data))


@dataclass(frozen=True)
class Damage:
    name: str
    apply: Callable[[Path], str]       # damages the table, returns the path (relative to table) the error must name
    error: type[PaimonOpsError]
    problem: str                       # regex the message must contain (besides the path)
    write_fails: bool = True           # metadata damage also blocks writes; damaged data files do not


def read_everything(warehouse: str, ident: str) -> None:
    table = FileSystemCatalog(warehouse).get_table(ident)
    _ = table.schema
    scanner = TableScanner(table)
    result = scanner.scan(table.snapshots.latest())
    for f in result.files:
        hit = result.dv_of(f)
        read_file(scanner, f, scanner.deletion_vector(*hit) if hit else None)


def write_something(warehouse: str, ident: str, rows: pa.Table) -> None:
    table = FileSystemCatalog(warehouse).get_table(ident)
    w = TableWriter(table)
    w.write(rows)
    w.commit()


def metadata_commit(warehouse: str, ident: str) -> None:
    table = FileSystemCatalog(warehouse).get_table(ident)
    latest = table.snapshots.latest()
    FileStoreCommit(table).commit(CommitChanges(), "APPEND", latest.id if latest else None)


def check_damage(warehouse: str, ident: str, table_dir: Path, damage: Damage, rows: pa.Table) -> None:
    rel = damage.apply(table_dir)
    target = str(table_dir / rel)
    before = listing(table_dir)
    ops = [("read", lambda: read_everything(warehouse, ident))]
    if damage.write_fails:
        ops += [("write", lambda: write_something(warehouse, ident, rows)),
                ("commit", lambda: metadata_commit(warehouse, ident))]
    for what, op in ops:
        with pytest.raises(damage.error) as ei:
            op()
        msg = str(ei.value)
        assert target in msg, f"{damage.name}/{what}: message does not name {target}: {msg}"
        assert __import__("re").search(damage.problem, msg), f"{damage.name}/{what}: {msg}"
        assert type(ei.value) is damage.error or isinstance(ei.value, damage.error)
        assert listing(table_dir) == before, f"{damage.name}/{what}: files were written or removed"
