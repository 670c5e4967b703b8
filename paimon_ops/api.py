"""The public Python API: a catalog, its tables, and per table the maintenance operations — each returns a typed,
JSON-serialisable plan that `execute()`s exactly what it shows.

    import paimon_ops as po
    from datetime import datetime, timedelta, timezone

    t = po.Catalog("/data/warehouse").get_table("shop.orders")
    plan = t.maintenance.expire_snapshots(retain_min=3, min_age=timedelta(hours=6))
    print(plan)                      # every file it would delete, with its kind and the reason
    report = plan.execute(runner=po.LocalRunner())

Time has one vocabulary: an *instant* (`older_than=`, `timestamp=`, `now=`) is a timezone-aware datetime or epoch
milliseconds — naive datetimes are refused; an *age* (`min_age=`, `time_retained=`) is a timedelta. Arguments are
keyword-only; names are the only positional arguments.
"""
from __future__ import annotations

import datetime as _dt
import inspect
from typing import Any, Callable, Iterable, Mapping, Sequence

from paimon_ops.compact.file_index import plan_rewrite_file_index
from paimon_ops.compact.planner import plan_compaction
from paimon_ops.compact.postpone import plan_postpone_compaction
from paimon_ops.compact.remove_unexisting import plan_remove_unexisting_files
from paimon_ops.compact.rescale import plan_rescale
from paimon_ops.errors import CorruptMetadataError, InvalidArgumentError, arg
from paimon_ops.execution.plan import Plan, Planner, registered_plan_types
from paimon_ops.execution.report import Report
from paimon_ops.features import BUCKETS_ONLY, Gate
from paimon_ops.lifecycle.autotag import plan_auto_tags
from paimon_ops.lifecycle.branches import plan_create_branch, plan_delete_branch, plan_fast_forward, plan_rename_branch
from paimon_ops.lifecycle.consumers import plan_clear_consumers, plan_reset_consumer
from paimon_ops.lifecycle.expire import plan_expire_snapshots
from paimon_ops.lifecycle.manifest_compaction import plan_compact_manifests
from paimon_ops.lifecycle.mark_done import plan_mark_partition_done
from paimon_ops.lifecycle.orphans import plan_remove_orphans
from paimon_ops.lifecycle.partition_expiry import plan_expire_partitions
from paimon_ops.lifecycle.repair import plan_repair
from paimon_ops.lifecycle.rollback import plan_rollback
from paimon_ops.lifecycle.tag_deletion import plan_delete_tags
from paimon_ops.lifecycle.tag_expiry import plan_expire_tags
from paimon_ops.lifecycle.tags import plan_create_tag, plan_rename_tag, plan_replace_tag
from paimon_ops.lifecycle.time_tags import plan_create_tag_from_timestamp, plan_create_tag_from_watermark
from paimon_ops.operations import compact as _compact
from paimon_ops.operations import compact_postpone as _compact_postpone
from paimon_ops.operations import create_auto_tags as _create_auto_tags
from paimon_ops.operations import expire_partitions as _expire_partitions
from paimon_ops.operations import expire_snapshots as _expire_snapshots
from paimon_ops.operations import expire_tags as _expire_tags
from paimon_ops.operations import remove_orphans as _remove_orphans
from paimon_ops.operations import rescale as _rescale
from paimon_ops.operations.model import AGE, INSTANT, NAME, NAMES, Health, Operation, TagName
from paimon_ops.table import table as _tables
from paimon_ops.timeutil import Age, Instant, age_ms, instant_ms

_ORPHAN_MIN_AGE = _dt.timedelta(days=3)


# ---------------------------------------------------------------------------------------------- facade methods
_FACADE_TYPES = {INSTANT: "Instant", AGE: "Age", NAME: "str", NAMES: "Iterable[str]"}


