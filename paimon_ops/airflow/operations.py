"""The maintenance operations the Airflow provider offers, as one declarative table: operation name -> the facade
method (`paimon_ops.api`) that plans it. Everything else — each operator's parameters, their types, defaults and
documentation — is read from the facade's signature and docstring with `inspect`, so the operators take exactly what
the facade (and the CLI built on it) takes. When the operation registry lands (issue 20), `FACADE` is replaced by it
here and nowhere else.

This module does not import Airflow (it is the part a test can check against the facade without it).
"""
from __future__ import annotations

import datetime as _dt
import inspect
import json
import operator
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from paimon_ops import api
from paimon_ops.errors import InvalidArgumentError

# operation name -> facade method, as `<attribute of po.Table>.<method>`
FACADE: dict[str, str] = {
    "compact": "maintenance.compact",
    "expire_snapshots": "maintenance.expire_snapshots",
    "expire_tags": "maintenance.expire_tags",
    "expire_partitions": "maintenance.expire_partitions",
    "remove_orphans": "maintenance.remove_orphans",
    "compact_manifests": "maintenance.compact_manifests",
    "create_tag": "tags.create",
    "delete_tags": "maintenance.delete_tags",
    "rename_tag": "tags.rename",
    "create_auto_tags": "maintenance.create_auto_tags",
    "rollback": "maintenance.rollback",
    "compact_postpone": "maintenance.compact_postpone",
    "rescale": "maintenance.rescale",
}

_OWNERS: dict[str, type] = {"maintenance": api.Maintenance, "tags": api.Tags}
REQUIRED = inspect.Parameter.empty


@dataclass(frozen=True)
class Parameter:
    name: str
    annotation: str     # the facade's annotation, as written
    default: Any        # REQUIRED when the facade has none
    positional: bool    # a name the facade takes positionally (tag names)
    doc: str            # the facade docstring's sentences about it ("" when it says nothing specific)

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def coerce(self, value: Any) -> Any:
        """The value as the facade takes it, from what a DAG gives (rendered templates are strings): instants as
        ISO 8601 with an offset or epoch ms, ages as Paimon durations ('3 d'), numbers and booleans from text,
        sequences from JSON lists."""
        if value is None or not isinstance(value, str):
            return value
        text = value.strip()
        a = self.annotation
        if "Instant" in a:
            from paimon_ops.timeutil import parse_instant
            return parse_instant(text, self.name)
        if "Age" in a:
            from paimon_ops.options import parse_duration
            return parse_duration(text, self.name)
        if re.match(r"^(int|float)\b", a):
            try:
                return (int if a.startswith("int") else float)(text)
            except ValueError:
                raise InvalidArgumentError(f"{self.name}={value!r}: expected a number") from None
        if a.startswith("bool"):
            if text.lower() in ("true", "1", "yes"):
                return True
            if text.lower() in ("false", "0", "no", ""):
                return False
            raise InvalidArgumentError(f"{self.name}={value!r}: expected true or false")
        if a.startswith(("Sequence", "Iterable", "list")):
            if text.startswith("["):
                try:
                    return json.loads(text)
                except ValueError as e:
                    raise InvalidArgumentError(f"{self.name}={value!r}: not a JSON list: {e}") from None
            return [text]
        return value


@dataclass(frozen=True)
class Operation:
    name: str
    facade: str                         # "maintenance.compact"
    doc: str                            # the facade method's docstring
    parameters: tuple[Parameter, ...]

    @property
    def summary(self) -> str:
        return self.doc.split("\n\n")[0].replace("\n", " ") if self.doc else self.name

    def parameter(self, name: str) -> Parameter:
        for p in self.parameters:
            if p.name == name:
                return p
        raise KeyError(name)

    def plan(self, table: api.Table, arguments: Mapping[str, Any]) -> Any:
        """The plan of this operation on `table` with these arguments (checked and coerced; None means the
        facade's default)."""
        known = {p.name for p in self.parameters}
        unknown = sorted(set(arguments) - known)
        if unknown:
            raise InvalidArgumentError(f"{self.name} takes no argument {', '.join(unknown)}; it takes "
                                       + (", ".join(sorted(known)) or "none"))
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for p in self.parameters:
            value = p.coerce(arguments.get(p.name))
            if p.positional:
                if value is None:
                    raise InvalidArgumentError(f"{self.name} needs {p.name}")
                args.append(value)
            elif value is not None:
                kwargs[p.name] = value
        method: Callable[..., Any] = operator.attrgetter(self.facade)(table)
        return method(*args, **kwargs)


def _doc_about(doc: str, name: str) -> str:
    """The docstring's sentences that name `name` (in backticks)."""
    sentences = re.split(r"(?<=\.)\s+(?=[A-Z`(])", " ".join(doc.split()))
    return " ".join(s for s in sentences if f"`{name}`" in s)


def from_facade(name: str, path: str) -> Operation:
    owner, _, method_name = path.partition(".")
    method = getattr(_OWNERS[owner], method_name)
    doc = inspect.getdoc(method) or ""
    params = []
    for p in inspect.signature(method).parameters.values():
        if p.name == "self":
            continue
        positional = p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
        default = p.default
        if p.kind is p.VAR_POSITIONAL:
            default = REQUIRED
        annotation = p.annotation if isinstance(p.annotation, str) else getattr(p.annotation, "__name__", "")
        params.append(Parameter(p.name, annotation, default, positional, _doc_about(doc, p.name)))
    return Operation(name, path, doc, tuple(params))


OPERATIONS: dict[str, Operation] = {name: from_facade(name, path) for name, path in FACADE.items()}


def jsonable(value: Any) -> Any:
    """A parameter default as JSON (ages as seconds, instants as ISO text)."""
    if value is REQUIRED:
        return None
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    if isinstance(value, _dt.datetime):
        return value.isoformat()
    return value


__all__ = ["FACADE", "OPERATIONS", "Operation", "Parameter", "REQUIRED", "from_facade", "jsonable"]
