"""Validation of JSON output against the schemas shipped in the package (paimon_ops/schemas), for the tests."""
from __future__ import annotations

from typing import Any

import jsonschema

from paimon_ops import schemas


def errors(document: Any) -> list[str]:
    """What makes `document` break the schema of the kind it declares (its `format`); [] when it conforms."""
    kind = schemas.kind_of(document)
    if kind is None:
        return [f"no known format: {str(document)[:200]}"]
    validator = jsonschema.Draft202012Validator(schemas.schema(kind))
    out = [f"{kind} at {'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message[:300]}"
           for e in validator.iter_errors(document)]
    if kind == schemas.TABLES:  # each table's plan / report against its own schema
        for t in document.get("tables", []):
            if "result" in t:
                out += [f"{t['table']}: {e}" for e in errors(t["result"])]
    return out


def validated(document: Any) -> Any:
    problems = errors(document)
    assert not problems, "\n".join(problems[:10])
    return document
