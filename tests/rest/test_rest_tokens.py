"""Storage credentials from the REST catalog (`data-token.enabled`): the spec server keeps its tables in a real
S3-compatible store (moto_server) and mints a fresh access key per `GET …/token`, valid for a short time. paimon-ops
is given no storage credentials at all: its FileIO is built from the token, and rebuilt from a fresh one before the
current one expires. A proxy in front of the store lets through only requests signed with a minted key that has not
expired (answering 403 ExpiredToken otherwise) — so an operation after the first token's expiry succeeds only because
the token was refreshed (the control, with refreshing switched off, is refused in one line)."""
from __future__ import annotations

import hashlib
import json
import re
import time

import pytest

import paimon_ops as po
from paimon_ops.catalog.rest_client import DataToken
from paimon_ops.errors import PaimonOpsError
from tests.net import patient
from tests.objectstore.conftest import ACCESS_KEY, REGION, SECRET_KEY, S3Proxy
from tests.rest.fixture import rest_server
from tests.rest.test_spec_server import create, read, server_latest, write

TTL_MS = 8_000  # refreshed once half of it is over (it is shorter than twice Java's one-hour margin)
_CREDENTIAL = re.compile(r"Credential=([^/]+)/")


class TokenChecking:
    """The proxy's gate: a request must be signed with a key the server minted and that has not expired."""

    def __init__(self, rest):
        self.rest = rest
        self.refused: list[str] = []
        self.used: set[str] = set()

    def __call__(self, method: str, path: str, headers: dict, body: bytes):
        m = _CREDENTIAL.search(headers.get("authorization", ""))
        key = m.group(1) if m else None
        expiry = {t["accessKey"]: t["expiresAtMillis"] for t in self.rest.tokens()}.get(key)
        if expiry is None or expiry <= time.time() * 1000:
            self.refused.append(f"{method} {path} {key}")
            code = "ExpiredToken" if expiry is not None else "InvalidAccessKeyId"
            return 403, f"<Error><Code>{code}</Code><Message>{code}</Message></Error>".encode()
        self.used.add(key)
        return None


@pytest.fixture
def served(s3_server, tmp_path):
    bucket = s3_server.new_bucket()
    proxy = S3Proxy(s3_server.endpoint).start()
    # ours go through the gate; pypaimon (the other writer here) talks to the store directly
    token = {"s3.endpoint": proxy.endpoint, "s3.region": REGION, "s3.path.style.access": "true",
             "fs.s3.endpoint": s3_server.endpoint, "fs.s3.region": REGION}
    try:
        with rest_server(f"s3://{bucket}/wh", tmp_path / "state",
                         storage={"endpoint": s3_server.endpoint, "access_key": ACCESS_KEY, "secret_key": SECRET_KEY,
                                  "region": REGION},
                         data_token={"ttl_ms": TTL_MS, "mint_keys": True, "options": token},
                         defaults={"data-token.enabled": "true"}) as rest:
            gate = TokenChecking(rest)
            proxy.inject = gate
            cat = rest.pypaimon_catalog()
            create(cat, "db.t")
            for n in range(3):
                write(cat.get_table("db.t"), [(n, "a", f"a{n}"), (n, "b", f"b{n}")])
            yield rest, gate, s3_server, bucket
    finally:
        proxy.stop()


def _server_wrote_every_snapshot_file(rest, s3_server, bucket: str) -> None:
    last = {}
    for w in rest.writes():
        last[w["path"]] = w.get("sha256") if w["op"] != "delete" else None
    s3 = s3_server.boto()
    for key in s3_server.keys(bucket, "wh/db.db/t/snapshot/"):
        name = key.rsplit("/", 1)[1]
        if name.startswith("snapshot-") or name in ("LATEST", "EARLIEST"):
            body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
            assert last.get(f"s3://{bucket}/{key}") == hashlib.sha256(body).hexdigest(), key


def test_storage_credentials_come_from_the_catalog_and_are_refreshed(served):
    rest, gate, s3_server, bucket = served
    t = po.Catalog(rest.warehouse_name, options=rest.options()).get_table("db.t")  # no s3.* option anywhere
    first = t.raw.io.expires_at_millis
    t.maintenance.compact(mode="full").execute(runner=po.LocalRunner())
    assert gate.used and not gate.refused
    # past half the first token's life: the next use takes a fresh one; after its expiry, only the fresh one works
    time.sleep(max(0.0, (first - TTL_MS / 2) / 1000 - time.time()) + 0.5)
    write(rest.pypaimon_catalog().get_table("db.t"), [(7, "a", "new")])
    t.maintenance.compact(mode="full").execute(runner=po.LocalRunner())
    time.sleep(max(0.0, first / 1000 - time.time()) + 0.5)
    report = t.maintenance.expire_snapshots(retain_min=1, retain_max=1, min_age=None).execute(runner=po.LocalRunner())
    assert report.deleted.get("snapshot", 0) > 0
    assert not gate.refused, gate.refused
    assert t.raw.io.expires_at_millis > first and len(gate.used) >= 2
    ours = [k for k in gate.used]
    assert all(k.startswith("REST-AK-") for k in ours)
    assert server_latest(rest)["snapshot"]["id"] == t.latest_snapshot_id
    assert (7, "a", "new") in read(rest.pypaimon_catalog().get_table("db.t"))
    _server_wrote_every_snapshot_file(rest, s3_server, bucket)


def test_an_expired_token_is_refused_in_one_line(served, monkeypatch):
    """The control: with refreshing switched off, the first token's expiry ends the run — one line naming the
    store's answer, nothing committed."""
    rest, gate, _, _ = served
    monkeypatch.setattr(DataToken, "needs_refresh", lambda self, now: False)
    t = po.Catalog(rest.warehouse_name, options=rest.options()).get_table("db.t")
    first = t.raw.io.expires_at_millis
    latest = server_latest(rest)["snapshot"]["id"]
    time.sleep(max(0.0, first / 1000 - time.time()) + 0.5)
    started = time.time()
    with pytest.raises(PaimonOpsError) as err:
        t.maintenance.compact(mode="full").execute(runner=po.LocalRunner())
    assert time.time() - started < patient(20)
    line = str(err.value)
    assert "\n" not in line and ("ExpiredToken" in line or "credentials" in line or "403" in line), line
    assert gate.refused
    assert server_latest(rest)["snapshot"]["id"] == latest
    assert json.dumps(rest.tokens())  # every token the server minted is on record
