"""Where tables live: catalogs (filesystem, Hive Metastore, JDBC, REST) — discovery, locations, locks, commits."""
