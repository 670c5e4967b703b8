"""The README's reference tables, generated from the operation registry (the facade's `api.OPERATIONS`), the Dagster
jobs and the plan types: nothing in them is kept by hand. Each table sits between `<!-- generated: NAME -->` and
`<!-- end -->` in README.md; `python docs/reference.py` rewrites them, tests/core/test_readme.py fails when they drift.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Callable

import paimon_ops.api as api
from paimon_ops.airflow.names import operator_class_name
from paimon_ops.execution.executor import step_actions
from paimon_ops.execution.plan import precondition_kinds, registered_plan_types
from paimon_ops.operations.model import AGE, BOOL, CHOICE, INSTANT, Operation, Param

README = Path(__file__).resolve().parents[1] / "README.md"
MARKER = re.compile(r"(<!-- generated: (?P<name>[a-z-]+) -->\n)(?P<body>.*?)(<!-- end -->)", re.S)


def _param(p: Param, flag: bool) -> str:
    """One parameter as a reader looks for it: its name (or CLI flag), its choices or kind, its default."""
    name = f"`{p.cli_flag}`" if flag and not p.positional else f"`{p.name}`"
    if p.kind == CHOICE and p.choices:
        name += " " + " \\| ".join(p.choices)
    elif p.kind in (AGE, INSTANT):
        name += f" ({'age' if p.kind == AGE else 'instant'})"
    if p.fallback is not None or (p.default not in (None, False) and p.kind != BOOL):
        shown = p.described[len(p.doc):].strip(" ()") if p.fallback is not None else f"default {p.default}"
        name += f" ({shown})"
    return name


def _params(op: Operation, flag: bool) -> str:
    """The operation's parameters; those of one exclusive group joined by `|`."""
    shown = [p for p in op.params if (p.cli and not p.cli_hidden) or not flag]
    out: list[str] = []
    seen: set[str] = set()
    for p in shown:
        if p.group:
            if p.group in seen:
                continue
            seen.add(p.group)
            out.append(" \\| ".join(_param(q, flag) for q in shown if q.group == p.group))
        else:
            out.append(_param(p, flag))
    if op.now is not None and not flag:
        out.append("`now`")
    return ", ".join(out) or "—"


def operations() -> str:
    """Every operation: its command, its facade method, its Dagster job, its Airflow operator."""
    lines = ["| operation | command line | Python (`po.Table`) | Dagster job | Airflow operator |",
             "|---|---|---|---|---|"]
    for op in api.OPERATIONS.values():
        job = f"`{op.dagster_job}`" if op.dagster_job else ("`paimon_nightly`" if op.nightly else "—") + f" ({op.manual_why})"
        job = f"`{op.dagster_job}`" if op.dagster_job else job
        lines.append(f"| {op.title}: {op.summary} | `paimon-ops {op.command}` | `{api.FACADE[op.name]}()` | {job} | "
                     f"`{operator_class_name(op.name)}` |")
    return "\n".join(lines) + "\n"


def cli_commands() -> str:
    """Every maintenance command with its flags (besides the common ones)."""
    lines = ["| command | flags |", "|---|---|"]
    for op in api.OPERATIONS.values():
        names = " ".join(p.name.upper() + ("…" if p.kind == "names" else "") for p in op.params if p.positional)
        lines.append(f"| `paimon-ops {op.command} WAREHOUSE DB.TABLE{' ' + names if names else ''}` | "
                     f"{_params(op, flag=True)}{' `--yes`' if op.confirm else ''} |")
    return "\n".join(lines) + "\n"


def airflow_operators() -> str:
    lines = ["| operator | facade | parameters |", "|---|---|---|"]
    for op in api.OPERATIONS.values():
        lines.append(f"| `{operator_class_name(op.name)}` | `{api.FACADE[op.name]}` | {_params(op, flag=False)} |")
    lines.append("| `PaimonApplyPlanOperator` | `load_plan(…).execute()` | `plan` (JSON or path, e.g. "
                 "`review.output[\"plan\"]`), `table` |")
    return "\n".join(lines) + "\n"


def dagster_jobs() -> str:
    from paimon_ops.dagster.jobs import JOBS  # (the Dagster integration: only this table needs it)
    lines = ["| job | operations (in run order) |", "|---|---|"]
    for name, (ops, description) in JOBS.items():
        lines.append(f"| `{name}` | {', '.join(ops) or '—'}: {description} |")
    return "\n".join(lines) + "\n"


def plan_enums() -> str:
    """The values a saved plan's enumerated members take."""
    types = registered_plan_types()
    rows = [("`operation` (the plan type)", ", ".join(f"`{t}`" for t in sorted(types))),
            ("`planned_by` (the operation whose planner made it)", ", ".join(f"`{o}`" for o in api.OPERATIONS)),
            ("`preconditions[].kind`", ", ".join(f"`{k}`" for k in sorted(precondition_kinds()))),
            ("`steps[].action`", ", ".join(f"`{a}`" for a in sorted(step_actions())))]
    return "\n".join(["| member | values |", "|---|---|"] + [f"| {m} | {v} |" for m, v in rows]) + "\n"


TABLES: dict[str, Callable[[], str]] = {
    "operations": operations, "cli-commands": cli_commands, "airflow-operators": airflow_operators,
    "dagster-jobs": dagster_jobs, "plan-enums": plan_enums,
}


def render(text: str) -> str:
    """`text` (the README) with every generated table rewritten."""
    def one(m: re.Match[str]) -> str:
        name = m.group("name")
        if name not in TABLES:
            raise KeyError(f"README.md: unknown generated table {name!r}; known: {', '.join(TABLES)}")
        return m.group(1) + TABLES[name]() + m.group(4)
    return MARKER.sub(one, text)


if __name__ == "__main__":
    new = render(README.read_text())
    README.write_text(new)
    print(f"rewrote the generated tables of {README}", file=sys.stderr)
