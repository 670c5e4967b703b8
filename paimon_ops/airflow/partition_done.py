"""Waiting for a partition of a Paimon table to be marked done — by paimon-ops' `mark_partition_done`, by Java
Paimon's procedure or its streaming writers' partition mark-done — whatever the table's `partition.mark-done-action`
leaves: a `_SUCCESS` file, a `.done` partition or a LOAD_DONE event in the Hive Metastore (the connection's catalog).

* `PaimonPartitionDoneSensor(table=…, partition="dt={{ ds }}")` — one partition (templated); deferrable by default:
  after one check on the worker it hands the wait to `PaimonPartitionDoneTrigger` in the triggerer, holding no worker
  slot (`deferrable=False` pokes instead). Its XCom: `{"table", "partition", "marks": [{"action", "marked_at"}]}`.
* `PaimonPartitionsDoneTrigger(table=…)` — an event trigger for an `AssetWatcher`: an event for each partition
  newly marked done (and again when a `_SUCCESS` file is re-marked), so a DAG can be scheduled on "partition done";
  the event carries the partition (`{key: value}`) and its path. Marks made before the watcher started are not
  events (a `_SUCCESS` mark newer than `since`, the watcher's creation, is).

Checks read metadata only, in a thread (the triggerer's event loop never blocks).
"""
from __future__ import annotations

import asyncio
import datetime as _dt
import time
from typing import Any, AsyncIterator, Mapping

from airflow.sdk import BaseSensorOperator, PokeReturnValue
from airflow.sdk.exceptions import AirflowFailException
from airflow.triggers.base import BaseEventTrigger, BaseTrigger, TriggerEvent

from paimon_ops.airflow.hooks import DEFAULT_CONN_ID, PaimonHook
from paimon_ops.errors import InvalidArgumentError
from paimon_ops.lifecycle.mark_done import done_partitions, partition_marks, partition_path
from paimon_ops.operations.model import partition_spec
from paimon_ops.timeutil import iso

DEFAULT_POLL_S = 60.0


def as_spec(partition: str | Mapping[str, Any]) -> dict[str, str]:
    """`{key: value}` of a partition given as a mapping, `k=v,k2=v2` or a path `k=v/k2=v2/`."""
    if isinstance(partition, Mapping):
        return {str(k): str(v) for k, v in partition.items()}
    text = str(partition).strip().strip("/").replace("/", ",")
    if not text:
        raise InvalidArgumentError("partition is empty: give it as k=v[,k2=v2] or {key: value}")
    return partition_spec(text, "partition")


def check_partition(hook: PaimonHook, table: str, partition: Mapping[str, str], actions: list[str] | None
                    ) -> dict[str, Any]:
    """Whether the partition is marked done, with its marks."""
    marks = partition_marks(hook.get_table(table).raw, partition, actions)
    path = partition_path(partition)
    return {"status": "done" if marks else "waiting", "table": table, "partition": dict(partition), "path": path,
            "marks": [{"action": m.action, "marked_at": iso(m.marked_at) if m.marked_at else None} for m in marks],
            "summary": f"partition {path.rstrip('/')} of {table} " + (
                "is done: " + ", ".join(m.action for m in marks) if marks else "is not marked done yet")}


def _one_line(e: BaseException) -> str:
    return " ".join(f"{type(e).__name__}: {e}".split())


class PaimonPartitionDoneTrigger(BaseTrigger):
    """Fires once, when `partition` of `table` is marked done (or with an error when the table cannot be read)."""

    def __init__(self, *, table: str, partition: Mapping[str, str], conn_id: str = DEFAULT_CONN_ID,
                 actions: list[str] | None = None, poll_interval: float = DEFAULT_POLL_S) -> None:
        super().__init__()
        self.table = table
        self.partition = dict(partition)
        self.conn_id = conn_id
        self.actions = list(actions) if actions else None
        self.poll_interval = float(poll_interval)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{type(self).__module__}.{type(self).__qualname__}",
                {"table": self.table, "partition": self.partition, "conn_id": self.conn_id, "actions": self.actions,
                 "poll_interval": self.poll_interval})

    async def run(self) -> AsyncIterator[TriggerEvent]:
        hook = await PaimonHook.for_trigger(self.conn_id)
        while True:
            try:
                result = await asyncio.to_thread(check_partition, hook, self.table, self.partition, self.actions)
            except Exception as e:  # noqa: BLE001 - reported to the task as one line
                yield TriggerEvent({"status": "error", "table": self.table, "message": _one_line(e)})
                return
            if result["status"] == "done":
                self.log.info("%s", result["summary"])
                yield TriggerEvent(result)
                return
            self.log.debug("%s", result["summary"])
            await asyncio.sleep(self.poll_interval)


