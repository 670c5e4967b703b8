"""Proof: manifest compaction on tables Java Paimon 0.9 wrote with many commits (Java's own merge held off
with `manifest.merge-min-count` = 1000, so every commit leaves a small manifest): a primary-key table with updates,
a delete and full compactions, a deletion-vector table, an append table compacted by Java; tags on each.

After ours (`paimon-ops compact-manifests`), Java reads every snapshot and tag exactly as before (they are untouched),
reads the new latest snapshot (a COMPACT snapshot over few manifests) exactly as the one before it, finds every file
(`check_files`), and keeps writing and compacting: the same writes on an untouched copy read the same. Our snapshot
expiry then reclaims the merged manifests no retained snapshot or tag uses, and Java still reads.

Java 0.9 has no `compact_manifest` procedure (it came in 1.0); its merge (`ManifestFileMerger`) is the reference for
what is merged, and Java is the reader and writer of the result.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import time

import pytest

import paimon_ops as po
from paimon_ops.cli import main
from paimon_ops.lifecycle.manifest_compaction import data_manifests, manifest_count
from paimon_ops.table.scan import ManifestStore
from paimon_ops.table.table import FileSystemCatalog
from tests.interop import java_harness as jh
from tests.interop.java_harness import JavaTable

pytestmark = [
    pytest.mark.java,
    pytest.mark.skipif(not jh.java_available(), reason=jh.skip_reason() or "java not available"),
]

FIELDS = [{"name": "pt", "type": "STRING NOT NULL"}, {"name": "k", "type": "INT NOT NULL"},
          {"name": "v", "type": "STRING"}]
NO_MERGE = {"manifest.merge-min-count": "1000"}


def _rows(i: int, n: int = 4) -> list[list]:
    return [[p, (i * 3 + j) % 7, f"v{i}-{j}"] for p in ("a", "b") for j in range(n)]


def _schema(pk, **opts):
    return {"fields": FIELDS, "partition_keys": ["pt"], "primary_keys": list(pk), "options": {**NO_MERGE, **opts}}


def _batches(kind: str) -> list[dict]:
    out = []
    for i in range(12):
        b: dict = {"rows": _rows(i)}
        if kind == "pk" and i in (3, 7):
            b = {"rows": _rows(i)[:3] + [["a", 1, None]], "kinds": ["+U"] * 3 + ["-D"], "compact": i == 7}
        if kind == "pk" and i in (5, 10):
            b["compact"] = True
        if kind == "ap":
            b = {"rows": _rows(i, 2)}
        out.append(b)
    return out


SCHEMAS = {"pk": _schema(["pt", "k"], bucket="2"),
           "dv": _schema(["pt", "k"], bucket="1", **{"deletion-vectors.enabled": "true"}),
           "ap": _schema([], bucket="-1")}
TAGS = {"pk": {"t3": 3, "t9": 9}, "dv": {"d5": 5}, "ap": {"a4": 4}}


def _sorted(rows):
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True))


def _cli(*argv: str) -> tuple[int, dict]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        rc = main(list(argv))
    return rc, json.loads(out.getvalue())


def _reads(t: JavaTable, snaps: dict) -> tuple[list, list]:
    cmds, keys = [], []
    for s in snaps["snapshots"]:
        cmds.append(("read", t.payload(snapshot_id=s["id"])))
        keys.append(("snapshot", s["id"]))
    for tag in snaps["tags"]:
        cmds.append(("read", t.payload(tag=tag)))
        keys.append(("tag", tag))
    return cmds, keys


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    jh.ensure_built()
    base = tmp_path_factory.mktemp("mcomp")
    src, ours, ref = (str(base / n) for n in ("src", "ours", "ref"))
    st = {n: JavaTable(src, "db", n) for n in SCHEMAS}
    cmds = []
    for n, schema in SCHEMAS.items():
        cmds += [("create_table", st[n].payload(schema=schema)), ("write", st[n].payload(batches=_batches(n)))]
        if n == "ap":
            cmds.append(("compact", st[n].payload()))
            cmds.append(("write", st[n].payload(batches=[{"rows": _rows(20, 2)}], first_commit_identifier=100)))
        cmds += [("create_tag", st[n].payload(tag=tag, snapshot_id=sid)) for tag, sid in TAGS[n].items()]
    cmds += [("snapshots", st[n].payload()) for n in SCHEMAS]
    res = jh.run_many(cmds)
    snaps = dict(zip(SCHEMAS, res[-len(SCHEMAS):]))
    cmds, keys = [], []
    for n in SCHEMAS:
        c, k = _reads(st[n], snaps[n])
        cmds += c
        keys += [(n, *x) for x in k]
    before = {k: _sorted(r["rows"]) for k, r in zip(keys, jh.run_many(cmds))}
    shutil.copytree(src, ours)
    shutil.copytree(src, ref)
    # ---- ours
    cat = FileSystemCatalog(ours)
    counts, reports = {}, {}
    for n in SCHEMAS:
        counts[n] = manifest_count(cat.get_table(f"db.{n}"))
        rc, reports[n] = _cli("compact-manifests", ours, f"db.{n}", "--json")
        assert rc == 0, reports[n]
    after_counts = {n: manifest_count(cat.get_table(f"db.{n}")) for n in SCHEMAS}
    # ---- Java: every snapshot and tag again, the new latest, files, then the same writes on ours and on ref
    ot = {n: JavaTable(ours, "db", n) for n in SCHEMAS}
    rt = {n: JavaTable(ref, "db", n) for n in SCHEMAS}
    cmds, keys = [], []
    for n in SCHEMAS:
        cmds += [("snapshots", ot[n].payload()), ("check_files", ot[n].payload())]
        keys += [(n, "snapshots"), (n, "check_files")]
    res = dict(zip(keys, jh.run_many(cmds)))
    cmds, keys = [], []
    for n in SCHEMAS:
        c, k = _reads(ot[n], res[(n, "snapshots")])
        cmds += c
        keys += [(n, *x) for x in k]
    more = [{"rows": _rows(30 + i), "compact": i == 1} for i in range(3)]
    for n in SCHEMAS:
        for t in (ot[n], rt[n]):
            batches = [{"rows": _rows(30 + i, 2)} for i in range(3)] if n == "ap" else more
            cmds += [("write", t.payload(batches=batches, first_commit_identifier=500)), ("compact", t.payload()),
                     ("read", t.payload())]
        keys += [(n, "ours_after_write"), (n, "ref_after_write")]
        cmds += [("check_files", ot[n].payload())]
        keys += [(n, "check_after_write")]
    out = jh.run_many(cmds)
    n_reads = len(cmds) - 7 * len(SCHEMAS)
    after = {k: _sorted(r["rows"]) for k, r in zip(keys[:n_reads], out[:n_reads])}
    tail = out[n_reads:]
    writes = {}
    for i, n in enumerate(SCHEMAS):
        chunk = tail[7 * i:7 * i + 7]
        writes[n] = {"ours": _sorted(chunk[2]["rows"]), "ref": _sorted(chunk[5]["rows"]), "check": chunk[6]["missing"]}
    # ---- our snapshot expiry reclaims the merged manifests; Java reads the latest and every tag
    merged = {n: [m["manifest"] for m in reports[n]["details"]["merged"]] for n in SCHEMAS}
    expired = {}
    for n in SCHEMAS:
        t = cat.get_table(f"db.{n}")
        expired[n] = po.Table(t).maintenance.expire_snapshots(now=int(time.time() * 1000) + 86_400_000, retain_min=1, retain_max=1,
            max_deletes=1000).execute()
    cmds, keys = [], []
    for n in SCHEMAS:
        cmds += [("read", ot[n].payload()), ("check_files", ot[n].payload())]
        keys += [(n, "latest"), (n, "check")]
        for tag in TAGS[n]:
            cmds.append(("read", ot[n].payload(tag=tag)))
            keys.append((n, "tag", tag))
    final = dict(zip(keys, jh.run_many(cmds)))
    return {"ours": ours, "snaps": snaps, "before": before, "after": after, "java": res, "counts": counts,
            "after_counts": after_counts, "reports": reports, "writes": writes, "merged": merged,
            "expired": expired, "final": final}


@pytest.mark.parametrize("n", list(SCHEMAS))
def test_java_reads_every_snapshot_and_tag_identically(run, n):
    before = {k[1:]: v for k, v in run["before"].items() if k[0] == n}
    after = {k[1:]: v for k, v in run["after"].items() if k[0] == n}
    old_latest = max(i for kind, i in before if kind == "snapshot")
    new = ("snapshot", old_latest + 1)
    assert after.pop(new) == before[("snapshot", old_latest)]   # the new COMPACT snapshot reads like the last one
    assert after == before                                     # every snapshot and tag untouched
    assert run["java"][(n, "check_files")]["missing"] == []
    snap = run["java"][(n, "snapshots")]["snapshots"][-1]
    prev = run["java"][(n, "snapshots")]["snapshots"][-2]
    assert (snap["commitKind"], snap["deltaRecordCount"], snap["totalRecordCount"]) ==\
        ("COMPACT", 0, prev["totalRecordCount"])
    assert snap.get("indexManifest") == prev.get("indexManifest")


@pytest.mark.parametrize("n", list(SCHEMAS))
def test_few_manifests_and_java_keeps_writing(run, n):
    assert run["counts"][n] >= 12 and run["after_counts"][n] <= 2, (run["counts"], run["after_counts"])
    assert run["reports"][n]["details"]["manifests_after"] == run["after_counts"][n]
    w = run["writes"][n]
    assert w["ours"] == w["ref"] and w["check"] == []           # Java writes and compacts on top of ours


@pytest.mark.parametrize("n", list(SCHEMAS))
def test_snapshot_expiry_reclaims_merged_manifests(run, n):
    f = run["final"]
    assert f[(n, "check")]["missing"] == []
    assert _sorted(f[(n, "latest")]["rows"]) == run["writes"][n]["ours"]
    for tag in TAGS[n]:
        assert _sorted(f[(n, "tag", tag)]["rows"]) == run["before"][(n, "tag", tag)]
    t = FileSystemCatalog(run["ours"]).get_table(f"db.{n}")
    store = ManifestStore(t)
    held = {m.file_name for _, tag in t.tags.tags() for m in data_manifests(store, tag)}
    gone = [m for m in run["merged"][n] if not os.path.exists(t.manifest_path(m))]
    assert gone and all(m in held for m in run["merged"][n] if m not in gone)