def facade(planner: Planner[..., Any]) -> Callable[..., Plan]:
    """The facade method of the operation `planner` plans: its signature is the operation's `Params` (names
    positional-only, everything else keyword-only with its default; instants as `Instant`, ages as `Age`), its
    documentation the operation's; a call converts and checks the values (`Operation.coerce`: errors in the caller's
    words) and returns the planner's plan."""
    op = planner.operation
    if op is None or op.params_type is None:
        raise InvalidArgumentError(f"planner {planner.fn.__name__} plans no declared operation")
    types = op.params_type.types()
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)]
    for p in op.params_type.declared():
        shown = _FACADE_TYPES.get(p.kind) or _type_text(types[p.name])
        if p.positional:
            parameters.append(inspect.Parameter(p.name, inspect.Parameter.POSITIONAL_ONLY, annotation=shown))
        else:
            optional = " | None" if p.default is None and p.kind in _FACADE_TYPES else ""
            parameters.append(inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY, default=p.default,
                                                annotation=shown + optional))
    signature = inspect.Signature(parameters, return_annotation="Plan")

    def method(self: Any, *args: Any, **kwargs: Any) -> Plan:
        values = signature.bind(self, *args, **kwargs).arguments
        values.pop("self")
        return planner(self._t, **op.coerce(values))

    method.__name__ = method.__qualname__ = op.name
    method.__doc__ = op.doc or op.summary
    method.__signature__ = signature  # type: ignore[attr-defined]
    method.operation = op  # type: ignore[attr-defined]
    method.planner = planner  # type: ignore[attr-defined]
    return method


def _type_text(tp: Any) -> str:
    text = tp if isinstance(tp, str) else getattr(tp, "__name__", None) if isinstance(tp, type) else str(tp)
    return str(text).replace("typing.", "").replace("paimon_ops.operations.model.", "")


def _declares(op: Operation) -> Callable[[Callable[..., Plan]], Callable[..., Plan]]:
    """A facade method written out (an operation not yet declared with `Params`): bound to its declaration."""
    def deco(fn: Callable[..., Plan]) -> Callable[..., Plan]:
        fn.operation = op  # type: ignore[attr-defined]
        return fn
    return deco


def _instant(value: Instant | None, name: str) -> int | None:
    return None if value is None else instant_ms(value, name)


def _age(value: Age | None, name: str) -> _dt.timedelta | None:
    if value is None:
        return None
    age_ms(value, name)  # validates the type and the sign
    return value


class Catalog:
    """A Paimon catalog: a filesystem warehouse (`<warehouse>/<db>.db/<table>`, local path or URI), or the Hive
    Metastore, JDBC database or REST server the catalog options name.

    `options`: catalog options (Paimon's: `metastore` = filesystem | hive | jdbc | rest, `uri`, `lock.enabled`,
    `catalog-key`, `jdbc.user`, `token`, … — see `paimon_ops.catalog`), object-store settings (`s3.endpoint`, …) and
    table options applied on top of every table's own (e.g. `{"snapshot.num-retained.min": "5"}`), in one mapping:
    each key goes where it belongs. `close()` (or `with po.Catalog(...) as cat:`) releases the catalog's
    connections."""

    def __init__(self, warehouse: str | None, *, options: Mapping[str, str] | None = None):
        from paimon_ops.catalog import open_catalog
        from paimon_ops.options import is_catalog_option
        from paimon_ops.table.objectstore import is_store_option
        options = {k: str(v) for k, v in (options or {}).items()}
        # catalog options and object-store settings (s3.endpoint, s3.access-key, ...) configure the catalog and the
        # file systems of its tables; the rest are table options
        own = {k: v for k, v in options.items() if is_catalog_option(k) or is_store_option(k)}
        self._catalog = open_catalog(warehouse, own)
        self.warehouse = warehouse if warehouse is not None else self._catalog.warehouse
        self.options = {k: v for k, v in options.items() if k not in own}

    @property
    def metastore(self) -> str:
        """filesystem | hive | jdbc | rest."""
        return self._catalog.metastore

    def tables(self, pattern: str | None = None) -> list[str]:
        """Every Paimon table of the catalog as `db.table`; with an fnmatch `pattern` those matching it, or with
        `$branch_…` the branches matching it (`db.*$branch_wap`, `db.t$branch_*`: never main)."""
        return self._catalog.all_tables() if pattern is None else self._catalog.matching(pattern)

    def get_table(self, identifier: str, /, *, branch: str | None = None,
                  options: Mapping[str, str] | None = None) -> Table:
        """A table (`db.t`) or one of its branches (`db.t$branch_b`, Paimon's identifier, or `branch="b"`)."""
        raw = self._catalog.get_table(identifier, branch=branch,
                                      options_override={**self.options, **(options or {})})
        return Table(raw)

    def close(self) -> None:
        self._catalog.close()

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        kind = "" if self.metastore == "filesystem" else f", metastore={self.metastore!r}"
        return f"Catalog({self.warehouse!r}{kind})"


