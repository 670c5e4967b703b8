"""The documentation site builds with zero warnings (MkDocs strict: a broken link or anchor, a missing page or image,
an unresolved cross-reference, a public name without a docstring fails the build), its reference pages are the code
(every operation and parameter of the registry, every command's help, every option of the catalogue with its
default, every member of the JSON Schemas), and in a real browser (headless Chromium) the home page, a guide and a
reference page render — Mermaid diagram drawn, navigation and tables laid out (the option names the pages use are
checked by tests/core/test_options.py). The screenshots are kept in
tests/artifacts/docs/ for a person to look at.
"""
from __future__ import annotations

import functools
import html
import http.server
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.docs.docs_util import DOCS, REPO

ARTIFACTS = REPO / "tests" / "artifacts" / "docs"
sys.path.insert(0, str(DOCS / "hooks"))

import reference  # noqa: E402
import registry_view  # noqa: E402


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site") / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{log[-8000:]}"
    warnings = [line for line in log.splitlines() if line.startswith("WARNING")]
    assert not warnings, "\n".join(warnings)
    return out


def _text(site: Path, page: str) -> str:
    """The page's text as a reader sees it (tags removed, entities decoded)."""
    raw = (site / page).read_text()
    main = raw[raw.index('<article'):raw.index('</article>')]
    return html.unescape(re.sub(r"<[^>]+>", "", main))


def test_reference_pages_are_the_code(site):
    from paimon_ops.options import CATALOGUE
    from paimon_ops.schemas import KINDS, schema

    ops_page = _text(site, "reference/operations.html")
    for op in registry_view.operations():
        assert f"paimon-ops {op.command}" in ops_page and op.airflow_operator in ops_page, op.name
        for p in op.params:
            assert p.name in ops_page and (p.flag is None or p.flag in ops_page), (op.name, p.name)
    cli_page = _text(site, "reference/cli.html")
    for name, text in reference.cli_help().items():
        first = text.strip().splitlines()[0]
        assert first in cli_page, f"paimon-ops {name} --help is not on the CLI page"
        for flag in re.findall(r"--[a-z][a-z-]+", text):
            assert flag in cli_page, (name, flag)
    options_page = _text(site, "reference/options.html")
    for opt in CATALOGUE.values():
        row = next((line for line in options_page.splitlines() if opt.key in line), None)
        assert row is not None, f"option {opt.key} is not on the options page"
    for opt in CATALOGUE.values():
        assert opt.default_text.replace("`", "") in options_page, (opt.key, opt.default_text)
    schemas_page = _text(site, "reference/schemas.html")
    for kind in KINDS:
        for member in schema(kind).get("properties", {}):
            assert member in schemas_page, (kind, member)


def test_generated_pages_follow_the_registry():
    """The pages are rendered from the registry's public surface: each operation and each parameter once, in the
    registry's order."""
    from paimon_ops.api import OPERATIONS
    page = reference.operations_page()
    positions = [page.index(f"{{#{name}}}") for name in OPERATIONS]
    assert positions == sorted(positions)
    for op in OPERATIONS.values():
        section = page[page.index(f"{{#{op.name}}}"):]
        section = section[:section.find("\n## ", 1) if "\n## " in section[1:] else None]
        shown = [p.name for p in op.params if not p.cli_hidden]
        assert re.findall(r"^\| `(\w+)` \|", section, re.M) == shown, op.name


# ---------------------------------------------------------------------------------------------- in a browser
class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def served(site):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    thread.join(10)


def test_site_in_a_browser(served, tmp_path):
    from tests.dagster import ui_util as ui
    reason = ui.browser_missing()
    if reason:
        pytest.skip(reason)  # fails under CI=true
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    browser = ui.Browser(tmp_path / "chromium", tmp_path / "chromedriver.log")
    try:
        driver = browser.driver
        shots = ui.Shots(driver, ARTIFACTS)
        driver.get(f"{served}/index.html")
        # the theme draws the diagram into a closed shadow root of a div.mermaid that replaces the pre.mermaid source
        ui.wait_for(driver, "the Mermaid diagram drawn", lambda: driver.execute_script(
            "const m = document.querySelector('div.mermaid'); return !!m && !document.querySelector('pre.mermaid')"
            " && m.getBoundingClientRect().height > 100;"), timeout=60)
        shots.take_checked("home", {"the title": "//h1[starts-with(normalize-space(.), 'paimon-ops')]",
                                    "the tabs": "//a[normalize-space(.)='Getting started']"})
        driver.get(f"{served}/guides/operations.html")
        shots.take_checked("guide-operations", {
            "the title": "//h1[starts-with(normalize-space(.), 'What each operation does')]",
            "the table of contents": "//nav[contains(@class,'md-nav--secondary')]"})
        driver.get(f"{served}/reference/options.html")
        shots.take_checked("reference-options", {"the title": "//h1[starts-with(normalize-space(.), 'Options')]",
                                                 "an option": "//code[normalize-space(.)='snapshot.num-retained.min']"})
        driver.get(f"{served}/getting-started/dagster.html")
        ui.wait_for(driver, "the screenshots loaded", lambda: driver.execute_script(
            "return [...document.images].filter(i => i.src.includes('screenshots')).every(i => i.complete "
            "&& i.naturalWidth > 1000)"), timeout=30)
        shots.take_checked("getting-started-dagster", {"the title": "//h1[contains(., 'Dagster')]"})
    finally:
        browser.close()
