#pragma once
// The common face of alto's extractors: a batch of clips in, transformers-shaped features out,
// and FeatureExtractor::from_pretrained for a Hugging Face preprocessor_config.json.

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "alto/core/options.h"
#include "alto/core/registry.h"

namespace alto::features {

/// transformers' padding arguments (SequenceFeatureExtractor.pad). Unset fields take the
/// extractor's own __call__ defaults (Whisper: max_length 30 s with truncation; SeamlessM4T:
/// longest, pad_to_multiple_of 2; Wav2Vec2: no padding).
struct PaddingOptions {
  enum class Strategy { kDefault, kLongest, kMaxLength, kDoNotPad };
  Strategy padding = Strategy::kDefault;
  std::optional<int64_t> max_length;
  std::optional<bool> truncation;
  std::optional<int64_t> pad_to_multiple_of;
  std::optional<bool> return_attention_mask;

  /// "longest", "max_length", "do_not_pad" (also "true"/"false" as transformers accepts).
  static Strategy parse_strategy(const std::string& name);
};

enum class PaddingSide { kRight, kLeft };
const ChoiceNames<PaddingSide>& padding_side_names();  // "right", "left"

struct BatchFeature {
  /// transformers' key: "input_features" (Whisper, SeamlessM4T, alto's Kaldi/mel) or
  /// "input_values" (Wav2Vec2).
  std::string name = "input_features";
  torch::Tensor input_features;
  torch::Tensor attention_mask;  // int32, undefined when not requested
};

/// An extractor's options by name, in its schema's order.
using OptionList = std::vector<std::pair<std::string, OptionValue>>;

class FeatureExtractor {
 public:
  virtual ~FeatureExtractor() = default;

  /// Reads a preprocessor_config.json (or processor_config.json's "feature_extractor", as
  /// transformers 5 saves it; or the one in a model folder) and builds the registered extractor
  /// its `feature_extractor_type` names (WhisperFeatureExtractor, SeamlessM4TFeatureExtractor,
  /// Wav2Vec2FeatureExtractor, ...). An unknown type or a field of the wrong type or value is an
  /// alto::Error naming the file and the field.
  static std::shared_ptr<const FeatureExtractor> from_pretrained(const std::string& dir_or_json);

  /// "whisper", "kaldi-fbank", "kaldi-mfcc", "seamless-m4t", "wav2vec2", "mel".
  virtual std::string name() const = 0;
  virtual int sampling_rate() const = 0;
  virtual OptionList option_list() const = 0;
  /// Options in repr form: Name(key=value, ...).
  std::string to_string() const;

  /// Clips ([samples] float each, at sampling_rate()) -> a padded batch with a leading batch
  /// dimension, laid out as the reference returns it. Clips are spread over alto's threads.
  /// Features that overflow (samples far outside [-1, 1]) are an alto::InvalidArgument naming
  /// the clip, never NaN or Inf handed on.
  BatchFeature compute_batch(const std::vector<torch::Tensor>& clips,
                             const PaddingOptions& padding = {}) const;

  /// One clip: the same without the batch dimension.
  BatchFeature compute_one(const torch::Tensor& clip, const PaddingOptions& padding = {}) const;

  /// Throws when a caller's sample rate is not the extractor's, saying to resample.
  void check_sampling_rate(int sampling_rate) const;

 protected:
  /// compute_batch without the check of its result.
  virtual BatchFeature compute_features(const std::vector<torch::Tensor>& clips,
                                        const PaddingOptions& padding) const = 0;
};

/// A registered extractor: what from_pretrained, the CLI and Python need to know of it.
struct FeatureExtractorEntry {
  static const char* kind() { return "feature extractor"; }
  /// The CLI's name ("kaldi-fbank"), the registry's key.
  std::string name;
  /// transformers' feature_extractor_type, empty for extractors transformers lacks.
  std::string transformers_type;
  std::string description;
  /// The options' schema: every field, as CLI flags and Python keywords.
  std::vector<OptionField> fields;
  /// Builds the extractor from named option values over the defaults (validated; errors name
  /// the field).
  std::function<std::shared_ptr<const FeatureExtractor>(const OptionValues&)> create;
};

/// Every registered extractor, keyed by name.
const Registry<FeatureExtractorEntry>& feature_extractors();

/// Option values from command-line text, {name: text}: a name is a field's name, its flag
/// spelling (dashes for underscores) or an alias, and "" sets a boolean field. Errors name
/// `prefix` + the name ("--n-mels") and list the extractor's options.
OptionValues option_values_from_text(const FeatureExtractorEntry& entry,
                                     const std::map<std::string, std::string>& texts,
                                     const std::string& prefix = "--");

/// The entry of an extractor class with `Extractor::Options` and `Options::schema()`; registered
/// in the extractor's own source file:
///   static const Registration<FeatureExtractorEntry> r(
///       "mel", extractor_entry<MelSpectrogram>("mel", "", "torchaudio's MelSpectrogram"));
template <typename Extractor>
FeatureExtractorEntry extractor_entry(std::string name, std::string transformers_type,
                                      std::string description) {
  using Options = typename Extractor::Options;
  return {std::move(name), std::move(transformers_type), std::move(description),
          Options::schema().fields(), [](const OptionValues& values) {
            return std::make_shared<const Extractor>(Options::schema().make(values));
          }};
}

namespace detail {

/// transformers' SequenceFeatureExtractor.pad on sequences [T_i, D] -> padded [B, T, D] and the
/// int32 mask [B, T]. `strategy` must be resolved (not kDefault).
struct PaddedBatch {
  torch::Tensor values;
  std::vector<int64_t> lengths;  // real items per sequence, after truncation
  PaddingSide side = PaddingSide::kRight;
  /// The mask at positions 0, step, 2 step, ... (transformers' mask[:, ::step]); built on demand
  /// because a sample-level mask of a long clip is larger than its features.
  torch::Tensor mask(int64_t step = 1) const;
};
PaddedBatch pad_sequences(const std::vector<torch::Tensor>& sequences,
                          PaddingOptions::Strategy strategy, std::optional<int64_t> max_length,
                          bool truncation, std::optional<int64_t> pad_to_multiple_of,
                          PaddingSide side, double padding_value);

/// Runs fn(i) for every clip, spread over alto's threads (inner per-frame work then runs serially).
void for_each_clip(size_t count, const std::function<void(size_t)>& fn);

}  // namespace detail

}  // namespace alto::features
