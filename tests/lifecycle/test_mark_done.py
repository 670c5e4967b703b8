"""mark_partition_done against Java Paimon 0.9's own mark-done actions on twin tables (byte copies of one table Java
wrote): the `_SUCCESS` files land where Java's SuccessFileMarkDoneAction puts them, with its JSON byte for byte
(but the times), Java 0.9's SuccessFile reader parses ours, and marking again keeps the creation time as Java does;
`http-report` POSTs what Java's HttpReportMarkDoneAction posts to a real HTTP server; `done_partitions` reads the
marks back. Bad input — an unknown action, `custom`, a metastore action without a metastore, a key that is not a
partition key — is one line, exit 2, nothing changed. (The metastore actions: tests/hive/test_mark_done_hive.py.)"""
from __future__ import annotations

import http.server
import json
import re
import shutil
import threading
from pathlib import Path

import pytest

import paimon_ops as po
from paimon_ops.lifecycle.mark_done import done_partitions
from tests.cli.conftest import cli
from tests.interop import java_harness as jh
from tests.interop.java_harness import JavaTable
from tests.safety.util import tree_digest

T0 = 1_780_000_000_000  # the `now` of our marks (Java marks at its own clock)
DAYS = ["2026-05-27", "2026-05-28"]


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """db.t partitioned by (dt, hh), written by Java 0.9."""
    if not jh.java_available():
        pytest.skip(jh.skip_reason() or "java not available")
    wh = tmp_path_factory.mktemp("mark-done") / "wh"
    java = JavaTable(wh, "db", "t")
    java.create([("dt", "STRING"), ("hh", "STRING"), ("id", "INT")], partition_keys=["dt", "hh"],
                options={"bucket": "-1"})
    java.write([{"rows": [[d, h, i] for d in DAYS for h in ("01", "02") for i in range(3)]}])
    return wh


def _twins(source, tmp_path) -> tuple[str, str]:
    ours, twin = tmp_path / "ours", tmp_path / "twin"
    shutil.copytree(source, ours)
    shutil.copytree(source, twin)
    return str(ours), str(twin)


def _markers(wh: str) -> dict[str, str]:
    root = Path(wh) / "db.db" / "t"
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("_SUCCESS"))}


def _shape(text: str) -> str:
    return re.sub(r"\d+", "N", text)


@pytest.mark.java
def test_success_files_are_javas(source, tmp_path):
    ours, twin = _twins(source, tmp_path)
    specs = [{"dt": DAYS[0], "hh": "01"}, {"dt": DAYS[1]}]  # an hour, and a whole day (the leading key)
    table = po.Catalog(ours).get_table("db.t")
    plan = table.maintenance.mark_partition_done(partitions=specs, now=T0)
    assert plan.details["actions"] == ["success-file"]  # the table's partition.mark-done-action default
    assert [(a.kind, a.path.split("/t/", 1)[1]) for a in plan.files] == [
        ("marker", "dt=2026-05-27/hh=01/_SUCCESS"), ("marker", "dt=2026-05-28/_SUCCESS")]
    plan.execute()
    JavaTable(twin, "db", "t").call("mark_partition_done", partitions=specs)
    mine, javas = _markers(ours), _markers(twin)
    assert list(mine) == list(javas) == ["dt=2026-05-27/hh=01/_SUCCESS", "dt=2026-05-28/_SUCCESS"]
    assert all(_shape(mine[k]) == _shape(javas[k]) for k in mine)  # Java's JSON byte for byte, but the times
    for rel in mine:  # Java 0.9's SuccessFile reader parses ours
        path = str(Path(ours) / "db.db" / "t" / rel)
        assert jh.run("success_file", {"path": path}) == {"creationTime": T0, "modificationTime": T0}

    # marked again: the creation time stays, the modification time moves (as Java's action does)
    table.maintenance.mark_partition_done(partitions=[specs[0]], now=T0 + 60_000).execute()
    path = str(Path(ours) / "db.db" / "t" / "dt=2026-05-27/hh=01/_SUCCESS")
    assert jh.run("success_file", {"path": path}) == {"creationTime": T0, "modificationTime": T0 + 60_000}
    JavaTable(twin, "db", "t").call("mark_partition_done", partitions=[specs[0]])
    again = json.loads(_markers(twin)["dt=2026-05-27/hh=01/_SUCCESS"])
    assert again["creationTime"] <= again["modificationTime"]
    assert again["creationTime"] == json.loads(javas["dt=2026-05-27/hh=01/_SUCCESS"])["creationTime"]

    marks = done_partitions(po.Catalog(ours).get_table("db.t").raw)
    assert [(m.path, m.action, m.version) for m in marks] == [("dt=2026-05-27/hh=01/", "success-file", T0 + 60_000),
                                                              ("dt=2026-05-28/", "success-file", T0)]


