"""Proof: partition expiry against Java Paimon 0.9's own (`PartitionExpire`, check interval 0 — what its
`expire_partitions` procedure builds), on tables Java wrote: string partitions with an escaped value holding a comma
(apache/paimon#9277), two partition keys with a null in the second, INT partitions with `yyyyMMdd` and a value that does
not parse, a `$dt $hour:00:00` pattern at the exact boundary, a DATE partitioned deletion-vector table (index files
dropped with the partition), a null partition, and tables whose formatter / pattern options are bad.

Each table is copied twice; Java's expiry runs on one copy and ours (`paimon-ops expire-partitions`) on the other,
at the same local "now". Where Java 0.9 is right, both drop the same partitions: Java's scans of both copies list the
same files, Java reads identical rows, `check_files` finds nothing missing. Known Java 0.9 defects where we differ on
purpose (asserted as such):
* DATE partitions never expire by values in Java (the formatter sees the day number `19723`, apache/paimon#6439): we read the
  typed date. By update-time both agree.
* a null partition value makes Java's run fail with a NullPointerException (nothing expired at all); we report that
  partition as having no time (values-time) or drop it like any other (update-time), and expire the rest.
* bad options: Java fails (unknown letter) or silently expires nothing forever (apache/paimon#7428); we refuse with an
  InvalidOptionError naming the option, exit 2, and change nothing (checksummed).
Afterwards Java keeps writing, and our snapshot expiry reclaims the dropped partitions' files (except those a tag
still holds) while Java still reads every retained snapshot and tag.

One JVM builds every table, one more runs Java's expiry and reads both copies, one last one reads after snapshot
expiry.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import time

import pytest

import paimon_ops as po
from paimon_ops.cli import main
from paimon_ops.execution.plan import Plan
from paimon_ops.format.partition import parse_partition_dir
from paimon_ops.table.table import FileSystemCatalog
from tests.interop import java_harness as jh
from tests.interop.java_harness import JavaTable
from tests.safety.util import tree_digest

pytestmark = [
    pytest.mark.java,
    pytest.mark.skipif(not jh.java_available(), reason=jh.skip_reason() or "java not available"),
]

DAY_MS = 86_400_000
NOW = "2024-01-10T00:00"                      # the JVM runs in UTC, and so do we (no sink.process-time-zone)
NOW_MS = int(dt.datetime(2024, 1, 10, tzinfo=dt.timezone.utc).timestamp() * 1000)
EXP = "3 d"                                   # -> partitions whose time is before 2024-01-07T00:00 expire
ODD = "x,y=z/w a"                             # comma, equals, slash, space: escaped in the directory name


def _schema(fields, parts, pk=(), **opts):
    return {"fields": [{"name": n, "type": t} for n, t in fields], "partition_keys": list(parts),
            "primary_keys": list(pk), "options": {"bucket": "-1" if not pk else "1", **opts}}


# name -> (schema, batches of the first JVM call, batches of the second)
TABLES = {
    "str_pk": (_schema([("dt", "STRING"), ("k", "INT"), ("v", "STRING")], ["dt"], ["dt", "k"], bucket="2"),
               [{"rows": [[d, k, f"a{k}"] for d in ("2024-01-01", "2024-01-03", "2024-01-08", ODD) for k in range(4)]},
                {"rows": [["2024-01-01", 1, "upd"], ["2024-01-08", 2, "upd"]], "compact": True}],
               [{"rows": [["2024-01-03", 9, "late"]]}]),
    "multi": (_schema([("dt", "STRING"), ("region", "STRING"), ("v", "INT")], ["dt", "region"]),
              [{"rows": [["2024-01-01", "eu", 1], ["2024-01-01", ODD, 2], ["2024-01-05", "eu", 3],
                         ["2024-01-09", None, 4], ["2024-01-09", ODD, 5]]}], []),
    "ints": (_schema([("d", "INT"), ("v", "INT")], ["d"], **{"partition.expiration-time": EXP,
                                                            "partition.timestamp-formatter": "yyyyMMdd"}),
             [{"rows": [[20240101, 1], [20240106, 2], [20240109, 3], [2024010, 4]]}], []),
    "hours": (_schema([("dt", "STRING"), ("hour", "INT"), ("v", "INT")], ["dt", "hour"],
                      **{"partition.timestamp-pattern": "$dt $hour:00:00"}),
              [{"rows": [["2024-01-06", 23, 1], ["2024-01-07", 0, 2], ["2024-01-07", 1, 3], ["2024-01-06", 7, 4]]}],
              []),
    "dates": (_schema([("d", "DATE"), ("k", "INT"), ("v", "STRING")], ["d"], ["d", "k"],
                      **{"deletion-vectors.enabled": "true"}),
              [{"rows": [[d, k, "a"] for d in ("2024-01-01", "2024-01-02") for k in range(4)]},
               {"rows": [["2024-01-01", 1, "b"], ["2024-01-02", 2, "b"]]}],
              [{"rows": [["2024-01-02", 3, "c"], ["2024-01-09", 1, "c"]]}]),
    "nulls": (_schema([("dt", "STRING"), ("v", "INT")], ["dt"]),
              [{"rows": [["2024-01-01", 1], ["2024-01-09", 2], [None, 3]]}], []),
    "bad_letter": (_schema([("dt", "STRING"), ("v", "INT")], ["dt"], **{"partition.expiration-time": EXP,
                                                                     "partition.timestamp-formatter": "yyyy-MM-dd bb"}),
                   [{"rows": [["2024-01-01", 1]]}], []),
    "bad_nomatch": (_schema([("dt", "STRING"), ("v", "INT")], ["dt"], **{"partition.expiration-time": EXP,
                                                                      "partition.timestamp-formatter": "yyyyMMdd"}),
                    [{"rows": [["2024-01-01", 1], ["2024-01-02", 2]]}], []),
    "bad_pattern": (_schema([("dt", "STRING"), ("v", "INT")], ["dt"], **{"partition.expiration-time": EXP,
                                                                      "partition.timestamp-pattern": "$day"}),
                    [{"rows": [["2024-01-01", 1]]}], []),
}
# scenario -> (source table, strategy, Java agrees?)
SCENARIOS = {
    "str_pk": ("str_pk", "values-time", True),
    "multi": ("multi", "values-time", True),
    "ints": ("ints", "values-time", True),
    "hours": ("hours", "values-time", True),
    "dates": ("dates", "values-time", False),       # apache/paimon#6439: Java never expires DATE partitions by value
    "dates_upd": ("dates", "update-time", True),
    "nulls": ("nulls", "values-time", False),       # Java 0.9: NullPointerException, nothing expired
    "nulls_upd": ("nulls", "update-time", False),   # Java 0.9: NullPointerException, nothing expired
}
BAD = {"bad_letter": "partition.timestamp-formatter", "bad_nomatch": "partition.timestamp-formatter",
       "bad_pattern": "partition.timestamp-pattern"}


def _sorted(rows):
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True))


def _files(scan: dict) -> set:
    return {(f["partition_path"], f["bucket"], f["file_name"]) for f in scan["files"]}


def _local(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).replace(tzinfo=None).isoformat(
        timespec="milliseconds")


def _our_cli(wh: str, name: str, *args: str) -> tuple[int, dict]:
    import contextlib
    import io
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["expire-partitions", wh, f"db.{name}", *args, "--json"])
    return rc, json.loads(out.getvalue())


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    jh.ensure_built()
    base = tmp_path_factory.mktemp("pexp")
    src, jwh, owh = (str(base / n) for n in ("src", "java", "ours"))
    src_t = {n: JavaTable(src, "db", n) for n in TABLES}
    cmds = []
    for n, (schema, first, _) in TABLES.items():
        cmds += [("create_table", src_t[n].payload(schema=schema)), ("write", src_t[n].payload(batches=first))]
    cmds.append(("create_tag", src_t["str_pk"].payload(tag="t1", snapshot_id=1)))
    jh.run_many(cmds)
    time.sleep(1.5)  # update-time: the second batch's files are measurably newer than the first's
    cmds = [("write", src_t[n].payload(batches=second, first_commit_identifier=100))
            for n, (_, _, second) in TABLES.items() if second]
    cmds += [("scan", src_t["dates"].payload()), ("read", src_t["str_pk"].payload(tag="t1"))]
    cmds += [("read", src_t[n].payload()) for n in TABLES]
    res = jh.run_many(cmds)
    n_writes = sum(1 for _, (_, _, s) in TABLES.items() if s)
    date_scan, tag_rows = res[n_writes], _sorted(res[n_writes + 1]["rows"])
    original = {n: _sorted(r["rows"]) for n, r in zip(TABLES, res[n_writes + 2:])}
    # update-time "now": one second past "the first batch of d=2024-01-01 is 1 day old"
    first_batch = max(f["creation_time_ms"] for f in date_scan["files"] if f["partition"] == ["2024-01-01"])
    upd_now_ms = first_batch + DAY_MS + 500
    far_ms = int(time.time() * 1000) + 10 * DAY_MS  # nulls_upd: everything is old
    nows = {sc: (far_ms if sc == "nulls_upd" else upd_now_ms) if strategy == "update-time" else NOW_MS
            for sc, (_, strategy, _) in SCENARIOS.items()}
    # ---- copies
    for wh in (jwh, owh):
        for sc, (table, _, _) in SCENARIOS.items():
            shutil.copytree(os.path.join(src, "db.db", table), os.path.join(wh, "db.db", sc))
        for b in BAD:
            shutil.copytree(os.path.join(src, "db.db", b), os.path.join(wh, "db.db", b))
    # ---- ours (through the CLI, as users run it); the bad-option tables must be refused and stay unchanged
    ours, plans = {}, {}
    for sc, (_, strategy, _) in SCENARIOS.items():
        now_ms = nows[sc]
        exp = "1 d" if strategy == "update-time" else EXP
        args = ["--strategy", strategy, "--now-ms", str(now_ms)]
        if sc != "ints":  # ints: expiration time and formatter come from the table's own options
            args += ["--expiration-time", exp]
        rc, plan = _our_cli(owh, sc, *args, "--dry-run")
        assert rc == 0, plan
        plans[sc] = Plan.from_dict(plan)
        rc, ours[sc] = _our_cli(owh, sc, *args)
        assert rc == 0, ours[sc]
    bad_before = tree_digest(owh + "/db.db/bad_letter"), tree_digest(owh + "/db.db/bad_nomatch"),\
        tree_digest(owh + "/db.db/bad_pattern")
    bad = {b: _our_cli(owh, b, "--now-ms", str(NOW_MS)) for b in BAD}
    bad_after = tree_digest(owh + "/db.db/bad_letter"), tree_digest(owh + "/db.db/bad_nomatch"),\
        tree_digest(owh + "/db.db/bad_pattern")
    # ---- Java's expiry on its copies, then reads and scans of both copies, then Java keeps writing on ours
    jt = {sc: JavaTable(jwh, "db", sc) for sc in list(SCENARIOS) + list(BAD)}
    ot = {sc: JavaTable(owh, "db", sc) for sc in SCENARIOS}
    cmds = []
    for sc, (_, strategy, _) in SCENARIOS.items():
        upd = strategy == "update-time"
        kw = {"strategy": strategy, "expiration_time_ms": DAY_MS if upd else 3 * DAY_MS}
        cmds.append(("expire_partitions", jt[sc].payload(now=_local(nows[sc]) if upd else NOW, **kw)))
    cmds += [("expire_partitions", jt[b].payload(now=NOW)) for b in BAD]
    for sc in SCENARIOS:
        cmds += [("scan", jt[sc].payload()), ("scan", ot[sc].payload()), ("read", jt[sc].payload()),
                 ("read", ot[sc].payload()), ("check_files", ot[sc].payload()), ("snapshots", ot[sc].payload())]
    res = jh.run_many(cmds)
    java_exp = dict(zip(list(SCENARIOS) + list(BAD), res[:len(SCENARIOS) + len(BAD)]))
    rest = res[len(SCENARIOS) + len(BAD):]
    after = {}
    for i, sc in enumerate(SCENARIOS):
        js, os_, jr, or_, cf, snaps = rest[6 * i:6 * i + 6]
        after[sc] = {"java_scan": js, "our_scan": os_, "java_rows": _sorted(jr["rows"]),
                     "our_rows": _sorted(or_["rows"]), "check_files": cf["missing"], "snapshots": snaps}
    # ---- Java keeps writing on our copies (a kept partition and a new one), then reads
    new_rows = {"str_pk": [["2024-01-08", 7, "new"], ["2024-01-20", 1, "new"]],
                "multi": [["2024-01-09", "eu", 6], ["2024-01-20", None, 7]],
                "ints": [[20240109, 9], [20240120, 10]], "hours": [["2024-01-07", 1, 9], ["2024-01-20", 0, 10]],
                "dates": [["2024-01-09", 5, "new"], ["2024-01-20", 1, "new"]],
                "dates_upd": [["2024-01-09", 5, "new"], ["2024-01-20", 1, "new"]],
                "nulls": [["2024-01-09", 5], ["2024-01-20", 6]], "nulls_upd": [["2024-01-20", 6]]}
    cmds = []
    for sc in SCENARIOS:
        cmds += [("write", ot[sc].payload(batches=[{"rows": new_rows[sc]}], first_commit_identifier=1000)),
                 ("read", ot[sc].payload())]
    res = jh.run_many(cmds)
    for i, sc in enumerate(SCENARIOS):
        after[sc]["rows_after_write"] = _sorted(res[2 * i + 1]["rows"])
    # ---- our snapshot expiry reclaims what only the dropped partitions used; Java reads again
    catalog = FileSystemCatalog(owh)
    reclaimed = {}
    for sc in SCENARIOS:
        t = catalog.get_table(f"db.{sc}")
        reclaimed[sc] = po.Table(t).maintenance.expire_snapshots(now=int(time.time() * 1000) + DAY_MS, retain_min=1, retain_max=1,
            max_deletes=1000).execute()
    cmds = []
    for sc in SCENARIOS:
        cmds += [("read", ot[sc].payload()), ("check_files", ot[sc].payload())]
    cmds += [("read", ot["str_pk"].payload(tag="t1"))]
    res = jh.run_many(cmds)
    for i, sc in enumerate(SCENARIOS):
        after[sc]["rows_after_expiry"] = _sorted(res[2 * i]["rows"])
        after[sc]["check_after_expiry"] = res[2 * i + 1]["missing"]
    return {"src": src, "java": jwh, "ours": owh, "original": original, "plans": plans, "ours_reports": ours,
            "java_expired": java_exp, "after": after, "new_rows": new_rows, "bad": bad,
            "bad_unchanged": bad_before == bad_after, "reclaimed": reclaimed, "tag_rows": tag_rows,
            "tag_rows_after_expiry": _sorted(res[-1]["rows"]), "date_scan": date_scan}


def _dropped(plan: Plan, typed: bool = False) -> list[dict]:
    """The dropped partitions as Java names them (the directory's strings: a DATE as its day number), or `typed`
    as the plan's JSON says them ({key: typed value})."""
    return sorted((p["partition"] if typed else parse_partition_dir(p["path"])
                   for p in plan.details["expired_partitions"]), key=json.dumps)


def _java_dropped(result: dict) -> list[dict]:
    return sorted(result["expired"], key=json.dumps)


@pytest.mark.parametrize("sc", [s for s, (_, _, agree) in SCENARIOS.items() if agree])
def test_same_partitions_dropped_as_java(run, sc):
    java = run["java_expired"][sc]
    assert "error" not in java, java
    assert java["expired"], "the scenario must expire something"
    assert _dropped(run["plans"][sc]) == _java_dropped(java)
    a = run["after"][sc]
    assert _files(a["our_scan"]) == _files(a["java_scan"])          # the same files remain, to the name
    assert a["our_rows"] == a["java_rows"]                          # Java reads identical rows
    assert a["check_files"] == []
    assert a["snapshots"]["snapshots"][-1]["commitKind"] == "OVERWRITE"
    assert {(f["partition_path"], f["file_name"]) for f in a["our_scan"]["index_files"]} ==\
        {(f["partition_path"], f["file_name"]) for f in a["java_scan"]["index_files"]}


def test_expected_partitions(run):
    """What each scenario drops, spelled out (and why the rest stay)."""
    want = {
        "str_pk": [{"dt": "2024-01-01"}, {"dt": "2024-01-03"}],
        "multi": [{"dt": "2024-01-01", "region": "eu"}, {"dt": "2024-01-01", "region": ODD},
                  {"dt": "2024-01-05", "region": "eu"}],
        "ints": [{"d": 20240101}, {"d": 20240106}],
        "hours": [{"dt": "2024-01-06", "hour": 23}, {"dt": "2024-01-06", "hour": 7}],  # 01-07 00:00 is not before
        "dates": [{"d": "2024-01-01"}, {"d": "2024-01-02"}],  # typed values (Java names the directories 19723, 19724)
        "dates_upd": [{"d": "2024-01-01"}],                   # 2024-01-02 got a newer file
        "nulls": [{"dt": "2024-01-01"}],
        "nulls_upd": [{"dt": "2024-01-01"}, {"dt": "2024-01-09"}, {"dt": None}],  # null: __DEFAULT_PARTITION__ on disk
    }
    for sc, parts in want.items():
        assert _dropped(run["plans"][sc], typed=True) == sorted(parts, key=json.dumps), sc
    assert _dropped(run["plans"]["dates"]) == [{"d": "19723"}, {"d": "19724"}]  # Java's (legacy) directory names
    unparseable = {sc: [p["path"] for p in run["plans"][sc].details["unparseable_partitions"]] for sc in SCENARIOS}
    assert unparseable["str_pk"] == ["dt=x,y%3Dz%2Fw a/"]     # reported, never guessed
    assert unparseable["ints"] == ["d=2024010/"]
    assert unparseable["nulls"] == ["dt=__DEFAULT_PARTITION__/"]
    assert unparseable["multi"] == [] and unparseable["dates"] == []
    assert any("never expired" in w for w in run["plans"]["ints"].warnings)


def test_java_defects_where_we_differ(run):
    je = run["java_expired"]
    assert je["dates"]["expired"] == [] and "error" not in je["dates"]          # apache/paimon#6439: DATE never expires by value
    for sc in ("nulls", "nulls_upd"):
        assert "NullPointerException" in je[sc]["error"] and je[sc]["expired"] == []
    # ours: Java reads exactly the original rows minus the dropped partitions, and finds every file
    for sc, col in (("dates", 0), ("nulls", 0), ("nulls_upd", 0)):
        plan = run["plans"][sc]
        gone = {tuple(p["partition"].values()) for p in plan.details["expired_partitions"]}
        table = SCENARIOS[sc][0]  # gone: typed values (null, a DATE as 2024-01-01), as the rows hold them
        expect = [r for r in run["original"][table] if (r[col],) not in gone]
        a = run["after"][sc]
        assert a["our_rows"] == expect and a["check_files"] == []
        assert len(expect) < len(run["original"][table])
    # the deletion vectors of the dropped DATE partitions went with them (Java's dropPartitions does the same)
    dropped_idx = [f for f in run["date_scan"]["index_files"] if f["partition"] in (["2024-01-01"], ["2024-01-02"])]
    assert dropped_idx, "the DV table must have index files in the dropped partitions"
    left = {f["file_name"] for f in run["after"]["dates"]["our_scan"]["index_files"]}
    assert not left & {f["file_name"] for f in dropped_idx}


def test_bad_options_are_refused_and_change_nothing(run):
    assert run["bad_unchanged"]
    for b, option in BAD.items():
        rc, payload = run["bad"][b]
        assert rc == 2
        assert payload["error"]["type"] == "InvalidOptionError" and payload["error"]["option"] == option, payload
        assert "nothing was expired" in payload["error"]["message"] or "not supported" in\
            payload["error"]["message"] or "Unknown pattern letter" in payload["error"]["message"] or\
            "not a partition key" in payload["error"]["message"]
    je = run["java_expired"]
    assert "Unknown pattern letter: b" in je["bad_letter"]["error"]       # Java fails too
    assert je["bad_nomatch"] == {"expired": [], "snapshot_id": 1}         # apache/paimon#7428: Java silently expires nothing
    assert je["bad_pattern"] == {"expired": [], "snapshot_id": 1}


def test_java_keeps_writing_after_our_expiry(run):
    for sc in SCENARIOS:  # fresh keys: the new rows simply add up, in a kept partition and in a new one
        a = run["after"][sc]
        assert a["rows_after_write"] == _sorted(a["our_rows"] + run["new_rows"][sc]), sc


def test_snapshot_expiry_reclaims_dropped_partitions(run):
    owh = run["ours"]
    for sc in SCENARIOS:
        a = run["after"][sc]
        assert a["check_after_expiry"] == [], sc
        assert a["rows_after_expiry"] == a["rows_after_write"], sc
        rep = run["reclaimed"][sc]
        assert rep.deleted.get("data", 0) > 0, sc
        for p in run["plans"][sc].details["expired_partitions"]:
            d = os.path.join(owh, "db.db", sc, p["path"])
            data = [f for _, _, fs in os.walk(d) for f in fs if f.startswith("data-")]
            if sc == "str_pk":
                continue  # tag t1 (snapshot 1) still holds the first batch: checked below
            assert data == [], (sc, p["path"], data)
    # the tag keeps what it needs, the dropped partitions included: Java reads it unchanged after our expiry
    assert run["tag_rows_after_expiry"] == run["tag_rows"]
    assert {r[0] for r in run["tag_rows"]} == {"2024-01-01", "2024-01-03", "2024-01-08", ODD}
