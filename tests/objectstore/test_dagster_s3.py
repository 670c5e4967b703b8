"""The Dagster integration on an S3 warehouse (moto_server, every request recorded by a proxy): the definitions load
(the tables read from a few threads), a sensor's first tick measures every table, and a steady tick (nothing
changed) sends per table exactly the requests that find its latest snapshot — the LATEST hint and a check that the
snapshot after it does not exist — plus, for the observation sensor, one listing of the tag directory."""
from __future__ import annotations

import shutil

import pytest
from dagster import SensorResult, build_sensor_context, instance_for_test

from paimon_ops.dagster import build_paimon_definitions
from paimon_ops.table.writer import create_table
from tests.dagster.util import ms, write

N_TABLES = 12  # half primary-key tables with deletion vectors, half partitioned append tables


@pytest.fixture
def fleet_on_s3(tmp_path, s3_server, s3_proxy, monkeypatch) -> str:
    templates = tmp_path / "templates"
    pk = create_table(str(templates), "t.pk", [("id", "INT"), ("v", "STRING")], primary_keys=["id"],
                      options={"bucket": "2", "deletion-vectors.enabled": "true", "tag.create-time": "01:00"})
    write(pk, {"id": [1, 2, 3], "v": ["a", "b", "c"]}, ms(2026, 3, 26, 10))
    ap = create_table(str(templates), "t.ap", [("dt", "STRING"), ("id", "BIGINT")], partition_keys=["dt"],
                      options={"bucket": "-1"})
    write(ap, {"dt": ["2026-03-27"], "id": [1]}, ms(2026, 3, 27, 10))
    local = tmp_path / "warehouse"
    for i in range(N_TABLES):
        kind = "pk" if i % 2 == 0 else "ap"
        shutil.copytree(templates / "t.db" / kind, local / f"db{i % 3}.db" / f"{kind}_{i:02d}")
    bucket = s3_server.new_bucket()
    s3_server.upload(local, bucket, "wh")
    for k, v in {**s3_server.env, "AWS_ENDPOINT_URL": s3_proxy.endpoint}.items():  # our requests via the proxy
        monkeypatch.setenv(k, v)
    return f"s3://{bucket}/wh"


def _tick(defs, name, instance, cursor=None) -> SensorResult:
    repo = defs.get_repository_def()
    ctx = build_sensor_context(instance=instance, cursor=cursor, repository_def=repo, sensor_name=name,
                               resources=dict(repo.get_top_level_resources()))
    out = repo.get_sensor_def(name)(ctx)
    assert isinstance(out, SensorResult)
    return out


def test_sensor_ticks_on_s3_send_a_few_requests_per_table(fleet_on_s3, s3_proxy):
    defs = build_paimon_definitions(fleet_on_s3)
    repo = defs.get_repository_def()
    tables = [k for k in repo.asset_graph.get_all_asset_keys() if k.path[-1] != "tags"]
    assert len(tables) == N_TABLES
    assert not [k for k in tables if "paimon/error" in repo.asset_graph.get(k).metadata]
    with instance_for_test() as instance:
        for name, n in (("paimon_observation_sensor", N_TABLES), ("paimon_dv_ratio_sensor", N_TABLES // 2)):
            first = _tick(defs, name, instance)
            assert "time budget" not in (first.skip_reason.skip_message if first.skip_reason else "")
            if name == "paimon_observation_sensor":
                observed = {e.asset_key for e in first.asset_events if type(e).__name__ == "AssetObservation"}
                assert observed == set(tables)
            s3_proxy.requests.clear()
            steady = _tick(defs, name, instance, cursor=first.cursor)
            assert not steady.run_requests and not steady.asset_events
            gets = [r.path for r in s3_proxy.requests if r.method == "GET" and "list-type" not in r.path]
            assert len(gets) == n and all(p.endswith("/snapshot/LATEST") for p in gets), gets
            heads = [r.path for r in s3_proxy.requests if r.method == "HEAD"]
            lists = [r.path for r in s3_proxy.requests if "list-type" in r.path]
            # per table: the hint, whether the snapshot after it exists (the observation sensor: and its tags);
            # once per tick: whether the warehouse is there
            per_table = len(s3_proxy.requests) - 1
            assert per_table == n * (3 if name == "paimon_observation_sensor" else 2), (heads, lists)
            assert len(heads) == n and all("/snapshot/snapshot-" in p for p in heads), heads
