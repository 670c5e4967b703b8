#!/usr/bin/env bash
# The project's own entry point. On a fresh machine (Python >= 3.11, Java 17) it creates the virtual env,
# installs everything the project needs, then runs what was asked:
#   ./dev.sh demo   build a sample warehouse and run the nightly maintenance job end to end
#   ./dev.sh test   run the whole test suite
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(pwd)

pick_python() {
  for c in "${PYTHON:-}" python3.13 python3.12 python3.11 python3; do
    [ -n "$c" ] || continue
    if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
      echo "$c"; return
    fi
  done
  echo "paimon-ops needs Python >= 3.11 on PATH (or PYTHON=/path/to/python3.11)" >&2; exit 1
}

ensure_env() {
  if [ ! -x .venv/bin/python ]; then
    "$(pick_python)" -m venv .venv
  fi
  # Reinstall only when the dependency declaration changed.
  local stamp=.venv/.paimon-ops-installed want
  want=$(sha256sum pyproject.toml | cut -d' ' -f1)
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    .venv/bin/python -m pip install -q --upgrade pip
    .venv/bin/python -m pip install -q -e ".[test]"
    echo "$want" > "$stamp"
  fi
  command -v java >/dev/null 2>&1 || { echo "paimon-ops needs Java 17 (java on PATH) for Spark" >&2; exit 1; }
  export PYSPARK_PYTHON="$ROOT/.venv/bin/python" PYSPARK_DRIVER_PYTHON="$ROOT/.venv/bin/python"
  export SPARK_LOCAL_IP=127.0.0.1
  export PATH="$ROOT/.venv/bin:$PATH"
}

# The Dagster UI test drives headless Chromium (Debian packages chromium + chromium-driver).
ensure_browser() {
  if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then return; fi
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing chromium + chromium-driver for the Dagster UI test" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver) >&2 \
      || echo "warning: could not install chromium; the UI test will be skipped" >&2
  else
    echo "warning: chromium/chromedriver missing and not root; the UI test will be skipped" >&2
  fi
}

cmd=${1:-}
shift || true
case "$cmd" in
  demo)
    ensure_env
    exec .venv/bin/python demo.py "$@"
    ;;
  test)
    ensure_env
    ensure_browser
    exec .venv/bin/python -m pytest "$@"
    ;;
  *)
    echo "usage: ./dev.sh demo|test [args]" >&2; exit 2
    ;;
esac
