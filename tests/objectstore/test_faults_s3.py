"""Fault injection on the object-store path: the tables of tests/lifecycle/test_faults.py are uploaded to the S3
server, and snapshot expiry, tag deletion and orphan removal run there with a FileIO that fails at the k-th write /
rename / delete (the same `_hook` seam; bulk deletes call it once per file, and a failing call stops the batch after
the files already sent). After each failure every snapshot and tag the uninterrupted run keeps reads as before, and
a rerun without faults converges to exactly the uninterrupted run's objects and metadata bytes."""
from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass
from typing import Callable

import pytest

import paimon_ops as po
from paimon_ops.table.fileio import InjectedFault, fault_after
from paimon_ops.table.table import FileStoreTable
from tests.lifecycle.helpers import HOUR_MS, views
from tests.lifecycle.test_faults import Base, Counter, _reads_ok, bases  # noqa: F401 - `bases` is a fixture

NOW = int(time.time() * 1000)


@dataclass
class Op:
    name: str
    base: str
    prepare: Callable[[FileStoreTable, Base], object]  # runs without faults before the measured operation
    run: Callable[[FileStoreTable, Base], object]


def _expire(t: FileStoreTable, b: Base):
    return po.Table(t).maintenance.expire_snapshots(now=b.now + 10 * HOUR_MS, retain_min=2).execute(table=t)


OPS = [
    Op("expire", "plain", lambda t, b: None, _expire),
    Op("expire-decoupled", "decoupled", lambda t, b: None, _expire),
    Op("delete-tags", "plain", _expire, lambda t, b: po.Table(t).maintenance.delete_tags(["mid", "early"], missing_ok=True).execute(
        table=t)),
    # objects uploaded now: their S3 last-modified is now, so 'old' is judged from a clock 5 days ahead
    Op("remove-orphans", "plain", lambda t, b: None,
       lambda t, b: po.Table(t).maintenance.remove_orphans(min_age=dt.timedelta(days=2), now=NOW + 5 * 86_400_000).execute(table=t)),
]


def _upload(server, base: Base) -> tuple[str, FileStoreTable]:
    bucket = server.new_bucket("f")
    server.upload(base.root, bucket, "wh")
    return bucket, FileStoreTable(f"s3://{bucket}/wh/db.db/t", options_override=server.options)


def _state(server, bucket: str) -> dict[str, bytes | None]:
    s3 = server.boto()
    out = {}
    for k in server.keys(bucket, "wh/"):
        rel = k.split("/db.db/t/", 1)[1]
        meta = rel.split("/")[0] in ("snapshot", "tag", "changelog")
        out[rel] = s3.get_object(Bucket=bucket, Key=k)["Body"].read() if meta else None
    return out


def _points(counter: Counter) -> list[tuple[str, int]]:
    """The first, second, middle and last write / rename / delete (each point is a full upload, run and rerun;
    tests/lifecycle/test_faults.py covers every point on local disks)."""
    out = []
    for kind, total in counter.n.items():
        out += [(kind, k) for k in sorted({1, 2, (total + 1) // 2, total} & set(range(1, total + 1)))]
    return out


@pytest.mark.parametrize("op", OPS, ids=[o.name for o in OPS])
def test_faults_on_s3_converge(bases, op, s3_server):  # noqa: F811 - the imported fixture
    base = bases[op.base]
    bucket, clean = _upload(s3_server, base)
    op.prepare(clean, base)
    counter = Counter()
    op.run(clean.with_fault_hook(counter), base)
    want = _state(s3_server, bucket)
    kept = set(views(clean.refresh())) & set(base.views)
    assert kept and counter.n["delete"] > 0
    points = _points(counter)
    for kind, k in points:
        bucket, table = _upload(s3_server, base)
        op.prepare(table, base)
        try:
            op.run(table.with_fault_hook(fault_after(kind, k)), base)  # a failed hint write is only logged
        except Exception as e:  # noqa: BLE001 - the injected fault, possibly wrapped
            chain = [e]
            while chain[-1].__cause__ or chain[-1].__context__:
                chain.append(chain[-1].__cause__ or chain[-1].__context__)
            assert any(isinstance(x, InjectedFault) for x in chain), repr(e)
        table = table.refresh()
        _reads_ok(table, base, kept)  # everything the uninterrupted run keeps still reads as before
        op.run(table, base)
        assert _state(s3_server, bucket) == want, f"{op.name}: {kind} #{k}: rerun did not converge"
    assert len(points) >= 4
