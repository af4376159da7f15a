#!/usr/bin/env bash
# The main job on the bundled samples: inspect them, convert one to 16 kHz mono FLAC, and
# compute Whisper's log-mel and Kaldi fbank features of the speech sample; then Whisper, codecs
# and the Python porting check on the tiny test checkpoints.
set -euo pipefail
cd "$(dirname "$0")/.."
# Only what the demo runs: the library, the CLI and the Python module (scripts/test.sh builds the
# tests, benchmarks and fuzzers).
bash scripts/build.sh -DALTO_BUILD_TESTS=OFF -DALTO_BUILD_BENCH=OFF -DALTO_BUILD_FUZZERS=OFF
echo "demo.sh: built in ${SECONDS} s"
out=$(mktemp -d)
./build/cli/alto info samples/*.flac samples/*.m4a
./build/cli/alto convert samples/stereo_44k.m4a "$out/stereo_16k_mono.flac" --sample-rate 16000 --mono
./build/cli/alto info --json "$out/stereo_16k_mono.flac"
./build/cli/alto features samples/speech_16k.flac -o "$out/speech_whisper.safetensors" --extractor whisper
./build/cli/alto features samples/speech_16k.flac -o "$out/speech_fbank.safetensors" --extractor kaldi-fbank \
  --num-mel-bins 80 --waveform-scale 32768
# Whisper end to end on the tiny random-weight test checkpoint (its transcript is gibberish: the
# weights are random; a Hub checkpoint folder works the same way).
model=tests/data/models/whisper-tiny-random
tokenizer=tests/data/tokenizers/whisper-multilingual
./build/cli/alto tokenize --tokenizer "$tokenizer" "Hello world"
./build/cli/alto embed --model "$model" samples/speech_16k.flac -o "$out/speech_embedding.safetensors"
./build/cli/alto transcribe --model "$model" --tokenizer "$tokenizer" samples/speech_16k.flac \
  --language en --beam 0 --temperature 0 --json
# Codec tokens: EnCodec 24 kHz and Mimi on the tiny random-weight checkpoints (the speech is
# resampled to 24 kHz first); Mimi once more frame by frame, which gives the same codes.
for codec in encodec-24khz-tiny-random mimi-tiny-random; do
  ./build/cli/alto encode --model "tests/data/models/$codec" samples/speech_16k.flac -o "$out/$codec.codes.safetensors"
  ./build/cli/alto decode --model "tests/data/models/$codec" "$out/$codec.codes.safetensors" -o "$out/$codec.wav"
done
./build/cli/alto encode --model tests/data/models/mimi-tiny-random samples/speech_16k.flac \
  -o "$out/mimi-stream.codes.safetensors" --stream
# Python: the layer-by-layer porting check of samples/port_whisper_encoder.py.
if [ -d build/python ]; then
  PYTHONPATH=build/python /usr/bin/python3 samples/port_whisper_encoder.py tests/data/models/whisper-tiny-random
fi
ls -l "$out"
echo "demo.sh: done in ${SECONDS} s"
