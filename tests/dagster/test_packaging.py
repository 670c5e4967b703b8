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
                   "schedules", "resources", "translator", "operations", "observe", "instance", "refs", "state", "due"):
        assert f"paimon_ops/dagster/{module}.py" in names, module
    assert not [n for n in names if n.startswith(("assets/", "jobs/", "schedules/", "tests/"))]
    requires = meta.get_all("Requires-Dist")
    core = [r for r in requires if "extra ==" not in r]
    assert not [r for r in core if r.startswith(("dagster", "pyspark"))], core
    assert set(meta.get_all("Provides-Extra")) >= {"spark", "dagster", "test"}
    assert any(r.startswith("dagster") and 'extra == "dagster"' in r for r in requires)
    assert any(r.startswith("pyspark") and 'extra == "spark"' in r for r in requires)
    # [dagster] is Dagster only: Spark is [spark], the webserver [webserver]
    dagster_extra = [r.split(";")[0] for r in requires if 'extra == "dagster"' in r]
    assert [r for r in dagster_extra if r.startswith("dagster")] and \
        not [r for r in dagster_extra if r.startswith(("pyspark", "dagster-webserver", "paimon-ops[spark"))], \
        dagster_extra
    assert any(r.startswith("dagster-webserver") and 'extra == "webserver"' in r for r in requires)
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



def _without(packages: tuple[str, ...], body: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """Run `body` in a fresh interpreter that cannot find `packages` (the path finder finds nothing for them, as
    when they are not installed)."""
    code = textwrap.dedent(f"""
        import importlib.machinery, sys
        BLOCKED = {packages!r}
        _find = importlib.machinery.PathFinder.find_spec  # as if not installed: the path finder finds nothing

        def find_spec(name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                return None
            return _find(name, path, target)
        importlib.machinery.PathFinder.find_spec = staticmethod(find_spec)
    """) + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "PYTHONPATH": str(REPO)})


def test_dagster_extra_works_without_spark(tmp_path):
    """`[dagster]` without `[spark]`: the integration imports and builds its definitions on a warehouse; Spark is only
    asked for when a plan is placed on it."""
    proc = _without(("pyspark",), f"""
        from paimon_ops.sample import build_sample_warehouse
        build_sample_warehouse({str(tmp_path / "wh")!r}, rounds=1)
        from paimon_ops.dagster import build_paimon_definitions
        defs = build_paimon_definitions({str(tmp_path / "wh")!r})
        print(len(defs.get_repository_def().asset_graph.get_all_asset_keys()), "assets")
        assert not [m for m in sys.modules if m.startswith("pyspark")]
    """, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout.split()[0]) > 0


def test_a_missing_extra_is_one_line_naming_it(tmp_path):
    proc = _without(("dagster",), "import paimon_ops.dagster\n", tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        "ModuleNotFoundError: paimon_ops.dagster needs Dagster, which is not installed: "
        "pip install 'paimon-ops[dagster]'")
    wh = str(tmp_path / "wh")
    proc = _without(("pyspark",), f"""
        from paimon_ops.sample import build_sample_warehouse
        build_sample_warehouse({wh!r}, rounds=1)
        from paimon_ops.cli import main
        sys.exit(main(["compact", {wh!r}, "shop.orders", "--spark-master", "spark://127.0.0.1:7077"]))
    """, tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip() == ("paimon-ops: error: --spark-master needs pyspark, which is not installed: "
                                   "pip install 'paimon-ops[spark]'"), proc.stderr


def test_version():
    from paimon_ops import __version__
    proc = subprocess.run([sys.executable, "-m", "paimon_ops.cli", "--version"], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == f"paimon-ops {__version__}" != "paimon-ops 0.0.0+unknown"


def test_dagster_extra_resolves_with_dg_cli(tmp_path):
    """In a fresh virtualenv, `paimon-ops[webserver]` (Dagster + its UI) and `dagster-dg-cli` resolve together to one
    consistent Dagster release (pip's resolver, dry run: nothing installed) — and pull no PySpark."""
    import json
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    report = tmp_path / "report.json"
    proc = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--dry-run", "--quiet",
                           "--report", str(report), f"{REPO}[webserver]", "dagster-dg-cli"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = {i["metadata"]["name"].lower(): i["metadata"]["version"] for i in json.loads(report.read_text())["install"]}
    release = {v for k, v in got.items() if k in ("dagster", "dagster-shared", "dagster-webserver", "dagster-graphql",
                                                  "dagster-dg-cli", "dagster-dg-core", "dagster-pipes")}
    assert len(release) == 1 and {"dagster", "dagster-webserver", "dagster-dg-cli"} <= set(got), got
    assert "pyspark" not in got
