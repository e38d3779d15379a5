#!/usr/bin/env bash
# Builds the rustberg REST catalog (crates.io, 0.3.0) once and caches the binary outside the
# clone, so later CI runs reuse it. A cold build takes about 20 minutes on 2 cores; release LTO
# is turned off and only the CLI and S3 storage are compiled to keep it that short.
# Prints the binary's path on stdout.
set -euo pipefail
version=0.3.0
cache="${PIPELINE_CI_CACHE:-$HOME/.cache/pipeline-ci}"
root="$cache/rustberg-$version"
bin="$root/bin/rustberg"
if [[ -x "$bin" ]]; then
  echo "$bin"
  exit 0
fi
mkdir -p "$root"
echo "building rustberg $version into $root (once; cached for later runs)" >&2
CARGO_PROFILE_RELEASE_LTO=false \
CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
CARGO_PROFILE_RELEASE_DEBUG=false \
  cargo install rustberg --version "$version" --locked \
    --no-default-features --features cli,storage-s3 \
    --root "$root" --target-dir "$cache/rustberg-target" >&2
rm -rf "$cache/rustberg-target"
echo "$bin"
