"""Local network helpers shared by the tests that start real servers (moto_server, Spark, Dagster, Airflow)."""
from __future__ import annotations

import os
import socket


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Waits for another process (a scheduler, a daemon, a server) are deadlines, not expectations: a loaded 2-core
# machine can be several times slower than an idle one, and a wait that succeeds returns at once, so every deadline
# is stretched by this factor (PAIMON_TEST_PATIENCE, default 3).
PATIENCE = float(os.environ.get("PAIMON_TEST_PATIENCE", "3"))


def patient(seconds: float) -> float:
    """`seconds` as a deadline for another process, stretched for a busy machine."""
    return seconds * PATIENCE
