"""The maintenance operations in Dagster, derived from the operation registry (`paimon_ops.operations`): each
registered operation with a Dagster job (or a place in the nightly job) is a *section* of the tables' op config, typed
from the operation's parameters for the kind of table (the launchpad offers only what is valid for the table: a
primary-key table compacts `minor` | `full` | `dv-ratio`, an unaware-bucket append table `small-files` | `full` |
`sort` with `order_by` and `strategy`, a fixed-bucket append table `small-files` | `full`).

What a run does is its config: the op runs the operations whose section is given, in the registry's stage order
(tags before anything expires, orphans last). The paimon_* jobs map their own run config — exactly their operations'
knobs, with defaults and docs (`jobs.job_config`) — onto those sections. A run naming no section (the asset page's
"Materialize") runs what the table needs now: the operations its health signals make due, each with the section its
sensor would request (`due`), else observes; `observe_only` observes in any case (what `paimon_observe` sets). No run
tag decides what runs.
"""
from __future__ import annotations

import time
from typing import Any, Literal, Optional

from dagster import Config
from pydantic import Field, create_model

from paimon_ops.api import OPERATIONS, plan_operation
from paimon_ops.dagster.spec import APPEND, APPEND_FIXED, PRIMARY_KEY, TableSpec
from paimon_ops.errors import cli_words
from paimon_ops.operations.model import (
    AGE,
    BOOL,
    CHOICE,
    FLOAT,
    INSTANT,
    INT,
    INTS,
    PARTITIONS,
    STRINGS,
    Operation,
    Param,
)

# The operations Dagster runs (by their Dagster names), in the order a run of several runs them.
DAGSTER_OPERATIONS: dict[str, Operation] = {
    op.dagster_key: op for op in sorted((op for op in OPERATIONS.values() if op.dagster_job or op.nightly),
                                         key=lambda op: op.stage)}

CREATE_TAGS = OPERATIONS["create_auto_tags"].dagster_key
COMPACT = "compact"
EXPIRE_SNAPSHOTS = "expire_snapshots"
EXPIRE_TAGS = "expire_tags"
REMOVE_ORPHANS = "remove_orphans"
EXPIRE_PARTITIONS = "expire_partitions"
COMPACT_MANIFESTS = "compact_manifests"


def now_millis() -> int:
    """The clock of every op, sensor and check (tests replace it)."""
    return int(time.time() * 1000)


# ---------------------------------------------------------------------------------------------- config
_KIND_CLASS = {PRIMARY_KEY: "PrimaryKey", APPEND: "Append", APPEND_FIXED: "FixedBucketAppend", None: ""}


def _field(p: Param, kind: str | None) -> tuple[Any, Any] | None:
    """(annotation, pydantic Field) of a parameter in the config of a kind of table; None: not offered there."""
    if not p.dagster or p.positional:
        return None
    choices, default = p.choices, p.default
    if p.by_table_kind is not None:
        if kind is None or kind not in p.by_table_kind:
            return None
        choices, default = p.by_table_kind[kind]
    doc = p.described
    if p.kind == AGE:
        doc += " — an age such as '3 d' or '36 h'"
    elif p.kind == INSTANT:
        doc += " — ISO 8601 with a zone or epoch ms"
    if p.kind in (PARTITIONS, STRINGS, INTS):
        item = {PARTITIONS: dict[str, str], STRINGS: str, INTS: int}[p.kind]
        return list[item], Field(default_factory=list, description=doc)  # type: ignore[valid-type]
    if p.kind == BOOL:
        return bool, Field(default=bool(default), description=doc)
    if p.kind == CHOICE and choices and default is not None:
        return Literal[tuple(choices)], Field(default=default, description=doc)  # type: ignore[return-value]
    if p.kind == CHOICE and choices:  # Dagster has no optional enum: text, checked by the engine
        doc += f" — one of {', '.join(choices)}"
    tp = {INT: int, FLOAT: float}.get(p.kind, str)
    return (tp if default is not None else Optional[tp]), Field(default=default, description=doc)


_SECTIONS: dict[tuple[str, str | None], type[Config]] = {}


