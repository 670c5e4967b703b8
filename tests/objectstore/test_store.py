"""The object-store FileIO against a real S3 server (moto_server): conditional put really sends `If-None-Match: *`
and the server enforces it, a race for one key has exactly one winner, listings paginate and carry last-modified
times, bulk deletes use DeleteObjects with an exact per-file outcome, retry throttling and report failures, and a
store without conditional put refuses commits unless the user opts into an external lock."""
from __future__ import annotations

import threading
import time

import pytest

from paimon_ops.errors import InvalidOptionError, ObjectStoreError, UnsafeOperationError
from paimon_ops.table import objectstore
from paimon_ops.table.arrow_fileio import ArrowFileIO
from paimon_ops.table.fileio import FileIO
from paimon_ops.table.objectstore import ObjectStoreFileIO, S3Settings
from tests.objectstore.conftest import ACCESS_KEY, SECRET_KEY


def _io(server, bucket: str, endpoint: str | None = None, **extra) -> tuple[ObjectStoreFileIO, str]:
    opts = {**server.options, **({"s3.endpoint": endpoint} if endpoint else {}), **extra}
    io, root = FileIO.resolve(f"s3://{bucket}/wh", options=opts)
    assert isinstance(io, ObjectStoreFileIO)
    return io, root


def test_resolve_paths_and_uri(s3_server, bucket):
    io, root = _io(s3_server, bucket)
    assert root == f"{bucket}/wh"
    assert io.uri(root + "/db.db/t") == f"s3://{bucket}/wh/db.db/t"
    io2, root2 = FileIO.resolve(f"s3a://{bucket}/", options=s3_server.options)
    assert root2 == bucket and io2.scheme == "s3a"


def test_conditional_put_sends_if_none_match_and_the_server_enforces_it(s3_server, bucket, s3_proxy):
    io, root = _io(s3_server, bucket, endpoint=s3_proxy.endpoint)
    p = root + "/snapshot/snapshot-1"
    assert io.write_atomic_if_absent(p, b"first") is True
    assert io.write_atomic_if_absent(p, b"second") is False  # 412 from the server: already exists
    assert io.read_bytes(p) == b"first"
    puts = [r for r in s3_proxy.requests if r.method == "PUT" and r.path.endswith("/snapshot/snapshot-1")]
    assert len(puts) == 2 and all(r.headers.get("if-none-match") == "*" for r in puts)
    # a retried PUT that finds its own first attempt (same bytes) is a win, not a lost race
    assert io.write_atomic_if_absent(p, b"first") is True


