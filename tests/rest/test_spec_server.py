"""The spec REST catalog server (tests/rest/server.py) is conformant: pypaimon 2.1.0's own REST client creates a
table through it, writes, reads, commits, tags and rolls back — with bearer tokens and with DLF-signed requests —
and the server answers what the OpenAPI spec says (error bodies, codes, base-uuid checks, external tables)."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from tests.rest.fixture import DLF_AK, REGION, rest_server

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string())])


def create(catalog, ident: str = "db.t", pk: bool = True, options: dict[str, str] | None = None):
    from pypaimon import Schema
    catalog.create_database(ident.split(".")[0], True)
    schema = Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"], primary_keys=["id", "dt"] if pk else [],
                                        options={"bucket": "2" if pk else "-1", **(options or {})})
    catalog.create_table(ident, schema, False)
    return catalog.get_table(ident)


def write(table, rows: list[tuple[int, str, str]]) -> None:
    wb = table.new_batch_write_builder()
    w, c = wb.new_write(), wb.new_commit()
    try:
        w.write_arrow(pa.table({"id": pa.array([r[0] for r in rows], pa.int64()), "dt": [r[1] for r in rows],
                                "v": [r[2] for r in rows]}, schema=SCHEMA))
        c.commit(w.prepare_commit())
    finally:
        w.close()
        c.close()


def read(table) -> list[tuple]:
    rb = table.new_read_builder()
    out = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return sorted(tuple(r.values()) for r in out.to_pylist())


def server_latest(server, ident: str = "db.t") -> dict | None:
    db, t = ident.split(".")
    status, body = server.call("GET", f"/v1/paimon/databases/{db}/tables/{t}/snapshot")
    return body["snapshot"] if status == 200 else None


@pytest.mark.parametrize("auth", ["bear", "dlf"])
def test_pypaimon_creates_writes_reads_commits_and_rolls_back(rest, auth):
    from pypaimon.table.instant import Instant
    cat = rest.pypaimon_catalog(auth)
    table = create(cat)
    write(table, [(1, "a", "x"), (2, "b", "y")])
    write(table, [(3, "a", "z")])
    table.create_tag("t2")  # a tag file, as Java's table.createTag writes it
    write(table, [(1, "a", "x2")])
    table = cat.get_table("db.t")
    assert read(table) == [(1, "a", "x2"), (2, "b", "y"), (3, "a", "z")]
    latest = server_latest(rest)
    assert latest["snapshot"]["id"] == 3 and latest["recordCount"] == 4  # 4 files' rows, as the statistics said
    path = Path(rest.warehouse) / "db.db" / "t"
    on_disk = json.loads((path / "snapshot" / "snapshot-3").read_text())
    assert on_disk == latest["snapshot"] and on_disk["uuid"]
    assert (path / "snapshot" / "LATEST").read_text() == "3"
    assert rest.foreign_metadata(path) == []  # every snapshot and hint file was written by the server

    # rollback through the server, to a snapshot, then to the tag
    cat.rollback_to("db.t", Instant.snapshot(2), from_snapshot=3)
    assert server_latest(rest)["snapshot"]["id"] == 2
    assert read(cat.get_table("db.t")) == [(1, "a", "x"), (2, "b", "y"), (3, "a", "z")]
    write(cat.get_table("db.t"), [(4, "b", "w")])  # pypaimon keeps committing: the next id is 3 again
    assert server_latest(rest)["snapshot"]["id"] == 3
    cat.rollback_to("db.t", Instant.tag("t2"))
    assert server_latest(rest)["snapshot"]["id"] == 2
    assert read(cat.get_table("db.t")) == [(1, "a", "x"), (2, "b", "y"), (3, "a", "z")]
    assert rest.foreign_metadata(path) == []
    who = {r["who"] for r in rest.requests() if r["path"].endswith(("/commit", "/rollback"))}
    assert who == ({"bearer"} if auth == "bear" else {f"dlf:{DLF_AK}"})


def test_tags_token_and_listing_endpoints_through_pypaimon(tmp_path):
    wh = tmp_path / "wh"
    wh.mkdir()
    with rest_server(str(wh), tmp_path / "state", page_size=2,
                     data_token={"ttl_ms": 7_200_000, "options": {"fs.local.marker": "1"}}) as rest:
        cat = rest.pypaimon_catalog()
        for name in ("t", "u", "v"):
            create(cat, f"db.{name}", pk=False)
        assert sorted(cat.list_tables("db")) == ["t", "u", "v"]  # three pages of two
        table = cat.get_table("db.t")
        write(table, [(1, "a", "x")])
        write(table, [(2, "a", "y")])
        cat.create_tag("db.t", "first", snapshot_id=1, time_retained="1d")
        cat.create_tag("db.t", "latest")
        got = cat.get_tag("db.t", "first")
        assert got.snapshot.id == 1 and got.tag_time_retained
        assert sorted(cat.list_tags_paged("db.t").elements) == ["first", "latest"]
        tag_file = json.loads((wh / "db.db" / "t" / "tag" / "tag-first").read_text())
        assert tag_file["tagTimeRetained"] == 86400 and tag_file["id"] == 1
        # pypaimon reads the tag the server wrote
        assert read(table.copy({"scan.tag-name": "first"})) == [(1, "a", "x")]
        cat.delete_tag("db.t", "first")
        assert not (wh / "db.db" / "t" / "tag" / "tag-first").exists()
        token = cat.rest_api.load_table_token(cat.get_table("db.t").identifier)
        assert token.token == {"fs.local.marker": "1"} and token.expires_at_millis > 0


def test_commit_checks_base_uuid_id_statistics_and_table_id(rest):
    table = create(rest.pypaimon_catalog())
    write(table, [(1, "a", "x")])
    latest = server_latest(rest)
    snap = dict(latest["snapshot"], id=2, uuid="new-uuid", deltaRecordCount=0)
    url = "/v1/paimon/databases/db/tables/t/commit"
    table_id = rest.call("GET", "/v1/paimon/databases/db/tables/t")[1]["id"]
    ok = {"tableId": table_id, "baseSnapshotUuid": latest["snapshot"]["uuid"], "snapshot": snap, "statistics": []}
    # a stale base: refused with success:false (the client re-plans), nothing written
    assert rest.call("POST", url, {**ok, "baseSnapshotUuid": "stale"}) == (200, {"success": False})
    assert rest.call("POST", url, {**ok, "baseSnapshotUuid": None}) == (200, {"success": False})
    # malformed: 400 with an ErrorResponse
    status, body = rest.call("POST", url, {**ok, "snapshot": {**snap, "uuid": None}})
    assert status == 400 and "uuid" in body["message"] and body["code"] == 400
    status, body = rest.call("POST", url, {**ok, "snapshot": {**snap, "id": 5}})
    assert status == 400 and "does not follow" in body["message"]
    status, body = rest.call("POST", url, {**ok, "statistics": [{"spec": {"dt": "a"}, "recordCount": 3}]})
    assert status == 400 and "statistics" in body["message"]
    status, body = rest.call("POST", url, {**ok, "tableId": "another"})
    assert status == 404 and body["resourceType"] == "TABLE"
    assert not (Path(rest.warehouse) / "db.db" / "t" / "snapshot" / "snapshot-2").exists()
    # and the right one goes through
    assert rest.call("POST", url, ok) == (200, {"success": True})
    assert server_latest(rest)["snapshot"]["uuid"] == "new-uuid"


def test_errors_are_error_responses(rest):
    create(rest.pypaimon_catalog())
    status, body = rest.call("GET", "/v1/paimon/databases/db/tables/nope")
    assert status == 404 and body == {"message": "table db.nope does not exist", "resourceType": "TABLE",
                                      "resourceName": "db.nope", "code": 404}
    status, body = rest.call("GET", "/v1/paimon/databases/nodb/tables")
    assert status == 404 and body["resourceType"] == "DATABASE"
    status, body = rest.call("GET", "/v1/paimon/databases/db/tables/t/snapshot")
    assert status == 404 and body["resourceType"] == "SNAPSHOT"
    status, body = rest.call("GET", "/v1/paimon/databases", auth=False)
    assert status == 401 and body["code"] == 401
    status, body = rest.call("GET", "/v1/paimon/databases", headers={"Authorization": "Bearer wrong"})
    assert status == 401 and "not known" in body["message"]
    status, body = rest.call("POST", "/v1/paimon/databases", {"name": "db"})
    assert status == 409 and body["resourceType"] == "DATABASE"
    status, body = rest.call("GET", "/v1/paimon/databases/db/tables/t/consumers")
    assert status == 501
    status, body = rest.call("GET", "/v1/config?warehouse=other")
    assert status == 404


def test_expired_bearer_token_forbidden_table_and_bad_signature(tmp_path):
    import datetime as dt

    from paimon_ops.catalog.rest_client import dlf_authorization
    wh = tmp_path / "wh"
    wh.mkdir()
    with rest_server(str(wh), tmp_path / "state", bearer_tokens={"fine": None, "old": 1000},
                     forbidden_tables=["db.secret"],
                     dlf_keys={DLF_AK: {"secret": "right-secret"}}) as rest:
        status, body = rest.call("GET", "/v1/paimon/databases", headers={"Authorization": "Bearer old"})
        assert status == 401 and "expired" in body["message"]
        ok = {"Authorization": "Bearer fine"}
        assert rest.call("POST", "/v1/paimon/databases", {"name": "db"}, headers=ok)[0] == 200
        path = "/v1/paimon/databases/db/tables"
        body = {"identifier": {"database": "db", "object": "secret"},
                "schema": {"fields": [{"id": 0, "name": "a", "type": "INT"}], "partitionKeys": [],
                           "primaryKeys": [], "options": {}}}
        assert rest.call("POST", path, body, headers=ok)[0] == 200
        status, err = rest.call("GET", path + "/secret", headers=ok)
        assert status == 403 and err["code"] == 403
        now = dt.datetime.now(dt.timezone.utc)
        good = dlf_authorization("GET", path, {}, None, now, DLF_AK, "right-secret", None, REGION)
        assert rest.call("GET", path, headers=good, auth=False)[0] == 200
        bad = dlf_authorization("GET", path, {}, None, now, DLF_AK, "wrong-secret", None, REGION)
        status, err = rest.call("GET", path, headers=bad, auth=False)
        assert status == 401 and "signature" in err["message"]
        stale = dlf_authorization("GET", path, {}, None, now - dt.timedelta(hours=1), DLF_AK, "right-secret", None,
                                  REGION)
        status, err = rest.call("GET", path, headers=stale, auth=False)
        assert status == 401 and "clock" in err["message"]
        # a body whose Content-MD5 does not match is refused (the signature covers the hash, not the body)
        signed = dlf_authorization("POST", "/v1/paimon/databases", {}, '{"name":"x"}', now, DLF_AK, "right-secret",
                                   None, REGION)
        status, err = rest.call("POST", "/v1/paimon/databases", {"name": "y"}, headers=signed, auth=False)
        assert status == 401 and "Content-MD5" in err["message"]


def test_external_table_commit_is_refused(tmp_path):
    """External REST tables commit by file (Java passes no catalog loader for them); the server refuses /commit and
    /snapshot for them. (pypaimon 2.1.0 still asks the server for both, so it cannot commit an external REST
    table against a server that behaves like Java's; its filesystem catalog writes the files here.)"""
    wh, ext_wh = tmp_path / "wh", tmp_path / "elsewhere"
    ext = ext_wh / "db.db" / "ext"
    wh.mkdir()
    with rest_server(str(wh), tmp_path / "state") as rest:
        cat = rest.pypaimon_catalog()
        create(cat, "db.ext", pk=False, options={"path": str(ext)})
        got = rest.call("GET", "/v1/paimon/databases/db/tables/ext")[1]
        assert got["isExternal"] is True and got["path"] == str(ext)
        assert got["schema"]["options"]["path"] == str(ext)
        assert (ext / "schema" / "schema-0").exists()
        status, body = rest.call("POST", "/v1/paimon/databases/db/tables/ext/commit",
                                 {"tableId": got["id"], "baseSnapshotUuid": None, "snapshot": {"id": 1},
                                  "statistics": []})
        assert status == 501 and "external" in body["message"]
        status, body = rest.call("GET", "/v1/paimon/databases/db/tables/ext/snapshot")
        assert status == 404 and body["code"] == 501
        from tests.pypaimon_util import catalog as fs_catalog
        write(fs_catalog(str(ext_wh)).get_table("db.ext"), [(1, "a", "x")])
        assert (ext / "snapshot" / "snapshot-1").exists()
        assert rest.writes() and all("/snapshot/" not in w["path"] for w in rest.writes())
