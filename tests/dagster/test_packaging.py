"""The integration is installable: the wheel holds `paimon_ops/dagster/…` and declares the extras and the `dg`
registry entry point; the engine installs and imports without Dagster or Spark."""
from __future__ import annotations

import email
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_wheel_contains_the_integration(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    shutil.copytree(REPO / "paimon_ops", src / "paimon_ops", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = tmp_path / "dist"
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", str(src), "-w", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (wheel,) = out.glob("paimon_ops-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        meta = email.message_from_bytes(z.read(meta_name))
        entry_points = z.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    for module in ("__init__", "component", "factory", "table_asset", "tags_asset", "checks", "sensors", "jobs",
                   "schedules", "resources", "translator", "operations", "observe", "health", "instance", "refs"):
        assert f"paimon_ops/dagster/{module}.py" in names, module
    assert not [n for n in names if n.startswith(("assets/", "jobs/", "schedules/", "tests/"))]
    requires = meta.get_all("Requires-Dist")
    core = [r for r in requires if "extra ==" not in r]
    assert not [r for r in core if r.startswith(("dagster", "pyspark"))], core
    assert set(meta.get_all("Provides-Extra")) >= {"spark", "dagster", "test"}
    assert any(r.startswith("dagster") and 'extra == "dagster"' in r for r in requires)
    assert any(r.startswith("pyspark") and 'extra == "spark"' in r for r in requires)
    assert "[dagster_dg_cli.registry_modules]" in entry_points and "paimon_ops.dagster" in entry_points


def test_the_engine_never_imports_dagster_or_spark():
    """Every module of paimon_ops outside the integrations (paimon_ops.dagster, paimon_ops.airflow) imports with
    dagster and pyspark unimportable."""
    code = textwrap.dedent("""
        import importlib, importlib.abc, pkgutil, sys

        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("dagster", "dagster_pyspark", "dagster_webserver", "pyspark"):
                    raise ImportError(f"blocked: {name}")
                return None

        sys.meta_path.insert(0, Block())
        import paimon_ops
        mods = [m.name for m in pkgutil.walk_packages(paimon_ops.__path__, "paimon_ops.")
                if not m.name.startswith(("paimon_ops.dagster", "paimon_ops.airflow"))]
        for m in mods:
            importlib.import_module(m)
        import paimon_ops.cli
        leaked = [m for m in sys.modules if m.split(".")[0] in ("dagster", "pyspark")]
        assert not leaked, leaked
        print(len(mods), "modules")
    """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert int(proc.stdout.split()[0]) > 50
