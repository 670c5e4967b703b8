"""Every maintenance operation against the S3 server on tables Java Paimon 0.9 wrote, checked by Java afterwards.

Java writes three tables locally (primary key + deletion vectors, primary key with changelog-producer=lookup, a
partitioned append table), with tags. They are uploaded to the S3 server; paimon-ops then runs, against
`s3://bucket/warehouse` only: rollback to a tag, full compaction, tag creation, snapshot expiry, tag deletion with
reclamation (the tagged snapshot has expired), orphan removal (age from S3 last-modified). The warehouse is
downloaded and Java checks it: `check_files` finds nothing missing, the latest snapshot and every tag read the rows
Java read at the rolled-back-to tag before any of this.
"""
from __future__ import annotations

import datetime as dt
import json
import time

import pytest

import paimon_ops as po
from paimon_ops.execution.runner import LocalRunner
from paimon_ops.table.table import FileSystemCatalog
from tests.interop import java_harness as jh
from tests.interop.java_harness import JavaTable

pytestmark = [pytest.mark.java,
              pytest.mark.skipif(not jh.java_available(), reason=jh.skip_reason() or "java not available")]

FIELDS = [{"name": "pt", "type": "STRING NOT NULL"}, {"name": "k", "type": "INT NOT NULL"},
          {"name": "v", "type": "STRING"}]
TABLES = {
    "dv": (["pt", "k"], {"bucket": "2", "deletion-vectors.enabled": "true"}),
    "lookup": (["pt", "k"], {"bucket": "1", "changelog-producer": "lookup"}),
    "ap": ([], {"bucket": "-1"}),
}


def _batches(pk: bool) -> list[dict]:
    out = []
    for i in range(4):
        rows = [[p, (i * 3 + j) % 8, f"v{i}-{j}"] for p in ("a", "b") for j in range(4)]
        b: dict = {"rows": rows}
        if pk and i == 2:
            b = {"rows": rows[:3] + [["a", 1, None]], "kinds": ["+U"] * 3 + ["-D"]}
        out.append(b)
    return out


def _sorted(rows):
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True))


@pytest.fixture(scope="module")
def java_warehouse(tmp_path_factory):
    wh = tmp_path_factory.mktemp("java-s3") / "wh"
    cmds = []
    for name, (pk, opts) in TABLES.items():
        t = JavaTable(wh, "db", name)
        cmds += [("create_table", t.payload(schema={"fields": FIELDS, "partition_keys": ["pt"],
                                                     "primary_keys": pk, "options": opts})),
                 ("write", t.payload(batches=_batches(bool(pk))))]
    written = jh.run_many(cmds)[1::2]
    # tags on the last snapshot of a batch (DV and lookup tables commit APPEND + COMPACT per batch; a DV read
    # skips level-0 files, so only a batch's last snapshot reads what compaction would make of it)
    cmds = []
    for name, w in zip(TABLES, written):
        t = JavaTable(wh, "db", name)
        cmds += [("create_tag", t.payload(tag="early", snapshot_id=w["batches"][0]["snapshot_ids"][-1])),
                 ("create_tag", t.payload(tag="target", snapshot_id=w["batches"][2]["snapshot_ids"][-1]))]
    cmds += [("read", JavaTable(wh, "db", n).payload(tag="target")) for n in TABLES]
    res = jh.run_many(cmds)
    expected = {n: _sorted(r["rows"]) for n, r in zip(TABLES, res[-len(TABLES):])}
    return wh, expected


def test_every_maintenance_operation_on_s3_then_java_checks(java_warehouse, s3_server, bucket, tmp_path):
    wh, expected = java_warehouse
    s3_server.upload(wh, bucket, "warehouse")
    catalog = FileSystemCatalog(f"s3://{bucket}/warehouse", options=s3_server.options)
    assert catalog.all_tables() == [f"db.{n}" for n in sorted(TABLES)]
    runner = LocalRunner()
    orphan_keys = []
    for name in TABLES:
        t = catalog.get_table(f"db.{name}")
        latest = t.snapshots.latest_id()
        po.Table(t).maintenance.rollback(tag="target").execute()
        t = t.refresh()
        assert t.snapshots.latest_id() == t.tags.tag("target").id < latest
        report = po.Table(t).maintenance.compact(mode="full", force=True).execute(runner=runner)
        assert report.written, f"{name}: compaction wrote nothing"
        t = t.refresh()
        po.Table(t).tags.create("compacted", snapshot_id=t.snapshots.latest_id()).execute()
        po.Table(t).maintenance.expire_snapshots(retain_min=1, retain_max=1, now=int(time.time() * 1000) + 3_600_000).execute()
        t = t.refresh()
        assert len(t.snapshots.list_ids()) == 1
        assert not t.snapshots.exists(t.tags.tag("early").id)  # the tag 'early' now owns its files alone
        rep = po.Table(t).maintenance.delete_tags(["early"]).execute(runner=runner)
        assert sum(rep.deleted.values()) > 1  # the tag file and files only it kept alive
        # an orphan: unreferenced, written now; too young at 'now', deleted once it is 2 days old
        key = f"warehouse/db.db/{name}/pt=a/bucket-0/data-orphan-{name}.parquet"
        s3_server.boto().put_object(Bucket=bucket, Key=key, Body=b"PAR1junk")
        orphan_keys.append(key)
        young = po.Table(t).maintenance.remove_orphans(min_age=dt.timedelta(days=1)).execute(runner=runner)
        assert not young.deleted
        now2 = int(time.time() * 1000) + 2 * 86_400_000
        old = po.Table(t).maintenance.remove_orphans(min_age=dt.timedelta(days=1), now=now2).execute(runner=runner)
        assert old.deleted.get("orphan", 0) >= 1
    keys = set(s3_server.keys(bucket, "warehouse/"))
    assert not keys & set(orphan_keys)
    assert not any(k.endswith("/") for k in keys)  # no directory markers were created
    out = tmp_path / "downloaded"
    s3_server.download(bucket, "warehouse", out)
    cmds = []
    for name in TABLES:
        jt = JavaTable(out, "db", name)
        cmds += [("check_files", jt.payload()), ("read", jt.payload()), ("read", jt.payload(tag="target")),
                 ("read", jt.payload(tag="compacted")), ("snapshots", jt.payload())]
    res = jh.run_many(cmds)
    for i, name in enumerate(TABLES):
        check, latest, target, compacted, snaps = res[5 * i:5 * i + 5]
        # Tags do not protect changelog manifest lists, in Java's expiry as in ours (test_expire_java.py): the
        # tag's changelog list is gone on a Java-expired copy too. Anything else missing is a failure.
        tag_changelogs = set()
        for tag_file in (out / "db.db" / name / "tag").glob("tag-*"):
            cl = json.loads(tag_file.read_text()).get("changelogManifestList")
            if cl:
                tag_changelogs.add(cl)
        missing = [m for m in check["missing"]
                   if not (m["kind"] == "manifest_list" and m["path"].rsplit("/", 1)[-1] in tag_changelogs)]
        assert missing == [], f"{name}: Java finds missing files {missing[:3]}"
        assert _sorted(latest["rows"]) == expected[name], f"{name}: latest rows differ"
        assert _sorted(target["rows"]) == expected[name] and _sorted(compacted["rows"]) == expected[name]
        assert sorted(snaps["tags"]) == ["compacted", "target"]
