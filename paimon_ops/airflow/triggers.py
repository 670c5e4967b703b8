"""Triggers that watch a table's health in the triggerer (no worker slot held while waiting).

Both poll `paimon_ops.health.assess` — the measurements behind the Dagster sensors and checks: level-0 / small files
per bucket, deletion-vector ratio, snapshot count, manifest count, partitions due to expire — reading metadata only,
in a thread so the triggerer's event loop never blocks, and only when the table has a new snapshot (or, for
`partitions`, when time has passed: partitions expire by the clock).

* `PaimonTableHealthTrigger` — what `PaimonTableHealthSensor` defers to: fires once, when any of its signals is due.
* `PaimonTableNeedsWorkTrigger` — an event trigger for an `AssetWatcher`: fires each time a new snapshot makes a signal
  due, so a DAG can be scheduled on "table needs compaction".

Events carry the assessment (`paimon_ops.health.Assessment.to_dict`): which signals are due, the figures, and the
operation with the arguments that does the work — or `{"status": "error", "message": …}` when the table cannot be
read.
"""
from __future__ import annotations

import asyncio
import time
from typing import Any, AsyncIterator

from airflow.triggers.base import BaseEventTrigger, BaseTrigger, TriggerEvent

from paimon_ops.airflow.hooks import DEFAULT_CONN_ID, PaimonHook
from paimon_ops.health import PARTITION_EXPIRY, SIGNALS, assess, signal_names

DEFAULT_POLL_S = 60.0


def _check(hook: PaimonHook, table: str, signals: list[str]) -> dict[str, Any]:
    a = assess(hook.get_table(table).raw, signals)
    return {"status": "due" if a.due else "ok", **a.to_dict(), "summary": a.summary()}


class _HealthPolling:
    """What both triggers share: their arguments, serialisation and the polling loop (yields each assessment worth
    reporting)."""

    def __init__(self, *, table: str, conn_id: str = DEFAULT_CONN_ID, signals: list[str] | None = None,
                 poll_interval: float = DEFAULT_POLL_S) -> None:
        super().__init__()
        self.table = table
        self.conn_id = conn_id
        self.signals = signal_names(signals or SIGNALS)
        self.poll_interval = float(poll_interval)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{type(self).__module__}.{type(self).__qualname__}",
                {"table": self.table, "conn_id": self.conn_id, "signals": self.signals,
                 "poll_interval": self.poll_interval})

    async def assessments(self) -> AsyncIterator[dict[str, Any]]:
        hook = await PaimonHook.for_trigger(self.conn_id)
        last_snapshot: Any = object()
        clock_bound = PARTITION_EXPIRY in self.signals
        while True:
            try:
                latest = await asyncio.to_thread(lambda: hook.get_table(self.table).latest_snapshot_id)
                if latest != last_snapshot or clock_bound:
                    result = await asyncio.to_thread(_check, hook, self.table, self.signals)
                    last_snapshot = latest
                    yield result
            except Exception as e:  # noqa: BLE001 - reported to the task / the log as one line
                yield {"status": "error", "table": self.table,
                       "message": " ".join(f"{type(e).__name__}: {e}".split())}
            await asyncio.sleep(self.poll_interval)


class PaimonTableHealthTrigger(_HealthPolling, BaseTrigger):
    """Fires once, when any of `signals` is due on `table` (or with an error when it cannot be read)."""

    async def run(self) -> AsyncIterator[TriggerEvent]:
        async for result in self.assessments():
            if result["status"] != "ok":
                self.log.info("%s", result.get("summary") or result.get("message"))
                yield TriggerEvent(result)
                return
            self.log.debug("%s", result["summary"])


class PaimonTableNeedsWorkTrigger(_HealthPolling, BaseEventTrigger):
    """For `AssetWatcher`: an event each time a new snapshot of `table` (or, for `partitions`, the passing time)
    makes one of `signals` due — once per snapshot, not on every poll.

        paimon_needs_compaction = Asset("paimon://paimon_default/shop.orders#compaction", watchers=[AssetWatcher(
            name="shop_orders_needs_compaction", trigger=PaimonTableNeedsWorkTrigger(table="shop.orders",
            signals=["small_files", "dv_ratio"]))])
    """

    async def run(self) -> AsyncIterator[TriggerEvent]:
        fired: set[tuple[Any, ...]] = set()
        async for result in self.assessments():
            if result["status"] == "error":
                self.log.warning("%s", result["message"])  # keeps watching: the table may become readable again
                continue
            key = (result["snapshot_id"], *result["due"])
            if result["status"] == "due" and key not in fired:
                fired.add(key)
                self.log.info("%s", result["summary"])
                yield TriggerEvent({**result, "fired_at": time.time()})


__all__ = ["PaimonTableHealthTrigger", "PaimonTableNeedsWorkTrigger", "DEFAULT_POLL_S"]