def test_race_for_one_key_has_exactly_one_winner(s3_server, bucket):
    io, root = _io(s3_server, bucket)
    for round_ in range(5):
        p = f"{root}/race/snapshot-{round_}"
        wins: list[int] = []
        barrier = threading.Barrier(6)

        def go(i: int, p: str = p, barrier: threading.Barrier = barrier, wins: list[int] = wins) -> None:
            barrier.wait()
            if io.write_atomic_if_absent(p, f"writer-{i}".encode()):
                wins.append(i)

        threads = [threading.Thread(target=go, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(wins) == 1
        assert io.read_bytes(p) == f"writer-{wins[0]}".encode()


def test_listing_paginates_and_reports_last_modified(s3_server, bucket):
    io, root = _io(s3_server, bucket)
    s3 = s3_server.boto()
    n = 2050  # three LIST pages
    before = int(time.time() * 1000) - 5000
    s3_server.put_many(bucket, [f"wh/d/f{i:05d}" for i in range(n)])
    s3.put_object(Bucket=bucket, Key="wh/d/sub/inner", Body=b"y")
    s3.put_object(Bucket=bucket, Key="wh/d/", Body=b"")  # a directory marker (as S3A may leave): not a file
    listed = io.list_status(root + "/d")
    files = [s for s in listed if not s.is_dir]
    assert len(files) == n and [s.name for s in listed if s.is_dir] == ["sub"]
    assert all(before <= s.mtime_millis <= int(time.time() * 1000) + 5000 for s in files)
    assert {s.path for s in files} == {f"{root}/d/f{i:05d}" for i in range(n)}
    walked = list(io.walk_files(root + "/d"))
    assert len(walked) == n + 1 and walked[-1].path == f"{root}/d/sub/inner"
    assert io.is_dir(root + "/d") and not io.is_file(root + "/d") and io.is_file(root + "/d/f00000")
    assert io.list_status(root + "/nothing") == [] and not io.exists(root + "/nothing")


def test_bulk_delete_uses_delete_objects_with_exact_outcome(s3_server, bucket, s3_proxy):
    io, root = _io(s3_server, bucket, endpoint=s3_proxy.endpoint)
    s3 = s3_server.boto()
    paths = [f"{root}/p/bucket-0/data-{i:05d}.parquet" for i in range(2001)]
    s3_server.put_many(bucket, [p.split("/", 1)[1] for p in paths])
    keep = f"{root}/p/bucket-0/data-zzz-keep.parquet"
    s3.put_object(Bucket=bucket, Key=keep.split("/", 1)[1], Body=b"k")
    missing = [f"{root}/p/bucket-0/data-missing-{i}.parquet" for i in range(7)]
    # existence: a ranged listing, and HEAD requests for keys the listing would walk too far to reach
    io.is_dir(root)  # (the connection probe is a LIST too)
    s3_proxy.requests.clear()
    assert io.existing([paths[0], paths[-1], missing[0]]) == {paths[0], paths[-1]}
    assert s3_proxy.count("HEAD") == 2 and s3_proxy.count("GET", "list-type=2") == 2
    s3_proxy.requests.clear()
    out = io.delete_many(paths + missing)
    assert sorted(out.deleted) == sorted(paths) and sorted(out.missing) == sorted(missing) and not out.failed
    assert s3_proxy.count("POST", "?delete") == 3  # 1000 + 1000 + 1 keys
    assert s3_proxy.count("DELETE") == 0  # never one request per file
    assert s3_server.keys(bucket, "wh/p/") == ["wh/p/bucket-0/data-zzz-keep.parquet"]
    # a rerun: everything already missing, nothing sent
    s3_proxy.requests.clear()
    again = io.delete_many(paths)
    assert not again.deleted and len(again.missing) == len(paths)
    assert s3_proxy.count("POST", "?delete") == 0


@pytest.mark.parametrize("concurrency,expect", [("3", 3)])
def test_bulk_delete_requests_in_flight_are_bounded(s3_server, bucket, s3_proxy, concurrency, expect):
    """3,001 keys: four 1,000-key DeleteObjects requests, `s3.delete.concurrency` of them in flight at once (each
    held 0.3 s at the proxy, so overlapping requests are seen), never more; every key deleted exactly."""
    io, root = _io(s3_server, bucket, endpoint=s3_proxy.endpoint, **{"s3.delete.concurrency": concurrency})
    paths = [f"{root}/c/bucket-0/data-{i:05d}.parquet" for i in range(3001)]
    s3_server.put_many(bucket, [p.split("/", 1)[1] for p in paths])
    lock = threading.Lock()
    flight = {"now": 0, "max": 0}

    def inject(method, path, headers, body):
        if method == "POST" and "?delete" in path:
            with lock:
                flight["now"] += 1
                flight["max"] = max(flight["max"], flight["now"])
            time.sleep(0.3)
            with lock:
                flight["now"] -= 1
        return None  # forwarded

    s3_proxy.inject = inject
    out = io.delete_many(paths)
    assert sorted(out.deleted) == sorted(paths) and not out.missing and not out.failed
    assert s3_proxy.count("POST", "?delete") == 4
    assert flight["max"] == expect
    assert s3_server.keys(bucket, "wh/c/") == []


def test_bulk_delete_retries_throttling(s3_server, bucket, s3_proxy):
    io, root = _io(s3_server, bucket, endpoint=s3_proxy.endpoint)
    s3 = s3_server.boto()
    paths = [f"{root}/x/f{i}" for i in range(50)]
    for p in paths:
        s3.put_object(Bucket=bucket, Key=p.split("/", 1)[1], Body=b"x")
    throttled = {"n": 0}
    slow_down = (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code>'
                 b'<Message>Please reduce your request rate.</Message></Error>')

    def inject(method, path, headers, body):
        if method == "POST" and "?delete" in path and throttled["n"] < 2:
            throttled["n"] += 1
            return 503, slow_down
        return None

    s3_proxy.inject = inject
    out = io.delete_many(paths)
    assert throttled["n"] == 2 and len(out.deleted) == 50 and not out.failed
    assert s3_server.keys(bucket, "wh/x/") == []


def test_bulk_delete_partial_failure_is_exact(s3_server, bucket, s3_proxy):
    """DeleteObjects answers 200 with per-key errors for some keys (AccessDenied, not retryable): those are
    reported failed with their error, the others deleted."""
    io, root = _io(s3_server, bucket, endpoint=s3_proxy.endpoint)
    s3 = s3_server.boto()
    paths = [f"{root}/y/f{i:02d}" for i in range(20)]
    for p in paths:
        s3.put_object(Bucket=bucket, Key=p.split("/", 1)[1], Body=b"x")
    denied = {p.split("/", 1)[1] for p in paths[:3]}

    def inject(method, path, headers, body):
        if method == "POST" and "?delete" in path:
            import re
            keys = re.findall(rb"<Key>([^<]+)</Key>", body)
            ok = [k.decode() for k in keys if k.decode() not in denied]
            # delete the allowed ones for real, answer per-key errors for the denied ones
            if ok:
                s3_server.boto().delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in ok]})
            xml = ['<?xml version="1.0" encoding="UTF-8"?><DeleteResult>']
            xml += [f"<Deleted><Key>{k}</Key></Deleted>" for k in ok]
            xml += [f"<Error><Key>{k.decode()}</Key><Code>AccessDenied</Code><Message>Access Denied</Message></Error>"
                    for k in keys if k.decode() in denied]
            xml.append("</DeleteResult>")
            return 200, "".join(xml).encode()
        return None

    s3_proxy.inject = inject
    out = io.delete_many(paths)
    assert sorted(p for p, _ in out.failed) == sorted(paths[:3])
    assert sorted(out.deleted) == sorted(paths[3:]) and not out.missing
    assert "AccessDenied" in out.failed[0][1] or "Access Denied" in out.failed[0][1]
    assert sorted(s3_server.keys(bucket, "wh/y/")) == sorted(denied)


