"""Provider metadata (the `apache_airflow_provider` entry point): the `paimon` connection type with its form, and
where the hook, operators, sensor and triggers live. Plain data, no Airflow import."""
from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Any

INTEGRATION = "Apache Paimon"


def get_provider_info() -> dict[str, Any]:
    try:
        ours = version("paimon-ops")
    except PackageNotFoundError:  # running from a source tree
        ours = "0.0.0"
    return {
        "package-name": "paimon-ops",
        "name": "Apache Paimon (paimon-ops)",
        "description": "Maintenance of Apache Paimon tables (compaction, tags, snapshot / tag / partition expiry, "
                       "orphan removal, manifest compaction, rollback) with paimon-ops: one operator per operation, "
                       "dry run and apply, health-driven deferrable sensor and asset-watcher trigger, a deferrable sensor and an "
                       "asset-watcher trigger on partitions marked done.",
        "versions": [ours],
        "integrations": [{"integration-name": INTEGRATION, "external-doc-url": "https://paimon.apache.org",
                          "tags": ["software"]}],
        "operators": [{"integration-name": INTEGRATION, "python-modules": ["paimon_ops.airflow.operators"]}],
        "sensors": [{"integration-name": INTEGRATION, "python-modules": ["paimon_ops.airflow.sensors",
                                                                          "paimon_ops.airflow.partition_done"]}],
        "hooks": [{"integration-name": INTEGRATION, "python-modules": ["paimon_ops.airflow.hooks"]}],
        "triggers": [{"integration-name": INTEGRATION, "python-modules": ["paimon_ops.airflow.triggers",
                                                                           "paimon_ops.airflow.partition_done"]}],
        "asset-uris": [{"schemes": ["paimon"], "handler": None}],
        "connection-types": [{
            "connection-type": "paimon",
            "hook-class-name": "paimon_ops.airflow.hooks.PaimonHook",
            "hook-name": "Apache Paimon (paimon-ops)",
            "ui-field-behaviour": {
                "hidden-fields": ["schema", "port", "extra"],
                "relabeling": {"host": "Warehouse", "login": "Access key (s3.access-key)",
                               "password": "Secret key (s3.secret-key)"},
                "placeholders": {"host": "s3://bucket/warehouse or /data/warehouse",
                                 "login": "object store access key (empty: AWS_* variables / roles)",
                                 "password": "object store secret key"},
            },
            "conn-fields": {
                "s3_endpoint": {"label": "S3 endpoint (s3.endpoint)", "schema": {"type": ["string", "null"]},
                                "description": "S3-compatible server, e.g. http://minio:9000 (empty: AWS)"},
                "s3_region": {"label": "S3 region (s3.region)", "schema": {"type": ["string", "null"]}},
                "s3_path_style_access": {"label": "Path-style access (s3.path.style.access)",
                                         "schema": {"type": ["boolean", "null"], "default": False}},
                "s3_session_token": {"label": "Session token (s3.session-token)",
                                     "schema": {"type": ["string", "null"], "format": "password"}},
                "options": {"label": "Options", "schema": {"type": ["object", "null"], "format": "json"},
                            "description": "More options as a JSON object: table options applied on top of every "
                                           "table's own (e.g. {\"snapshot.num-retained.min\": \"5\"}) and other "
                                           "object-store settings"},
                "spark_master": {"label": "Spark master", "schema": {"type": ["string", "null"]},
                                 "description": "local[*] (default), spark://host:7077, yarn, k8s://…"},
                "spark_remote": {"label": "Spark Connect remote", "schema": {"type": ["string", "null"]},
                                 "description": "sc://host:15002 (wins over the master)"},
                "placement": {"label": "Placement", "schema": {"type": ["string", "null"], "default": "auto",
                                                               "enum": ["auto", "spark", "local"]},
                              "description": "auto: in-process within the table's execution.local.max-input-size / "
                                             "execution.local.max-tasks, Spark beyond; spark / local force one side"},
                "connect_timeout": {"label": "Spark connect timeout (s)",
                                    "schema": {"type": ["number", "null"], "default": 10, "minimum": 0}},
            },
        }],
    }
