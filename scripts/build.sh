#!/usr/bin/env bash
# Installs what is missing and builds alto into build/ (Release). Extra arguments go to cmake
# (scripts/demo.sh builds the library, the CLI and the Python module only; scripts/test.sh
# everything).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j "$(nproc)"
