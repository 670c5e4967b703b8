"""The generated reference pages, as Markdown: rendered from the code at every build (docs/hooks/paimon_docs.py adds
them to the site) and by tests/docs, which compare them with the code they come from. Nothing here is written by
hand: the operations from the registry (through `registry_view`, the one adapter), the command line from its argparse
parser, the options from the options catalogue, the JSON contract from the shipped schemas.
"""
from __future__ import annotations

import json
import os
import re
from contextlib import contextmanager
from typing import Any, Iterator

import registry_view

GENERATED_NOTE = ("!!! info \"Generated from the code\"\n    This page is generated at every build from {source}; "
                  "it cannot disagree with the code.\n")

_KIND_WORDS = {
    "int": "integer", "float": "number", "bool": "flag", "str": "text", "choice": "one of the choices",
    "age": "age (`'3 d'`, `'12 h'`, `PT30M`)", "instant": "instant (ISO 8601 with a zone, or epoch ms)",
    "partitions": "partitions (`k=v[,k2=v2]`, repeatable)", "strings": "names (`a,b`)", "ints": "integers",
    "name": "a name (positional)", "names": "names (positional, one or more)",
}


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _default(p: registry_view.ParamView) -> str:
    if p.positional:
        return "required"
    if p.kind == "bool":
        return "off"
    if p.default is None:
        return "—"
    return f"`{p.default}`"


def _kind(p: registry_view.ParamView) -> str:
    if p.kind == "choice" and p.choices:
        return " \\| ".join(f"`{c}`" for c in p.choices)
    return _KIND_WORDS.get(p.kind, p.kind)


