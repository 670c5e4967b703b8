"""Run by test_provider.py with the Airflow env's interpreter: validates the provider metadata with Airflow's own
schemas and providers manager, and reports what the operators accept. Prints one JSON object."""
from __future__ import annotations

import inspect
import json
from importlib import resources
from importlib.metadata import entry_points

import jsonschema
from airflow.providers_manager import ProvidersManager

import paimon_ops.api as api
from paimon_ops.airflow.get_provider_info import get_provider_info

out: dict = {}
info = get_provider_info()
schemas = resources.files("airflow")
jsonschema.validate(info, json.loads(schemas.joinpath("provider_info.schema.json").read_text()))
# the stricter provider.yaml schema of a connection type (conn-fields, ui-field-behaviour)
yaml_schema = json.loads(schemas.joinpath("provider.yaml.schema.json").read_text())
for ct in info["connection-types"]:
    jsonschema.validate(ct, yaml_schema["properties"]["connection-types"]["items"])
out["entry_points"] = [f"{e.name}={e.value}" for e in entry_points(group="apache_airflow_provider")
                       if e.value.startswith("paimon_ops")]

pm = ProvidersManager()
out["provider"] = pm.providers["paimon-ops"].data["package-name"] if "paimon-ops" in pm.providers else None
hook = pm.hooks.get("paimon")
out["hook"] = f"{hook.hook_class_name} {hook.connection_id_attribute_name} {hook.hook_name}" if hook else None
out["widgets"] = {k: {"label": w.field["schema"].get("title"), "sensitive": w.is_sensitive}
                  for k, w in pm.connection_form_widgets.items() if k.startswith("extra__paimon__")}
out["behaviour"] = pm.field_behaviours.get("paimon")

from paimon_ops.airflow.operations import OPERATIONS  # noqa: E402
from paimon_ops.airflow.operators import OPERATORS, PaimonOperationOperator  # noqa: E402

ops = {}
for name, cls in OPERATORS.items():
    sig = {p.name for p in OPERATIONS[name].parameters}
    # every facade keyword is accepted and lands in `arguments`; nothing else does
    kwargs = {p.name: ["x"] if p.annotation.startswith("Iterable") else "x" for p in OPERATIONS[name].parameters}
    op = cls(task_id=f"t_{name}", table="db.t", **kwargs)
    try:
        cls(task_id=f"u_{name}", table="db.t", not_a_parameter=1, **kwargs)
        rejects_unknown = False
    except TypeError:
        rejects_unknown = True
    ops[name] = {"class": cls.__name__, "module": cls.__module__, "arguments": sorted(op.arguments),
                 "signature": sorted(sig), "pool": op.pool, "rejects_unknown": rejects_unknown,
                 "subclass": issubclass(cls, PaimonOperationOperator), "doc": cls.__doc__ or ""}
out["operators"] = ops
# the facade itself, read independently of the operation table
facade = {}
for name in OPERATIONS:
    owner, _, method = OPERATIONS[name].facade.partition(".")
    fn = getattr({"maintenance": api.Maintenance, "tags": api.Tags}[owner], method)
    facade[name] = sorted(p for p in inspect.signature(fn).parameters if p != "self")
out["facade"] = facade

# a connection carrying catalog options (a JDBC catalog on a SQLite file): the hook lists exactly its tables
import sqlite3  # noqa: E402
import tempfile  # noqa: E402
from types import SimpleNamespace  # noqa: E402

from paimon_ops.airflow.hooks import PaimonHook  # noqa: E402
from paimon_ops.table.writer import create_table  # noqa: E402

with tempfile.TemporaryDirectory() as tmp:
    for name in ("shop.orders", "shop.ghost"):
        create_table(f"{tmp}/wh", name, [("k", "INT")])
    db = sqlite3.connect(f"{tmp}/catalog.db", isolation_level=None)
    db.execute("CREATE TABLE paimon_tables(catalog_key VARCHAR(255) NOT NULL,database_name VARCHAR(255) NOT NULL,"
               "table_name VARCHAR(255) NOT NULL, PRIMARY KEY (catalog_key, database_name, table_name))")
    db.execute("INSERT INTO paimon_tables VALUES ('jdbc', 'shop', 'orders')")
    db.close()
    conn = SimpleNamespace(conn_id="jdbc_conn", host=f"{tmp}/wh", login=None, password=None, extra_dejson={
        "options": {"metastore": "jdbc", "uri": f"jdbc:sqlite:{tmp}/catalog.db", "jdbc.password": "not-printed",
                    "snapshot.num-retained.min": "4"}, "connect_timeout": 3})
    hook = PaimonHook("jdbc_conn", connection=conn)
    catalog = hook.get_conn()
    out["jdbc_connection"] = {"tables": catalog.tables(), "metastore": catalog.metastore,
                              "table_option": catalog.get_table("shop.orders").options["snapshot.num-retained.min"],
                              "settings_repr": repr(hook.settings)}
    catalog.close()
print("PROVIDER_CHECK " + json.dumps(out))
