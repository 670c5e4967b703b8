"""The PySpark worker daemon paimon-ops' own local Spark sessions use (`spark.python.daemon.module`).

PySpark forks every Python worker from one daemon process. The stock daemon has imported only pyspark, so each
new worker first imports pyarrow, numpy and the task code — about half a second per worker, paid again by every
short-lived session (each CLI run). This daemon imports them once, before it starts forking: workers are born
ready. Only used where this package is installed next to Spark (local masters); clusters keep the stock daemon.
It also gives each worker one Arrow compute thread (see below).
"""
import _strptime  # noqa: F401 - first datetime.strptime
import os

import numpy  # noqa: F401
import numpy.random  # noqa: F401
import pyarrow  # noqa: F401
import pyarrow.compute  # noqa: F401
import pyarrow.orc  # noqa: F401
import pyarrow.parquet  # noqa: F401

import paimon_ops.compact.changelog  # noqa: F401
import paimon_ops.compact.lookup  # noqa: F401
import paimon_ops.compact.lsm  # noqa: F401
import paimon_ops.compact.rewrite  # noqa: F401 - the compaction task function and everything it imports
import paimon_ops.execution.deleter  # noqa: F401 - the delete task function
import paimon_ops.merge  # noqa: F401

try:  # pyarrow imports pandas on its first Python / NumPy -> Arrow conversion: ~0.25 s per worker otherwise
    import pandas  # noqa: F401
except ImportError:
    pass

# local[N] runs N tasks at once on N cores: one Arrow compute thread per task, not N each (N x N threads fought
# over the same cores).
pyarrow.set_cpu_count(int(os.environ.get("PAIMON_OPS_WORKER_ARROW_THREADS", "1")))

if __name__ == "__main__":
    from pyspark.daemon import manager  # here, so the engine's modules all import without pyspark installed

    manager()
