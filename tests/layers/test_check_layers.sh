#!/usr/bin/env bash
# The layering check passes on alto's tree and fails, naming each, on deliberately wrong includes.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
check="$here/../../scripts/check-layers.py"
python3 "$check" "$here/../.."
if out=$(python3 "$check" "$here/bad"); then
  echo "FAIL: the check passed on tests/layers/bad"; exit 1
fi
echo "$out"
for expected in \
  "tokenizers/factory.cpp:2: includes \"alto/models/mimi.h\": models/ is above tokenizers/" \
  "core/tensor.h:3: includes \"alto/audio/audio.h\": audio/ is above core/" \
  "models/blocks/block.h:3: includes \"alto/models/internal/conv.h\": a public header must not include an internal one" \
  "models/internal/kernel.h:3: includes \"alto/models/blocks/basic.h\": models/blocks/ is above models/internal/" \
  "cli/command.cpp:2: includes \"alto/core/internal/json_config.h\": cli/ uses the public API only" \
  "cli/command.cpp:3: includes \"bindings/common.h\": cli/ and bindings/ must not include each other" \
  "samples/app.cpp:3: includes <alto/core/internal/blas.h>: samples/ uses the public API only" \
  "check-layers: 7 violation(s)"; do
  grep -qxF "$expected" <<<"$out" || { echo "FAIL: missing: $expected"; exit 1; }
done
echo "check-layers: the good tree passes, the 7 wrong includes are each reported"
