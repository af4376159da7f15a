#pragma once
// Whisper's audio encoder as a module of its own: the convolution stem, sinusoidal-position
// transformer layers and final LayerNorm of WhisperEncoder, bound from any checkpoint under any
// prefix ("model.encoder." in Whisper, "audio_tower." in Qwen2-Audio and Voxtral).

#include <torch/types.h>

#include <memory>
#include <string>

#include "alto/core/checkpoint.h"
#include "alto/core/safetensors.h"
#include "alto/models/blocks/intermediates.h"
#include "alto/models/whisper/config.h"

namespace alto::models {

/// Where a Whisper checkpoint keeps its modules: "model." in WhisperForConditionalGeneration's
/// layout, "" in a bare WhisperModel's.
std::string whisper_checkpoint_prefix(const SafetensorsCheckpoint& checkpoint);

/// What the audio LMs built on Whisper's encoder change in its forward pass.
struct WhisperEncodeOptions {
  /// [batch, mel frames] with 1 for frames of real audio: attention keys beyond each clip's
  /// valid length after the stride-2 stem are masked (Qwen2-Audio; Whisper and Voxtral attend
  /// to the padding too). Undefined: no mask.
  torch::Tensor feature_attention_mask;
  /// > 1: AvgPool1d(pool, pool) over time before the final LayerNorm (Qwen2-Audio's
  /// avg_pooler, 2).
  int64_t pool = 1;
};

class WhisperEncoder {
 public:
  /// Binds the encoder's tensors `prefix` + "conv1.weight", "layers.0.fc1.weight", ... Tensors
  /// of `checkpoint` outside `prefix` are left alone (an audio LM's text model); under it, every
  /// missing, unexpected or mis-shaped tensor is reported in one alto::InvalidArgument.
  static std::shared_ptr<const WhisperEncoder> from_checkpoint(
      const WhisperConfig& config, const SafetensorsCheckpoint& checkpoint,
      const std::string& prefix, const LoadOptions& options = {});
  /// Binds into a caller's binder (a model that holds the encoder among other modules).
  WhisperEncoder(const WhisperConfig& config, CheckpointBinder& binder, const std::string& prefix,
                 const LoadOptions& options);

  /// input_features: [batch, num_mel_bins, 2 * max_source_positions] log-mel (any float dtype,
  /// any device) -> last_hidden_state [batch, max_source_positions, d_model] in the model's
  /// dtype on its device. With `intermediates`, every module's output under the checkpoint's
  /// names (prefix + "conv1", prefix + "layers.0", ..., "last_hidden_state").
  torch::Tensor encode(const torch::Tensor& input_features,
                       Intermediates* intermediates = nullptr) const;
  /// encode() with an audio LM's changes; the output has max_source_positions / pool frames.
  torch::Tensor encode(const torch::Tensor& input_features, const WhisperEncodeOptions& options,
                       Intermediates* intermediates = nullptr) const;
  /// Valid encoder frames of a clip of `mel_frames` valid mel frames (the stride-2 stem's
  /// output length, (L - 1) / 2 + 1; transformers' _get_feat_extract_output_lengths).
  static int64_t valid_frames(int64_t mel_frames) { return (mel_frames - 1) / 2 + 1; }

  const WhisperConfig& config() const;
  const std::string& prefix() const;
  const LoadOptions& load_options() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace alto::models
