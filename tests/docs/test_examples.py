"""Every code block of the home page, the getting-started pages and the guides runs, as the page shows it, against a
sample warehouse: CLI commands in bash, Python snippets in this interpreter, a Dagster `defs.yaml` loaded as a
component, Dagster definitions files loaded by Dagster, Airflow DAG files parsed by Airflow (`.venv-airflow`), and the
object-store examples against a real S3-compatible server (moto) holding the sample warehouse. A wrong example
fails here. How blocks run: tests/docs/docs_util.py.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.docs.docs_util import AIRFLOW_BIN, REPO, RUN, SHOWN, VENV_BIN, Block, blocks, example_pages, write_shims
from tests.objectstore.conftest import s3_server  # noqa: F401  (the fixture)


@dataclass(frozen=True)
class Setup:
    """What a page's examples need beyond a sample warehouse at `./wh`."""

    airflow: bool = False         # `python` on the PATH is the Airflow env's; dags/ files are parsed by Airflow
    repository: bool = False      # the sandbox is a checkout: this repository's code location beside ./demo-warehouse
    s3: bool = False              # an S3-compatible server holds the sample warehouse at s3://bucket/warehouse
    substitutions: dict[str, str] = field(default_factory=dict)  # placeholder -> value ({wh}: the sample's path)


SETUPS = {
    "getting-started/airflow.md": Setup(airflow=True),
    "guides/airflow.md": Setup(airflow=True),
    "guides/dagster.md": Setup(repository=True, substitutions={"s3://bucket/warehouse": "{wh}"}),
    "guides/object-stores.md": Setup(s3=True),
}


@pytest.fixture(scope="session")
def sample_warehouse(tmp_path_factory) -> Path:
    from paimon_ops.sample import build_sample_warehouse
    wh = tmp_path_factory.mktemp("docs-sample") / "wh"
    build_sample_warehouse(str(wh), rounds=6)  # as `paimon-ops sample` builds it
    return wh


def _pages_with_examples() -> list[str]:
    return [p for p in example_pages() if any(b.lang in RUN for b in blocks(p))]


def test_every_block_is_code_or_output():
    """A block's language says whether it runs: an unmarked or unknown one would silently not be tested."""
    for page in example_pages():
        for b in blocks(page):
            assert b.lang in RUN | SHOWN, f"{b.where()}: a ```{b.lang or '(no language)'} block: mark it as " \
                                          f"one of {sorted(RUN | SHOWN)}"
            assert b.lang != "yaml" or b.title, f"{b.where()}: a yaml block must name its file (title=\"…\")"


