"""Where tables live (filesystem, Hive Metastore, JDBC, REST)."""