def test_store_without_conditional_put_refuses_commits_unless_opted_in(s3_server, bucket, s3_proxy):
    io, root = _io(s3_server, bucket, **{"s3.conditional-put": "false"})
    with pytest.raises(UnsafeOperationError, match="commit.object-store.unsafe-lock=external"):
        io.write_atomic_if_absent(root + "/snapshot/snapshot-1", b"a")
    io2, _ = _io(s3_server, bucket, **{"s3.conditional-put": "false", "commit.object-store.unsafe-lock": "external"})
    assert io2.write_atomic_if_absent(root + "/snapshot/snapshot-1", b"a") is True
    assert io2.write_atomic_if_absent(root + "/snapshot/snapshot-1", b"b") is False
    # a store that answers 501 to If-None-Match: the same refusal, naming the opt-in
    s3_proxy.inject = lambda m, p, h, b: (501, b"<Error><Code>NotImplemented</Code></Error>")\
        if m == "PUT" and h.get("if-none-match") == "*" else None
    io3, _ = _io(s3_server, bucket, endpoint=s3_proxy.endpoint)
    with pytest.raises(UnsafeOperationError, match="unsafe-lock=external"):
        io3.write_atomic_if_absent(root + "/snapshot/snapshot-2", b"a")


def test_other_object_stores_through_pyarrow_refuse_commits_unless_opted_in(tmp_path):
    import pyarrow.fs as pafs
    io = ArrowFileIO(pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem()), "gs", "bkt")
    with pytest.raises(UnsafeOperationError, match="gs:// has no atomic create-if-absent.*unsafe-lock=external"):
        io.write_atomic_if_absent("snapshot/snapshot-1", b"a")
    assert not list((tmp_path / "snapshot").iterdir())  # the temp file is gone too
    io.unsafe_lock = True
    assert io.write_atomic_if_absent("snapshot/snapshot-1", b"a") is True


