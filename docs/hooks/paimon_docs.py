"""MkDocs hook of the paimon-ops site (mkdocs.yml `hooks:`), run at every build:

* adds the generated reference pages (`reference.PAGES`: operations, command line, options, JSON Schemas) and fills
  each `<!-- generated: NAME -->` marker of a hand-written page with its generated section (`SECTIONS`);
* serves Mermaid from the site itself (diagrams render without a CDN): `mermaid.min.js` of the npm package, cached
  in `.cache/docs/` (fetched with `npm pack` on first need); without npm the theme's CDN copy is used, except under
  CI=true, where that is a warning (and so, strict, a failed build);
* fails the build (a warning, strict) on a public name of the documented modules that has no docstring.
"""
from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import reference  # noqa: E402

log = logging.getLogger("mkdocs.plugins.paimon_docs")

MERMAID_VERSION = "11.17.2"
MERMAID_CACHE = ROOT / ".cache" / "docs" / f"mermaid-{MERMAID_VERSION}.min.js"
MERMAID_SITE_PATH = "javascripts/mermaid.min.js"

SECTIONS = {"airflow-operators": reference.airflow_operators_section}

# Modules whose public names (their `__all__`) must each carry a docstring: the API pages render them.
DOCUMENTED_MODULES = ("paimon_ops", "paimon_ops.dagster", "paimon_ops.airflow.hooks", "paimon_ops.airflow.operators",
                      "paimon_ops.airflow.sensors", "paimon_ops.airflow.triggers", "paimon_ops.errors")


def _ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def mermaid_js() -> Path | None:
    """The cached Mermaid bundle, fetched from the npm registry on first need (None: npm is not available)."""
    if MERMAID_CACHE.exists():
        return MERMAID_CACHE
    npm = shutil.which("npm")
    if npm is None:
        return None
    MERMAID_CACHE.parent.mkdir(parents=True, exist_ok=True)
    work = MERMAID_CACHE.parent / "npm-pack"
    work.mkdir(exist_ok=True)
    try:
        proc = subprocess.run([npm, "pack", f"mermaid@{MERMAID_VERSION}", "--silent"], cwd=work, capture_output=True,
                              text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        log.info("npm pack mermaid failed: %s", e)
        return None
    if proc.returncode != 0:
        log.info("npm pack mermaid failed: %s", proc.stderr.strip()[-500:])
        return None
    tgz = work / proc.stdout.strip().splitlines()[-1]
    with tarfile.open(tgz) as t:
        member = t.extractfile("package/dist/mermaid.min.js")
        assert member is not None
        tmp = MERMAID_CACHE.with_suffix(".tmp")
        tmp.write_bytes(member.read())
        tmp.replace(MERMAID_CACHE)
    shutil.rmtree(work, ignore_errors=True)
    return MERMAID_CACHE


def on_config(config: Any) -> Any:
    if mermaid_js() is not None:
        config["extra_javascript"].append(MERMAID_SITE_PATH)
    elif _ci():
        log.warning("npm is not available to fetch mermaid@%s: the diagrams would load Mermaid from a CDN",
                    MERMAID_VERSION)
    return config


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File
    for path, render in reference.PAGES.items():
        existing = files.get_file_from_path(path)
        if existing is not None:
            files.remove(existing)
        files.append(File.generated(config, path, content=render()))
    js = mermaid_js()
    if js is not None:
        files.append(File.generated(config, MERMAID_SITE_PATH, abs_src_path=str(js)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    for name, render in SECTIONS.items():
        marker = f"<!-- generated: {name} -->"
        if marker in markdown:
            markdown = markdown.replace(marker, render())
    return markdown


def undocumented() -> list[str]:
    """Public names (in `__all__`) of the documented modules without a docstring of their own."""
    import griffe
    loader = griffe.GriffeLoader(search_paths=[str(ROOT)])
    missing = []
    for module_path in DOCUMENTED_MODULES:
        top = module_path.split(".")[0]
        package = loader.load(top) if top not in loader.modules_collection else loader.modules_collection[top]
        module = package if module_path == top else package[module_path.split(".", 1)[1]]
        loader.resolve_aliases(implicit=False, external=False)
        names = module.exports or []
        for name in names:
            name = str(name)
            if name.startswith("__"):
                continue
            try:
                obj = module[name]
                target = obj.final_target if obj.is_alias else obj
            except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
                continue  # generated at run time (the Airflow operators) or re-exported from outside
            if target.kind.value in ("class", "function") and not (target.docstring and target.docstring.value.strip()):
                missing.append(f"{module_path}.{name}")
    return missing


def on_post_build(config: Any) -> None:
    for name in undocumented():
        log.warning("public name without a docstring: %s (the API reference would show it bare)", name)