class Table:
    """One Paimon table (one branch of it): what it is, and its maintenance."""

    def __init__(self, raw: _tables.FileStoreTable):
        self.raw = raw  # the engine's table (metadata managers, scan, commit): for advanced use
        self.maintenance = Maintenance(raw)
        self.tags = Tags(raw)

    @staticmethod
    def open(location: str, /, *, options: Mapping[str, str] | None = None) -> Table:
        """A table by its own location (no catalog)."""
        return Table(_tables.FileStoreTable(location, options_override=options))

    @property
    def identifier(self) -> str:
        """Paimon's identifier: `db.t`, or `db.t$branch_b` for a branch."""
        return self.raw.full_name

    @property
    def location(self) -> str:
        return self.raw.location

    @property
    def branch(self) -> str:
        return self.raw.branch

    @property
    def schema(self) -> Any:
        return self.raw.schema

    @property
    def options(self) -> dict[str, str]:
        return dict(self.raw.options.raw)

    @property
    def latest_snapshot_id(self) -> int | None:
        return self.raw.snapshots.latest_id()

    # ------------------------------------------------------------------ inspection (read-only)
    def snapshots(self) -> list[Any]:
        """Every live snapshot, oldest first, as `SnapshotInfo` rows (`committed_at` timezone-aware)."""
        from paimon_ops.inspection import snapshots
        return snapshots(self.raw)

    def files(self, *, snapshot: int | None = None, tag: str | None = None) -> Any:
        """The live data files of the latest snapshot (or `snapshot`, or `tag`) as a `pyarrow.Table`: partition,
        bucket, level, file, path, rows, size, deleted_rows (DV), … (`paimon_ops.inspection.FILE_FIELDS`)."""
        if snapshot is not None and tag is not None:
            raise InvalidArgumentError(f"give either {arg('snapshot')} or {arg('tag')}, not both")
        from paimon_ops.inspection import files
        return files(self.raw, snapshot, tag)

    def branches(self) -> list[Any]:
        """Main and every branch of the table, as `BranchInfo` rows: snapshots, tags, consumers, schema, and whether
        each is behind main."""
        from paimon_ops.lifecycle.branches import list_branches
        return list_branches(self.raw)

    def consumers(self) -> list[Any]:
        """The consumers of this branch, as `ConsumerInfo` rows: the snapshot each reads next and whether it still
        keeps snapshots from expiry."""
        from paimon_ops.lifecycle.consumers import list_consumers
        return list_consumers(self.raw)

    def health(self, *, merge_budget: int = 0, now: Instant | None = None) -> Any:
        """What the checks measure (`TableHealth`): the exact row count (`merge_budget`: data bytes it may read to
        merge overlapping level-0 files; 0 = metadata only), files per bucket, snapshot retention, refused
        operations."""
        from paimon_ops.inspection import health
        return health(self.raw, routine_gates(), merge_budget, _instant(now, "now"))

    def __repr__(self) -> str:
        return f"Table({self.identifier!r} at {self.location!r}, branch={self.branch!r})"


