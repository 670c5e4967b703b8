"""The registry of maintenance operations: one module per operation in this package declares it once — its name, its
parameters (typed, documented, with defaults and validation), the facade method that plans it, the plan types it
makes, whether it changes the table, where its work runs, its CLI spelling and its place in Dagster. Everything else
is derived from here:

* `paimon-ops <command>` subcommands and flags (`paimon_ops.cli`);
* `apply` / `Plan.from_json`: which module defines a saved plan's type (`plan_module`);
* the facade (`po.Table.maintenance.*`, `po.Table.tags.*`): explicit methods, checked against the registry by a test;
* the Dagster jobs and each job's run config (`paimon_ops.dagster.operations`);
* the Airflow operators (`paimon_ops.airflow.operations`).

Adding an operation: a module here declaring `OPERATION = Operation(...)`, its name in `MODULES`, its planner and
facade method, and its tests (`tests/core/test_registry.py` checks the rest is derived). The smallest example is
`compact_manifests`.

This package imports no engine module at import time (the plan codec, the CLI and the integrations all read it).
"""
from __future__ import annotations

import datetime as _dt
import importlib
import json
import operator
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from paimon_ops.errors import InvalidArgumentError, arg
from paimon_ops.options import Option

# Kinds of parameter: how a value is given as text (CLI flags, Dagster config, Airflow templates) and what the facade
# takes.
INT, FLOAT, BOOL, STR, CHOICE = "int", "float", "bool", "str", "choice"
AGE = "age"                # a duration: '3 d', '36 h', 'PT1H' -> timedelta
INSTANT = "instant"        # ISO 8601 with a zone or epoch ms -> epoch ms
PARTITIONS = "partitions"  # 'k=v,k2=v2' (repeatable) -> [{k: v, k2: v2}]
STRINGS = "strings"        # 'a,b' -> ['a', 'b']
INTS = "ints"              # [1, 2]
NAME = "name"              # a positional name (tag names)
NAMES = "names"            # one or more positional names
KINDS = (INT, FLOAT, BOOL, STR, CHOICE, AGE, INSTANT, PARTITIONS, STRINGS, INTS, NAME, NAMES)

# Where an operation's work runs: "tasks" may start a runner (the CLI offers --spark-master / --local), "metadata"
# changes metadata only, in this process.
TASKS, METADATA = "tasks", "metadata"


@dataclass(frozen=True)
class Param:
    """One parameter of an operation, declared once."""

    name: str                       # the facade's keyword (snake case)
    kind: str
    doc: str
    default: Any = None             # None: the table's `option`, or the planner's own default
    choices: tuple[str, ...] = ()
    option: Option[Any] | None = None  # the catalogue's table option it defaults from ("default: the table's …")
    flag: str | None = None         # CLI spelling (default --kebab-name; names are positional)
    metavar: str | None = None
    group: str | None = None        # mutually exclusive with the other parameters of the group
    minimum: float | None = None
    cli: bool = True                # offered on the command line
    cli_hidden: bool = False        # accepted but not shown in --help
    dagster: bool = True            # a field of the Dagster run config
    engine_names: tuple[str, ...] = ()  # engine keywords that stand for it (errors.arg speaks its flag)
    # Dagster, per kind of table: the choices and default offered (a kind not listed does not get the field)
    by_table_kind: Mapping[str, tuple[tuple[str, ...], Any]] | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InvalidArgumentError(f"parameter {self.name}: unknown kind {self.kind!r}")
        if self.kind == BOOL and self.default is None:  # a flag: off unless given
            object.__setattr__(self, "default", False)

    @property
    def positional(self) -> bool:
        return self.kind in (NAME, NAMES)

    @property
    def cli_flag(self) -> str:
        if self.positional:
            return self.name
        return self.flag or "--" + self.name.replace("_", "-")

    @property
    def described(self) -> str:
        """The doc, with where its default comes from."""
        if self.option is not None and "default" not in self.doc:
            fallback = self.option.default_text.replace("`", "")
            return f"{self.doc} (default: the table's {self.option.key}" + \
                ("" if fallback.startswith("—") else f", else {fallback}") + ")"
        return self.doc

    def coerce(self, value: Any, words: str | None = None, age_instead: str | None = None) -> Any:
        """The value as the facade takes it, from text (the CLI, Dagster config, Airflow templates) or from Python;
        None stays None (the default). Errors name the parameter as `words` (the caller's spelling); an age given
        to an instant is refused pointing at `age_instead` (the parameter taking an age)."""
        if value is None:
            return None
        what = words or arg(self.name)
        k = self.kind
        if isinstance(value, str):
            text = value.strip()
            if k == INSTANT:
                from paimon_ops.options import looks_like_duration
                from paimon_ops.timeutil import parse_instant
                if looks_like_duration(text):
                    raise InvalidArgumentError(f"{what} {value!r} is an age; {what} takes an instant "
                                               "(2026-11-20T00:00:00Z or epoch ms)"
                                               + (f": use {age_instead} for an age" if age_instead else ""))
                return parse_instant(text, what)
            if k == AGE:
                from paimon_ops.options import parse_duration
                return parse_duration(text, what)
            if k in (INT, FLOAT):
                try:
                    number: float = int(text) if k == INT else float(text)
                except ValueError:
                    raise InvalidArgumentError(f"{what} {value!r}: expected a number") from None
                return self._checked(number, what)
            if k == BOOL:
                if text.lower() in ("true", "1", "yes"):
                    return True
                if text.lower() in ("false", "0", "no", ""):
                    return False
                raise InvalidArgumentError(f"{what} {value!r}: expected true or false")
            if k == CHOICE:
                if self.choices and text not in self.choices:
                    raise InvalidArgumentError(f"{what} {value!r}: expected one of {', '.join(self.choices)}")
                return text
            if k in (PARTITIONS, STRINGS, INTS, NAMES):
                if text.startswith("["):
                    try:
                        return self.coerce(json.loads(text), words)
                    except ValueError as e:
                        raise InvalidArgumentError(f"{what} {value!r}: not a JSON list: {e}") from None
                if k == PARTITIONS:
                    return [partition_spec(text, what)]
                if k == STRINGS:
                    return [s.strip() for s in text.split(",") if s.strip()]
                if k == INTS:
                    try:
                        return [int(s) for s in text.split(",") if s.strip()]
                    except ValueError:
                        raise InvalidArgumentError(f"{what} {value!r}: expected integers separated by commas") from None
                return [text]
            return text
        if k == PARTITIONS and isinstance(value, (list, tuple)):
            return [partition_spec(v, what) if isinstance(v, str) else dict(v) for v in value]
        if k in (INT, FLOAT) and isinstance(value, (int, float)) and not isinstance(value, bool):
            return self._checked(value, what)
        if k == AGE and isinstance(value, (int, float)) and not isinstance(value, bool):  # seconds (JSON)
            return _dt.timedelta(seconds=value)
        return value

    def _checked(self, number: float, what: str) -> float:
        if self.minimum is not None and number < self.minimum:
            raise InvalidArgumentError(f"{what} must be at least {self.minimum:g}, got {number:g}")
        return number


