#pragma once
// Whisper's encoder and decoder (transformers' WhisperForConditionalGeneration), loading Hub
// checkpoints unchanged: any size from tiny to large-v3, 80 or 128 mel bins, float32 / float16 /
// bfloat16 weights. The model is immutable after loading and safe to share between threads;
// per-utterance decoding state lives in WhisperDecoderState.

#include <torch/types.h>

#include <memory>
#include <string>
#include <vector>

#include "alto/core/checkpoint.h"
#include "alto/core/safetensors.h"
#include "alto/models/blocks/attention.h"
#include "alto/models/blocks/intermediates.h"
#include "alto/models/whisper/config.h"
#include "alto/models/whisper/whisper_encoder.h"

namespace alto::models {

/// The decoder's state for a batch of token rows: self-attention keys/values of every token fed
/// so far, and cross-attention keys/values of the audio. Rows come in groups of
/// `rows_per_audio` consecutive rows sharing one audio window (beam search), so the audio's
/// keys/values are held once per window, not once per row.
struct WhisperDecoderState {
  struct Layer {
    /// [rows, heads, length, head_dim] of the tokens fed so far, grown by doubling up to the
    /// decoder's positions.
    blocks::KVCache self_attention;
    torch::Tensor cross_key, cross_value;  // [audios, heads, audio_frames, head_dim]
  };
  std::vector<Layer> layers;
  int64_t rows_per_audio = 1;  // decoder rows per audio window

  int64_t rows() const;
  /// Tokens in the self-attention cache.
  int64_t length() const;
  /// Keeps rows `rows` (int64 [n]) in that order: beam search reorders, drops and duplicates
  /// hypotheses with it. Each kept row must stay within its audio's group and every group must
  /// keep the same number of rows.
  void select_rows(const torch::Tensor& rows);
};

class Whisper {
 public:
  /// `dir` holds config.json and model.safetensors (or a sharded model.safetensors.index.json)
  /// as the Hub ships them. Parameter names may carry WhisperForConditionalGeneration's
  /// "model." prefix or not; proj_out.weight falls back to the tied decoder embedding.
  /// LoadOptions::linear_weights int8 holds the decoder's linear layers and proj_out as int8
  /// (a quarter of the bytes a decoding step reads; the token table stays float32); the
  /// encoder, whose products are bound by arithmetic, not by reading weights, stays float32.
  static std::shared_ptr<const Whisper> from_pretrained(const std::string& dir,
                                                        const LoadOptions& options = {});
  Whisper(const WhisperConfig& config, const SafetensorsCheckpoint& checkpoint,
          const LoadOptions& options = {});

  /// input_features: [batch, num_mel_bins, 2 * max_source_positions] log-mel (any float dtype,
  /// any device) -> last_hidden_state [batch, max_source_positions, d_model] in the model's
  /// dtype on its device. With `intermediates`, also every module's output under the
  /// checkpoint's names ("model.encoder.conv1", "model.encoder.layers.0", ...).
  torch::Tensor encode(const torch::Tensor& input_features,
                       Intermediates* intermediates = nullptr) const;
  /// The encoder alone, shared with this model.
  const WhisperEncoder& encoder() const;

  /// Decoder state for `encoder_hidden_states` [audios, frames, d_model], with
  /// `rows_per_audio` token rows per audio and an empty token cache.
  WhisperDecoderState start(const torch::Tensor& encoder_hidden_states,
                            int64_t rows_per_audio = 1) const;
  /// tokens: int64 [rows, new] appended after the state's cached tokens -> logits
  /// [rows, new, vocab_size] float32. Cached decoding equals feeding the whole prefix at once.
  torch::Tensor decode(const torch::Tensor& tokens, WhisperDecoderState& state,
                       Intermediates* intermediates = nullptr) const;

  const WhisperConfig& config() const;
  const LoadOptions& load_options() const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace alto::models
