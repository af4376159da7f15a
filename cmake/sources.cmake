# Source lists, shared with the separately built fuzzers (tests/fuzz).

# The audio layer does not use libtorch, so it builds without the torch precompiled header.
set(ALTO_AUDIO_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/../audio/audio.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../audio/load.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../audio/resample.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../audio/save.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../audio/stream_reader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../audio/internal/ffmpeg_decoder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../audio/internal/ffmpeg_util.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../audio/internal/sndfile_decoder.cpp)

# Plain C++ that needs no libtorch either: the text tokenizers, and core/blas.cpp, which only
# dlsym's the BLAS.
set(ALTO_PLAIN_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/../core/blas.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../tokenizers/bpe_tokenizer.cpp)

set(ALTO_TORCH_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/../core/activation_memory.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../core/audio_tensor.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../core/safetensors.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../core/threading.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../features/feature_extractor.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../features/fft.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../features/frames.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../features/kaldi_fbank.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../features/kaldi_mfcc.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../features/mel.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../features/mel_spectrogram.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../features/seamless_m4t_feature_extractor.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../features/stft.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../features/wav2vec2_feature_extractor.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../features/whisper_feature_extractor.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../features/window.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../models/checkpoint.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../models/encodec.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../models/dac.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../models/layers/basic.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../models/layers/conv.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../models/layers/few_rows.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../models/layers/seanet.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../models/layers/streaming_transformer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../models/mimi.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../models/whisper.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../models/whisper_decoding.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../models/whisper_transcriber.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../streaming/streaming_feature_extractor.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../tokenizers/audio_tokenizer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/../tokenizers/rvq.cpp)
