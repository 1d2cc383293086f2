#!/usr/bin/env bash
# Install everything the test suite needs into .venv (and Emacs and Neovim from
# Debian when they are missing and we may install them), then the lint step, then
# the whole suite in parallel.
# pytest's exit 5 (no tests collected) is a failure, never a silent pass.
set -euo pipefail
cd "$(dirname "$0")/.."

has_eglot() { command -v emacs >/dev/null 2>&1 && emacs --batch --eval "(progn (require 'eglot) (require 'package-lint))" >/dev/null 2>&1; }
if ! has_eglot || ! command -v nvim >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq emacs-nox elpa-eglot elpa-package-lint elpa-transient neovim >/dev/null
  else
    echo "tests/run-all.sh: Emacs with eglot and Neovim are required for the editor tests:" >&2
    echo "  sudo apt-get install emacs-nox elpa-eglot elpa-package-lint elpa-transient neovim" >&2
    exit 1
  fi
fi

python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[dev]'

# the lint step fails fast, before the suite (tests/lint.sh)
bash tests/lint.sh

# one pytest worker per core (pytest-xdist); CAIRN_TEST_WORKERS=0 runs in this process
set +e
.venv/bin/python -m pytest -n "${CAIRN_TEST_WORKERS:-auto}" "$@"
rc=$?
set -e
if [ "$rc" = 5 ]; then
  echo "tests/run-all.sh: pytest collected no tests; that is a failure" >&2
  exit 1
fi
exit "$rc"