class PaimonPartitionsDoneTrigger(BaseEventTrigger):
    """For `AssetWatcher`: an event for each partition of `table` newly marked done (see the module docstring).

        orders_day_done = Asset("paimon://paimon_default/shop.orders#done", watchers=[AssetWatcher(
            name="shop_orders_partition_done", trigger=PaimonPartitionsDoneTrigger(table="shop.orders"))])
    """

    def __init__(self, *, table: str, conn_id: str = DEFAULT_CONN_ID, actions: list[str] | None = None,
                 poll_interval: float = DEFAULT_POLL_S, since: float | None = None) -> None:
        super().__init__()
        self.table = table
        self.conn_id = conn_id
        self.actions = list(actions) if actions else None
        self.poll_interval = float(poll_interval)
        self.since = int(since if since is not None else time.time() * 1000)  # epoch ms

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{type(self).__module__}.{type(self).__qualname__}",
                {"table": self.table, "conn_id": self.conn_id, "actions": self.actions,
                 "poll_interval": self.poll_interval, "since": self.since})

    async def run(self) -> AsyncIterator[TriggerEvent]:
        hook = await PaimonHook.for_trigger(self.conn_id)
        seen: dict[str, int] | None = None
        while True:
            try:
                marks = await asyncio.to_thread(lambda: done_partitions(hook.get_table(self.table).raw, self.actions))
            except Exception as e:  # noqa: BLE001 - keeps watching: the table may become readable again
                self.log.warning("%s: %s", self.table, _one_line(e))
                await asyncio.sleep(self.poll_interval)
                continue
            versions: dict[str, tuple[int, Any]] = {}
            for m in marks:
                if m.path not in versions or m.version > versions[m.path][0]:
                    versions[m.path] = (m.version, m)
            for path, (version, m) in sorted(versions.items()):
                if seen is not None:
                    new = path not in seen or version > seen[path]
                else:  # the first look: only _SUCCESS marks made since the watcher was created
                    new = m.marked_at is not None and m.marked_at > self.since
                if new:
                    self.log.info("partition %s of %s marked done (%s)", path.rstrip("/"), self.table, m.action)
                    yield TriggerEvent({"table": self.table, "partition": m.partition, "path": path,
                                        "action": m.action, "version": version, "fired_at": time.time()})
            seen = {p: v for p, (v, _) in versions.items()}
            await asyncio.sleep(self.poll_interval)


class PaimonPartitionDoneSensor(BaseSensorOperator):
    """Waits until `partition` (templated: `"dt={{ ds }}"`, or `{key: value}`) of `table` is marked done; returns its
    marks (XCom). Deferrable by default (see the module docstring)."""

    template_fields = ("table", "partition", "conn_id")
    ui_color = "#e8f4e3"

    def __init__(self, *, table: str, partition: str | Mapping[str, Any], conn_id: str = DEFAULT_CONN_ID,
                 actions: list[str] | None = None, deferrable: bool = True, **kwargs: Any) -> None:
        kwargs.setdefault("poke_interval", DEFAULT_POLL_S)
        super().__init__(**kwargs)
        self.table = table
        self.partition = partition
        self.conn_id = conn_id
        self.actions = list(actions) if actions else None
        self.deferrable = deferrable

    def _check(self) -> dict[str, Any]:
        try:
            result = check_partition(PaimonHook(self.conn_id), self.table, as_spec(self.partition), self.actions)
        except Exception as e:  # noqa: BLE001 - the engine's words, one line, no retry
            raise AirflowFailException(_one_line(e)) from None
        self.log.info("%s", result["summary"])
        return result

    def poke(self, context: Any) -> PokeReturnValue:
        result = self._check()
        return PokeReturnValue(is_done=result["status"] == "done", xcom_value=result)

    def execute(self, context: Any) -> Any:
        if not self.deferrable:
            return super().execute(context)
        result = self._check()
        if result["status"] == "done":
            return result
        self.defer(trigger=PaimonPartitionDoneTrigger(table=self.table, partition=result["partition"],
                                                      conn_id=self.conn_id, actions=self.actions,
                                                      poll_interval=float(self.poke_interval)),
                   method_name="execute_complete", timeout=_dt.timedelta(seconds=float(self.timeout)))

    def execute_complete(self, context: Any, event: dict[str, Any] | None = None) -> dict[str, Any]:
        if not event or event.get("status") == "error":
            raise AirflowFailException(f"{self.table}: {(event or {}).get('message', 'the trigger sent no event')}")
        self.log.info("%s", event.get("summary", event))
        return event


__all__ = ["PaimonPartitionDoneSensor", "PaimonPartitionDoneTrigger", "PaimonPartitionsDoneTrigger", "as_spec",
           "check_partition"]
