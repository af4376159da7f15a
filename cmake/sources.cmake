# Source lists, one per folder in the order of the layers (docs/architecture.md), shared with the
# separately built fuzzers (tests/fuzz).
set(ALTO_ROOT ${CMAKE_CURRENT_LIST_DIR}/..)

# Plain C++ without libtorch: built without the torch precompiled header.
set(ALTO_CORE_PLAIN_SOURCES
  ${ALTO_ROOT}/core/error.cpp
  ${ALTO_ROOT}/core/internal/blas.cpp  # only dlsym's the BLAS
  ${ALTO_ROOT}/core/internal/output_file.cpp
  ${ALTO_ROOT}/core/safetensors_header.cpp
  ${ALTO_ROOT}/core/system_info.cpp
  ${ALTO_ROOT}/core/warning.cpp)
set(ALTO_AUDIO_SOURCES
  ${ALTO_ROOT}/audio/audio.cpp
  ${ALTO_ROOT}/audio/load.cpp
  ${ALTO_ROOT}/audio/resample.cpp
  ${ALTO_ROOT}/audio/save.cpp
  ${ALTO_ROOT}/audio/stream_reader.cpp
  ${ALTO_ROOT}/audio/versions.cpp
  ${ALTO_ROOT}/audio/internal/ffmpeg_decoder.cpp
  ${ALTO_ROOT}/audio/internal/ffmpeg_util.cpp
  ${ALTO_ROOT}/audio/internal/sndfile_decoder.cpp)
set(ALTO_TOKENIZERS_PLAIN_SOURCES
  ${ALTO_ROOT}/tokenizers/bpe_tokenizer.cpp
  ${ALTO_ROOT}/tokenizers/internal/regex.cpp
  ${ALTO_ROOT}/tokenizers/internal/unicode.cpp
  ${ALTO_ROOT}/tokenizers/sentencepiece_tokenizer.cpp
  ${ALTO_ROOT}/tokenizers/text_tokenizer.cpp)
set(ALTO_PLAIN_SOURCES ${ALTO_CORE_PLAIN_SOURCES} ${ALTO_TOKENIZERS_PLAIN_SOURCES})

# libtorch code, folder by folder.
set(ALTO_CORE_SOURCES
  ${ALTO_ROOT}/core/activation_memory.cpp
  ${ALTO_ROOT}/core/checkpoint.cpp
  ${ALTO_ROOT}/core/options.cpp
  ${ALTO_ROOT}/core/safetensors.cpp
  ${ALTO_ROOT}/core/threading.cpp
  ${ALTO_ROOT}/core/version.cpp)
set(ALTO_AUDIO_TORCH_SOURCES
  ${ALTO_ROOT}/audio/audio_tensor.cpp)
set(ALTO_FEATURES_SOURCES
  ${ALTO_ROOT}/features/feature_extractor.cpp
  ${ALTO_ROOT}/features/fft.cpp
  ${ALTO_ROOT}/features/frames.cpp
  ${ALTO_ROOT}/features/kaldi_fbank.cpp
  ${ALTO_ROOT}/features/kaldi_mfcc.cpp
  ${ALTO_ROOT}/features/mel.cpp
  ${ALTO_ROOT}/features/mel_spectrogram.cpp
  ${ALTO_ROOT}/features/seamless_m4t_feature_extractor.cpp
  ${ALTO_ROOT}/features/stft.cpp
  ${ALTO_ROOT}/features/wav2vec2_feature_extractor.cpp
  ${ALTO_ROOT}/features/whisper_feature_extractor.cpp
  ${ALTO_ROOT}/features/window.cpp)
set(ALTO_TOKENIZERS_SOURCES
  ${ALTO_ROOT}/tokenizers/audio_tokenizer.cpp)
set(ALTO_MODELS_SOURCES
  ${ALTO_ROOT}/models/internal/activation.cpp
  ${ALTO_ROOT}/models/internal/conv.cpp
  ${ALTO_ROOT}/models/internal/few_rows.cpp
  ${ALTO_ROOT}/models/internal/fused_attention.cpp
  ${ALTO_ROOT}/models/blocks/attention.cpp
  ${ALTO_ROOT}/models/blocks/basic.cpp
  ${ALTO_ROOT}/models/blocks/mlp.cpp
  ${ALTO_ROOT}/models/blocks/norm.cpp
  ${ALTO_ROOT}/models/blocks/rope.cpp
  ${ALTO_ROOT}/models/blocks/rvq.cpp
  ${ALTO_ROOT}/models/blocks/seanet.cpp
  ${ALTO_ROOT}/models/blocks/streaming_transformer.cpp
  ${ALTO_ROOT}/models/audio_encoder.cpp
  ${ALTO_ROOT}/models/audio_language_model.cpp
  ${ALTO_ROOT}/models/csm/csm.cpp
  ${ALTO_ROOT}/models/dac.cpp
  ${ALTO_ROOT}/models/encodec.cpp
  ${ALTO_ROOT}/models/generation.cpp
  ${ALTO_ROOT}/models/kyutai_speech_to_text/kyutai_speech_to_text.cpp
  ${ALTO_ROOT}/models/kyutai_speech_to_text/speech_to_text_stream.cpp
  ${ALTO_ROOT}/models/mimi.cpp
  ${ALTO_ROOT}/models/qwen2_audio/qwen2_audio.cpp
  ${ALTO_ROOT}/models/text_decoder.cpp
  ${ALTO_ROOT}/models/voxtral/voxtral.cpp
  ${ALTO_ROOT}/models/whisper/config.cpp
  ${ALTO_ROOT}/models/whisper/decoding.cpp
  ${ALTO_ROOT}/models/whisper/live_transcriber.cpp
  ${ALTO_ROOT}/models/whisper/transcriber.cpp
  ${ALTO_ROOT}/models/whisper/whisper.cpp
  ${ALTO_ROOT}/models/whisper/whisper_encoder.cpp)
set(ALTO_STREAMING_SOURCES
  ${ALTO_ROOT}/streaming/streaming_feature_extractor.cpp)
set(ALTO_TORCH_SOURCES ${ALTO_CORE_SOURCES} ${ALTO_AUDIO_TORCH_SOURCES} ${ALTO_FEATURES_SOURCES}
  ${ALTO_TOKENIZERS_SOURCES} ${ALTO_MODELS_SOURCES} ${ALTO_STREAMING_SOURCES})
