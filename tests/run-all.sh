#!/usr/bin/env bash
# The whole test suite: installs the independent readers the interop tests use (PyIceberg,
# DuckDB with its iceberg extension, from PyPI), then runs every Rust test.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check -r tests/requirements.txt
cargo test --all-targets