def partition_spec(text: str, what: str = "partition") -> dict[str, str]:
    """'k=v,k2=v2' -> {k: v, k2: v2}."""
    out = {}
    for part in text.split(","):
        if "=" not in part:
            raise InvalidArgumentError(f"{what} {text!r}: expected key=value[,key=value]")
        k, v = part.split("=", 1)
        out[k.strip()] = v.strip()
    return out


# Which tables have a health signal: every table, those with deletion vectors, those whose partitions expire
# (`partition.expiration-time`).
ALL_TABLES, DV_TABLES, EXPIRING_TABLES = "all", "deletion-vectors", "expiring-partitions"


@dataclass(frozen=True)
class Health:
    """A health signal that makes an operation due: a Dagster asset check on the table (WARN while due) and the
    sensor that requests the operation's job when it fires (`paimon_ops.dagster` implements both under these names;
    the registry test checks that every one exists)."""

    check: str                 # the asset check's name
    sensor: str                # the sensor's name
    tables: str = ALL_TABLES   # which tables have it


@dataclass(frozen=True)
class Operation:
    """One maintenance operation."""

    name: str                        # snake case: the Airflow operator, the facade method's own name
    title: str                       # "snapshot expiry"
    summary: str                     # one line (CLI help)
    facade: str                      # the facade method: "<attribute of po.Table>.<method>"
    plan_module: str                 # the module defining (and registering) its plan types and planner
    plan_types: tuple[str, ...]      # the `operation` of the plans it makes (Plan.from_json looks them up here)
    params: tuple[Param, ...] = ()
    changes_table: bool = True
    placement: str = TASKS
    cli_name: str | None = None      # default: the name in kebab case
    confirm: bool = False            # the CLI asks --yes before executing (cannot be undone)
    required_groups: tuple[str, ...] = ()  # exclusive groups of which one parameter must be given
    dagster_name: str | None = None  # its name in Dagster (ops, metadata, jobs); None: the name
    dagster_job: str | None = None   # the Dagster job running exactly it; None: not a Dagster job (`manual_why`)
    manual_why: str = ""             # why a table-changing operation has no Dagster job
    nightly: bool = False            # part of Dagster's nightly maintenance job
    stage: int = 50                  # order in a run of several operations (lower first: tags before expiry)
    reclaims: bool = True            # its deletes free storage (compaction's inputs stay until expiry reclaims them)
    takes_now: bool = False          # its facade takes `now` (the clock; hidden --now-ms on the command line)
    health: tuple[Health, ...] = ()  # what makes it due (a Dagster check and sensor each)
    cli_check: Callable[[Any, Any], None] | None = None  # (plan, po.Table) -> None: refusals of the CLI
    # Dagster: does it apply to a table (TableSpec) given its config section? Default: always.
    applies: Callable[[Any, Any], bool] | None = field(default=None, compare=False)

    @property
    def command(self) -> str:
        return self.cli_name or self.name.replace("_", "-")

    @property
    def dagster_key(self) -> str:
        return self.dagster_name or self.name

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise InvalidArgumentError(f"operation {self.name} has no parameter {name!r}; its parameters: "
                                   + ", ".join(p.name for p in self.params))

    def cli_words(self) -> dict[str, str]:
        """keyword -> the flag standing for it on this command (errors.arg)."""
        out: dict[str, str] = {}
        for p in self.params:
            if p.cli and not p.positional:
                out[p.name] = p.cli_flag
                out.update(dict.fromkeys(p.engine_names, p.cli_flag))
        return out

    def coerce(self, values: Mapping[str, Any], words: Mapping[str, str] | None = None) -> dict[str, Any]:
        """Validated facade arguments from given values (None: the default). Unknown names and two parameters of
        one exclusive group are refused, in the caller's words."""
        known = {p.name for p in self.params} | ({"now"} if self.takes_now else set())
        unknown = sorted(set(values) - known)
        if unknown:
            raise InvalidArgumentError(f"{self.name} takes no argument {', '.join(unknown)}; it takes "
                                       + (", ".join(sorted(known)) or "none"))
        words = words or {}
        out: dict[str, Any] = {}
        for p in self.params:
            if values.get(p.name) is not None:
                age = next((q.name for q in self.params if p.kind == INSTANT and q.kind == AGE and q.group
                            and q.group == p.group), None)
                out[p.name] = p.coerce(values[p.name], words.get(p.name),
                                       age_instead=(words.get(age) or arg(age)) if age else None)
        if self.takes_now and values.get("now") is not None:
            out["now"] = INSTANT_PARAM.coerce(values["now"], words.get("now"))
        groups: dict[str, list[str]] = {}
        for p in self.params:
            if p.group and out.get(p.name) not in (None, False):
                groups.setdefault(p.group, []).append(words.get(p.name) or arg(p.name))
        for given in groups.values():
            if len(given) > 1:
                raise InvalidArgumentError(f"give {' or '.join(given)}, not both")
        return out

    def plan(self, table: Any, values: Mapping[str, Any], words: Mapping[str, str] | None = None) -> Any:
        """The plan of this operation on `table` (a `po.Table`) with these values (coerced first)."""
        kw = self.coerce(values, words)
        args: list[Any] = []
        for p in self.params:
            if p.positional:
                value = kw.pop(p.name, None)
                if value is None:
                    raise InvalidArgumentError(f"{self.name} needs {p.name}")
                args.append(value)
        method: Callable[..., Any] = operator.attrgetter(self.facade)(table)
        return method(*args, **kw)