class Maintenance:
    """Plans for one table; nothing changes until `plan.execute()`."""

    def __init__(self, raw: _tables.FileStoreTable):
        self._t = raw

    @_declares(_compact.OPERATION)
    def compact(self, *, mode: str = "full", partitions: Sequence[Mapping[str, Any]] | None = None,
                where: str | None = None, order_by: Sequence[str] | None = None, strategy: str = "order",
                threshold: float | None = None, buckets: Sequence[int] | None = None,
                partition_idle_time: Age | None = None, min_files: int | None = None,
                memory_budget: int | None = None, force: bool = False, now: Instant | None = None) -> Plan:
        """Compaction: `mode` full | minor | dv-ratio | small-files | sort (`order_by`, `strategy` order | zorder |
        hilbert). Restricted to `partitions` (list of {key: value}) and/or `where` (SQL on partition columns)."""
        return plan_compaction(self._t, mode, partitions=partitions, where=where, order_by=order_by,
                               strategy=strategy, threshold=threshold, buckets=buckets,
                               partition_idle_time=_age(partition_idle_time, "partition_idle_time"),
                               min_files=min_files, memory_budget=memory_budget, force=force,
                               now_millis=_instant(now, "now"))

    @_declares(_compact_postpone.OPERATION)
    def compact_postpone(self, *, partitions: Sequence[Mapping[str, Any]] | None = None, where: str | None = None,
                         memory_budget: int | None = None) -> Plan:
        """Postpone-bucket compaction (`bucket = -2` tables): the rows waiting in `bucket-postpone` replayed in writer
        order into real buckets (the partition's bucket count, else `postpone.target-row-num-per-bucket` /
        `postpone.default-bucket-num`), merged, compacted as Paimon's writer would, in one COMPACT commit."""
        return plan_postpone_compaction(self._t, partitions, where, memory_budget)

    @_declares(_rescale.OPERATION)
    def rescale(self, *, bucket_num: int | None = None, partitions: Sequence[Mapping[str, Any]] | None = None,
                where: str | None = None) -> Plan:
        """Rescale to `bucket_num` buckets (default: the table's `bucket` option; required for postpone tables) the
        whole table or the chosen `partitions` / `where`: their rows rewritten into the new buckets in one OVERWRITE
        commit; fixed-bucket tables get the new `bucket` option by a schema change first."""
        return plan_rescale(self._t, bucket_num, partitions, where)

    @_declares(_expire_snapshots.OPERATION)
    def expire_snapshots(self, *, retain_min: int | None = None, retain_max: int | None = None,
                         older_than: Instant | None = None, min_age: Age | None = None,
                         max_deletes: int | None = None, now: Instant | None = None) -> Plan:
        """Snapshot expiry with file reclamation. Retention defaults to the table's `snapshot.num-retained.*` and
        `snapshot.time-retained`: a snapshot may expire once its successor was committed before `older_than` (an
        instant) or more than `min_age` ago (an age); not both."""
        if older_than is not None and min_age is not None:
            raise InvalidArgumentError(f"give {arg('older_than')} (an instant) or {arg('min_age')} (an age), not both")
        return plan_expire_snapshots(self._t, now_millis=_instant(now, "now"), retain_min=retain_min,
                                     retain_max=retain_max, older_than=_instant(older_than, "older_than"),
                                     time_retained=_age(min_age, "min_age"), max_deletes=max_deletes)

    @_declares(_expire_partitions.OPERATION)
    def expire_partitions(self, *, expiration_time: Age | None = None, strategy: str | None = None,
                          timestamp_formatter: str | None = None, timestamp_pattern: str | None = None,
                          max_expires: int | None = None, now: Instant | None = None) -> Plan:
        """Dropping partitions older than `expiration_time` (an age; default the table's `partition.expiration-time`)
        in one OVERWRITE commit, by `strategy` values-time (the time in the partition values, read with
        `timestamp_pattern` / `timestamp_formatter`) or update-time (the newest file). The plan lists which partitions
        go and why, and those whose time cannot be read (never expired); snapshot expiry reclaims the files later."""
        return plan_expire_partitions(self._t, now_millis=_instant(now, "now"),
                                      expiration_time=_age(expiration_time, "expiration_time"), strategy=strategy,
                                      timestamp_formatter=timestamp_formatter, timestamp_pattern=timestamp_pattern,
                                      max_expires=max_expires)

    compact_manifests = facade(plan_compact_manifests)
    remove_unexisting_files = facade(plan_remove_unexisting_files)
    repair = facade(plan_repair)
    rewrite_file_index = facade(plan_rewrite_file_index)

    @_declares(_expire_tags.OPERATION)
    def expire_tags(self, *, older_than: Instant | None = None, min_age: Age | None = None,
                    now: Instant | None = None) -> Plan:
        """Tag expiry: retention (`tagTimeRetained`), `tag.num-retained-max`, and tags created before `older_than` (an
        instant) or more than `min_age` ago (an age); not both."""
        from paimon_ops.timeutil import now_ms
        if older_than is not None and min_age is not None:
            raise InvalidArgumentError(f"give {arg('older_than')} (an instant) or {arg('min_age')} (an age), not both")
        older = _instant(older_than, "older_than")
        if min_age is not None:
            older = now_ms(now) - age_ms(min_age, "min_age")
        return plan_expire_tags(self._t, now_millis=_instant(now, "now"), older_than=older)

    delete_tags = facade(plan_delete_tags)

    @_declares(_remove_orphans.OPERATION)
    def remove_orphans(self, *, older_than: Instant | None = None, min_age: Age | None = None,
                       allow_short: bool = False, now: Instant | None = None) -> Plan:
        """Files no snapshot, tag or changelog of any branch references, last modified before `older_than` (an
        instant) or more than `min_age` ago (an age; default 3 days; under 1 day needs `allow_short`)."""
        if older_than is not None and min_age is not None:
            raise InvalidArgumentError(f"give {arg('older_than')} (an instant) or {arg('min_age')} (an age), not both")
        if older_than is not None:
            return plan_remove_orphans(self._t, _instant(older_than, "older_than"), now_millis=_instant(now, "now"),
                                       allow_short=allow_short)
        age = _age(min_age, "min_age")
        return plan_remove_orphans(self._t, None, now_millis=_instant(now, "now"), allow_short=allow_short,
                                   min_age=_ORPHAN_MIN_AGE if age is None else age)

    @_declares(_create_auto_tags.OPERATION)
    def create_auto_tags(self, *, periods: Iterable[Any] | None = None, now: Instant | None = None) -> Plan:
        """The automatic tags that are due (`tag.create-time` or Paimon's auto-tag options), or those of `periods`
        (period names or dates: a backfill)."""
        return plan_auto_tags(self._t, now_millis=_instant(now, "now"),
                              periods=list(periods) if periods is not None else None)

    rollback = facade(plan_rollback)
    mark_partition_done = facade(plan_mark_partition_done)

    create_branch = facade(plan_create_branch)
    delete_branch = facade(plan_delete_branch)
    rename_branch = facade(plan_rename_branch)
    fast_forward = facade(plan_fast_forward)
    reset_consumer = facade(plan_reset_consumer)
    clear_consumers = facade(plan_clear_consumers)

