"""The Airflow asset of a Paimon table."""
from __future__ import annotations

from airflow.sdk import Asset

from paimon_ops.airflow.hooks import DEFAULT_CONN_ID
from paimon_ops.airflow.names import table_asset_uri


def paimon_table_asset(table: str, conn_id: str = DEFAULT_CONN_ID, **kwargs) -> Asset:
    """`Asset("paimon://<conn_id>/<db>.<table>")`, for `outlets=` (an event with the report when the table changed)
    and for scheduling on the table."""
    kwargs.setdefault("group", "paimon")
    return Asset(uri=table_asset_uri(table, conn_id), **kwargs)


__all__ = ["paimon_table_asset"]