class _Reports(http.server.BaseHTTPRequestHandler):
    received: list = []
    answer = b'{"result": "SUCCESS"}'

    def do_POST(self):  # noqa: N802 - the http.server API
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append(json.loads(body))
        self.send_response(200)
        self.end_headers()
        self.wfile.write(type(self).answer)

    def log_message(self, *args):
        pass


@pytest.fixture
def report_server():
    server = http.server.HTTPServer(("127.0.0.1", 0), _Reports)
    _Reports.received = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/done", _Reports
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.java
def test_http_report_posts_what_java_posts(source, tmp_path, report_server):
    url, handler = report_server
    ours, _ = _twins(source, tmp_path)
    opts = {"partition.mark-done-action": "success-file,http-report", "partition.mark-done-action.http.url": url,
            "partition.mark-done-action.http.params": "team=etl"}
    table = po.Catalog(ours, options=opts).get_table("db.t")
    report = table.maintenance.mark_partition_done(partitions=[{"dt": DAYS[0], "hh": "02"}], now=T0).execute()
    assert report.written == {"marker": 1, "http-report": 1}
    assert handler.received == [{"params": "team=etl", "table": "db.t", "path": table.location,
                                 "partition": "dt=2026-05-27/hh=02/"}]
    before = tree_digest(ours)
    handler.answer = b'{"result": "FAILED"}'
    r = cli("mark-partition-done", ours, "db.t", "--partition", f"dt={DAYS[0]},hh=01", "--actions", "http-report",
            *[x for k, v in opts.items() for x in ("-o", f"{k}={v}")])
    assert r.code == 2 and "expected {\"result\": \"SUCCESS\"}" in r.err and len(r.err.strip().splitlines()) == 1
    assert tree_digest(ours) == before


@pytest.mark.java
def test_bad_input_is_one_line_exit_2_nothing_changed(source, tmp_path):
    ours, _ = _twins(source, tmp_path)
    before = tree_digest(ours)
    day = f"dt={DAYS[0]}"
    cases = [
        (["--partition", day, "--actions", "success-file,bogus"], "--actions 'bogus': not a mark-done action"),
        (["--partition", day, "-o", "partition.mark-done-action=bogus"], "partition.mark-done-action"),
        (["--partition", day, "--actions", "custom"], "partition.mark-done-action=custom on db.t runs the Java class"),
        (["--partition", f"{day},hh=01", "--actions", "done-partition"],
         "partition.mark-done-action=done-partition needs the Hive Metastore of db.t"),
        (["--partition", f"{day},hh=01", "--actions", "mark-event"],
         "partition.mark-done-action=mark-event needs the Hive Metastore of db.t"),
        (["--partition", "hh=01"], "give the leading partition keys (dt, hh)"),
        (["--partition", "region=eu"], "'region' is not a partition key"),
        (["--partition", day, "--actions", "http-report"], "partition.mark-done-action.http.url"),
        ([], "give the partitions to mark done: --partition dt=…"),
    ]
    for argv, words in cases:
        r = cli("mark-partition-done", ours, "db.t", *argv)
        assert r.code == 2 and words in r.err and len(r.err.strip().splitlines()) == 1, (argv, r.err)
        assert "Traceback" not in r.err
    assert tree_digest(ours) == before
    r = cli("mark-partition-done", ours, "db.t", "--partition", day, "--dry-run")
    assert r.code == 0 and "+ marker" in r.out and "_SUCCESS" in r.out and tree_digest(ours) == before, r.out
