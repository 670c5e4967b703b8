"""The warehouse description a code location loads from: every selected table's `TableSpec` (what the definitions
are built from: identity, schema, options, tag timing …) written to one JSON file, so that building the definitions
of thousands of tables reads no table — a code server, and every run worker, loads in a fraction of a second and
touches no storage at load (the model: dagster-dbt building from a dbt manifest, Dagster's state-backed
definitions).

Written by `python -m paimon_ops.dagster.state refresh` (below), by `dg utils refresh-defs-state` for a
`PaimonComponent` (a state-backed component), or on the first load when the file does not exist yet. A table that
cannot be read when the state is written is in it as a broken spec (its asset fails to run with the error, as when
loaded live).
Reload the code location after a refresh to see tables added or removed.

    python -m paimon_ops.dagster.state refresh --warehouse s3://bucket/wh --state /var/dagster/paimon-state.json \\
        [--include 'sales.*' …] [--exclude …] [--catalog-options '{"metastore": "hive", …}']
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any, Sequence

from paimon_ops.dagster.resources import PaimonWarehouse
from paimon_ops.dagster.spec import Column, TableSpec, TagTiming, load_specs
from paimon_ops.errors import InvalidArgumentError, PaimonOpsError

log = logging.getLogger("paimon_ops.dagster")

FORMAT = "paimon-ops-dagster-state/1"
_SPEC_FIELDS = {f.name for f in fields(TableSpec)}


def spec_to_json(spec: TableSpec) -> dict[str, Any]:
    d = asdict(spec)
    d["options"] = dict(spec.options)
    return d


def spec_from_json(d: dict[str, Any]) -> TableSpec:
    d = {k: v for k, v in d.items() if k in _SPEC_FIELDS}
    timing = d.get("tag_timing")
    d["tag_timing"] = TagTiming(**timing) if timing else None
    d["columns"] = tuple(Column(**c) for c in d.get("columns") or ())
    d["primary_keys"] = tuple(d.get("primary_keys") or ())
    d["partition_keys"] = tuple(d.get("partition_keys") or ())
    return TableSpec(**d)


def write_state(warehouse: Any, path: str | os.PathLike) -> int:
    """Read every selected table of `warehouse` (a `PaimonWarehouse`) and write the description to `path`
    atomically (a reader sees the old file or the new one). Returns the number of tables."""
    started = time.monotonic()
    specs = load_specs(warehouse)
    doc = {"format": FORMAT, "warehouse": warehouse.uri, "include": list(warehouse.include),
           "exclude": list(warehouse.exclude), "written_at_ms": int(time.time() * 1000),
           "read_s": round(time.monotonic() - started, 3), "tables": [spec_to_json(s) for s in specs]}
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f, separators=(",", ":"))
        os.chmod(tmp, 0o644)  # read by code servers and run workers, perhaps as other users
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    log.info("paimon: wrote the description of %d table(s) of %s to %s", len(specs), warehouse.uri, target)
    return len(specs)


def read_state(path: str | os.PathLike, warehouse: Any = None) -> list[TableSpec]:
    """The specs of a description written by `write_state` (no storage read); `warehouse` (a `PaimonWarehouse`):
    the description must be of its warehouse, and only its selected tables are kept."""
    where = os.fspath(path)
    try:
        with open(where) as f:
            text = f.read()
    except OSError as e:
        raise InvalidArgumentError(f"Paimon warehouse description {where} cannot be read: {e}; write it again with "
                                   "'python -m paimon_ops.dagster.state refresh'") from None
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise InvalidArgumentError(f"Paimon warehouse description {where} cannot be read: {e}; write it again with "
                                   "'python -m paimon_ops.dagster.state refresh'") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise InvalidArgumentError(f"{where} is not a Paimon warehouse description ({FORMAT}); write it again with "
                                   "'python -m paimon_ops.dagster.state refresh'")
    if warehouse is not None and doc.get("warehouse") != warehouse.uri:
        raise InvalidArgumentError(f"{where} describes warehouse {doc.get('warehouse')}, not {warehouse.uri}: "
                                   "refresh it for this warehouse or point state_path elsewhere")
    specs = [spec_from_json(d) for d in doc.get("tables") or []]
    if warehouse is not None:
        specs = [s for s in specs if warehouse.selected(s.identifier)]
    return specs


def state_specs(path: str | os.PathLike, warehouse: Any) -> list[TableSpec]:
    """The specs a code location built with `state_path` loads: from the description (no storage read); written
    first when there is none yet."""
    if not os.path.exists(path):
        log.warning("paimon: no warehouse description at %s yet: reading the warehouse once to write it", path)
        try:
            write_state(warehouse, path)
        except (PaimonOpsError, OSError) as e:
            raise InvalidArgumentError(f"cannot write the warehouse description {os.fspath(path)}: {e}") from None
    return read_state(path, warehouse)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m paimon_ops.dagster.state",
                                description="Write the description of a Paimon warehouse that Dagster code "
                                            "locations load from (build_paimon_definitions(state_path=…)).")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("refresh", help="read every selected table's metadata and write the description")
    r.add_argument("--warehouse", required=True, help="warehouse path or URI")
    r.add_argument("--state", required=True, help="the description file to write (atomically)")
    r.add_argument("--include", action="append", default=[], help="fnmatch pattern on db.table (repeatable)")
    r.add_argument("--exclude", action="append", default=[], help="fnmatch pattern on db.table (repeatable)")
    r.add_argument("--catalog-options", default="{}", help="catalog options as a JSON object")
    args = p.parse_args(argv)
    try:
        options = json.loads(args.catalog_options)
    except ValueError as e:
        options = e
    if not isinstance(options, dict):
        why = f" ({options})" if isinstance(options, ValueError) else ""
        print(f"paimon-ops: --catalog-options {args.catalog_options!r}: expected a JSON object{why}", file=sys.stderr)
        return 2
    warehouse = PaimonWarehouse(uri=args.warehouse, include=args.include, exclude=args.exclude,
                                catalog_options={str(k): str(v) for k, v in options.items()})
    started = time.monotonic()
    try:
        n = write_state(warehouse, args.state)
    except (PaimonOpsError, OSError) as e:
        print(f"paimon-ops: {e}", file=sys.stderr)
        return 2
    print(f"{n} table(s) of {args.warehouse} described in {args.state} ({time.monotonic() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
