#!/usr/bin/env bash
# The main job on the bundled samples: inspect them, convert one to 16 kHz mono FLAC, and
# compute Whisper's log-mel and Kaldi fbank features of the speech sample.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
out=$(mktemp -d)
./build/cli/alto info samples/*
./build/cli/alto convert samples/stereo_44k.m4a "$out/stereo_16k_mono.flac" --sample-rate 16000 --mono
./build/cli/alto info --json "$out/stereo_16k_mono.flac"
./build/cli/alto features samples/speech_16k.flac -o "$out/speech_whisper.safetensors" --extractor whisper
./build/cli/alto features samples/speech_16k.flac -o "$out/speech_fbank.safetensors" --extractor kaldi-fbank \
  --num-mel-bins 80 --waveform-scale 32768
ls -l "$out"
# Whisper end to end on the tiny random-weight test checkpoint (its transcript is gibberish: the
# weights are random; a Hub checkpoint folder works the same way).
model=tests/data/models/whisper-tiny-random
tokenizer=tests/data/tokenizers/whisper-multilingual
./build/cli/alto tokenize --tokenizer "$tokenizer" "Hello world"
./build/cli/alto embed --model "$model" samples/speech_16k.flac -o "$out/speech_embedding.safetensors"
./build/cli/alto transcribe --model "$model" --tokenizer "$tokenizer" samples/speech_16k.flac \
  --language en --beam 0 --temperature 0 --json