class Sandbox:
    def __init__(self, root: Path, page: str, setup: Setup, sample: Path, env: dict[str, str]):
        self.root, self.page, self.setup = root, page, setup
        self.wh = root / "wh"
        shutil.copytree(sample, self.wh, symlinks=True)
        if setup.repository:
            for name in ("definitions.py", "workspace.yaml", "dagster.yaml", "assets", "jobs", "schedules"):
                (root / name).symlink_to(REPO / name)
            shutil.copytree(sample, root / "demo-warehouse", symlinks=True)
            (root / "demo-warehouse-dagster-home").mkdir()
        shims = write_shims(root / ".docs-test-bin")
        first = [str(shims)] + ([str(AIRFLOW_BIN)] if setup.airflow else []) + [str(VENV_BIN)]
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "AIRFLOW", "DAGSTER_HOME"))}
        self.env.update({"PATH": os.pathsep.join(first + [os.environ.get("PATH", "")]), "PYTHONPATH": str(REPO),
                         "NO_MKDOCS_2_WARNING": "1", "DAGSTER_DISABLE_TELEMETRY": "1",
                         "AIRFLOW_HOME": str(root / "airflow-home"), "AIRFLOW__CORE__LOAD_EXAMPLES": "False"})
        self.env.update(env)
        self.namespace: dict = {"__name__": "__docs__"}
        self.substitutions = {k: v.format(wh=self.wh) for k, v in setup.substitutions.items()}

    def text(self, code: str) -> str:
        for placeholder, value in self.substitutions.items():
            code = code.replace(placeholder, value)
        return code

    def run(self, b: Block) -> None:
        code = self.text(b.code)
        if b.title:
            path = self.root / b.title
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(code)
            if b.lang == "bash":
                path.chmod(0o755)
        elif b.lang == "bash":
            self._bash(b, code)
        elif b.lang == "python":
            self._python(b, code)

    def _bash(self, b: Block, code: str) -> None:
        env_out = self.root / ".docs-test-env"
        script = f"set -e -o pipefail\n{code}\nenv -0 > {env_out}\n"
        proc = subprocess.run(["bash", "-c", script], cwd=self.root, env=self.env, capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, (f"{b.where()}: the bash block exited {proc.returncode}\n--- block ---\n{code}"
                                      f"--- stdout ---\n{proc.stdout[-6000:]}\n--- stderr ---\n{proc.stderr[-6000:]}")
        self.env = dict(item.split("=", 1) for item in env_out.read_text().split("\0") if "=" in item)

    def _python(self, b: Block, code: str) -> None:
        before = os.getcwd()
        out = io.StringIO()
        os.chdir(self.root)
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(code, b.where(), "exec"), self.namespace)
        except Exception as e:
            raise AssertionError(f"{b.where()}: the python block failed: {type(e).__name__}: {e}\n--- block ---\n"
                                 f"{code}--- output ---\n{out.getvalue()[-4000:]}") from e
        finally:
            os.chdir(before)

    # ---- files the page wrote, checked by the tool that reads them
    def check_files(self) -> None:
        for defs in sorted(self.root.glob("defs/*/defs.yaml")):
            self._component(defs)
        dags = self.root / "dags"
        if dags.is_dir():
            self._airflow_parse(dags)

    def _component(self, defs_yaml: Path) -> None:
        import yaml
        from dagster.components.testing import create_defs_folder_sandbox

        from paimon_ops.dagster import PaimonComponent
        body = yaml.safe_load(defs_yaml.read_text())
        before = os.getcwd()
        os.chdir(self.root)  # relative warehouse paths are the reader's working directory
        try:
            with create_defs_folder_sandbox() as sandbox:
                path = sandbox.scaffold_component(component_cls=PaimonComponent, defs_path=defs_yaml.parent.name,
                                                  defs_yaml_contents=body)
                with sandbox.load_component_and_build_defs(defs_path=path) as (component, defs):
                    assert isinstance(component, PaimonComponent)
                    keys = defs.get_repository_def().asset_graph.get_all_asset_keys()
                    assert keys, f"{defs_yaml}: the component defined no table assets"
        finally:
            os.chdir(before)

    def _airflow_parse(self, dags: Path) -> None:
        assert (AIRFLOW_BIN / "python").exists(), f"{AIRFLOW_BIN} missing: ./dev.sh airflow-env makes it"
        code = ("import json\nfrom airflow.dag_processing.dagbag import DagBag\nb = DagBag('dags')\n"
                "print(json.dumps({'errors': {k: str(v) for k, v in b.import_errors.items()}, 'dags': sorted(b.dag_ids)}))")
        proc = subprocess.run([str(AIRFLOW_BIN / "python"), "-c", code], cwd=self.root, env=self.env,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        assert not result["errors"], f"DAG files of docs/{self.page} fail to import: {result['errors']}"
        files = sorted(dags.glob("*.py"))
        assert len(result["dags"]) >= len(files), (result, files)


@pytest.fixture
def page_env(request, tmp_path) -> dict[str, str]:
    """Environment a page's setup adds (an S3 server holding the sample warehouse)."""
    setup = SETUPS.get(request.param, Setup())
    if not setup.s3:
        return {}
    server = request.getfixturevalue("s3_server")
    sample = request.getfixturevalue("sample_warehouse")
    s3 = server.boto()
    if "bucket" not in {b["Name"] for b in s3.list_buckets()["Buckets"]}:
        s3.create_bucket(Bucket="bucket")
    for key in server.keys("bucket", "warehouse/"):
        s3.delete_object(Bucket="bucket", Key=key)
    server.upload(sample, "bucket", "warehouse")
    env = dict(server.env)
    request.node.docs_substitutions = {"http://minio:9000": server.endpoint}
    return env


@pytest.mark.parametrize("page_env", [pytest.param(p, marks=pytest.mark.moto) if SETUPS.get(p, Setup()).s3 else p
                                      for p in _pages_with_examples()], indirect=True)  # an S3 page starts moto
def test_page_examples_run(page_env, request, tmp_path, sample_warehouse):
    page = request.node.callspec.params["page_env"]
    setup = SETUPS.get(page, Setup())
    extra = getattr(request.node, "docs_substitutions", {})
    if extra:
        setup = Setup(**{**setup.__dict__, "substitutions": {**setup.substitutions, **extra}})
    box = Sandbox(tmp_path / "sandbox", page, setup, sample_warehouse, page_env)
    for b in blocks(page):
        if b.lang in RUN:
            box.run(b)
    box.check_files()