class Tags:
    """Manual tags of one table (plans, like everything else)."""

    def __init__(self, raw: _tables.FileStoreTable):
        self._t = raw

    def list(self) -> list[Any]:
        from paimon_ops.lifecycle.tags import list_tags
        return list_tags(self._t)

    create = facade(plan_create_tag)
    create_from_timestamp = facade(plan_create_tag_from_timestamp)
    create_from_watermark = facade(plan_create_tag_from_watermark)
    replace = facade(plan_replace_tag)
    rename = facade(plan_rename_tag)

    def delete(self, *names: str, missing_ok: bool = False) -> Plan:
        """Deleting tags, reclaiming the files only they kept alive (as `maintenance.delete_tags`)."""
        return plan_delete_tags(self._t, [TagName(n) for n in names], missing_ok=missing_ok)


def load_plan(path_or_text: str, /) -> Plan:
    """A plan saved with `plan.to_json()` / `--dry-run --json`: a file path or the JSON text. Raises only
    `PaimonOpsError`s (a missing or unreadable file, not a plan, a malformed plan)."""
    if not isinstance(path_or_text, str):
        raise InvalidArgumentError(f"load_plan takes a file path or the plan's JSON text, not "
                                   f"{type(path_or_text).__name__}")
    text = path_or_text
    if not path_or_text.lstrip().startswith("{"):
        try:
            with open(path_or_text, encoding="utf-8") as f:
                text = f.read()
        except UnicodeDecodeError:
            raise CorruptMetadataError(path_or_text, "not a paimon-ops plan: not UTF-8 text") from None
        except (OSError, ValueError) as e:
            raise CorruptMetadataError(path_or_text, f"cannot read plan: {getattr(e, 'strerror', None) or e}")\
                from None
    return Plan.from_json(text, where=path_or_text if text is not path_or_text else "plan")


