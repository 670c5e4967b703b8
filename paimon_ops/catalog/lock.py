"""Waiting for a catalog's table lock as Java does (JdbcCatalogLock, HiveCatalogLock): try, then retry after a pause
that starts at 50 ms and doubles up to `lock-check-max-sleep`, giving up once `lock-acquire-timeout` has passed.
The pauses are ordinary sleeps, so Ctrl-C / SIGTERM (KeyboardInterrupt) stops the wait at once."""
from __future__ import annotations

import time
from datetime import timedelta
from typing import Callable, TypeVar

from paimon_ops.errors import LockTimeoutError

T = TypeVar("T")

FIRST_PAUSE_S = 0.05


def wait_for_lock(try_acquire: Callable[[], T | None], *, endpoint: str, table: str, timeout: timedelta,
                  max_sleep: timedelta, holder: Callable[[], str] | None = None,
                  clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> T:
    """`try_acquire()` until it returns something other than None (the lock's handle). LockTimeoutError naming the
    table (and, when `holder` says, who holds it) once `timeout` has passed."""
    started = clock()
    pause = FIRST_PAUSE_S
    cap = max(max_sleep.total_seconds(), 0.0)
    limit = timeout.total_seconds()
    while True:
        got = try_acquire()
        if got is not None:
            return got
        waited = clock() - started
        if waited >= limit:
            raise LockTimeoutError(endpoint, table, round(waited, 1), holder() if holder else "")
        pause = min(pause * 2, cap) if cap > 0 else 0.0
        sleep(min(pause, max(limit - waited, 0.0)))


__all__ = ["wait_for_lock", "FIRST_PAUSE_S"]
