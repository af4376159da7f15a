#!/usr/bin/env bash
# Runs a fuzzer for a bounded time on a copy of the seed corpus (the seeds stay untouched).
set -euo pipefail
fuzzer=$1
seeds=$2
seconds=$3
work=$(mktemp -d)
# The harnesses' own scratch files go under TMPDIR (tests/fuzz/scratch_folder.h).
scratch=$(mktemp -d)
trap 'rm -rf "$work" "$scratch"' EXIT
cp "$seeds"/* "$work/"
export TMPDIR=$scratch
# FFmpeg's own allocations are not instrumented; leaks are still reported for alto's code.
"$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 "$work" 2>&1 | tail -n 15