INSTANT_PARAM = Param("now", INSTANT, "the time the operation runs at (default: the clock)", cli=False, dagster=False)

# The operations, in the order the CLI lists them (one module each).
MODULES = ("compact", "compact_postpone", "rescale", "expire_snapshots", "expire_tags", "expire_partitions",
           "compact_manifests", "remove_orphans", "create_tag", "delete_tags", "rename_tag", "create_auto_tags",
           "rollback", "create_branch", "delete_branch", "rename_branch", "fast_forward", "reset_consumer",
           "clear_consumers")


def _load() -> dict[str, Operation]:
    out: dict[str, Operation] = {}
    for module in MODULES:
        op = importlib.import_module(f"{__name__}.{module}").OPERATION
        if op.name != module:
            raise InvalidArgumentError(f"{__name__}.{module} declares operation {op.name!r}")
        out[op.name] = op
    return out


OPERATIONS: dict[str, Operation] = _load()
_BY_PLAN_TYPE: dict[str, Operation] = {t: op for op in OPERATIONS.values() for t in op.plan_types}


def operation(name: str) -> Operation:
    try:
        return OPERATIONS[name]
    except KeyError:
        raise InvalidArgumentError(f"unknown operation {name!r}; known: {', '.join(OPERATIONS)}") from None


def by_plan_type(plan_operation: str) -> Operation | None:
    """The operation making plans of type `plan_operation` (a saved plan's "operation")."""
    return _BY_PLAN_TYPE.get(plan_operation)


def by_command(command: str) -> Operation | None:
    return next((op for op in OPERATIONS.values() if op.command == command), None)


def health_signals() -> list[tuple[Operation, Health]]:
    """Every health signal with the operation it makes due, in the registry's order."""
    return [(op, h) for op in OPERATIONS.values() for h in op.health]


def by_dagster_name(name: str) -> Operation:
    return next(op for op in OPERATIONS.values() if op.dagster_key == name)


__all__ = ["Param", "Operation", "Health", "health_signals", "ALL_TABLES", "DV_TABLES", "EXPIRING_TABLES",
           "OPERATIONS", "MODULES", "operation", "by_plan_type", "by_command",
           "by_dagster_name", "partition_spec", "INT", "FLOAT", "BOOL", "STR", "CHOICE", "AGE", "INSTANT",
           "PARTITIONS", "STRINGS", "INTS", "NAME", "NAMES", "TASKS", "METADATA"]