def section_class(op: Operation, kind: str | None) -> type[Config]:
    """The config of one operation for one kind of table (a Config class built once from its parameters)."""
    key = (op.dagster_key, kind)
    if key not in _SECTIONS:
        fields = {p.name: f for p in op.params if (f := _field(p, kind)) is not None}
        name = "".join(w.capitalize() for w in op.dagster_key.split("_")) + _KIND_CLASS[kind]
        cls = create_model(name, __base__=Config, **fields)  # type: ignore[call-overload]
        cls.__doc__ = f"{op.title.capitalize()}: {op.summary}."
        _SECTIONS[key] = cls
    return _SECTIONS[key]


class TableConfig(Config):
    """Config of a tables' op: `dry_run`, `observe_only`, and one section per operation to run (absent: not run). The
    paimon_* jobs fill the sections of their operations; without any, a run does what each table needs now (the
    operations its health signals make due), or observes it when nothing is due or `observe_only` is set."""

    dry_run: bool = Field(default=False, description="plan only: record what would be written and deleted "
                                                     "(would_* keys) as an observation; change nothing, never start "
                                                     "Spark")
    observe_only: bool = Field(default=False, description="only observe the tables and evaluate their checks, even "
                                                          "when maintenance is due (without a section, a run does "
                                                          "the operations the table's health signals make due)")
    due_checks: list[str] = Field(default_factory=list, description="without a section: do only what these health "
                                                                    "signals (checks: dv_ratio, small_files, …) make "
                                                                    "due, each table as its sensor would request it "
                                                                    "(what a sensor's run of many tables sets); empty: "
                                                                    "every signal")


def _table_config(kind: str | None) -> type[TableConfig]:
    fields = {name: (Optional[section_class(op, kind)], Field(default=None, description=section_class(op, kind).__doc__))
              for name, op in DAGSTER_OPERATIONS.items()}
    cls = create_model(f"{_KIND_CLASS[kind]}TableConfig" if kind else "UnloadableTableConfig", __base__=TableConfig,
                       **fields)  # type: ignore[call-overload]
    cls.__doc__ = TableConfig.__doc__
    return cls


PrimaryKeyTableConfig = _table_config(PRIMARY_KEY)
AppendTableConfig = _table_config(APPEND)
FixedBucketAppendTableConfig = _table_config(APPEND_FIXED)
UnloadableTableConfig = _table_config(None)

CONFIG_BY_KIND: dict[str | None, type[TableConfig]] = {
    PRIMARY_KEY: PrimaryKeyTableConfig, APPEND: AppendTableConfig, APPEND_FIXED: FixedBucketAppendTableConfig,
    None: UnloadableTableConfig,
}


def config_class(spec: TableSpec) -> type[TableConfig]:
    return CONFIG_BY_KIND[None if spec.broken else spec.kind]


def default_compaction_mode(spec: TableSpec) -> str:
    """What the small-files sensor requests: Paimon's minor compaction for primary-key tables (what a dedicated
    compaction job runs), small-files for append tables."""
    return "minor" if spec.is_primary_key else "small-files"


def operations_of(config: Any) -> list[str]:
    """The operations a run's config asks for (its sections), in run order."""
    return [name for name in DAGSTER_OPERATIONS if getattr(config, name, None) is not None]


def applies(name: str, spec: TableSpec, section: Any) -> bool:
    """Whether operation `name` applies to the table given its config section."""
    op = DAGSTER_OPERATIONS[name]
    return op.applies is None or op.applies(spec, section)


def plan(name: str, table: Any, section: Any, now: int) -> Any:
    """The plan of operation `name` on `table` (a `po.Table`) with its section of the run config; errors name the
    config fields (`remove_orphans.min_age`)."""
    op = DAGSTER_OPERATIONS[name]
    values = {k: (v or None) if isinstance(v, (list, str)) else v for k, v in section.model_dump().items()}
    if name == COMPACT and values.get("mode") != "sort":
        values.pop("order_by", None)
        values.pop("strategy", None)
    if op.takes_now:
        values["now"] = now
    words = {p.name: f"{name}.{p.name}" for p in op.params}
    with cli_words(words):
        return plan_operation(table, op, values, words)
