"""Names shared by the operators, the example DAGs and the pools helper (no Airflow import).

* Pool of a table: `paimon.<db>.<table>` — every operator that changes a table (or one of its branches, which share
  its files: `db.t$branch_b` runs in the pool of `db.t`) runs in it, so with one slot two DAGs never maintain one
  table at once. Dots rather than the Dagster integration's `paimon/<db>.<table>`: Airflow's
  REST API addresses a pool by name in the URL path.
* Asset of a table: `paimon://<conn_id>/<db>.<table>` (the connection names the warehouse).
"""
from __future__ import annotations

from paimon_ops.errors import InvalidArgumentError

POOL_PREFIX = "paimon."
ASSET_SCHEME = "paimon"


def operator_class_name(operation: str) -> str:
    """The Airflow operator of an operation: `PaimonCompactOperator` for `compact`."""
    return "Paimon" + "".join(w.capitalize() for w in operation.split("_")) + "Operator"


def split_identifier(identifier: str) -> tuple[str, str]:
    db, sep, name = identifier.partition(".")
    if not sep or not db or not name or "/" in identifier:
        raise InvalidArgumentError(f"table {identifier!r}: expected DATABASE.TABLE")
    return db, name


def table_pool(identifier: str) -> str:
    db, name = split_identifier(identifier)
    return f"{POOL_PREFIX}{db}.{name.split('$', 1)[0]}"


def table_asset_uri(identifier: str, conn_id: str) -> str:
    db, name = split_identifier(identifier)
    return f"{ASSET_SCHEME}://{conn_id}/{db}.{name}"


__all__ = ["table_pool", "table_asset_uri", "split_identifier", "operator_class_name", "POOL_PREFIX", "ASSET_SCHEME"]
