"""Tags by event time and `replace_tag`, proven against Java Paimon 0.9 on twin tables (byte copies of one table Java
wrote, with commit times and watermarks of its own): for each timestamp / watermark, our create_tag_from_timestamp /
create_tag_from_watermark tags the snapshot Java 0.9's `laterOrEqualTimeMills` / `laterOrEqualWatermark` plus the
procedures' tag loop tags on the twin; Java reads every tag with identical rows. Bad input — a name that
exists, an instant no snapshot reached, a snapshot that expired untagged, a tag that does not exist — is one line, exit
2, nothing changed."""
from __future__ import annotations

import shutil

import pytest

import paimon_ops as po
from paimon_ops.timeutil import iso
from tests.cli.conftest import cli
from tests.interop import java_harness as jh
from tests.interop.java_harness import JavaTable
from tests.safety.util import tree_digest

pytestmark = [pytest.mark.java,
              pytest.mark.skipif(not jh.java_available(), reason=jh.skip_reason() or "java not available")]

W0 = 1_700_000_000_000  # the first watermark (event time, epoch ms); the others follow at 1 s steps


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """db.t written by Java in five JVMs (distinct commit times): snapshot 1 without a watermark, then watermarks
    W0, W0+1 s, W0+1 s (a commit that did not advance it), W0+3 s."""
    wh = tmp_path_factory.mktemp("time-tags") / "wh"
    java = JavaTable(wh, "db", "t")
    java.create([("id", "INT"), ("v", "STRING")], options={"bucket": "-1"})
    for i, w in enumerate([None, W0, W0 + 1000, W0 + 1000, W0 + 3000]):
        java.write([{"rows": [[i, f"v{i}"]], **({"watermark": w} if w is not None else {})}])
    snaps = java.snapshots()["snapshots"]
    assert [s.get("watermark") for s in snaps] == [None, W0, W0 + 1000, W0 + 1000, W0 + 3000]
    times = [s["timeMillis"] for s in snaps]
    assert times == sorted(set(times)), times  # one JVM per commit: distinct, growing commit times
    return wh, times


def _twins(source, tmp_path) -> tuple[str, JavaTable, JavaTable]:
    wh, _ = source
    ours, twin = tmp_path / "ours", tmp_path / "twin"
    shutil.copytree(wh, ours)
    shutil.copytree(wh, twin)
    return str(ours), JavaTable(ours, "db", "t"), JavaTable(twin, "db", "t")


def _rows(java: JavaTable, tag: str) -> list:
    return sorted(java.read(tag=tag)["rows"])


def test_tags_from_timestamp_and_watermark_tag_what_java_tags(source, tmp_path):
    wh, ours_java, twin = _twins(source, tmp_path)
    times = source[1]
    table = po.Catalog(wh).get_table("db.t")
    cases = [  # (tag, keyword, value, the snapshot Java's procedure tags)
        ("ts-exact", "timestamp", times[2], 3),
        ("ts-between", "timestamp", times[1] + 1, 3),
        ("ts-before-all", "timestamp", times[0] - 60_000, 1),  # Java's answer: the first snapshot
        ("wm-exact", "watermark", W0 + 1000, 3),  # the first of the two snapshots at W0+1 s
        ("wm-between", "watermark", W0 + 1500, 5),
        ("wm-below-all", "watermark", W0 - 1, 2),  # the first snapshot with a watermark
    ]
    for tag, key, value, want in cases:
        method = table.tags.create_from_timestamp if key == "timestamp" else table.tags.create_from_watermark
        plan = method(tag, **{key: value})
        assert plan.details["snapshot_id"] == want, (tag, plan.details)
        plan.execute()
        java = twin.call("create_tag_from", tag=tag, **{key: value})
        assert java["snapshot_id"] == want, (tag, java)
    assert ours_java.snapshots()["tags"] == twin.snapshots()["tags"] == {t: s for t, _, _, s in cases}
    for tag, *_ in cases:  # Java reads our tags as it reads its own (pypaimon 2.1 cannot read 0.9's manifests)
        assert _rows(ours_java, tag) == _rows(twin, tag)

    # nothing reached: Java finds no snapshot either, and we refuse in one line naming what is missing
    for key, value, words in [("timestamp", times[-1] + 1, "was committed at or after"),
                              ("watermark", W0 + 3001, "has a watermark at or after")]:
        assert "error" in twin.call("create_tag_from", tag="none", **{key: value})
        method = table.tags.create_from_timestamp if key == "timestamp" else table.tags.create_from_watermark
        with pytest.raises(po.InvalidArgumentError, match=f"no snapshot of db.t {words}"):
            method("none", **{key: value})


