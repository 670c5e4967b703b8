"""The table layer. Importing it registers the FileIO implementations with FileIO.resolve, each for the schemes it
opens (fileio.py)."""
import paimon_ops.table.arrow_fileio as _arrow_fileio  # noqa: F401  (registers hdfs://, viewfs://)
import paimon_ops.table.local_fileio as _local_fileio  # noqa: F401  (registers local paths, file://)
import paimon_ops.table.objectstore as _objectstore  # noqa: F401  (registers s3://, s3a://, s3n://)
