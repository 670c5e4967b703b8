"""The maintenance operations the Airflow provider offers: the operation registry (`paimon_ops.operations`), as
Airflow operators see it. Each operator's parameters, their defaults and documentation come from the registry (which
a test checks against the facade); the annotation shown in an operator's documentation is the facade's own.

This module does not import Airflow (it is the part a test can check against the facade without it).
"""
from __future__ import annotations

import datetime as _dt
import inspect
from dataclasses import dataclass
from typing import Any, Mapping

import paimon_ops.api as api
import paimon_ops.operations.model as registry
from paimon_ops.errors import InvalidArgumentError

# operation name -> facade method, as `<attribute of po.Table>.<method>` (from the registry)
FACADE: dict[str, str] = dict(api.FACADE)

_OWNERS: dict[str, type] = {"maintenance": api.Maintenance, "tags": api.Tags}
REQUIRED = inspect.Parameter.empty


@dataclass(frozen=True)
class Parameter:
    name: str
    annotation: str     # the facade's annotation, as written
    default: Any        # REQUIRED for the names the facade takes positionally
    positional: bool    # a name the facade takes positionally (tag names)
    doc: str            # the registry's documentation of it
    param: registry.Param

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def coerce(self, value: Any) -> Any:
        """The value as the facade takes it, from what a DAG gives (rendered templates are strings): instants as
        ISO 8601 with an offset or epoch ms, ages as Paimon durations ('3 d'), numbers and booleans from text,
        sequences from JSON lists."""
        return self.param.coerce(value, self.name)


@dataclass(frozen=True)
class Operation:
    name: str
    facade: str                         # "maintenance.compact"
    doc: str                            # the facade method's docstring
    parameters: tuple[Parameter, ...]
    registered: registry.Operation

    @property
    def summary(self) -> str:
        return self.doc.split("\n\n")[0].replace("\n", " ") if self.doc else self.name

    def parameter(self, name: str) -> Parameter:
        for p in self.parameters:
            if p.name == name:
                return p
        raise InvalidArgumentError(f"{self.name} has no parameter {name!r}; its parameters: "
                                   + ", ".join(p.name for p in self.parameters))

    def plan(self, table: api.Table, arguments: Mapping[str, Any]) -> Any:
        """The plan of this operation on `table` with these arguments (checked and coerced by the registry; None
        means the default)."""
        return api.plan_operation(table, self.registered, arguments, {p.name: p.name for p in self.parameters})


def from_registry(op: registry.Operation) -> Operation:
    owner, _, method_name = api.FACADE[op.name].partition(".")
    method = getattr(_OWNERS[owner], method_name)
    annotations = {p.name: p.annotation if isinstance(p.annotation, str) else getattr(p.annotation, "__name__", "")
                   for p in inspect.signature(method).parameters.values()}
    params = [*op.params, *([op.now] if op.now is not None else [])]
    return Operation(op.name, api.FACADE[op.name], inspect.getdoc(method) or "", tuple(
        Parameter(p.name, annotations.get(p.name, ""), REQUIRED if p.positional else p.default, p.positional,
                  p.described, p) for p in params), op)


OPERATIONS: dict[str, Operation] = {name: from_registry(op) for name, op in api.OPERATIONS.items()}


def jsonable(value: Any) -> Any:
    """A parameter default as JSON (ages as seconds, instants as ISO text)."""
    if value is REQUIRED:
        return None
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    if isinstance(value, _dt.datetime):
        return value.isoformat()
    return value


__all__ = ["FACADE", "OPERATIONS", "Operation", "Parameter", "REQUIRED", "from_registry", "jsonable"]
