"""A sample warehouse with realistic churn, written by our own engine (no JVM, no pypaimon):

* `shop.orders`      primary key, deletion-vector mode, partitioned by day, updates and deletes; `write-only=true`:
                     its writers only add level-0 files and paimon-ops is its dedicated compaction job — after each
                     day's churn a minor (lookup) compaction moves level 0 up and marks the superseded rows of
                     higher levels in deletion vectors, so the deleted-row ratio of older files rises
* `shop.customers`   partial-update with a sequence group, several writers filling different columns
* `shop.daily_sales` aggregation (sum / max / last_non_null_value / listagg)
* `logs.events`      partitioned append table with many small files; `partition.expiration-time` 2 d: the day
                     partition of two days ago is due to expire; its commits carry an event-time watermark (the
                     commit time less 10 minutes, as a streaming writer's), for tags and rollback by watermark

Every table carries `tag.create-time` so the Dagster code location schedules nightly tags for it.
"""
from __future__ import annotations

import logging
import shutil
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa

import paimon_ops.api as api
from paimon_ops.errors import InvalidArgumentError
from paimon_ops.execution.runner import LocalRunner
from paimon_ops.table.table import FileStoreTable, FileSystemCatalog
from paimon_ops.table.writer import TableWriter, create_table

log = logging.getLogger(__name__)

TAG_OPTIONS = {"tag.create-time": "00:30", "tag.create-time-zone": "Europe/Berlin", "tag.num-retained-max": "14"}
SAMPLE_MARKER = ".paimon-ops-sample"
RETENTION = {"snapshot.num-retained.min": "3", "snapshot.num-retained.max": "20", "snapshot.time-retained": "1 h"}


class _Clock:
    """Commit times spread over the past days (one round per day), so tags and retention have history."""

    def __init__(self, rounds: int):
        now = datetime.now(timezone.utc)
        start = (now - timedelta(days=rounds)).replace(hour=9, minute=0, second=0, microsecond=0)
        self.t = int(start.timestamp() * 1000)
        self.limit = int(now.timestamp() * 1000)

    def day(self, r: int, rounds: int) -> None:
        start = datetime.now(timezone.utc) - timedelta(days=rounds - r)
        self.t = max(self.t, int(start.replace(hour=9, minute=0, second=0, microsecond=0).timestamp() * 1000))

    def tick(self) -> int:
        self.t = min(self.t + 60_000, self.limit)
        return self.t


WATERMARK_LAG_MS = 600_000  # logs.events: the writer's watermark trails its commits by 10 minutes


def _commit(table: FileStoreTable, clock: _Clock, data: dict, kinds: list[int] | None = None,
            watermark_lag_ms: int | None = None) -> int:
    w = TableWriter(table.refresh())
    w.write(pa.table(data) if not isinstance(data, pa.Table) else data, kinds)
    now = clock.tick()
    snap = w.commit(now_millis=now, watermark=None if watermark_lag_ms is None else now - watermark_lag_ms)
    return snap.id if snap else 0


def _minor_compaction(table: FileStoreTable, clock: _Clock) -> None:

    plan = api.Table(table.refresh()).maintenance.compact(mode="minor")
    report = plan.execute(runner=LocalRunner(), commit_time_millis=clock.tick())
    log.info("minor compaction of %s: snapshot %s, %s rows marked deleted", table.identifier, report.snapshot_id,
             report.details.get("rows_marked_deleted", 0))


