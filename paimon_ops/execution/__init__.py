"""The execution core: a plan (pure data: what one operation will do to one table), the executor that checks and
runs it, the runners that place its work (in-process or Spark), the report of what was done, and the one deletion
path (deleter, with its crash journal)."""
