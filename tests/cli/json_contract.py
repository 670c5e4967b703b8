"""Validation of JSON output against the schemas shipped in the package (paimon_ops/schemas), for the tests."""
from __future__ import annotations

import re
from typing import Any

import jsonschema

import paimon_ops.schemas as schemas


def errors(document: Any) -> list[str]:
    """What makes `document` break the schema of the kind it declares (its `format`); [] when it conforms."""
    kind = schemas.kind_of(document)
    if kind is None:
        return [f"no known format: {str(document)[:200]}"]
    validator = jsonschema.Draft202012Validator(schemas.schema(kind))
    out = [f"{kind} at {'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message[:300]}"
           for e in validator.iter_errors(document)]
    out += _by_name(document)
    if kind == schemas.TABLES:  # each table's plan / report against its own schema
        for t in document.get("tables", []):
            if "result" in t:
                out += [f"{t['table']}: {e}" for e in errors(t["result"])]
    return out


# The executor's input in a plan keeps Paimon's and the planner's own encodings (docs/guides/json-and-upgrading.md); the
# partition expiry's `timestamp_string` is the raw text handed to the formatter.
_OPAQUE = frozenset({"planned_with", "tasks", "index_entries", "params", "preconditions", "timestamp_string"})
_ZONELESS = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?")


def _by_name(v: Any, where: str = "") -> list[str]:
    """Anywhere (schemas check the members they name): no millisecond fields (times are ISO, durations `*_s`) and
    no time without a zone."""
    out: list[str] = []
    if isinstance(v, dict):
        for k, x in v.items():
            if k in _OPAQUE:
                continue
            if k.endswith(("_ms", "_millis")):
                out.append(f"{where}/{k}: milliseconds (times are ISO 8601, durations seconds in *_s)")
            out += _by_name(x, f"{where}/{k}")
    elif isinstance(v, list):
        for i, x in enumerate(v):
            out += _by_name(x, f"{where}/{i}")
    elif isinstance(v, str) and _ZONELESS.fullmatch(v):
        out.append(f"{where}: {v!r} is a time without a zone")
    return out


def validated(document: Any) -> Any:
    problems = errors(document)
    assert not problems, "\n".join(problems[:10])
    return document
