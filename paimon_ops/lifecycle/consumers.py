"""Consumers: streaming readers' progress (`consumer/consumer-<id>` = `{"nextSnapshot": n}`, maintenance.md §2.6),
which keeps every snapshot from `n` on out of expiry. A consumer whose reader is gone holds expiry back until it is
reset or removed.

* ``list_consumers(table)`` — the consumers of the table's branch, with whether each still pins a snapshot;
* ``plan_reset_consumer(table, consumer_id, snapshot_id=None, delete=False)`` — Java's reset_consumer: move a
  consumer to an existing snapshot, or remove it. An unknown consumer is refused (Java would create it: a typo must
  not create a consumer that pins snapshots from then on);
* ``plan_clear_consumers(table, including=None, excluding=None)`` — Java's clear_consumers: remove every consumer
  whose id matches `including` (a regular expression matched against the whole id; default all) and not
  `excluding`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from paimon_ops.errors import InvalidArgumentError, arg
from paimon_ops.execution.plan import (
    CONSUMER,
    DELETE_ORDERED,
    WRITE_FILES,
    FileAction,
    Plan,
    PlanBuilder,
    Precondition,
    SnapshotIs,
    planner,
)
from paimon_ops.format.snapshot import Consumer
from paimon_ops.operations.clear_consumers import OPERATION as CLEAR_CONSUMERS
from paimon_ops.operations.model import Name
from paimon_ops.operations.reset_consumer import OPERATION as RESET_CONSUMER
from paimon_ops.options import CONSUMER_EXPIRATION_TIME
from paimon_ops.table.table import FileStoreTable, validate_consumer_id
from paimon_ops.timeutil import iso


class ResetConsumerPlan(Plan):
    """Moving a consumer to a snapshot, or removing it."""

    operation = "reset_consumer"
    op = RESET_CONSUMER  # its operation (the feature gate, the planner's parameters)


class ClearConsumersPlan(Plan):
    """Removing consumers by pattern."""

    operation = "clear_consumers"
    op = CLEAR_CONSUMERS


@dataclass(frozen=True)
class ConsumerIs(Precondition):
    """A consumer exists with this next snapshot (or is absent: `next_snapshot` None)."""

    kind: ClassVar[str] = "consumer"
    consumer_id: str
    next_snapshot: int | None

    def check(self, table: Any) -> str | None:
        c = table.consumers.consumer(self.consumer_id)
        now = None if c is None else c.next_snapshot
        if now == self.next_snapshot:
            return None
        if now is None:
            return f"consumer {self.consumer_id!r} was removed meanwhile"
        if self.next_snapshot is None:
            return f"consumer {self.consumer_id!r} was created meanwhile"
        return f"consumer {self.consumer_id!r} moved on to snapshot {now} (the plan was made at {self.next_snapshot})"

    def describe(self) -> str:
        return f"consumer {self.consumer_id!r} " + ("absent" if self.next_snapshot is None
                                                    else f"at snapshot {self.next_snapshot}")


# ---------------------------------------------------------------------------------------------- listing
@dataclass(frozen=True)
class ConsumerInfo:
    consumer: str
    next_snapshot: int
    modified_millis: int
    state: str                 # reading | caught-up | behind-earliest | ahead
    pins_from: int | None      # the snapshot from which expiry keeps everything because of it
    expires_millis: int | None  # when `consumer.expiration-time` removes it (None: never)


def list_consumers(table: FileStoreTable) -> list[ConsumerInfo]:
    """The consumers of the table's branch by id. `state`: reading (its next snapshot exists), caught-up (it waits
    for the next commit), behind-earliest (that snapshot has expired: a Java reader fails or restarts), ahead (past
    the next commit: after a rollback)."""
    earliest, latest = table.snapshots.earliest_id(), table.snapshots.latest_id()
    expiration = table.options.get(CONSUMER_EXPIRATION_TIME)
    out = []
    for cid, (c, mtime) in sorted(table.consumers.consumers().items()):
        n = c.next_snapshot
        if latest is None:
            state = "ahead" if n > 1 else "caught-up"
        elif earliest is not None and n < earliest:
            state = "behind-earliest"
        elif n <= latest:
            state = "reading"
        elif n == latest + 1:
            state = "caught-up"
        else:
            state = "ahead"
        pins = n if state == "reading" else None
        expires = mtime + int(expiration.total_seconds() * 1000) if expiration is not None else None
        out.append(ConsumerInfo(cid, n, mtime, state, pins, expires))
    return out


def consumer_rows(infos: list[ConsumerInfo]) -> list[dict[str, Any]]:
    """The JSON rows of `paimon-ops consumers --json`."""
    return [{"consumer": i.consumer, "next_snapshot": i.next_snapshot, "modified": iso(i.modified_millis),
             "state": i.state, "pins_from": i.pins_from,
             "expires": iso(i.expires_millis) if i.expires_millis is not None else None} for i in infos]


# ---------------------------------------------------------------------------------------------- reset / clear
def _known(table: FileStoreTable) -> dict[str, int]:
    return {cid: c.next_snapshot for cid, (c, _) in table.consumers.consumers().items()}


@planner(ResetConsumerPlan)
def plan_reset_consumer(table: FileStoreTable, consumer_id: Name, *, snapshot_id: int | None = None,
                        delete: bool = False) -> Plan:
    """Plan moving consumer `consumer_id` to `snapshot_id` (an existing snapshot), or removing it (`delete`)."""
    validate_consumer_id(consumer_id)
    if (snapshot_id is None) == (not delete):
        raise InvalidArgumentError(f"give {arg('snapshot_id')} (move the consumer there) or {arg('delete', True)} "
                                   "(remove it)")
    known = _known(table)
    if consumer_id not in known:
        raise InvalidArgumentError(f"consumer {consumer_id!r} does not exist on {table.full_name}; its consumers: "
                                   + (", ".join(sorted(known)) or "none"))
    old = known[consumer_id]
    b = PlanBuilder()
    path = table.consumers.path(consumer_id)
    details: dict[str, Any] = {"consumer": consumer_id, "branch": table.branch, "next_snapshot_before": old}
    if delete:
        b.step("consumer file", DELETE_ORDERED).add(
            FileAction(path, CONSUMER, f"consumer {consumer_id} removed (was at snapshot {old})"))
        details["next_snapshot_after"] = None
    else:
        if isinstance(snapshot_id, bool) or not isinstance(snapshot_id, int):
            raise InvalidArgumentError(f"{arg('snapshot_id')} must be an integer, got {snapshot_id!r}")
        s = table.snapshots.try_snapshot(snapshot_id)
        if s is None:
            ids = table.snapshots.list_ids()
            raise InvalidArgumentError(f"snapshot {snapshot_id} of {table.full_name} does not exist ("
                                       + (f"snapshots {ids[0]}..{ids[-1]}" if ids else "no snapshots")
                                       + "); a consumer is reset to an existing snapshot")
        b.step("consumer file", WRITE_FILES, contents=[Consumer(snapshot_id).to_json()], mode="overwrite")
        b.add(FileAction(path, CONSUMER, f"consumer {consumer_id}: next snapshot {old} -> {snapshot_id}"))
        b.require(SnapshotIs(snapshot_id, s.base_manifest_list))
        details["next_snapshot_after"] = snapshot_id
        if snapshot_id < old:
            b.warn(f"consumer {consumer_id} moves back from snapshot {old} to {snapshot_id}: its reader reads "
                   "snapshots again, and they are kept from expiry again")
    b.require(ConsumerIs(consumer_id, old))
    return b.build(ResetConsumerPlan, table, details)


def _pattern(text: str | None, name: str) -> re.Pattern[str] | None:
    if text is None or not text.strip():
        return None
    try:
        return re.compile(text)
    except re.error as e:
        raise InvalidArgumentError(f"{arg(name)} {text!r} is not a regular expression: {e}") from None


@planner(ClearConsumersPlan)
def plan_clear_consumers(table: FileStoreTable, *, including: str | None = None, excluding: str | None = None) -> Plan:
    """Plan removing every consumer whose id matches `including` (whole id; default: all) and not `excluding`."""
    inc = _pattern(including, "including")
    exc = _pattern(excluding, "excluding")
    known = _known(table)
    chosen = sorted(cid for cid in known
                    if (inc is None or inc.fullmatch(cid)) and not (exc is not None and exc.fullmatch(cid)))
    b = PlanBuilder()
    b.step("consumer files", DELETE_ORDERED)
    for cid in chosen:
        b.add(FileAction(table.consumers.path(cid), CONSUMER,
                         f"consumer {cid} (at snapshot {known[cid]}) matches the pattern"))
    b.require(*(ConsumerIs(cid, known[cid]) for cid in chosen))
    if not chosen:
        b.warn("no consumer matches: nothing to do" if known else f"{table.full_name} has no consumer")
    return b.build(ClearConsumersPlan, table, {
        "branch": table.branch, "including": including, "excluding": excluding, "removed": chosen,
        "kept": sorted(set(known) - set(chosen))})


__all__ = ["ResetConsumerPlan", "ClearConsumersPlan", "ConsumerIs", "ConsumerInfo", "list_consumers",
           "consumer_rows", "plan_reset_consumer", "plan_clear_consumers"]
