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

import inspect
from typing import Any, Callable, Mapping

import paimon_ops.table.table as _tables
from paimon_ops.catalog import open_catalog
from paimon_ops.compact.file_index import plan_rewrite_file_index
from paimon_ops.compact.planner import plan_compaction
from paimon_ops.compact.postpone import plan_postpone_compaction
from paimon_ops.compact.remove_unexisting import plan_remove_unexisting_files
from paimon_ops.compact.rescale import plan_rescale
from paimon_ops.errors import CorruptMetadataError, InvalidArgumentError, arg
from paimon_ops.execution.plan import Plan, Planner, registered_plan_types
from paimon_ops.execution.report import Report
from paimon_ops.features import BUCKETS_ONLY, Gate
from paimon_ops.inspection import files, health, snapshots
from paimon_ops.lifecycle.autotag import plan_auto_tags
from paimon_ops.lifecycle.branches import (
    list_branches,
    plan_create_branch,
    plan_delete_branch,
    plan_fast_forward,
    plan_rename_branch,
)
from paimon_ops.lifecycle.consumers import list_consumers, plan_clear_consumers, plan_reset_consumer
from paimon_ops.lifecycle.expire import plan_expire_changelogs, plan_expire_snapshots
from paimon_ops.lifecycle.manifest_compaction import plan_compact_manifests
from paimon_ops.lifecycle.mark_done import plan_mark_partition_done
from paimon_ops.lifecycle.orphans import plan_remove_orphans
from paimon_ops.lifecycle.partition_expiry import plan_expire_partitions
from paimon_ops.lifecycle.repair import plan_repair
from paimon_ops.lifecycle.rollback import plan_rollback
from paimon_ops.lifecycle.tag_deletion import plan_delete_tags
from paimon_ops.lifecycle.tag_expiry import plan_expire_tags
from paimon_ops.lifecycle.tags import list_tags, plan_create_tag, plan_rename_tag, plan_replace_tag
from paimon_ops.lifecycle.time_tags import plan_create_tag_from_timestamp, plan_create_tag_from_watermark
from paimon_ops.operations.model import AGE, INSTANT, NAME, NAMES, Health, Operation, TagName
from paimon_ops.options import is_catalog_option
from paimon_ops.table.objectstore import is_store_option
from paimon_ops.timeutil import Instant, instant_ms

# ---------------------------------------------------------------------------------------------- facade methods
_FACADE_TYPES = {INSTANT: "Instant", AGE: "Age", NAME: "str", NAMES: "Iterable[str]"}


def facade(planner: Planner[..., Any]) -> Callable[..., Plan]:
    """The facade method of the operation `planner` plans: its signature is the operation's `Params` (names
    positional-only, everything else keyword-only with its default; instants as `Instant`, ages as `Age`), its
    documentation the operation's; a call converts and checks the values (`Operation.coerce`: errors in the caller's
    words) and returns the planner's plan."""
    op = planner.operation
    if op is None:
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
        return planner(self._t, **op.validated(values, from_text=False).arguments())

    method.__name__ = method.__qualname__ = op.name
    method.__doc__ = op.doc or op.summary
    method.__signature__ = signature  # type: ignore[attr-defined]
    method.operation = op  # type: ignore[attr-defined]
    method.planner = planner  # type: ignore[attr-defined]
    return method


def _type_text(tp: Any) -> str:
    text = tp if isinstance(tp, str) else getattr(tp, "__name__", None) if isinstance(tp, type) else str(tp)
    return str(text).replace("typing.", "").replace("paimon_ops.operations.model.", "")


def _instant(value: Instant | None, name: str) -> int | None:
    return None if value is None else instant_ms(value, name)


