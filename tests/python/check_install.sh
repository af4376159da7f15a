#!/usr/bin/env bash
# `cmake --install` into a scratch prefix, then import the installed module with nothing of the
# build tree on the path: the RPATH must find libalto and libtorch, the stubs must sit beside it.
set -euo pipefail
build=$1
python=$2
module_dir=$3  # ALTO_PYTHON_INSTALL_DIR, relative to the prefix
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
test -f "$work/prefix/$module_dir/alto-stubs/__init__.pyi"
test -f "$work/prefix/$module_dir/alto/datasets/__main__.py"
cd "$work"
env -u LD_LIBRARY_PATH PYTHONPATH="$work/prefix/$module_dir" "$python" -c '
import alto, alto.datasets, sys
assert alto.__file__.startswith(sys.argv[1]), alto.__file__
assert alto.datasets.__file__.startswith(sys.argv[1]), alto.datasets.__file__
wave, sr = alto.load_audio(sys.argv[2])
print("imported", alto.__file__, tuple(wave.shape), sr)
' "$work/prefix" "$(dirname "$0")/../../samples/speech_16k.flac"
