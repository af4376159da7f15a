#!/usr/bin/env bash
# Drives the alto CLI as a user would and checks exit codes, messages and --json output.
set -u
alto=$1
data=$2
samples=$(dirname "$0")/../../samples
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect_error CMD...: exit status 1 and exactly one line on stderr naming the problem.
expect_error() {
  local pattern=$1; shift
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ $rc -eq 1 ] || fail "'$*' exited $rc, expected 1"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "'$*' printed $(wc -l <"$tmp/err") lines on stderr"
  grep -q -- "$pattern" "$tmp/err" || fail "'$*' stderr lacks '$pattern': $(cat "$tmp/err")"
}

"$alto" --help >/dev/null || fail "alto --help"
# --version: alto's, libtorch's, FFmpeg's and libsndfile's versions and the BLAS in use.
"$alto" --version >"$tmp/version" || fail "alto --version"
for want in "^alto [0-9]" "^libtorch [0-9]" "^FFmpeg .*libavformat .*libsndfile" "^BLAS: " "^CPU: "; do
  grep -q -- "$want" "$tmp/version" || fail "alto --version lacks '$want': $(cat "$tmp/version")"
done
"$alto" info --help | grep -q -- "--json" || fail "alto info --help"
"$alto" convert --help | grep -q -- "--sample-rate" || fail "alto convert --help"

# info --json: the keys scripts depend on, with the values ffmpeg reports.
"$alto" info --json "$data/stereo44k.mp3" "$samples/speech_16k.flac" >"$tmp/info.json" || fail "info --json"
/usr/bin/python3 - "$tmp/info.json" "$data/fixtures.json" <<'PY' || fail "info --json values"
import json, os, sys
info = json.load(open(sys.argv[1])); ref = json.load(open(sys.argv[2]))
assert isinstance(info, list) and len(info) == 2, info
for item in info:
    assert set(item) == {"path", "container", "codec", "sample_rate", "channels", "frames", "duration_seconds"}, item
    r = ref[os.path.basename(item["path"])]
    assert (item["sample_rate"], item["channels"], item["frames"]) == (r["sample_rate"], r["channels"], r["frames"]), item
    assert abs(item["duration_seconds"] - r["frames"] / r["sample_rate"]) < 1e-9
assert info[0]["container"] == "mp3" and info[0]["codec"] == "mp3"
assert info[1]["container"] == "flac" and info[1]["codec"] == "flac"
PY
"$alto" info "$data/video.mp4" | grep -q "aac, 44100 Hz, 2 channels" || fail "info text"

# convert: resample + downmix to FLAC, then 24-bit and float WAV; stdin input.
"$alto" --threads 1 convert "$data/stereo44k.m4a" "$tmp/out.flac" --sample-rate 16000 --mono || fail "convert"
"$alto" info --json "$tmp/out.flac" | grep -q '"sample_rate": 16000' || fail "converted rate"
"$alto" info --json "$tmp/out.flac" | grep -q '"channels": 1' || fail "converted channels"
"$alto" convert "$data/stereo44k_f32.wav" "$tmp/out.wav" --bits 32f || fail "convert 32f"
cmp -s <(tail -c 352800 "$data/stereo44k_f32.wav") <(tail -c 352800 "$tmp/out.wav") || fail "32f samples differ"
"$alto" convert - "$tmp/stdin.wav" --bits 24 <"$data/stereo44k.webm" || fail "convert from stdin"
"$alto" info "$tmp/stdin.wav" | grep -q "pcm_s24le, 48000 Hz, 2 channels, 1.000 s" || fail "stdin result"

# Bad input: exit 1, one line.
expect_error "No such file" "$alto" info "$tmp/missing.wav"
expect_error "directory" "$alto" info "$tmp"
printf 'not audio at all\n' >"$tmp/bad.wav"
expect_error "bad.wav" "$alto" info "$tmp/bad.wav"
expect_error "bad.wav" "$alto" convert "$tmp/bad.wav" "$tmp/x.wav"
expect_error "sample-rate" "$alto" convert "$data/stereo44k.mp3" "$tmp/x.wav" --sample-rate 0
expect_error "FLAC" "$alto" convert "$data/stereo44k.mp3" "$tmp/x.flac" --bits 32f
expect_error "bits" "$alto" convert "$data/stereo44k.mp3" "$tmp/x.wav" --bits 12
expect_error "threads" "$alto" --threads 0 info "$data/stereo44k.mp3"
expect_error "threads must be in \[1, " "$alto" --threads 5000 info "$data/stereo44k.mp3"
expect_error "subcommand" "$alto" nosuchcommand

if [ $failures -eq 0 ]; then echo "cli: all checks passed"; else echo "cli: $failures failed"; exit 1; fi
