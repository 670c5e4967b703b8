"""Which S3 client library carries paimon-ops' object-store path: obstore vs Apache OpenDAL's Python
binding vs boto3, measured against a local moto server on the three operations the maintenance engine needs.

1. conditional create (`If-None-Match: *`): does a second create of the same key fail cleanly, median latency;
2. listing N keys under a prefix (paginated, 1,000 keys per request);
3. deleting N keys: each library's bulk path if it has one (DeleteObjects), else one request per key.

Also: import time and installed size. Libraries that are not installed are skipped (paimon-ops itself depends on
obstore only; `pip install opendal boto3` to compare).

Run: .venv/bin/python benchmarks/compare_s3_clients.py [keys]   (starts its own moto_server on 127.0.0.1)
"""
from __future__ import annotations

import importlib
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

N = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
CREATES = 200


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_moto() -> tuple[subprocess.Popen, str]:
    port = free_port()
    exe = Path(sys.executable).with_name("moto_server")
    proc = subprocess.Popen([str(exe), "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return proc, url
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("moto_server did not start")


def size_of(mod: str) -> float:
    m = importlib.import_module(mod)
    root = Path(m.__file__).parent
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / 1e6


def import_time(mod: str) -> float:
    out = subprocess.run([sys.executable, "-c", f"import time;t=time.perf_counter();import {mod};"
                          "print(time.perf_counter()-t)"], capture_output=True, text=True, check=True)
    return float(out.stdout)


def bench(name: str, create, list_keys, delete_keys, put) -> dict:
    # 1. conditional create
    lat = []
    for i in range(CREATES):
        t = time.perf_counter()
        assert create(f"c/{name}/{i}") is True
        lat.append(time.perf_counter() - t)
    second = create(f"c/{name}/0")
    # 2. + 3. listing and deleting N keys
    keys = [f"d/{name}/{i:06d}" for i in range(N)]
    for k in keys:
        put(k)
    t = time.perf_counter()
    listed = list_keys(f"d/{name}/")
    list_s = time.perf_counter() - t
    assert len(listed) == N, (name, len(listed))
    t = time.perf_counter()
    delete_keys(keys)
    del_s = time.perf_counter() - t
    assert not list_keys(f"d/{name}/")
    return {"create_ms_median": 1000 * statistics.median(lat), "second_create_refused": second is False,
            "list_keys_per_s": N / list_s, "delete_keys_per_s": N / del_s}


def main() -> None:
    proc, ep = start_moto()
    creds = {"k": "test", "s": "test"}
    results = {}
    try:
        import boto3
        s3 = boto3.client("s3", endpoint_url=ep, aws_access_key_id=creds["k"], aws_secret_access_key=creds["s"],
                          region_name="us-east-1")
        s3.create_bucket(Bucket="bench")
    except ImportError:
        s3 = None
        urllib.request.urlopen(urllib.request.Request(f"{ep}/bench", method="PUT"))
    try:
        import obstore
        from obstore.exceptions import AlreadyExistsError, PreconditionError
        from obstore.store import S3Store
        st = S3Store("bench", endpoint=ep, access_key_id=creds["k"], secret_access_key=creds["s"],
                     region="us-east-1", client_options={"allow_http": True})

        def ob_create(k):
            try:
                obstore.put(st, k, b"x", mode="create")
                return True
            except (AlreadyExistsError, PreconditionError):
                return False

        def ob_delete(keys):
            for i in range(0, len(keys), 1000):
                obstore.delete(st, keys[i:i + 1000])

        results["obstore"] = bench("obstore", ob_create,
                                   lambda p: [m["path"] for b in obstore.list(st, p) for m in b],
                                   ob_delete, lambda k: obstore.put(st, k, b"x"))
        results["obstore"].update(mb=size_of("obstore"), import_s=import_time("obstore"))
    except ImportError:
        pass
    try:
        import opendal
        op = opendal.Operator("s3", bucket="bench", endpoint=ep, region="us-east-1", access_key_id=creds["k"],
                              secret_access_key=creds["s"])

        def od_create(k):
            try:
                op.write(k, b"x", if_not_exists=True)
                return True
            except opendal.exceptions.ConditionNotMatch:
                return False

        def od_delete(keys):  # the Python binding exposes no batch delete: one request per key
            for k in keys:
                op.delete(k)

        results["opendal"] = bench("opendal", od_create,
                                   lambda p: [e.path for e in op.list(p) if not e.path.endswith("/")],
                                   od_delete, lambda k: op.write(k, b"x"))
        results["opendal"].update(mb=size_of("opendal"), import_s=import_time("opendal"))
    except ImportError:
        pass
    if s3 is not None:
        def b3_create(k):
            try:
                s3.put_object(Bucket="bench", Key=k, Body=b"x", IfNoneMatch="*")
                return True
            except s3.exceptions.ClientError as e:
                if e.response["Error"]["Code"] == "PreconditionFailed":
                    return False
                raise

        def b3_list(p):
            out = []
            for page in s3.get_paginator("list_objects_v2").paginate(Bucket="bench", Prefix=p):
                out += [o["Key"] for o in page.get("Contents", [])]
            return out

        def b3_delete(keys):
            for i in range(0, len(keys), 1000):
                s3.delete_objects(Bucket="bench", Delete={"Objects": [{"Key": k} for k in keys[i:i + 1000]]})

        results["boto3"] = bench("boto3", b3_create, b3_list, b3_delete,
                                 lambda k: s3.put_object(Bucket="bench", Key=k, Body=b"x"))
        results["boto3"].update(mb=size_of("botocore") + size_of("boto3"), import_s=import_time("boto3"))
    proc.terminate()
    proc.wait()
    print(f"{N} keys; {CREATES} conditional creates; moto server on 127.0.0.1")
    print(f"{'library':10} {'create ms':>10} {'2nd create refused':>19} {'list keys/s':>12} {'delete keys/s':>14} "
          f"{'import s':>9} {'size MB':>8}")
    for name, r in results.items():
        print(f"{name:10} {r['create_ms_median']:10.2f} {str(r['second_create_refused']):>19} "
              f"{r['list_keys_per_s']:12.0f} {r['delete_keys_per_s']:14.0f} {r['import_s']:9.3f} {r['mb']:8.1f}")


if __name__ == "__main__":
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    main()