def test_a_tag_held_snapshot_counts_and_an_expired_first_one_is_refused(source, tmp_path):
    """After expiry only tags hold snapshots 1 and 2: snapshot 2 is the first at its time and at watermark W0 (as in
    Java's tag loop; certain, its predecessor is known too); the first snapshot at snapshot 3's time expired untagged
    — Java tags a later one, we refuse (nothing changed)."""
    wh, ours_java, twin = _twins(source, tmp_path)
    times = source[1]
    for java in (ours_java, twin):
        java.create_tag("first", snapshot_id=1)
        java.create_tag("held", snapshot_id=2)
        java.expire_snapshots(retain_min=1, retain_max=1)
    assert ours_java.snapshots()["earliest"] == 5
    table = po.Catalog(wh).get_table("db.t")
    table.tags.create_from_timestamp("from-tag", timestamp=times[1]).execute()
    table.tags.create_from_watermark("from-tag-wm", watermark=W0).execute()
    assert twin.call("create_tag_from", tag="from-tag", timestamp=times[1])["snapshot_id"] == 2
    assert twin.call("create_tag_from", tag="from-tag-wm", watermark=W0)["snapshot_id"] == 2
    assert ours_java.snapshots()["tags"] == twin.snapshots()["tags"] == {"first": 1, "held": 2, "from-tag": 2,
                                                                           "from-tag-wm": 2}
    assert _rows(ours_java, "from-tag") == _rows(twin, "from-tag")

    before = tree_digest(wh)
    assert twin.call("create_tag_from", tag="later", timestamp=times[2])["snapshot_id"] == 5  # not the first
    r = cli("create-tag-from-timestamp", wh, "db.t", "later", "--timestamp", str(times[2]))
    assert r.code == 2 and "has expired and no tag holds it" in r.err and len(r.err.strip().splitlines()) == 1, r.err
    r = cli("create-tag-from-watermark", wh, "db.t", "later", "--watermark", str(W0 + 1000))
    assert r.code == 2 and "has expired and no tag holds it" in r.err, r.err
    assert tree_digest(wh) == before


def test_replace_tag_moves_an_existing_tag_like_java(source, tmp_path):
    wh, ours_java, twin = _twins(source, tmp_path)
    for java in (ours_java, twin):
        java.create_tag("t", snapshot_id=2)
    table = po.Catalog(wh).get_table("db.t")
    plan = table.tags.replace("t", snapshot_id=4)
    assert plan.operation == "replace_tag" and plan.details["old_snapshot_id"] == 2
    plan.execute()
    twin.delete_tag("t")  # 0.9 has no replace_tag procedure: the twin's tag is re-created where Java's moves it
    twin.create_tag("t", snapshot_id=4)
    assert ours_java.snapshots()["tags"] == twin.snapshots()["tags"] == {"t": 4}
    assert _rows(ours_java, "t") == _rows(twin, "t")
    r = cli("replace-tag", wh, "db.t", "t", "--json")  # default: the latest snapshot
    assert r.code == 0, r.err
    assert r.json["details"]["snapshot_id"] == 5 and ours_java.snapshots()["tags"] == {"t": 5}


def test_bad_input_is_one_line_exit_2_nothing_changed(source, tmp_path):
    wh, ours_java, _ = _twins(source, tmp_path)
    times = source[1]
    ours_java.create_tag("taken", snapshot_id=1)
    before = tree_digest(wh)
    cases = [
        (["create-tag-from-timestamp", wh, "db.t", "taken", "--timestamp", str(times[2])],
         "tag 'taken' of db.t already exists (snapshot 1); use --replace to move it"),
        (["create-tag-from-watermark", wh, "db.t", "taken", "--watermark", str(W0)],
         "tag 'taken' of db.t already exists (snapshot 1); use --replace to move it"),
        (["create-tag-from-timestamp", wh, "db.t", "x", "--timestamp", str(times[-1] + 1)],
         "no snapshot of db.t was committed at or after"),
        (["create-tag-from-watermark", wh, "db.t", "x", "--watermark", iso(W0 + 10_000)],  # ISO 8601 with a zone
         f"no snapshot of db.t has a watermark at or after {W0 + 10_000}"),
        (["create-tag-from-timestamp", wh, "db.t", "x"], "--timestamp"),
        (["create-tag-from-timestamp", wh, "db.t", "x", "--timestamp", "3 d"], "is an age"),
        (["replace-tag", wh, "db.t", "missing"], "tag 'missing' of db.t does not exist"),
    ]
    for argv, words in cases:
        r = cli(*argv)
        assert r.code == 2 and words in r.err and len(r.err.strip().splitlines()) == 1, (argv, r.err)
        assert "Traceback" not in r.err
    assert tree_digest(wh) == before
    # with --replace the existing tag moves
    r = cli("create-tag-from-watermark", wh, "db.t", "taken", "--watermark", str(W0), "--replace")
    assert r.code == 0, r.err
    assert ours_java.snapshots()["tags"] == {"taken": 2}
