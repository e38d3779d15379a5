#!/usr/bin/env bash
# The whole test suite, on a fresh machine too:
#   1. installs the independent readers and the local AWS server from PyPI (PyIceberg, DuckDB,
#      moto), see tests/requirements.txt;
#   2. builds the rustberg REST catalog from crates.io once (cached outside the clone, see
#      tests/servers/build-rustberg.sh);
#   3. starts moto (S3 + S3 Tables) on 127.0.0.1, waits until it answers, and stops it by PID
#      when the tests end (rustberg servers are started per test by the tests themselves);
#   4. installs headless Chromium (Debian's `chromium`) for the docs-site browser test, when
#      it is missing and apt-get can run;
#   5. runs every Rust test.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check -r tests/requirements.txt
if ! command -v chromium >/dev/null 2>&1; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo -n"; fi
  if ! { $sudo apt-get install -y -qq chromium >/dev/null 2>&1 \
      || { $sudo apt-get update -qq >/dev/null 2>&1 && $sudo apt-get install -y -qq chromium >/dev/null 2>&1; }; }; then
    echo "note: could not install chromium; the docs-site test will skip its browser part" >&2
  fi
fi
PIPELINE_TEST_RUSTBERG="$(./tests/servers/build-rustberg.sh)"
export PIPELINE_TEST_RUSTBERG

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
log="$(mktemp -t moto.XXXXXX.log)"
python3 tests/servers/moto_server.py --host 127.0.0.1 --port "$port" --exit-with-parent >"$log" 2>&1 &
moto_pid=$!
trap 'kill "$moto_pid" 2>/dev/null || true; wait "$moto_pid" 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 1 150); do
  if python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/moto-api/')" 2>/dev/null; then
    break
  fi
  if ! kill -0 "$moto_pid" 2>/dev/null; then
    echo "moto did not start:" >&2
    cat "$log" >&2
    exit 1
  fi
  sleep 0.2
done
export PIPELINE_TEST_MOTO="http://127.0.0.1:$port"
echo "moto (S3, S3 Tables) at $PIPELINE_TEST_MOTO, pid $moto_pid; rustberg at $PIPELINE_TEST_RUSTBERG" >&2

cargo test --all-targets