def build_sample_warehouse(warehouse: str, rounds: int = 6, seed: int = 7, overwrite: bool = True) -> list[str]:
    """Create the sample tables under `warehouse` and write `rounds` commits of churn to each."""
    root = Path(warehouse)
    if root.is_symlink():
        raise InvalidArgumentError(f"sample warehouse {warehouse} is a symbolic link; give a real directory")
    if root.exists():
        if not root.is_dir():
            raise InvalidArgumentError(f"sample warehouse {warehouse} exists and is not a directory")
        if any(root.iterdir()):
            if not (root / SAMPLE_MARKER).is_file():
                raise InvalidArgumentError(
                    f"{warehouse} is not empty and was not built by `paimon-ops sample`; refusing to replace it "
                    "(choose a new or empty directory)")
            if not overwrite:
                raise InvalidArgumentError(f"sample warehouse {warehouse} already exists")
            shutil.rmtree(root)
    root.mkdir(parents=True, exist_ok=True)
    (root / SAMPLE_MARKER).write_text("built by paimon-ops sample; `paimon-ops sample` may replace this directory\n")
    rng = np.random.default_rng(seed)
    today = date.today()

    orders = create_table(str(root), "shop.orders", [
        ("order_id", "BIGINT"), ("dt", "DATE"), ("customer_id", "INT"), ("status", "STRING"),
        ("amount", "DECIMAL(12, 2)"), ("updated_at", "TIMESTAMP(3)"),
    ], partition_keys=["dt"], primary_keys=["order_id", "dt"],
        options={"bucket": "2", "deletion-vectors.enabled": "true", "write-only": "true", **TAG_OPTIONS,
                 **RETENTION})
    customers = create_table(str(root), "shop.customers", [
        ("customer_id", "INT"), ("name", "STRING"), ("email", "STRING"), ("profile_ts", "BIGINT"),
        ("points", "INT"), ("tier", "STRING"), ("loyalty_ts", "BIGINT"),
    ], primary_keys=["customer_id"], options={
        "bucket": "2", "merge-engine": "partial-update",
        "fields.profile_ts.sequence-group": "name,email", "fields.loyalty_ts.sequence-group": "points,tier",
        **TAG_OPTIONS, **RETENTION})
    sales = create_table(str(root), "shop.daily_sales", [
        ("dt", "DATE"), ("store", "STRING"), ("revenue", "DECIMAL(14, 2)"), ("max_basket", "DOUBLE"),
        ("last_cashier", "STRING"), ("skus", "STRING"),
    ], primary_keys=["dt", "store"], options={
        "bucket": "1", "merge-engine": "aggregation", "fields.revenue.aggregate-function": "sum",
        "fields.max_basket.aggregate-function": "max", "fields.last_cashier.aggregate-function": "last_non_null_value",
        "fields.skus.aggregate-function": "listagg", **TAG_OPTIONS, **RETENTION})
    events = create_table(str(root), "logs.events", [
        ("event_time", "TIMESTAMP(6)"), ("dt", "STRING"), ("user_id", "BIGINT"), ("kind", "STRING"), ("payload", "STRING"),
    ], partition_keys=["dt"], options={"bucket": "-1", "target-file-size": "4 mb", "partition.expiration-time": "2 d",
                                       "partition.expiration-check-interval": "1 h", **TAG_OPTIONS, **RETENTION})

    clock = _Clock(rounds)
    next_order = 1
    for r in range(rounds):
        clock.day(r, rounds)
        # orders: a backlog on the first day, then every day new orders, status updates of random older ones
        # and a few deletes
        if r == 0:
            ids = np.arange(1, 3001)
        else:
            ids = np.concatenate([rng.choice(np.arange(1, next_order), 200, replace=False),
                                  np.arange(next_order, next_order + 100)])
        next_order = max(next_order, int(ids.max()) + 1)
        n = len(ids)
        days = [today - timedelta(days=int(i % 3)) for i in ids]
        _commit(orders, clock, {
            "order_id": pa.array(ids, pa.int64()), "dt": pa.array(days, pa.date32()),
            "customer_id": pa.array(rng.integers(1, 300, n), pa.int32()),
            "status": pa.array(rng.choice(["new", "paid", "shipped"], n)),
            "amount": pa.array([Decimal(int(x)) / 100 for x in rng.integers(100, 100000, n)], pa.decimal128(12, 2)),
            "updated_at": pa.array([datetime(2026, 1, 1) + timedelta(minutes=r * 60 + int(i % 60)) for i in ids],
                                   pa.timestamp("ms")),
        })
        if r > 0:
            dels = rng.choice(np.arange(1, next_order), 20, replace=False)
            _commit(orders, clock, {
                "order_id": pa.array(dels, pa.int64()), "dt": pa.array([today - timedelta(days=int(i % 3)) for i in dels], pa.date32()),
                "customer_id": pa.nulls(len(dels), pa.int32()), "status": pa.nulls(len(dels), pa.string()),
                "amount": pa.nulls(len(dels), pa.decimal128(12, 2)), "updated_at": pa.nulls(len(dels), pa.timestamp("ms")),
            }, kinds=[3] * len(dels))
        # the dedicated compaction job of the write-only orders table: Paimon's minor (lookup) compaction
        _minor_compaction(orders, clock)
        # customers: profile writer and loyalty writer update different column groups
        cids = rng.choice(np.arange(1, 300), 120, replace=False).astype(np.int32)
        _commit(customers, clock, {
            "customer_id": cids, "name": [f"customer-{c}" for c in cids], "email": [f"c{c}@example.com" for c in cids],
            "profile_ts": np.full(len(cids), r, np.int64), "points": pa.nulls(len(cids), pa.int32()),
            "tier": pa.nulls(len(cids), pa.string()), "loyalty_ts": pa.nulls(len(cids), pa.int64()),
        })
        _commit(customers, clock, {
            "customer_id": cids[:60], "name": pa.nulls(60, pa.string()), "email": pa.nulls(60, pa.string()),
            "profile_ts": pa.nulls(60, pa.int64()), "points": rng.integers(0, 5000, 60).astype(np.int32),
            "tier": rng.choice(["bronze", "silver", "gold"], 60), "loyalty_ts": np.full(60, r, np.int64),
        })
        # daily sales: one row per store per commit, aggregated by the merge engine
        stores = ["berlin", "hamburg", "munich", "cologne"]
        _commit(sales, clock, {
            "dt": pa.array([today] * len(stores), pa.date32()), "store": stores,
            "revenue": pa.array([Decimal(int(x)) / 100 for x in rng.integers(1000, 90000, len(stores))], pa.decimal128(14, 2)),
            "max_basket": rng.random(len(stores)) * 300, "last_cashier": [f"cashier-{r}"] * len(stores),
            "skus": [f"sku{r}"] * len(stores),
        })
        # events: many small appends per day partition
        for part in range(3):
            m = 200
            _commit(events, clock, {
                "event_time": pa.array([datetime(2026, 1, 1) + timedelta(seconds=int(x)) for x in rng.integers(0, 86400, m)],
                                       pa.timestamp("us")),
                "dt": [str(today - timedelta(days=part))] * m, "user_id": rng.integers(1, 10_000, m),
                "kind": rng.choice(["view", "click", "buy"], m), "payload": [f"p{r}-{i}" for i in range(m)],
            }, watermark_lag_ms=WATERMARK_LAG_MS)
    tables = FileSystemCatalog(str(root)).all_tables()
    log.info("sample warehouse at %s: %s", root, ", ".join(tables))
    return tables