# ---------------------------------------------------------------------------------------------- operations
def operations_page() -> str:
    ops = registry_view.operations()
    lines = ["# Operations", "",
             GENERATED_NOTE.format(source="the operation registry (`paimon_ops/operations/`)"),
             "Every maintenance operation is declared once, in the operation registry; the command line, the Python "
             "facade, `paimon-ops apply`, the Dagster jobs and run config and the Airflow operators are derived from "
             "that one declaration. What each operation does to a table, and why, is in the guide "
             "[What each operation does](../guides/operations.md).", "",
             "| operation | command line | Python (`t`: a table) | Dagster job | Airflow operator |",
             "|---|---|---|---|---|"]
    for op in ops:
        lines.append(f"| [{op.title}](#{op.name}) | `{op.command}` | `t.{op.facade}` | "
                     + (f"`{op.dagster_job}`" if op.dagster_job else "—") + f" | `{op.airflow_operator}` |")
    lines.append("")
    for op in ops:
        lines += [f"## {op.title[0].upper() + op.title[1:]} {{#{op.name}}}", "", f"{op.summary[0].upper() + op.summary[1:]}.", ""]
        where = ("in this process, or on Spark when the plan is large (`--local`, `--spark-master`, `--spark-remote`)"
                 if op.placement == "tasks" else "in this process (metadata and deletes only)")
        facts = [f"**Command line:** `paimon-ops {op.command} WAREHOUSE TABLE` — [help](cli.md#paimon-ops-{op.command})",
                 f"**Python:** `t.{op.facade}(…)` returns a plan; `.execute()` runs it",
                 f"**Airflow:** `{op.airflow_operator}`",
                 f"**Runs:** {where}"]
        if op.dagster_job:
            facts.insert(2, f"**Dagster:** job `{op.dagster_job}`" + (", and the nightly job `paimon_nightly`"
                                                                        if op.nightly else ""))
        if op.confirm:
            facts.append("**Cannot be undone:** the command line asks for `--yes`")
        if op.health:
            facts.append("**Made due by:** " + ", ".join(f"the check `{c}` (sensor `{s}`)" for c, s in op.health))
        lines += [f"* {f}" for f in facts] + [""]
        if op.params:
            lines += ["| parameter | command line | takes | default | meaning |", "|---|---|---|---|---|"]
            for p in op.params:
                flag = f"`{p.flag}`" if p.flag else "— (Python, Dagster, Airflow)"
                doc = p.doc + (f" (exclusive with the other `{p.group}` parameters)" if p.group else "")
                lines.append(f"| `{p.name}` | {flag} | {_kind(p)} | {_default(p)} | {_cell(doc)} |")
            lines.append("")
        else:
            lines += ["No parameters.", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- command line
@contextmanager
def _columns(n: int) -> Iterator[None]:
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(n)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = before


def cli_help() -> dict[str, str]:
    """`paimon-ops --help` and every subcommand's `--help`, as the command prints them (100 columns)."""
    import argparse

    from paimon_ops.cli import build_parser
    with _columns(100):
        parser = build_parser()
        out = {"": parser.format_help()}
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        for name, sp in sub.choices.items():
            out[name] = sp.format_help()
    return out


def cli_page() -> str:
    helps = cli_help()
    lines = ["# Command line", "",
             GENERATED_NOTE.format(source="the command's own parser (`paimon_ops.cli.build_parser`)"),
             "Every command takes `--json` (one JSON document on stdout, see [JSON Schemas](schemas.md)) and exits "
             "with status 2 on an error, saying what went wrong in one line. Every maintenance command takes "
             "`--dry-run` and a table pattern instead of one table. A walk through the commands is in "
             "[Getting started: command line](../getting-started/cli.md).", "",
             "## paimon-ops", "", "```text", helps[""].rstrip(), "```", ""]
    for name, text in helps.items():
        if name:
            lines += [f"## paimon-ops {name}", "", "```text", text.rstrip(), "```", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- options
def options_page() -> str:
    from paimon_ops.options import render_readme_tables
    lines = ["# Options", "",
             GENERATED_NOTE.format(source="the options catalogue (`paimon_ops/options.py`)"),
             "paimon-ops honours Paimon's own table options with Paimon's defaults, and adds a few of its own in the "
             "same dotted style (marked \"paimon-ops' own\"). Set them on the table (`ALTER TABLE … SET`), for every "
             "table of a command with `-o KEY=VALUE`, in Python with `Catalog(warehouse, options=…)`, or in the "
             "Dagster resource's `options`; an operation's arguments and flags override them. Every option is read "
             "only through the catalogue: a bad value fails in one line naming the option and the table. Where a "
             "Paimon version's default differs, it is noted beside the default.", ""]
    for line in render_readme_tables().splitlines():
        m = re.fullmatch(r"\*\*(.+)\*\*", line)
        if m:
            title = m.group(1)
            head, paren, rest = title.partition(" (")
            lines += [f"## {head}", ""]
            if paren:
                lines += [f"*({rest}*", ""]
            continue
        lines.append(line)
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------- JSON schemas
def _type_of(spec: dict[str, Any]) -> str:
    if "const" in spec:
        return f"`{json.dumps(spec['const'])}`"
    if "enum" in spec:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in spec["enum"])
    if "$ref" in spec:
        return spec["$ref"].rsplit("/", 1)[-1]
    t = spec.get("type")
    if isinstance(t, list):
        return " \\| ".join(t)
    if t == "array" and isinstance(spec.get("items"), dict):
        return f"array of {_type_of(spec['items'])}"
    if t:
        return str(t)
    for key in ("oneOf", "anyOf"):
        if key in spec:
            return " \\| ".join(_type_of(s) for s in spec[key])
    return "any"


def schemas_page() -> str:
    from paimon_ops import schemas
    lines = ["# JSON Schemas", "",
             GENERATED_NOTE.format(source="the JSON Schemas shipped in the package (`paimon_ops/schemas/`)"),
             "Every `--json` output, saved plan and report is one JSON object that starts with `format` (what it is, "
             "`paimon-ops-<kind>/<major>`) and `version` (the paimon-ops that wrote it). Each kind has a JSON Schema "
             "(draft 2020-12) shipped in the package: `paimon_ops.schemas.schema(\"<kind>\")` loads it. How the "
             "formats are versioned is in [JSON output and upgrading](../guides/json-and-upgrading.md).", "",
             "| `format` | schema | what it is |", "|---|---|---|"]
    for kind in schemas.KINDS:
        s = schemas.schema(kind)
        lines.append(f"| `{schemas.format_of(kind)}` | [{kind}](#{kind}) | {_cell(s.get('title', ''))} |")
    lines.append("")
    for kind in schemas.KINDS:
        s = schemas.schema(kind)
        lines += [f"## {kind} {{#{kind}}}", "", f"**`{schemas.format_of(kind)}`** — {s.get('title', '')}.", ""]
        if s.get("description"):
            lines += [s["description"], ""]
        required = set(s.get("required", ()))
        lines += ["| member | type | required | meaning |", "|---|---|---|---|"]
        for name, spec in s.get("properties", {}).items():
            lines.append(f"| `{name}` | {_type_of(spec)} | {'yes' if name in required else ''} | "
                         f"{_cell(spec.get('description', ''))} |")
        lines += ["", f"??? note \"The whole schema: `paimon_ops/schemas/{kind}.schema.json`\"", "",
                  "    ```json"]
        lines += ["    " + line for line in json.dumps(s, indent=2).splitlines()]
        lines += ["    ```", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- Airflow operators
def airflow_operators_section() -> str:
    """One operator per registered operation: its parameters (the facade's keywords) with defaults and docs."""
    lines = ["## Operators, one per operation {#operators}", "",
             "Generated from the operation registry: each operator takes `table` (`db.table`), `conn_id` (default "
             "`paimon_default`) and `dry_run`, then exactly the operation's parameters below; every argument is "
             "templated. Ages are Paimon durations (`\"3 d\"`) or timedeltas, instants ISO 8601 with an offset or "
             "epoch ms.", ""]
    for op in registry_view.operations():
        lines += [f"### {op.airflow_operator}", "", f"{op.summary[0].upper() + op.summary[1:]} "
                  f"(`t.{op.facade}`; [the operation](operations.md#{op.name})).", ""]
        if op.params:
            lines += ["| parameter | takes | default | meaning |", "|---|---|---|---|"]
            for p in op.params:
                lines.append(f"| `{p.name}` | {_kind(p)} | {_default(p)} | {_cell(p.doc)} |")
            lines.append("")
    return "\n".join(lines)


PAGES = {
    "reference/operations.md": operations_page,
    "reference/cli.md": cli_page,
    "reference/options.md": options_page,
    "reference/schemas.md": schemas_page,
}
