"""The one place the docs read the operation registry (`paimon_ops.operations`): its public surface — `OPERATIONS`, and
per operation its parameters with name, kind, doc, default and CLI flag — as plain records the reference pages are
rendered from. When the registry changes shape, `operations()` is the function to change; nothing else in the docs
tooling touches the registry.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ParamView:
    name: str                 # the facade's keyword
    kind: str                 # the registry's kind (int, age, instant, choice, …)
    doc: str                  # with where its default comes from ("default: the table's …")
    default: Any              # None: the table's option, or the planner's own default
    choices: tuple[str, ...]
    flag: str | None          # the CLI flag (or positional name); None: not offered on the command line
    positional: bool
    group: str | None         # exclusive group
    dagster: bool             # a field of the Dagster run config
    option: str | None        # the table option it defaults from


@dataclass(frozen=True)
class OperationView:
    name: str                 # snake case: the facade method, the Airflow operator's stem
    title: str
    summary: str
    command: str              # `paimon-ops <command>`
    facade: str               # "maintenance.compact"
    changes_table: bool
    placement: str            # "tasks" (in-process or Spark) | "metadata"
    confirm: bool             # the CLI asks for --yes
    dagster_job: str | None
    nightly: bool
    health: tuple[tuple[str, str], ...]  # (asset check, sensor) per health signal
    params: tuple[ParamView, ...]

    @property
    def airflow_operator(self) -> str:
        from paimon_ops.airflow.names import operator_class_name
        return operator_class_name(self.name)


def _facade_path(op: Any) -> str:
    """`<attribute of po.Table>.<method>`: declared on the operation, or found on the facade classes by the operation
    a method is bound to."""
    if getattr(op, "facade", ""):
        return str(op.facade)
    from paimon_ops import api
    for attribute, owner in (("maintenance", api.Maintenance), ("tags", api.Tags)):
        for name, member in vars(owner).items():
            if getattr(member, "operation", None) is op:
                return f"{attribute}.{name}"
    raise LookupError(f"operation {op.name} has no facade method")


def operations() -> list[OperationView]:
    """Every registered operation, in the registry's (the CLI's) order."""
    from paimon_ops.api import OPERATIONS
    out = []
    for op in OPERATIONS.values():
        params = tuple(
            ParamView(name=p.name, kind=p.kind, doc=p.described, default=p.default, choices=tuple(p.choices),
                      flag=p.cli_flag if p.cli and not p.cli_hidden else None, positional=p.positional,
                      group=p.group, dagster=p.dagster, option=p.option.key if p.option is not None else None)
            for p in op.params if not p.cli_hidden)
        out.append(OperationView(
            name=op.name, title=op.title, summary=op.summary, command=op.command, facade=_facade_path(op),
            changes_table=op.changes_table, placement=op.placement, confirm=op.confirm, dagster_job=op.dagster_job,
            nightly=op.nightly, health=tuple((h.check, h.sensor) for h in op.health), params=params))
    return out
