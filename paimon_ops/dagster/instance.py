"""The Dagster instance settings this integration needs: everything that changes a table runs in the pool
`paimon/<db>.<table>`, and pools must have a limit (1) so two runs never maintain one table at once.

The repository ships `dagster.yaml` (what `dagster dev` / `dg dev` read from the working directory when
DAGSTER_HOME is unset); `DAGSTER_YAML` is the same text and `write_dagster_home()` puts it into a DAGSTER_HOME.
On an existing instance: `dagster instance concurrency set paimon/shop.orders 1`, or a default for every pool.

`pool_unlimited()` tells whether a pool has no limit on an instance; ops and sensors warn loudly when it has none.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Iterable

log = logging.getLogger("paimon_ops.dagster")

DAGSTER_YAML = """\
# paimon-ops: one run at a time maintains a table (its pool paimon/<db>.<table> has limit 1)
concurrency:
  pools:
    default_limit: 1
telemetry:
  enabled: false
"""

POOL_WARNING = ("pool {pool} has no limit on this Dagster instance: two runs may change {table} at once. Set "
                "'concurrency: {{pools: {{default_limit: 1}}}}' in dagster.yaml (the repository's dagster.yaml does) "
                "or run 'dagster instance concurrency set {pool} 1'.")


def write_dagster_home(path: str | Path = ".dagster_home") -> Path:
    """Create a DAGSTER_HOME with `dagster.yaml` (pool limit 1) unless one exists; returns the directory."""
    home = Path(path).resolve()
    home.mkdir(parents=True, exist_ok=True)
    cfg = home / "dagster.yaml"
    if not cfg.exists():
        cfg.write_text(DAGSTER_YAML)
    return home


def pool_unlimited(instance: Any, pool: str) -> bool:
    """True when `pool` has no concurrency limit on `instance` (no default_limit and none set for the pool).

    Dagster has no public API for this yet; the instance's concurrency info is read defensively and an instance
    that cannot tell is not reported."""
    try:
        info = instance.event_log_storage.get_concurrency_info(pool)
    except Exception:  # noqa: BLE001 - storages without concurrency support
        return False
    limit = getattr(info, "limit", None)
    return not limit


def unlimited_pools(instance: Any, pools: Iterable[str]) -> list[str]:
    pools = list(pools)
    if not pools:
        return []
    if not pool_unlimited(instance, pools[0]):  # default_limit covers every pool: one look is enough
        try:
            if getattr(instance.event_log_storage.get_concurrency_info(pools[0]), "using_default_limit", False):
                return []
        except Exception:  # noqa: BLE001
            return []
    return [p for p in pools if pool_unlimited(instance, p)]
