#pragma once
// The continuous path's common face: audio -> features -> encoder hidden states, for any
// registered architecture (Whisper today; the audio towers of audio LMs register the same way).
// `alto embed` and alto.models.AudioEncoder load through it by config.json's model_type.

#include <torch/types.h>

#include <functional>
#include <memory>
#include <string>

#include "alto/core/checkpoint.h"
#include "alto/core/registry.h"
#include "alto/features/feature_extractor.h"
#include "alto/models/blocks/intermediates.h"

namespace alto::models {

struct AudioEmbedding {
  torch::Tensor input_features;     // what the extractor gave, with a batch axis of 1
  torch::Tensor last_hidden_state;  // [1, frames, hidden_size], float32 on the CPU
};

/// Immutable after loading and safe to share between threads.
class AudioEncoder {
 public:
  virtual ~AudioEncoder() = default;

  /// The encoder registered for `dir`'s config.json model_type; alto::Unsupported naming the
  /// model_type and the known ones otherwise.
  static std::shared_ptr<const AudioEncoder> from_pretrained(const std::string& dir,
                                                             const LoadOptions& options = {});

  virtual const features::FeatureExtractor& feature_extractor() const = 0;
  /// Seconds one call encodes at most (Whisper: its 30 s window; longer audio is cut there).
  virtual double max_seconds() const = 0;
  /// wave: mono [samples] at feature_extractor().sampling_rate() -> the features and the
  /// encoder's output; with `intermediates`, every module's output under the checkpoint's names.
  virtual AudioEmbedding embed(const torch::Tensor& wave,
                               Intermediates* intermediates = nullptr) const = 0;
};

/// A registered encoder architecture, keyed by model_type; each registers itself in its own
/// source file.
struct AudioEncoderEntry {
  static const char* kind() { return "audio encoder model_type"; }
  std::string description;
  std::function<std::shared_ptr<const AudioEncoder>(const std::string& dir,
                                                    const LoadOptions& options)>
      from_pretrained;
};
const Registry<AudioEncoderEntry>& audio_encoders();

}  // namespace alto::models