# ---------------------------------------------------------------------------------------------- the registry
# Every operation is one facade method bound to its declaration (above): the CLI, Dagster, Airflow and the reference
# docs list the operations from here, in this order.
def _bound(owner: type) -> dict[str, Any]:
    return {name: m for name, m in vars(owner).items() if getattr(m, "operation", None) is not None}


FACADE: dict[str, str] = {m.operation.name: f"{attr}.{name}" for attr, owner in (("maintenance", Maintenance),
                                                                                 ("tags", Tags))
                          for name, m in _bound(owner).items()}
OPERATIONS: dict[str, Operation] = {m.operation.name: m.operation for owner in (Maintenance, Tags)
                                    for m in _bound(owner).values()}


def operation(name: str) -> Operation:
    try:
        return OPERATIONS[name]
    except KeyError:
        raise InvalidArgumentError(f"unknown operation {name!r}; known: {', '.join(OPERATIONS)}") from None


def plan_types(op: Operation) -> tuple[str, ...]:
    """The plan types (a plan's `operation`) `op` makes."""
    return tuple(name for name, cls in registered_plan_types().items() if cls.op is op)


def by_plan_type(plan_operation: str) -> Operation | None:
    """The operation making plans of type `plan_operation` (a saved plan's "operation")."""
    cls = registered_plan_types().get(plan_operation)
    return None if cls is None else cls.op


def by_command(command: str) -> Operation | None:
    return next((op for op in OPERATIONS.values() if op.command == command), None)


def by_dagster_name(name: str) -> Operation:
    return next(op for op in OPERATIONS.values() if op.dagster_key == name)


def health_signals() -> list[tuple[Operation, Health]]:
    """Every health signal with the operation it makes due, in the registry's order."""
    return [(op, h) for op in OPERATIONS.values() for h in op.health]


def routine_gates() -> list[Gate]:
    """The feature gates of the operations that maintain a table routinely, for the health check listing what the gate
    refuses: every operation but those that only move rows between buckets (the postpone compaction, rescale: one-off
    work on the bucket layout)."""
    return [g for op in OPERATIONS.values() if op.handles != BUCKETS_ONLY for g in op.gates()]


__all__ = ["Catalog", "Table", "Maintenance", "Tags", "Plan", "Report", "load_plan", "facade", "OPERATIONS", "FACADE",
           "operation", "plan_types", "by_plan_type", "by_command", "by_dagster_name", "health_signals",
           "routine_gates"]
