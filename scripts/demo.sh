#!/usr/bin/env bash
# The main job on the bundled samples: inspect them, then convert one to 16 kHz mono FLAC.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
out=$(mktemp -d)
./build/cli/alto info samples/*
./build/cli/alto convert samples/stereo_44k.m4a "$out/stereo_16k_mono.flac" --sample-rate 16000 --mono
./build/cli/alto info --json "$out/stereo_16k_mono.flac"