class Catalog:
    """A Paimon catalog: a filesystem warehouse (`<warehouse>/<db>.db/<table>`, local path or URI), or the Hive
    Metastore, JDBC database or REST server the catalog options name.

    `options`: catalog options (Paimon's: `metastore` = filesystem | hive | jdbc | rest, `uri`, `lock.enabled`,
    `catalog-key`, `jdbc.user`, `token`, … — see `paimon_ops.catalog`), object-store settings (`s3.endpoint`, …) and
    table options applied on top of every table's own (e.g. `{"snapshot.num-retained.min": "5"}`), in one mapping:
    each key goes where it belongs. `close()` (or `with po.Catalog(...) as cat:`) releases the catalog's
    connections."""

    def __init__(self, warehouse: str | None, *, options: Mapping[str, str] | None = None):
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
        return snapshots(self.raw)

    def files(self, *, snapshot: int | None = None, tag: str | None = None) -> Any:
        """The live data files of the latest snapshot (or `snapshot`, or `tag`) as a `pyarrow.Table`: partition,
        bucket, level, file, path, rows, size, deleted_rows (DV), … (`paimon_ops.inspection.FILE_FIELDS`)."""
        if snapshot is not None and tag is not None:
            raise InvalidArgumentError(f"give either {arg('snapshot')} or {arg('tag')}, not both")
        return files(self.raw, snapshot, tag)

    def branches(self) -> list[Any]:
        """Main and every branch of the table, as `BranchInfo` rows: snapshots, tags, consumers, schema, and whether
        each is behind main."""
        return list_branches(self.raw)

    def consumers(self) -> list[Any]:
        """The consumers of this branch, as `ConsumerInfo` rows: the snapshot each reads next and whether it still
        keeps snapshots from expiry."""
        return list_consumers(self.raw)

    def health(self, *, merge_budget: int = 0, now: Instant | None = None) -> Any:
        """What the checks measure (`TableHealth`): the exact row count (`merge_budget`: data bytes it may read to
        merge overlapping level-0 files; 0 = metadata only), files per bucket, snapshot retention, refused
        operations."""
        return health(self.raw, routine_gates(), merge_budget, _instant(now, "now"))

    def __repr__(self) -> str:
        return f"Table({self.identifier!r} at {self.location!r}, branch={self.branch!r})"


class Maintenance:
    """Plans for one table; nothing changes until `plan.execute()`."""

    def __init__(self, raw: _tables.FileStoreTable):
        self._t = raw

    # The operations, one line each (the order the CLI lists them in).
    compact = facade(plan_compaction)
    compact_postpone = facade(plan_postpone_compaction)
    rescale = facade(plan_rescale)
    expire_snapshots = facade(plan_expire_snapshots)
    expire_changelogs = facade(plan_expire_changelogs)
    expire_tags = facade(plan_expire_tags)
    expire_partitions = facade(plan_expire_partitions)
    compact_manifests = facade(plan_compact_manifests)
    remove_unexisting_files = facade(plan_remove_unexisting_files)
    repair = facade(plan_repair)
    rewrite_file_index = facade(plan_rewrite_file_index)
    remove_orphans = facade(plan_remove_orphans)
    delete_tags = facade(plan_delete_tags)
    create_auto_tags = facade(plan_auto_tags)
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
        return list_tags(self._t)

    # The operations on named tags, one line each.
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


PLANNERS: dict[str, Planner[..., Any]] = {m.operation.name: m.planner for owner in (Maintenance, Tags)
                                          for m in _bound(owner).values()}


def plan_operation(table: Table, op: Operation, values: Mapping[str, Any], words: Mapping[str, str] | None = None
                   ) -> Plan:
    """The plan of `op` on `table` with `values` as the faces give them (text from the CLI, Dagster config or Airflow
    templates, or Python values; None: the default): converted and checked first, errors in the caller's `words`."""
    return PLANNERS[op.name](table.raw, **op.validated(values, words).arguments())


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
           "PLANNERS", "plan_operation",
           "operation", "plan_types", "by_plan_type", "by_command", "by_dagster_name", "health_signals",
           "routine_gates"]
