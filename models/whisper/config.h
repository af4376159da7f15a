#pragma once
// config.json of a Whisper checkpoint, also the audio_config of the audio LMs built on Whisper's
// encoder (Qwen2-Audio, Voxtral).

#include <cstdint>
#include <string>

#include "alto/core/options.h"

namespace alto::models {

/// config.json of a Whisper checkpoint; absent keys take transformers' WhisperConfig defaults.
struct WhisperConfig {
  int64_t vocab_size = 51865;
  int64_t num_mel_bins = 80;
  int64_t d_model = 384;
  int64_t encoder_layers = 4;
  int64_t encoder_attention_heads = 6;
  int64_t encoder_ffn_dim = 1536;
  int64_t decoder_layers = 4;
  int64_t decoder_attention_heads = 6;
  int64_t decoder_ffn_dim = 1536;
  int64_t max_source_positions = 1500;
  int64_t max_target_positions = 448;
  std::string activation_function = "gelu";
  bool scale_embedding = false;
  bool tie_word_embeddings = true;
  int64_t pad_token_id = 50256;
  int64_t bos_token_id = 50256;
  int64_t eos_token_id = 50256;
  int64_t decoder_start_token_id = 50257;

  /// Reads `path` (a config.json or the folder holding it). Throws alto::IoError for a missing
  /// or corrupt file, alto::InvalidArgument naming the file and field for a bad value, and
  /// alto::Unsupported for a model_type other than "whisper". With `sub_config` ("audio_config"
  /// of an audio LM), the encoder's keys are read from that nested object, whose model_type is
  /// the audio LM's business.
  static WhisperConfig from_json(const std::string& path, const std::string& sub_config = "");
  /// config.json's keys, each declared once (core/options.h).
  static const OptionSchema<WhisperConfig>& schema();
  void validate() const;
  std::string to_string() const;

  /// Mel frames of one encoder window: the convolution stem halves them.
  int64_t input_frames() const { return 2 * max_source_positions; }
};

}  // namespace alto::models