def test_settings_from_env_and_options(monkeypatch):
    env = {"AWS_ENDPOINT_URL": "http://127.0.0.1:1", "AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SKsecret",
           "AWS_REGION": "eu-west-1"}
    s = S3Settings.resolve({}, env)
    assert (s.endpoint, s.access_key, s.secret_key, s.region) == ("http://127.0.0.1:1", "AK", "SKsecret", "eu-west-1")
    s = S3Settings.resolve({"s3.endpoint": "minio:9000", "fs.s3a.access.key": "A2", "s3.secret-key": "S2secret",
                            "s3.path.style.access": "false", "s3.connect-timeout": "2 s",
                            "s3.max-retries": "1"}, env)
    assert s.endpoint == "https://minio:9000" and s.access_key == "A2" and s.secret_key == "S2secret"
    assert not s.path_style and s.connect_timeout_s == 2.0 and s.max_retries == 1
    assert "S2secret" not in repr(s) and "SKsecret" not in repr(S3Settings.resolve({}, env))
    assert S3Settings.resolve(s.as_options(), {}) == s  # what executors receive rebuilds the same settings
    with pytest.raises(InvalidOptionError, match="s3.max-retries"):
        S3Settings.resolve({"s3.max-retries": "many"}, {})
    with pytest.raises(InvalidOptionError, match="commit.object-store.unsafe-lock"):
        S3Settings.resolve({"commit.object-store.unsafe-lock": "yes"}, {})
    assert objectstore.is_store_option("s3.secret-key") and not objectstore.is_store_option("bucket")


def test_unreachable_endpoint_and_missing_credentials_fail_fast(s3_server, bucket, monkeypatch):
    from tests.objectstore.conftest import free_port
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_PROFILE",
              "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
              "AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        monkeypatch.delenv(k, raising=False)
    closed = f"http://127.0.0.1:{free_port()}"
    io, root = FileIO.resolve(f"s3://{bucket}/wh", options={"s3.endpoint": closed, "s3.access-key": ACCESS_KEY,
                                                            "s3.secret-key": SECRET_KEY})
    started = time.time()
    with pytest.raises(ObjectStoreError) as ei:
        io.is_dir(root)
    assert time.time() - started < 10
    msg = str(ei.value)
    assert closed in msg and f"s3://{bucket}/wh" in msg and SECRET_KEY not in msg and "\n" not in msg
    io, root = FileIO.resolve(f"s3://{bucket}/wh", options={"s3.endpoint": s3_server.endpoint})
    with pytest.raises(ObjectStoreError, match="no credentials for s3://.*AWS_ACCESS_KEY_ID"):
        io.is_dir(root)


def echo_task(table_location: str, task: dict) -> dict:
    from paimon_ops.table.objectstore import current_task_options
    return {"task": task, "store_keys": sorted(current_task_options() or {})}


def test_run_task_keeps_store_settings_out_of_the_task_dict():
    import json

    from paimon_ops.execution.tasks import run_task
    opts = {"s3.endpoint": "http://127.0.0.1:1", "s3.secret-key": SECRET_KEY, "other": "1"}
    out = json.loads(run_task("tests.objectstore.test_store.echo_task", "s3://b/t", json.dumps({"x": 1}),
                              json.dumps(opts)))
    assert out["ok"] and out["task"] == {"x": 1, "_options": {"other": "1"}}
    assert out["store_keys"] == ["s3.endpoint", "s3.secret-key"] and SECRET_KEY not in json.dumps(out)
    assert objectstore.current_task_options() is None  # only for the task's duration


def test_plans_never_carry_store_secrets(s3_server, bucket, tmp_path):
    """Store settings given as table overrides stay out of the plan (printed, saved, applied later); executing the
    plan re-opens the table with the settings this process was given for the bucket."""
    import json

    from paimon_ops.lifecycle.expire import plan_expire_snapshots
    from paimon_ops.table.table import FileStoreTable
    from paimon_ops.table.writer import write_rows
    from tests.lifecycle.helpers import new_table
    wh = tmp_path / "wh"
    wh.mkdir()
    t = new_table(str(wh), kind="pk")
    for i in range(3):
        write_rows(t, {"pt": ["a"], "k": [i], "v": [f"v{i}"]})
    s3_server.upload(wh, bucket, "wh")
    table = FileStoreTable(f"s3://{bucket}/wh/db.db/t", options_override={**s3_server.options, "snapshot.num-retained.min": "1"})
    plan = plan_expire_snapshots(table, retain_min=1, retain_max=1)
    text = plan.to_json()
    assert SECRET_KEY not in text and ACCESS_KEY not in text
    assert json.loads(text)["options_override"] == {"snapshot.num-retained.min": "1"}
    report = plan.execute()
    assert report.deleted and table.refresh().snapshots.list_ids() == [3]
