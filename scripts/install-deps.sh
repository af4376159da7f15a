#!/usr/bin/env bash
# Installs every Debian 12 package alto needs to build, test and benchmark.
# Idempotent and non-interactive: packages already present are skipped.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  libtorch-dev libopenblas0-pthread
  libavformat-dev libavcodec-dev libswresample-dev libavutil-dev
  libsndfile1-dev libfftw3-dev libeigen3-dev libsentencepiece-dev zlib1g-dev
  catch2 pybind11-dev python3-dev nlohmann-json3-dev libcli11-dev libbenchmark-dev
  clang libclang-rt-14-dev
  python3-torch python3-torchaudio python3-numpy python3-scipy
  python3-pytest python3-regex python3-sentencepiece
  python3-dask python3-distributed python3-psutil
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
