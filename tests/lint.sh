#!/usr/bin/env bash
# The lint step, run before the suite and failing fast: ruff check over the tree, the layer
# contracts (lint-imports, [tool.importlinter] in pyproject.toml) and, given a base revision
# (`tests/lint.sh BASE`, or CAIRN_LINT_BASE), ruff format --check on the Python files changed
# since it. mypy runs in the suite (tests/test_static_types.py), in parallel with the other tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=.venv/bin
"$bin/ruff" check --quiet .
"$bin/lint-imports" --no-cache | sed -n '/^Contracts$/,$p'
base="${1:-${CAIRN_LINT_BASE:-}}"
if [ -n "$base" ]; then
  mapfile -t changed < <(git diff --name-only --diff-filter=ACMR "$base" -- '*.py')
  if [ "${#changed[@]}" -gt 0 ]; then
    "$bin/ruff" format --check "${changed[@]}"
  fi
fi
echo "lint: ruff check and $(grep -c '^\[\[tool.importlinter.contracts\]\]' pyproject.toml) import contracts passed"
