"""Local network helpers shared by the tests that start real servers (moto_server, Spark, Dagster, Airflow)."""
from __future__ import annotations

import os
import socket
import tempfile


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now, and that no other worker of this test run
    (pytest-xdist) was given: between this call and its server's bind, another worker asking the kernel could be
    handed the same port, so each port is claimed once per run with an exclusive marker file."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    claims = os.path.join(tempfile.gettempdir(), f"paimon-ops-ports-{run}") if run else None
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if claims is None:
            return port
        os.makedirs(claims, exist_ok=True)
        try:
            os.close(os.open(os.path.join(claims, str(port)), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            return port
        except FileExistsError:
            continue
    raise RuntimeError(f"no free TCP port on 127.0.0.1 that another test worker has not claimed ({claims})")


# Waits for another process (a scheduler, a daemon, a server) are deadlines, not expectations: a loaded 2-core
# machine can be several times slower than an idle one, and a wait that succeeds returns at once, so every deadline
# is stretched by this factor (PAIMON_TEST_PATIENCE, default 3).
PATIENCE = float(os.environ.get("PAIMON_TEST_PATIENCE", "3"))


def patient(seconds: float) -> float:
    """`seconds` as a deadline for another process, stretched for a busy machine."""
    return seconds * PATIENCE
