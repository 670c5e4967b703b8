"""Discovery and locations in a Hive catalog, against the real metastore and Java Paimon 0.9's HiveCatalog: the
tables are exactly the metastore's Paimon tables (external locations included; plain Hive tables, unregistered or
dropped tables' directories, and registrations whose files are gone are not)."""
from __future__ import annotations

import shutil

import pytest

from paimon_ops.catalog.hive import HiveCatalog, normalize_location
from paimon_ops.errors import TableNotFoundError
from tests.hive.conftest import java_hive_table, java_list_tables
from tests.hive.test_metastore_client import _create_plain_table

pytestmark = pytest.mark.java

FIELDS = [("dt", "STRING NOT NULL"), ("id", "INT NOT NULL"), ("v", "STRING")]


def test_tables_are_the_metastores_paimon_tables(hive_metastore, hms_client, hive_database, tmp_path):
    uri, db = hive_metastore.uri, hive_database
    wh = tmp_path / "wh"
    # a database whose location is outside the warehouse: its tables live there (Java: the database location)
    ext_db, ext_dir = f"{db}_ext", tmp_path / "elsewhere" / "ext.db"
    t = hms_client.types
    hms_client.call("db", lambda c: c.create_database(t.Database(name=ext_db, locationUri=f"file:{ext_dir}",
                                                                  parameters={})))
    for d, name in [(db, "a"), (db, "gone"), (ext_db, "c")]:
        jt = java_hive_table(wh, d, name, uri)
        jt.create(FIELDS, partition_keys=["dt"], primary_keys=["dt", "id"], options={"bucket": 1})
        jt.write([{"rows": [["2024-01-01", 1, name]]}])
    _create_plain_table(hms_client, db, "plain_hive", f"file:{wh}/{db}.db/plain_hive")
    shutil.rmtree(wh / f"{db}.db" / "gone")                              # registered, files gone: no table
    shutil.copytree(wh / f"{db}.db" / "a", wh / f"{db}.db" / "leftover")  # files, not registered: no table

    cat = HiveCatalog(str(wh), {"uri": uri})
    assert cat.tables(db) == ["a"] == java_list_tables(wh, db, uri)["tables"]
    assert cat.tables(ext_db) == ["c"] == java_list_tables(wh, ext_db, uri)["tables"]
    assert {db, ext_db} <= set(cat.databases())
    java_loc = java_list_tables(wh, ext_db, uri)["locations"]["c"]
    assert normalize_location(java_loc) == f"file:///{str(ext_dir / 'c').lstrip('/')}"
    c = cat.get_table(f"{ext_db}.c")
    assert c.root == str(ext_dir / "c") and c.snapshots.latest_id() == 1 and c.identifier == f"{ext_db}.c"

    for missing, words in [(f"{db}.leftover", "has no table 'leftover'"),
                           (f"{db}.plain_hive", "not a Paimon table"),
                           (f"{db}_nope.a", f"no database '{db}_nope'")]:
        with pytest.raises(TableNotFoundError) as ei:
            cat.get_table(missing)
        assert words in str(ei.value) and uri in str(ei.value) and "\n" not in str(ei.value)


def test_location_in_properties(hive_metastore, hms_client, hive_database, tmp_path):
    """`location-in-properties` (object stores): Java keeps the location in the table parameter paimon_location."""
    uri, db = hive_metastore.uri, hive_database
    wh = tmp_path / "wh"
    jt = java_hive_table(wh, db, "t", uri, **{"location-in-properties": "true"})
    jt.create(FIELDS, partition_keys=["dt"], primary_keys=["dt", "id"], options={"bucket": 1})
    jt.write([{"rows": [["2024-01-01", 1, "x"]]}])
    hms = hms_client.get_table(db, "t")
    assert "paimon_location" in hms.parameters
    cat = HiveCatalog(str(wh), {"uri": uri, "location-in-properties": "true"})
    assert cat.tables(db) == ["t"] == java_list_tables(wh, db, uri, **{"location-in-properties": "true"})["tables"]
    assert cat.get_table(f"{db}.t").snapshots.latest_id() == 1
    assert normalize_location(hms.parameters["paimon_location"]).endswith(f"{db}.db/t")
