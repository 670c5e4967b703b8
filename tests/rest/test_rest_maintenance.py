"""paimon-ops maintains tables of a REST catalog (the spec server, a real process) through the catalog: after every
maintenance operation — compaction, manifest compaction, tags (through the tag endpoints), snapshot / tag /
partition expiry, rescale, rollback, orphan removal — the server's `GET …/snapshot` is what pypaimon 2.1.0 reads
(through the server and on the files), pypaimon keeps committing through the server, and every snapshot and hint
file in the table was written by the server (its write log says so, content hash by content hash)."""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from tests.cli.conftest import cli
from tests.pypaimon_util import catalog as fs_catalog
from tests.rest.fixture import rest_server
from tests.rest.test_spec_server import create, read, server_latest, write

DAY_MS = 86_400_000


def _ms(day: str) -> int:
    return int(dt.datetime.fromisoformat(day).replace(tzinfo=dt.timezone.utc).timestamp() * 1000)


class Agreement:
    """What each check proves, on one table of the spec server."""

    def __init__(self, rest, ident: str):
        self.rest, self.ident = rest, ident
        db, t = ident.split(".")
        self.path = Path(rest.warehouse) / f"{db}.db" / t
        self.expected: dict[tuple[int, str], str] = {}
        self.probes = 0

    def write(self, rows: list[tuple[int, str, str]]) -> None:
        write(self.rest.pypaimon_catalog().get_table(self.ident), rows)
        self.expected.update({(i, d): v for i, d, v in rows})

    def rows(self) -> list[tuple]:
        return sorted((i, d, v) for (i, d), v in self.expected.items())

    def check(self, after: str) -> int:
        """The server, the files and pypaimon agree; pypaimon commits on top; nothing foreign in snapshot/."""
        latest = server_latest(self.rest, self.ident)
        sid = latest["snapshot"]["id"]
        on_disk = json.loads((self.path / "snapshot" / f"snapshot-{sid}").read_text())
        assert on_disk == latest["snapshot"], after
        assert sorted(self.rest.foreign_metadata(self.path)) == [], after
        assert not (self.path / "snapshot" / "EARLIEST").exists(), after  # nobody writes it on a REST table
        assert read(self.rest.pypaimon_catalog().get_table(self.ident)) == self.rows(), after
        # the files alone say the same (pypaimon's filesystem catalog: the LATEST hint the server wrote)
        fs_table = fs_catalog(self.rest.warehouse).get_table(self.ident)
        assert fs_table.snapshot_manager().get_latest_snapshot().id == sid, after
        assert read(fs_table) == self.rows(), after
        # pypaimon keeps committing through the server
        self.probes += 1
        self.write([(1000 + self.probes, "2020-01-09", f"after {after}")])
        assert server_latest(self.rest, self.ident)["snapshot"]["id"] == sid + 1, after
        assert read(self.rest.pypaimon_catalog().get_table(self.ident)) == self.rows(), after
        assert self.rest.foreign_metadata(self.path) == [], after
        return sid + 1


def _ops(rest, *args: str, now: str | None = None) -> dict:
    extra = [f"--now-ms={_ms(now)}"] if now else []
    opts = [f"-o{k}={v}" for k, v in rest.options().items()]
    r = cli(args[0], rest.warehouse_name, *args[1:], *opts, "--json", *extra, timeout=300)
    assert r.code == 0, r.err + r.out
    return r.json  # validated against the shipped JSON schemas


