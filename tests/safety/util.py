"""Tooling of the safety tests: checksums of whole trees (never following symlinks), a partitioned table with
history, a victim directory outside the warehouse."""
from __future__ import annotations

import hashlib
import os
import time

import pyarrow as pa

from paimon_ops.table.table import FileStoreTable
from paimon_ops.table.writer import TableWriter, create_table

DAY_S = 86_400


def tree_digest(root: str) -> dict[str, str]:
    """relative path -> sha256 of every regular file; symlinks as 'link -> target'; never follows a link."""
    out: dict[str, str] = {}
    for d, dirs, files in os.walk(root, followlinks=False):
        for name in dirs + files:
            p = os.path.join(d, name)
            rel = os.path.relpath(p, root)
            if os.path.islink(p):
                out[rel] = "link -> " + os.readlink(p)
            elif os.path.isfile(p):
                with open(p, "rb") as f:
                    out[rel] = hashlib.sha256(f.read()).hexdigest()
    return out


def exact_digest(root: str, dir_times: bool = True) -> dict[str, tuple]:
    """Every path below root and root itself (never through a link) -> (kind, size, mtime in ns, sha256) of files,
    (kind, mtime) of directories (`dir_times`: else their kind only), (kind, target) of links: a refusal that changed
    nothing leaves this equal — no file written, removed, rewritten with the same bytes or touched, no directory
    created or removed."""
    out: dict[str, tuple] = {".": ("dir", os.lstat(root).st_mtime_ns if dir_times else 0)}
    for d, dirs, files in os.walk(root, followlinks=False):
        for name in dirs + files:
            p = os.path.join(d, name)
            rel = os.path.relpath(p, root)
            st = os.lstat(p)
            if os.path.islink(p):
                out[rel] = ("link", os.readlink(p))
            elif os.path.isdir(p):
                out[rel] = ("dir", st.st_mtime_ns if dir_times else 0)
            else:
                with open(p, "rb") as f:
                    out[rel] = ("file", st.st_size, st.st_mtime_ns, hashlib.sha256(f.read()).hexdigest())
    return out


def digest_changes(before: dict[str, tuple], after: dict[str, tuple]) -> list[str]:
    """The paths whose entry differs, for a readable assertion."""
    return sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))


def age(root: str, days: float = 10) -> None:
    """Backdate every file and directory below root (not through links) so orphan removal considers them."""
    t = time.time() - days * DAY_S
    for d, dirs, files in os.walk(root, followlinks=False):
        for name in files + dirs:
            p = os.path.join(d, name)
            if not os.path.islink(p):
                os.utime(p, (t, t))


def make_victim(base: str, name: str = "victim") -> str:
    """A directory outside the warehouse full of files that look like Paimon data files."""
    v = os.path.join(base, name)
    os.makedirs(os.path.join(v, "bucket-0"), exist_ok=True)
    for rel in ("data-precious-1.parquet", "data-precious-2.orc", "manifest-precious", "bucket-0/data-x.parquet"):
        with open(os.path.join(v, rel), "wb") as f:
            f.write(b"precious " + rel.encode())
    age(v)
    return v


def partitioned_table(warehouse: str, name: str = "db.t", commits: int = 3, **options: str) -> FileStoreTable:
    t = create_table(warehouse, name, [("dt", "STRING"), ("k", "INT"), ("v", "STRING")], ["dt"], ["dt", "k"],
                     {"bucket": "2", "file.compression": "none", **options})
    for i in range(commits):
        w = TableWriter(t.refresh())
        w.write(pa.table({"dt": ["2024-01-01", "2024-01-02"] * 5, "k": list(range(10)),
                          "v": [f"v{i}-{k}" for k in range(10)]}))
        w.commit()
    return t.refresh()


def slow_compaction_table(warehouse: str, name: str = "db.t"):
    """8 buckets x 4 commits x 120,000 rows, merged in small slices (a 2 MiB memory budget): a full compaction takes
    seconds on this machine, with tasks queued behind the cores — long enough to interrupt it in the middle."""
    import numpy as np
    t = create_table(warehouse, name, [("k", "INT"), ("v", "STRING"), ("x", "DOUBLE")], [], ["k"],
                     {"bucket": "8", "file.compression": "none", "compaction.memory-budget": "2 mb"})
    rng = np.random.default_rng(3)
    for i in range(4):
        w = TableWriter(t.refresh())
        keys = np.arange(i * 30_000, i * 30_000 + 120_000, dtype=np.int32)
        w.write(pa.table({"k": keys, "v": [f"value-{i}-{k}" for k in keys.tolist()], "x": rng.random(len(keys))}))
        w.commit()
    return t.refresh()


def rewrite_avro(path: str, edit) -> None:
    """Rewrite an Avro metadata file (manifest, manifest list) record by record with `edit(record)`, keeping its
    schema and codec: a crafted but well-formed file."""
    import fastavro
    with open(path, "rb") as f:
        reader = fastavro.reader(f)
        schema, codec, records = reader.writer_schema, reader.codec, list(reader)
    for rec in records:
        edit(rec)
    with open(path, "wb") as f:
        fastavro.writer(f, schema, records, codec=codec)
