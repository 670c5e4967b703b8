"""The Dagster instance settings this integration needs: everything that changes a table runs in the pool
`paimon/<db>.<table>`, and pools must have a limit (1) so two runs never maintain one table at once.

The tables of a warehouse share a few ops (one multi-asset per kind of table, see `table_asset`), so the pool of a
table cannot be the op's static `pool`: `table_slot()` claims the table's pool slot inside the op, for as long as
that table is being maintained, through the instance's own concurrency storage — the calls Dagster's executor
makes for an op's pool (default limit initialised on first use, run priority, back-off while blocked, the slot
freed when the table is done, and by Dagster's run monitoring if the run dies). The Concurrency page of the UI
shows the slot held by the run, its step key suffixed with the table.

The repository ships `dagster.yaml` (what `dagster dev` / `dg dev` read from the working directory when
DAGSTER_HOME is unset); `DAGSTER_YAML` is the same text and `write_dagster_home()` puts it into a DAGSTER_HOME. Its
run queue also holds the runs this package launches (run tag `paimon/table`) one per table, so a second run of a
table waits in the queue rather than in a started run worker (`table_slot` serialises the rest: runs launched from
the UI, backfills).
On an existing instance: `dagster instance concurrency set paimon/shop.orders 1`, or a default for every pool.

`pool_unlimited()` tells whether a pool has no limit on an instance; ops and sensors warn loudly when it has none.
"""
from __future__ import annotations

import contextlib
import logging
import time
from pathlib import Path
from typing import Any, Iterable, Iterator

log = logging.getLogger("paimon_ops.dagster")

DAGSTER_YAML = """\
# paimon-ops: one run at a time maintains a table (its pool paimon/<db>.<table> has limit 1); the runs the sensors,
# the schedule and the tag automation launch (run tag paimon/table) also wait in the run queue, one per table
concurrency:
  pools:
    default_limit: 1
  runs:
    tag_concurrency_limits:
      - key: paimon/table
        value:
          applyLimitPerUniqueValue: true
        limit: 1
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


PRIORITY_TAG = "dagster/priority"
MAX_WAIT_INTERVAL_S = 15.0  # as Dagster's executor: 1 s, growing by 10 % per attempt, at most 15 s


def _wait_interval(attempt: int, hint: float | None) -> float:
    if hint is not None:
        return hint
    return min(MAX_WAIT_INTERVAL_S, 1.0 + (1.1 ** attempt - 1.0))


@contextlib.contextmanager
def table_slot(context: Any, pool: str, table: str) -> Iterator[None]:
    """Hold a slot of `pool` (the table's) while the body maintains `table`; wait while another run holds it.

    A pool without any limit on the instance (no `default_limit`, none set for it) is not claimed: the run says so
    loudly (POOL_WARNING) and proceeds, as Dagster does for an op pool without a limit."""
    instance = context.instance
    storage = instance.event_log_storage
    if not pool or not getattr(storage, "supports_global_concurrency_limits", False):
        yield
        return
    default = instance.global_op_concurrency_default_limit
    info = storage.get_concurrency_info(pool)
    if default is not None and info.using_default_limit and info.slot_count != default:
        storage.initialize_concurrency_limit_to_default(pool)  # first use of the pool, or the default changed
        info = storage.get_concurrency_info(pool)
    if info.limit is None:
        context.log.warning(POOL_WARNING.format(pool=pool, table=table))
        yield
        return
    op = getattr(context, "op_execution_context", context)  # asset and asset-check contexts alike
    run_id = op.run_id
    step_key = f"{op.op_handle}[{table}]"
    try:
        priority = int((op.run.tags or {}).get(PRIORITY_TAG, "0"))
    except ValueError:
        priority = 0
    started = time.monotonic()
    attempt = 0
    try:
        while True:
            status = storage.claim_concurrency_slot(pool, run_id, step_key, priority)
            if status.is_claimed:
                break
            if attempt == 0:
                context.log.info(f"{table}: waiting for its pool {pool} (limit {info.limit}): another run is "
                                 "maintaining it")
            time.sleep(_wait_interval(attempt, status.sleep_interval))
            attempt += 1
        if attempt:
            context.log.info(f"{table}: pool {pool} slot claimed after {time.monotonic() - started:.1f} s")
        yield
    finally:
        storage.free_concurrency_slot_for_step(run_id, step_key)
