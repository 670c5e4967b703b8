"""The table layer. Importing it registers the object stores with FileIO.resolve (objectstore.py)."""
import paimon_ops.table.objectstore as _objectstore  # noqa: F401  (registers s3://, s3a://, s3n://)
