#!/usr/bin/env bash
# Installs alto into a scratch prefix, builds the README's C++ example against it with
# find_package(alto), and runs it on a bundled sample.
set -euo pipefail
build=$1
source=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
# The example is the README's own ```cpp block, so the README cannot drift from what is tested.
awk '/<!-- example:begin -->/{f=1; next} /<!-- example:end -->/{f=0} f && !/^```/' \
  "$source/README.md" >"$work/example.cpp"
[ -s "$work/example.cpp" ] || { echo "no example found in README.md"; exit 1; }
cmake -S "$source/tests/consumer" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DEXAMPLE_SOURCE="$work/example.cpp" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/build" >/dev/null
out=$("$work/build/consumer" "$source/samples/stereo_44k.m4a")
echo "$out"
# ffmpeg decodes 45056 frames at 44.1 kHz from this sample; at 16 kHz that is round(45056 * 16000 / 44100).
expected_frames=$(( (45056 * 16000 + 22050) / 44100 ))
expected="16000 Hz, 1 channel(s), $expected_frames frames
log-mel [80, 3000]"
[ "$out" = "$expected" ] || { echo "unexpected output"; exit 1; }
"$work/prefix/bin/alto" info "$source/samples/speech_16k.flac"
