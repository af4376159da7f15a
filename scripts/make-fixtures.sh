#!/usr/bin/env bash
# Regenerates the committed lossy fixtures in tests/data/ and the samples in samples/ from the
# golden inputs in ../shared/golden (needs the ffmpeg CLI; not part of the build or CI).
set -euo pipefail
cd "$(dirname "$0")/.."
golden=../shared/golden/features
ff="ffmpeg -nostdin -hide_banner -loglevel error -y"
src=$golden/resample_ffmpeg_soxr__stereo44k_1s.wav   # 44.1 kHz stereo, 44100 frames
out=tests/data
mkdir -p "$out" samples
$ff -i "$src" -c:a libmp3lame -b:a 48k "$out/stereo44k.mp3"
$ff -i "$src" -c:a aac -b:a 48k "$out/stereo44k.m4a"
$ff -i "$src" -c:a libopus -b:a 24k "$out/stereo44k.opus"
$ff -i "$src" -c:a libopus -b:a 24k "$out/stereo44k.webm"
$ff -f lavfi -i color=c=gray:s=16x16:r=5:d=1 -i "$src" -map 0:v -map 1:a -c:v mpeg4 -q:v 31 \
    -c:a aac -b:a 32k -shortest "$out/video.mp4"
$ff -f lavfi -i color=c=gray:s=16x16:r=5:d=1 -i "$src" -map 0:v -map 1:a -c:v mpeg4 -q:v 31 \
    -c:a libmp3lame -b:a 32k -shortest "$out/video.mkv"
# The golden speech lies on the int16 grid, so 16-bit FLAC holds it losslessly.
$ff -i "$golden/whisper_hf_np_80__speech_4s.wav" -c:a flac -sample_fmt s16 samples/speech_16k.flac
$ff -i "$src" -c:a aac -b:a 64k samples/stereo_44k.m4a
cp "$golden/resample_ffmpeg_soxr__stereo44k_1s.wav" "$out/stereo44k_f32.wav"

# What the reference (the ffmpeg CLI and ffprobe) reports for each fixture: the tests assert
# alto's decoded length, rate and channels against these figures.
{
  echo "{"
  first=1
  for f in "$out"/stereo44k.mp3 "$out"/stereo44k.m4a "$out"/stereo44k.opus "$out"/stereo44k.webm \
           "$out"/video.mp4 "$out"/video.mkv "$out"/stereo44k_f32.wav samples/speech_16k.flac; do
    rate=$(ffprobe -v error -select_streams a:0 -show_entries stream=sample_rate -of csv=p=0 "$f")
    channels=$(ffprobe -v error -select_streams a:0 -show_entries stream=channels -of csv=p=0 "$f")
    bytes=$($ff -i "$f" -map 0:a -c:a pcm_f32le -f f32le - | wc -c)
    [ $first -eq 1 ] || echo ","
    first=0
    printf '  "%s": {"sample_rate": %s, "channels": %s, "frames": %s}' \
      "$(basename "$f")" "$rate" "$channels" $((bytes / 4 / channels))
  done
  echo
  echo "}"
} > "$out/fixtures.json"
