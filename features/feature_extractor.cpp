#include "alto/features/feature_extractor.h"

#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "alto/core/error.h"
#include "alto/core/internal/json_config.h"
#include "alto/core/threading.h"

namespace alto::features {

PaddingOptions::Strategy PaddingOptions::parse_strategy(const std::string& name) {
  if (name == "longest" || name == "true") return Strategy::kLongest;
  if (name == "max_length") return Strategy::kMaxLength;
  if (name == "do_not_pad" || name == "false") return Strategy::kDoNotPad;
  throw InvalidArgument("unknown padding '" + name +
                        "' (expected longest, max_length or do_not_pad)");
}

std::string FeatureExtractor::to_string() const { return format_options(name(), option_list()); }

BatchFeature FeatureExtractor::compute_batch(const std::vector<torch::Tensor>& clips,
                                             const PaddingOptions& padding) const {
  BatchFeature batch = compute_features(clips, padding);
  const torch::Tensor& values = batch.input_features;
  const torch::Tensor finite = torch::isfinite(values).flatten(1).all(1);
  if (!finite.all().item<bool>()) {
    const int64_t clip = (~finite).nonzero()[0][0].item<int64_t>();
    const torch::Tensor samples = clips[static_cast<size_t>(clip)];
    throw InvalidArgument(alto::detail::concat(
        "the ", name(), " features of clip ", clip,
        " are not finite (NaN or Inf): its samples reach ", samples.abs().max().item<double>(),
        ", beyond what float32 features can hold (audio samples lie in [-1, 1])"));
  }
  return batch;
}

BatchFeature FeatureExtractor::compute_one(const torch::Tensor& clip,
                                           const PaddingOptions& padding) const {
  BatchFeature batch = compute_batch({clip}, padding);
  batch.input_features = batch.input_features[0];
  if (batch.attention_mask.defined()) batch.attention_mask = batch.attention_mask[0];
  return batch;
}

void FeatureExtractor::check_sampling_rate(int rate) const {
  ALTO_CHECK(rate == sampling_rate(), "the ", name(), " feature extractor was built for ",
             sampling_rate(), " Hz audio, got ", rate, " Hz: resample the input to ",
             sampling_rate(), " Hz first (alto features --resample, or alto::audio::resample)");
}

const ChoiceNames<PaddingSide>& padding_side_names() {
  static const ChoiceNames<PaddingSide> names = {{"right", PaddingSide::kRight},
                                                 {"left", PaddingSide::kLeft}};
  return names;
}

const Registry<FeatureExtractorEntry>& feature_extractors() {
  return Registry<FeatureExtractorEntry>::instance();
}

OptionValues option_values_from_text(const FeatureExtractorEntry& entry,
                                     const std::map<std::string, std::string>& texts,
                                     const std::string& prefix) {
  const auto flag_of = [](std::string name) {
    std::replace(name.begin(), name.end(), '_', '-');
    return name;
  };
  OptionValues values;
  for (const auto& [name, text] : texts) {
    const std::string flag = flag_of(name);
    const OptionField* field = nullptr;
    for (const auto& f : entry.fields) {
      if (flag_of(f.name) == flag) field = &f;
      for (const auto& alias : f.aliases)
        if (alias == flag) field = &f;
    }
    if (!field) {
      std::string known;
      for (const auto& f : entry.fields)
        known += (known.empty() ? prefix : ", " + prefix) + flag_of(f.name);
      throw InvalidArgument(prefix + name + " is not an option of the " + entry.name +
                            " extractor (its options: " + known + ")");
    }
    ALTO_CHECK(!text.empty() || field->kind == OptionKind::kBool, prefix, name, " needs a value");
    values[field->name] = parse_option_text(*field, text.empty() ? "true" : text, prefix + name);
  }
  return values;
}

std::shared_ptr<const FeatureExtractor> FeatureExtractor::from_pretrained(
    const std::string& dir_or_json) {
  namespace fs = std::filesystem;
  using alto::detail::JsonConfig;
  std::string path = dir_or_json;
  JsonConfig config;
  if (fs::is_directory(path)) {
    // transformers 5 writes the extractor inside processor_config.json; earlier folders ship
    // preprocessor_config.json.
    const fs::path dir(path);
    const fs::path legacy = dir / "preprocessor_config.json";
    const fs::path processor = dir / "processor_config.json";
    if (fs::exists(legacy)) {
      config = JsonConfig::load(legacy.string());
    } else {
      ALTO_CHECK_AS(IoError, fs::exists(processor), "cannot open ", legacy.string(),
                    " (the model folder has neither preprocessor_config.json nor "
                    "processor_config.json)");
      config = JsonConfig::load(processor.string()).sub("feature_extractor");
    }
  } else {
    ALTO_CHECK_AS(IoError, fs::exists(path), "cannot open ", path);
    config = JsonConfig::load(path);
  }
  std::string kind;
  config.read("feature_extractor_type", kind);
  ALTO_CHECK(!kind.empty(), config.where("feature_extractor_type"), ": missing string field");
  const auto& registry = feature_extractors();
  for (const auto& name : registry.keys()) {
    const FeatureExtractorEntry& entry = *registry.find(name);
    if (entry.transformers_type != kind) continue;
    const OptionValues values = config.option_values(entry.fields);
    try {
      return entry.create(values);
    } catch (const Error& e) {
      throw InvalidArgument(config.path() + ": " + e.what());
    }
  }
  std::string known;
  for (const auto& name : registry.keys())
    if (!registry.find(name)->transformers_type.empty())
      known += (known.empty() ? "" : ", ") + registry.find(name)->transformers_type;
  throw Unsupported(config.where("feature_extractor_type") + ": unknown type '" + kind +
                    "' (alto knows " + known + "; codec configs go to AudioTokenizer)");
}

namespace detail {

PaddedBatch pad_sequences(const std::vector<torch::Tensor>& sequences,
                          PaddingOptions::Strategy strategy, std::optional<int64_t> max_length,
                          bool truncation, std::optional<int64_t> pad_to_multiple_of,
                          PaddingSide side, double padding_value) {
  using Strategy = PaddingOptions::Strategy;
  ALTO_CHECK(!sequences.empty(), "padding: no sequences given");
  ALTO_CHECK(!pad_to_multiple_of || *pad_to_multiple_of > 0, "pad_to_multiple_of must be > 0, got ",
             *pad_to_multiple_of);
  ALTO_CHECK(!max_length || *max_length > 0, "max_length must be > 0, got ", *max_length);
  auto round_up = [&](int64_t n) {
    if (!pad_to_multiple_of || n % *pad_to_multiple_of == 0) return n;
    return (n / *pad_to_multiple_of + 1) * *pad_to_multiple_of;
  };
  ALTO_CHECK(!truncation || max_length, "truncation needs max_length");
  ALTO_CHECK(strategy != Strategy::kMaxLength || max_length,
             "padding='max_length' needs max_length");
  std::vector<int64_t> lengths;
  for (const auto& s : sequences) {
    int64_t n = s.size(0);
    if (truncation) n = std::min(n, round_up(*max_length));
    lengths.push_back(n);
  }
  int64_t target = 0;
  switch (strategy) {
    case Strategy::kLongest:
      target = round_up(*std::max_element(lengths.begin(), lengths.end()));
      break;
    case Strategy::kMaxLength:
      target = round_up(*max_length);
      break;
    case Strategy::kDoNotPad:
    case Strategy::kDefault:
      target = lengths[0];
      break;
  }
  for (size_t i = 0; i < lengths.size(); ++i) {
    ALTO_CHECK(lengths[i] <= target, "clip ", i, " has ", lengths[i], " frames, more than the ",
               target, " of the batch; pad to the longest or enable truncation");
    ALTO_CHECK(strategy != Strategy::kDoNotPad || lengths[i] == target,
               "clips of different lengths (", lengths[0], " and ", lengths[i],
               ") cannot form a batch without padding");
  }
  const int64_t dim = sequences[0].size(1);
  PaddedBatch out;
  out.lengths = lengths;
  out.side = side;
  if (sequences.size() == 1 && lengths[0] == target) {
    // Nothing to pad: a view, not a copy (long clips are the common single-clip case).
    out.values = sequences[0].slice(0, 0, target).unsqueeze(0);
    return out;
  }
  out.values = torch::full({static_cast<int64_t>(sequences.size()), target, dim}, padding_value,
                           torch::kFloat32);
  for (size_t i = 0; i < sequences.size(); ++i) {
    const int64_t n = lengths[i];
    const int64_t begin = side == PaddingSide::kRight ? 0 : target - n;
    out.values[i].slice(0, begin, begin + n).copy_(sequences[i].slice(0, 0, n));
  }
  return out;
}

torch::Tensor PaddedBatch::mask(int64_t step) const {
  const int64_t target = values.size(1);
  const int64_t columns = (target + step - 1) / step;
  torch::Tensor m = torch::zeros({static_cast<int64_t>(lengths.size()), columns}, torch::kInt32);
  for (size_t i = 0; i < lengths.size(); ++i) {
    // Real items occupy [begin, begin + n); column c stands for position c * step.
    const int64_t begin = side == PaddingSide::kRight ? 0 : target - lengths[i];
    const int64_t end = begin + lengths[i];
    const int64_t first = (begin + step - 1) / step;
    const int64_t last = (end + step - 1) / step;
    if (last > first) m[i].slice(0, first, last).fill_(1);
  }
  return m;
}

void for_each_clip(size_t count, const std::function<void(size_t)>& fn) {
  if (count == 1) {
    fn(0);  // one clip: its frames are what runs in parallel
    return;
  }
  alto::parallel_for(0, static_cast<int64_t>(count), 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) fn(static_cast<size_t>(i));
  });
}

}  // namespace detail

}  // namespace alto::features
