"""The JSON contract of paimon-ops (docs/guides/json-and-upgrading.md): every JSON document the CLI prints, a plan saves or a
report records carries `format` (what it is, `paimon-ops-<kind>/<major>`) and `version` (the package's). One
envelope per kind of output, each described by a JSON Schema (draft 2020-12) shipped beside this module:

* `paimon-ops-list/1`   list commands (tables, snapshots, tags, files, options, sample): `rows`, one object each;
* `paimon-ops-plan/1`   a plan — what `--dry-run --json` prints and `paimon-ops apply` executes;
* `paimon-ops-report/1` what an execution did;
* `paimon-ops-tables/1` a maintenance command over a table pattern: one plan / report / error per table;
* `paimon-ops-error/1`  a failure: `error` with its type, one-line message and, where known, path / option / endpoint.

Times are ISO 8601 with a zone (UTC "Z", or the offset of the zone they are local to); durations are seconds, as
JSON numbers, in fields named `*_s`; partitions are `{key: typed value}`; sizes are bytes."""
from __future__ import annotations

import json
from functools import cache
from importlib import resources
from importlib.metadata import PackageNotFoundError, version
from typing import Any

LIST = "list"
PLAN = "plan"
REPORT = "report"
TABLES = "tables"
ERROR = "error"
KINDS = (LIST, PLAN, REPORT, TABLES, ERROR)


def format_of(kind: str) -> str:
    return f"paimon-ops-{kind}/1"


@cache
def package_version() -> str:
    try:
        return version("paimon-ops")
    except PackageNotFoundError:  # a source tree without installation
        return "0.0.0+unknown"


def envelope(kind: str, **fields: Any) -> dict[str, Any]:
    """`{"format": …, "version": …, **fields}`: the head every JSON document of `kind` starts with."""
    return {"format": format_of(kind), "version": package_version(), **fields}


@cache
def schema(kind: str) -> dict[str, Any]:
    """The JSON Schema of a kind of output (shipped as paimon_ops/schemas/<kind>.schema.json)."""
    if kind not in KINDS:
        raise KeyError(f"no schema for {kind!r}; kinds: {', '.join(KINDS)}")
    return json.loads(resources.files(__name__).joinpath(f"{kind}.schema.json").read_text(encoding="utf-8"))


def kind_of(document: Any) -> str | None:
    """The kind a JSON document declares in its `format` (None if it declares none this version knows)."""
    fmt = document.get("format") if isinstance(document, dict) else None
    return next((k for k in KINDS if fmt == format_of(k)), None)


__all__ = ["KINDS", "LIST", "PLAN", "REPORT", "TABLES", "ERROR", "format_of", "package_version", "envelope", "schema",
           "kind_of"]