def test_every_maintenance_operation_goes_through_the_catalog(tmp_path):
    wh = tmp_path / "wh"
    wh.mkdir()
    with rest_server(str(wh), tmp_path / "state", page_size=2) as rest:
        cat = rest.pypaimon_catalog()
        create(cat, "db.t", options={"snapshot.num-retained.min": "1", "snapshot.time-retained": "1 ms"})
        create(cat, "db.other", pk=False)
        a = Agreement(rest, "db.t")
        for n in range(4):
            a.write([(n, "2020-01-01", f"a{n}"), (n, "2020-01-02", f"b{n}"), (n + 1, "2020-01-09", f"c{n}")])

        # discovery: exactly the server's tables (a registered-then-dropped table's files and a bare directory that
        # looks like a table are not listed)
        create(cat, "db.dropped", pk=False)
        cat.drop_table("db.dropped")
        (wh / "db.db" / "stray" / "schema").mkdir(parents=True)
        listed = _ops(rest, "tables")
        assert [r["table"] for r in listed["rows"]] == ["db.other", "db.t"]
        assert {r["table"]: r["latest_snapshot"] for r in listed["rows"]}["db.t"] == 4

        _ops(rest, "compact", "db.t", "--mode", "full")
        a.check("full compaction")

        _ops(rest, "create-tag", "db.t", "keep")
        assert rest.call("GET", "/v1/paimon/databases/db/tables/t/tags/keep")[0] == 200
        assert any(w["kind"] == "tag" and w["path"].endswith("tag-keep") for w in rest.writes())  # via the endpoint
        a.check("tag creation")

        _ops(rest, "compact-manifests", "db.t")
        a.check("manifest compaction")

        report = _ops(rest, "expire-snapshots", "db.t", "--retain-max", "2", "--retain-min", "1")
        assert report["deleted"].get("snapshot", 0) > 0
        a.check("snapshot expiry")

        # 2020-01-01 and 2020-01-02 are older than 5 days on 2020-01-10; 2020-01-09 is not
        _ops(rest, "expire-partitions", "db.t", "--expiration-time", "5 d", now="2020-01-10")
        for key in [k for k in a.expected if k[1] != "2020-01-09"]:
            del a.expected[key]
        overwrite = server_latest(rest)["snapshot"]
        assert overwrite["commitKind"] == "OVERWRITE"
        assert {p["spec"]["dt"] for p in rest.call("GET", "/v1/paimon/databases/db/tables/t/partitions")[1][
            "partitions"]} == {"2020-01-09"}  # the per-partition statistics emptied the dropped ones
        a.check("partition expiry")

        _ops(rest, "create-tag", "db.t", "short", "--time-retained", "1 h")
        # `short` is due once an hour has passed: expire it a day later
        later = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%S")
        _ops(rest, "expire-tags", "db.t", now=later)
        assert rest.call("GET", "/v1/paimon/databases/db/tables/t/tags/short")[0] == 404
        assert rest.call("GET", "/v1/paimon/databases/db/tables/t/tags/keep")[0] == 200
        a.check("tag expiry")

        _ops(rest, "delete-tag", "db.t", "keep")
        assert rest.call("GET", "/v1/paimon/databases/db/tables/t/tags/keep")[0] == 404
        a.check("tag deletion")

        _ops(rest, "rescale", "db.t", "--bucket-num", "3")
        schema = rest.call("GET", "/v1/paimon/databases/db/tables/t")[1]
        assert schema["schema"]["options"]["bucket"] == "3" and schema["schemaId"] == 1
        assert any(w["kind"] == "schema" and w["path"].endswith("schema-1") for w in rest.writes())
        a.check("rescale")

        before = server_latest(rest)["snapshot"]["id"]
        kept = a.rows()
        a.write([(7, "2020-01-09", "rolled back")])
        rb = _ops(rest, "rollback", "db.t", "--snapshot", str(before), "--yes")
        a.expected = {(i, d): v for i, d, v in kept}
        assert server_latest(rest)["snapshot"]["id"] == before, rb
        a.check("rollback")

        report = _ops(rest, "remove-orphans", "db.t", "--min-age", "1 h", "--allow-short", now=later)
        assert report["deleted"].get("orphan", 0) > 0  # the rolled-back snapshot's files
        a.check("orphan removal")

        # no commit was ever refused for a stale base, and every commit came through /commit
        commits = [r for r in rest.requests() if r["path"].endswith("/commit")]
        assert commits and all(r["status"] == 200 for r in commits)
        assert json.loads((wh / "db.db" / "t" / "snapshot" / "LATEST").read_text()) == \
            server_latest(rest)["snapshot"]["id"]
