"""What an operation is: the declaration every module of `paimon_ops.operations` makes once — its parameters (a typed,
validated `Params` dataclass: names, kinds, defaults, exclusive groups, the table option each falls back to), the
table features it handles (its feature gate), its health signals, its CLI spelling and its place in Dagster.

The planner of an operation takes exactly its `Params` fields as keyword arguments (same names, same types); the
facade method, the CLI flags, the Dagster run config, the Airflow operator, the feature gate and the README tables
are derived from the declaration (`tests/core/test_registry.py` proves each derivation).

This module imports nothing of the engine but the feature catalogue and the options: the planners import their
operation's declaration, so it sits below them.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import types
import typing
from dataclasses import dataclass, field
from typing import Annotated, Any, Callable, Mapping

from paimon_ops.errors import InvalidArgumentError, arg
from paimon_ops.features import Feature, Gate
from paimon_ops.options import Option, format_duration, looks_like_duration, parse_duration
from paimon_ops.timeutil import instant_ms, parse_instant

# ---------------------------------------------------------------------------------------------- value types
# The types a planner receives. Most are plain Python types; these say what plain types cannot (to a type checker
# they are the plain type).
_INSTANT_MS = "an instant as epoch milliseconds"
_POSITIONAL_NAME = "a name given positionally"
InstantMs = Annotated[int, _INSTANT_MS]  # given as ISO 8601 with a zone, an aware datetime or epoch ms
TagName = Annotated[str, _POSITIONAL_NAME]  # tag names
Name = TagName  # any other name given positionally: a branch, a consumer
Partitions = list[dict[str, str]]      # partition specs, each {key: value}

# Kinds of parameter: how a value is given as text (CLI flags, Dagster config, Airflow templates) and what the facade
# takes. Derived from a field's type (`kind_of`).
INT, FLOAT, BOOL, STR, CHOICE = "int", "float", "bool", "str", "choice"
AGE = "age"                # a duration: '3 d', '36 h', 'PT1H' -> timedelta
INSTANT = "instant"        # ISO 8601 with a zone or epoch ms -> epoch ms
PARTITIONS = "partitions"  # 'k=v,k2=v2' (repeatable) -> [{k: v, k2: v2}]
STRINGS = "strings"        # 'a,b' -> ['a', 'b']
INTS = "ints"              # [1, 2]
NAME = "name"              # a positional name (tag names)
NAMES = "names"            # one or more positional names
KINDS = (INT, FLOAT, BOOL, STR, CHOICE, AGE, INSTANT, PARTITIONS, STRINGS, INTS, NAME, NAMES)
KIND_WORDS = {INT: "an integer", FLOAT: "a number", BOOL: "true or false", STR: "text", CHOICE: "one of its choices",
              AGE: "an age (a timedelta)", INSTANT: "an instant (an aware datetime or epoch ms)",
              PARTITIONS: "a list of partitions ({key: value})", STRINGS: "a list of text", INTS: "a list of integers",
              NAME: "a name", NAMES: "a list of names"}

# Where an operation's work runs: "tasks" may start a runner (the CLI offers --spark-master / --local), "metadata"
# changes metadata only, in this process.
TASKS, METADATA = "tasks", "metadata"


@dataclass(frozen=True)
class Param:
    """One parameter of an operation, as the faces see it (derived from a `Params` field, `Params.declared`)."""

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
    fallback: Any = None            # the default when no parameter of its exclusive group is given (shown in --help)

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
        if self.fallback is not None:
            shown = format_duration(self.fallback) if isinstance(self.fallback, _dt.timedelta) else self.fallback
            return f"{self.doc} (default {shown})"
        if self.option is not None and "default" not in self.doc:
            fallback = self.option.default_text.replace("`", "")
            return f"{self.doc} (default: the table's {self.option.key}" + \
                ("" if fallback.startswith("—") else f", else {fallback}") + ")"
        return self.doc

    def coerce(self, value: Any, words: str | None = None, age_instead: str | None = None, from_text: bool = True) -> Any:
        """The value as the planner takes it, from text (the CLI, Dagster config, Airflow templates) or from Python;
        None stays None (the default). Errors name the parameter as `words` (the caller's spelling); an age given
        to an instant is refused pointing at `age_instead` (the parameter taking an age). `from_text` False (Python
        callers of the facade): text is accepted only where the parameter takes text."""
        if value is None:
            return None
        what = words or arg(self.name)
        k = self.kind
        if isinstance(value, str):
            if k == NAME:
                return value  # exactly as given: a name is validated where it is used, never altered
            if not from_text and k not in (STR, CHOICE, NAMES, STRINGS):
                raise InvalidArgumentError(f"{what} must be {KIND_WORDS[k]}, not str {value!r}")
            text = value.strip()
            if k == INSTANT:
                if looks_like_duration(text):
                    raise InvalidArgumentError(f"{what} {value!r} is an age; {what} takes an instant "
                                               "(2026-11-20T00:00:00Z or epoch ms)"
                                               + (f": use {age_instead} for an age" if age_instead else ""))
                return parse_instant(text, what)
            if k == AGE:
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
                return [value]
            return text
        if k == INSTANT:  # an aware datetime or epoch ms (a naive datetime is refused)
            return instant_ms(value, self.name)
        if k == AGE:
            if from_text and isinstance(value, (int, float)) and not isinstance(value, bool):  # seconds (JSON)
                value = _dt.timedelta(seconds=value)
            if not isinstance(value, _dt.timedelta):
                raise InvalidArgumentError(f"{what} must be an age (a timedelta), not {type(value).__name__} {value!r}")
            if value < _dt.timedelta(0):
                raise InvalidArgumentError(f"{what} must not be negative, got {value}")
            return value
        if k == PARTITIONS and isinstance(value, (list, tuple)):
            return [partition_spec(v, what) if isinstance(v, str) else dict(v) for v in value]
        if k in (STRINGS, INTS, NAMES) and isinstance(value, (tuple, set, frozenset, typing.Iterator)):
            return list(value)
        if k in (INT, FLOAT) and isinstance(value, (int, float)) and not isinstance(value, bool):
            return self._checked(value, what)
        return value

    def _checked(self, number: float, what: str) -> float:
        if self.minimum is not None and number < self.minimum:
            raise InvalidArgumentError(f"{what} must be at least {self.minimum:g}, got {number:g}")
        return number


def partition_spec(text: str, what: str = "partition") -> dict[str, str]:
    """'k=v,k2=v2' -> {k: v, k2: v2}."""
    out = {}
    for part in text.split(","):
        k, sep, v = part.partition("=")
        if not sep or not k.strip():
            raise InvalidArgumentError(f"{what} {text!r}: expected key=value[,key=value]")
        if k.strip() in out:
            raise InvalidArgumentError(f"{what} {text!r}: key {k.strip()!r} is given twice")
        out[k.strip()] = v.strip()
    return out


# ---------------------------------------------------------------------------------------------- Params
_PARAM = "paimon_ops.param"  # the dataclass field metadata key holding a field's declaration


def param(doc: str, *, default: Any = None, choices: tuple[str, ...] = (), option: Option[Any] | None = None,
          flag: str | None = None, metavar: str | None = None, group: str | None = None, minimum: float | None = None,
          cli: bool = True, cli_hidden: bool = False, dagster: bool = True, engine_names: tuple[str, ...] = (),
          by_table_kind: Mapping[str, tuple[tuple[str, ...], Any]] | None = None, fallback: Any = None) -> Any:
    """One field of an operation's `Params`: its documentation, default and how the faces offer it (see `Param`).
    `option`: the table option it falls back to when not given (the planner reads it); `group`: the fields of one
    group exclude each other; `fallback`: the value used when no field of its group is given."""
    info = dict(doc=doc, choices=tuple(choices), option=option, flag=flag, metavar=metavar, group=group,
                minimum=minimum, cli=cli, cli_hidden=cli_hidden, dagster=dagster, engine_names=tuple(engine_names),
                by_table_kind=by_table_kind, fallback=fallback)
    return field(default=default, metadata={_PARAM: info})


def now_param() -> Any:
    """The `now` of an operation that depends on the time (the clock when not given; hidden --now-ms on the command
    line, for tests)."""
    return param("the time the operation runs at (default: the clock)", cli=False, dagster=False)


def _strip_optional(tp: Any) -> Any:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(members) == 1:
            return members[0]
    return tp


def kind_of(tp: Any, choices: tuple[str, ...] = ()) -> str:
    """The kind of parameter a field's type declares (`T | None` as T)."""
    tp = _strip_optional(tp)
    if tp == InstantMs:
        return INSTANT
    if tp == TagName:
        return NAME
    simple = {bool: BOOL, int: INT, float: FLOAT, _dt.timedelta: AGE}
    if tp is str:
        return CHOICE if choices else STR
    if tp in simple:
        return simple[tp]
    if typing.get_origin(tp) is list:
        item = typing.get_args(tp)[0]
        if item == TagName:
            return NAMES
        if item is str:
            return STRINGS
        if item is int:
            return INTS
        if typing.get_origin(item) is dict:
            return PARTITIONS
    raise InvalidArgumentError(f"no parameter kind for type {tp!r}")


@dataclass(frozen=True)
class Params:
    """The parameters of an operation, declared once as a frozen dataclass of `param(...)` fields (a subclass per
    operation, in its module). An instance is what the faces hand the planner: every value converted and validated
    (`Operation.coerce`)."""

    @classmethod
    def declared(cls) -> tuple[Param, ...]:
        """The fields as `Param`s, in declaration order."""
        hints = typing.get_type_hints(cls, include_extras=True)
        out = []
        for f in dataclasses.fields(cls):
            info = dict(f.metadata.get(_PARAM) or {})
            if not info:
                raise InvalidArgumentError(f"{cls.__name__}.{f.name} is not declared with param(...)")
            default = None if f.default is dataclasses.MISSING else f.default
            out.append(Param(f.name, kind_of(hints[f.name], info["choices"]), default=default, **info))
        return tuple(out)

    @classmethod
    def types(cls) -> dict[str, Any]:
        """field -> its type (what the planner's keyword of that name is annotated with)."""
        hints = typing.get_type_hints(cls, include_extras=True)
        return {f.name: hints[f.name] for f in dataclasses.fields(cls)}

    def arguments(self) -> dict[str, Any]:
        """The planner's keyword arguments."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


# ---------------------------------------------------------------------------------------------- Health
# Which tables have a health signal: every table, those with deletion vectors, those whose partitions expire
# (`partition.expiration-time`).
ALL_TABLES, DV_TABLES, EXPIRING_TABLES = "all", "deletion-vectors", "expiring-partitions"


@dataclass(frozen=True)
class Health:
    """A health signal that makes an operation due, by one name everywhere: the engine measures it
    (`paimon_ops.health.MEASUREMENTS`), the Airflow health sensor waits for it, Dagster has an asset check of that name
    on the table (WARN while due) and the `sensor` requesting the operation's job when it fires (the registry test
    checks that every one exists)."""

    signal: str                # its name
    sensor: str                # the Dagster sensor's name
    tables: str = ALL_TABLES   # which tables have it

    @property
    def check(self) -> str:
        """The Dagster asset check's name: the signal's."""
        return self.signal


# ---------------------------------------------------------------------------------------------- Operation
@dataclass(frozen=True)
class Mode:
    """One mode of an operation that has several (compaction): gated on its own."""

    name: str
    handles: frozenset[Feature]  # the table features this mode handles (paimon_ops.features bundles)


@dataclass(frozen=True)
class Operation:
    """One maintenance operation."""

    name: str                        # snake case: the Airflow operator, the facade method's own name
    title: str                       # "snapshot expiry"
    summary: str                     # one line (CLI help)
    params_type: type[Params]        # its parameters, declared once
    doc: str = ""                    # the facade method's documentation (default: the summary)
    changes_table: bool = True
    placement: str = TASKS
    cli_name: str | None = None      # default: the name in kebab case
    confirm: bool = False            # the CLI asks --yes before executing (cannot be undone)
    required_groups: tuple[str, ...] = ()  # exclusive groups of which one parameter must be given
    dagster_name: str | None = None  # its name in Dagster (ops, metadata, jobs); None: the name
    dagster_job: str | None = None   # the Dagster job running exactly it; None: not a Dagster job (`manual_why`)
    manual_why: str = ""             # why a table-changing operation has no Dagster job
    nightly: bool = False            # part of Dagster's nightly maintenance job
    # Order in a run of several operations, lowest first — the engine's one run order (Dagster's nightly and due runs
    # follow it): automatic tags first (they hold snapshots), partitions expire before anything is compacted,
    # compaction and manifest compaction before snapshot expiry (which then expires by the table's retention the
    # snapshots the run itself committed too), tags expire after snapshots, orphans last.
    stage: int = 50
    reclaims: bool = True            # its deletes free storage (compaction's inputs stay until expiry reclaims them)
    health: tuple[Health, ...] = ()  # what makes it due (a Dagster check and sensor each)
    # The feature gate: the table features it handles (paimon_ops.features bundles); an operation with `modes` is
    # gated per mode instead. A feature not named here is refused for it.
    handles: frozenset[Feature] = frozenset()
    modes: tuple[Mode, ...] = ()
    cli_check: Callable[[Any, Any], None] | None = None  # (plan, po.Table) -> None: refusals of the CLI
    # Dagster: does it apply to a table (TableSpec) given its config section? Default: always.
    applies: Callable[[Any, Any], bool] | None = field(default=None, compare=False)
    # Derived from `params_type`: its parameters but `now`, and `now` (the clock it runs at, when it takes one).
    params: tuple[Param, ...] = field(init=False)
    now: Param | None = field(init=False)

    def __post_init__(self) -> None:
        declared = self.params_type.declared()
        object.__setattr__(self, "params", tuple(p for p in declared if p.name != "now"))
        object.__setattr__(self, "now", next((p for p in declared if p.name == "now"), None))

    @property
    def takes_now(self) -> bool:
        return self.now is not None

    @property
    def command(self) -> str:
        return self.cli_name or self.name.replace("_", "-")

    @property
    def dagster_key(self) -> str:
        return self.dagster_name or self.name

    def gate(self, mode: str | None = None) -> Gate | None:
        """The feature gate of this operation (of `mode`, for an operation with modes); None — refused by the gate —
        for a mode it does not declare."""
        if not self.modes:
            return Gate(self.name, self.handles)
        found = next((m for m in self.modes if m.name == mode), None)
        return None if found is None else Gate(f"{self.name}:{found.name}", found.handles)

    def gates(self) -> tuple[Gate, ...]:
        """Every gate of the operation (one per mode)."""
        if not self.modes:
            return (Gate(self.name, self.handles),)
        return tuple(Gate(f"{self.name}:{m.name}", m.handles) for m in self.modes)

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

    def coerce(self, values: Mapping[str, Any], words: Mapping[str, str] | None = None,
               from_text: bool = True) -> dict[str, Any]:
        """Validated planner arguments from given values (None: the default). Unknown names and two parameters of
        one exclusive group are refused, in the caller's words; a group none of whose parameters is given gets its
        `fallback`. `from_text` False: values from Python, where text stands only for text (`Param.coerce`)."""
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
                                       age_instead=(words.get(age) or arg(age)) if age else None,
                                       from_text=from_text)
        if self.now is not None and values.get("now") is not None:
            out["now"] = self.now.coerce(values["now"], words.get("now"), from_text=from_text)
        groups: dict[str, list[str]] = {}
        for p in self.params:
            if p.group and out.get(p.name) is not None and out.get(p.name) is not False:  # (0 is given)
                kind = {INSTANT: " (an instant)", AGE: " (an age)"}.get(p.kind, "")
                groups.setdefault(p.group, []).append((words.get(p.name) or arg(p.name)) + kind)
        for given in groups.values():
            if len(given) > 1:
                raise InvalidArgumentError(f"give {' or '.join(given)}, not both")
        for p in self.params:
            if p.fallback is not None and p.group not in groups:
                out[p.name] = p.fallback
        return out

    def validated(self, values: Mapping[str, Any], words: Mapping[str, str] | None = None,
                  from_text: bool = True) -> Params:
        """The `Params` of these values (converted and checked by `coerce`; what is not given has its default)."""
        return self.params_type(**self.coerce(values, words, from_text))


__all__ = ["Param", "Params", "param", "now_param", "kind_of", "InstantMs", "TagName", "Name", "Partitions",
           "Operation", "Mode", "Health", "ALL_TABLES", "DV_TABLES", "EXPIRING_TABLES", "partition_spec", "INT",
           "FLOAT", "BOOL", "STR", "CHOICE", "AGE", "INSTANT", "PARTITIONS", "STRINGS", "INTS", "NAME", "NAMES",
           "TASKS", "METADATA", "KINDS"]
