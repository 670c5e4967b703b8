"""A sensor on "partition done": downstream assets (or a job) run for each partition of a Paimon table newly marked
done — by paimon-ops' `mark_partition_done`, by Java Paimon's procedure or its streaming writers' partition mark-done
— whatever the table's `partition.mark-done-action` leaves: a `_SUCCESS` file, a `.done` partition or a LOAD_DONE
event in the Hive Metastore (`paimon_ops.lifecycle.mark_done.done_partitions`, metadata only).

    from paimon_ops.dagster import partition_done_sensor
    daily_report_sensor = partition_done_sensor("shop.orders", target=[daily_report], partition_key="{dt}")

The cursor holds each done partition with the version of its mark (a `_SUCCESS` file's modification time — a
partition marked again, e.g. after late data, runs again; metastore marks carry no time and run once). A run per new
(partition, version): run key `partition_done:<table>:<path>:<version>`, tags `paimon/table`, `paimon/partition`,
`paimon/marked-by`; `partition_key` (a format string over the partition's keys, or a function of its `{key: value}`)
picks the downstream asset partition. The table is read through the code location's `PaimonWarehouse` resource (its
catalog: a Hive Metastore for the metastore marks), or the one given.
"""
from __future__ import annotations

import base64
import json
import zlib
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from dagster import (
    AssetKey,
    DefaultSensorStatus,
    RunRequest,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from paimon_ops.dagster.refs import DEFAULT_NAMES, Names
from paimon_ops.dagster.resources import PaimonWarehouse
from paimon_ops.errors import InvalidArgumentError, PaimonOpsError
from paimon_ops.lifecycle.mark_done import DoneMark, done_partitions
from paimon_ops.timeutil import iso

CURSOR_COMPRESS_OVER = 4096  # characters (the cursor is stored with every tick)
PartitionKey = Union[str, Callable[[Mapping[str, str]], str], None]


def _load(text: Optional[str]) -> dict[str, int]:
    try:
        if text and text.startswith("z:"):
            text = zlib.decompress(base64.b64decode(text[2:])).decode()
        c = json.loads(text) if text else {}
    except (ValueError, zlib.error):
        c = {}
    done = c.get("done") if isinstance(c, dict) else None
    return {str(k): int(v) for k, v in done.items()} if isinstance(done, dict) else {}


def _dump(done: Mapping[str, int]) -> str:
    text = json.dumps({"done": dict(done)}, sort_keys=True, separators=(",", ":"))
    return text if len(text) <= CURSOR_COMPRESS_OVER else "z:" + base64.b64encode(zlib.compress(text.encode())).decode()


def _key_of(partition_key: PartitionKey, spec: Mapping[str, str]) -> Optional[str]:
    if partition_key is None:
        return None
    if callable(partition_key):
        return partition_key(spec)
    try:
        return partition_key.format(**spec)
    except (KeyError, IndexError, ValueError) as e:
        raise InvalidArgumentError(f"partition_key {partition_key!r} does not fit partition {dict(spec)}: {e}") \
            from None


def newly_done(marks: Sequence[DoneMark], seen: Mapping[str, int]) -> list[tuple[str, DoneMark, int, list[str]]]:
    """(path, a mark, version, the actions marking it) of each partition done since `seen` (its path -> the version
    a run was requested for): new, or marked again with a newer version."""
    by_path: dict[str, list[DoneMark]] = {}
    for m in marks:
        by_path.setdefault(m.path, []).append(m)
    out = []
    for path, ms in by_path.items():
        version = max(m.version for m in ms)
        if path not in seen or version > seen[path]:
            out.append((path, max(ms, key=lambda m: m.version), version, sorted({m.action for m in ms})))
    return out


def partition_done_sensor(table: str, *, target: Optional[Sequence[Union[AssetKey, str, Any]]] = None,
                          job_name: Optional[str] = None, name: Optional[str] = None,
                          partition_key: PartitionKey = None, actions: Optional[Sequence[str]] = None,
                          skip_existing: bool = False, minimum_interval_seconds: int = 60,
                          default_status: DefaultSensorStatus = DefaultSensorStatus.STOPPED,
                          warehouse: Optional[PaimonWarehouse] = None, names: Names = DEFAULT_NAMES
                          ) -> SensorDefinition:
    """A sensor requesting a run of `target` (asset keys or assets) or of the job `job_name` for each partition of
    `table` newly marked done (see the module docstring). `actions`: the marks to look for (default: the table's
    partition.mark-done-action); `skip_existing`: the first tick records the partitions already done without runs
    (default: they run too); `warehouse`: the PaimonWarehouse to read (default: the code location's resource)."""
    if (target is None) == (job_name is None):
        raise InvalidArgumentError("partition_done_sensor needs exactly one of target (the downstream assets) or "
                                   "job_name")
    keys = [t if isinstance(t, AssetKey) else AssetKey.from_user_string(t) if isinstance(t, str) else t.key
            for t in (target or ())]
    sensor_name = name or "paimon_partition_done_" + "".join(c if c.isalnum() else "_" for c in table)
    needs = set() if warehouse is not None else {names.warehouse_key}

    @sensor(name=sensor_name, minimum_interval_seconds=minimum_interval_seconds, default_status=default_status,
            required_resource_keys=needs, asset_selection=keys or None, job_name=job_name,
            description=f"Requests a run for each partition of {table} newly marked done (partition.mark-done-action "
                        "marks: _SUCCESS files, .done partitions, LOAD_DONE events).")
    def partition_done(context: SensorEvaluationContext, **_resources: Any) -> SensorResult:
        paimon = warehouse if warehouse is not None else getattr(context.resources, names.warehouse_key)
        seen = _load(context.cursor)
        try:
            catalog = paimon.catalog()
            try:
                marks = done_partitions(paimon.get_table(table, catalog), actions)
            finally:
                catalog.close()
        except (PaimonOpsError, OSError) as e:
            return SensorResult(skip_reason=SkipReason(f"{table} cannot be read: {' '.join(str(e).split())}"))
        fresh = newly_done(marks, seen)
        first = context.cursor is None
        requests = []
        for path, mark, version, by in fresh:
            seen[path] = version
            if first and skip_existing:
                continue
            spec = mark.partition
            requests.append(RunRequest(
                run_key=f"partition_done:{table}:{path}:{version}", partition_key=_key_of(partition_key, spec),
                asset_selection=keys or None,
                tags={"paimon/table": table, "paimon/partition": path.rstrip("/"), "paimon/marked-by": ",".join(by),
                      **({"paimon/marked-at": iso(mark.marked_at)} if mark.marked_at else {})}))
        if requests:
            return SensorResult(run_requests=requests, cursor=_dump(seen))
        why = (f"{len(fresh)} partition(s) of {table} already done when the sensor started: recorded, no runs"
               if fresh else f"no partition of {table} newly marked done ({len(seen)} done so far)")
        return SensorResult(skip_reason=SkipReason(why), cursor=_dump(seen))

    return partition_done


__all__ = ["partition_done_sensor", "newly_done"]
