#include "alto/models/whisper/whisper_encoder.h"

#include <torch/torch.h>

#include <limits>

#include "alto/core/error.h"
#include "alto/core/threading.h"
#include "alto/features/whisper_feature_extractor.h"
#include "alto/models/audio_encoder.h"
#include "alto/models/whisper/internal/layers.h"

namespace alto::models {

using namespace whisper_internal;  // NOLINT: this file builds on them

std::string whisper_checkpoint_prefix(const SafetensorsCheckpoint& checkpoint) {
  return checkpoint.contains("encoder.conv1.weight") ? "" : "model.";
}

struct WhisperEncoder::Impl {
  Impl(const WhisperConfig& c, const std::string& p, const LoadOptions& o)
      : config(c),
        prefix(p),
        options(o),
        activation(
            blocks::parse_activation(c.activation_function, "WhisperConfig.activation_function")),
        module(c, torch::TensorOptions().dtype(o.dtype).device(o.device)) {}

  WhisperConfig config;
  std::string prefix;
  LoadOptions options;
  Activation activation;
  Encoder module;

  torch::Tensor encode(const torch::Tensor& features, const WhisperEncodeOptions& encode_options,
                       Intermediates* out) const;
};

WhisperEncoder::WhisperEncoder(const WhisperConfig& config, CheckpointBinder& binder,
                               const std::string& prefix, const LoadOptions& options) {
  config.validate();
  impl_ = std::make_shared<Impl>(config, prefix, options);
  binder.bind(*impl_->module, prefix);
  binder.then([module = impl_->module]() mutable {
    torch::NoGradGuard no_grad;
    for (auto& layer : *module->layers)
      layer->as<EncoderLayerImpl>()->self_attn->fuse_self_attention();
  });
}

std::shared_ptr<const WhisperEncoder> WhisperEncoder::from_checkpoint(
    const WhisperConfig& config, const SafetensorsCheckpoint& checkpoint, const std::string& prefix,
    const LoadOptions& options) {
  CheckpointBinder binder(checkpoint, options, "WhisperEncoder (" + config.to_string() + ")");
  auto encoder = std::make_shared<WhisperEncoder>(config, binder, prefix, options);
  binder.finish(prefix);
  return encoder;
}

const WhisperConfig& WhisperEncoder::config() const { return impl_->config; }
const std::string& WhisperEncoder::prefix() const { return impl_->prefix; }
const LoadOptions& WhisperEncoder::load_options() const { return impl_->options; }

torch::Tensor WhisperEncoder::encode(const torch::Tensor& input_features,
                                     Intermediates* intermediates) const {
  return encode(input_features, WhisperEncodeOptions{}, intermediates);
}

torch::Tensor WhisperEncoder::encode(const torch::Tensor& input_features,
                                     const WhisperEncodeOptions& options,
                                     Intermediates* intermediates) const {
  const WhisperConfig& c = impl_->config;
  ALTO_CHECK(input_features.dim() == 3 && input_features.size(0) > 0 &&
                 input_features.size(1) == c.num_mel_bins &&
                 input_features.size(2) == c.input_frames(),
             "WhisperEncoder::encode: input_features must be [batch >= 1, ", c.num_mel_bins, ", ",
             c.input_frames(), "] (pad with WhisperFeatureExtractor), got ",
             shape_of(input_features));
  ALTO_CHECK(input_features.is_floating_point(),
             "WhisperEncoder::encode: input_features must be floating point, got ",
             input_features.scalar_type());
  const torch::Tensor& mask = options.feature_attention_mask;
  ALTO_CHECK(!mask.defined() || (mask.dim() == 2 && mask.size(0) == input_features.size(0) &&
                                 mask.size(1) == input_features.size(2)),
             "WhisperEncoder::encode: feature_attention_mask must be [", input_features.size(0),
             ", ", input_features.size(2), "], got ", mask.defined() ? shape_of(mask) : "");
  ALTO_CHECK(options.pool >= 1 && c.max_source_positions % options.pool == 0,
             "WhisperEncodeOptions.pool must divide max_source_positions (", c.max_source_positions,
             "), got ", options.pool);
  torch::NoGradGuard no_grad;
  // The GEMMs run on OpenBLAS's pool and the attention on alto's threads; libtorch's OpenMP
  // team, spinning after each elementwise operator, took their cores: whisper-base on 2 threads
  // ran in 0.85 s with it and 0.64 s without (0.89 s on 1 thread).
  const TorchThreads operators_inline(1);
  return impl_->encode(input_features, options, intermediates);
}

torch::Tensor WhisperEncoder::Impl::encode(const torch::Tensor& features,
                                           const WhisperEncodeOptions& encode_options,
                                           Intermediates* out) const {
  const EncoderImpl& encoder = *module;
  const std::string& name = prefix;
  torch::Tensor x = features.to(options.device, options.dtype);
  x = encoder.conv1->forward(x);
  if (out) out->add(name + "conv1", x);
  // GELU after each convolution whatever the config's activation_function, as transformers.
  x = encoder.conv2->forward(blocks::activate(x, Activation::kGelu));
  if (out) out->add(name + "conv2", x);
  x = blocks::activate(x, Activation::kGelu).permute({0, 2, 1}) + encoder.embed_positions->weight;
  // Qwen2-Audio: the keys past each clip's valid frames are hidden from every query.
  torch::Tensor key_padding;
  if (encode_options.feature_attention_mask.defined()) {
    const torch::Tensor valid =
        (encode_options.feature_attention_mask.to(torch::kInt64).sum(-1) - 1).div(2, "floor") + 1;
    const torch::Tensor frames = torch::arange(x.size(1), torch::kInt64).unsqueeze(0);
    key_padding = (frames < valid.unsqueeze(1)).to(x.device());
  }
  for (size_t i = 0; i < encoder.layers->size(); ++i) {
    const auto& layer = encoder.layers->at<EncoderLayerImpl>(i);
    const std::string layer_name = name + "layers." + std::to_string(i);
    const bool record_weights = out && out->attention_weights;
    torch::Tensor weights;
    auto [q, k, v] = layer.self_attn->project_qkv(layer.self_attn_layer_norm->forward(x));
    torch::Tensor attention = layer.self_attn->out_proj->forward(
        merge_heads(attend(q, k, v, {}, key_padding, record_weights ? &weights : nullptr)));
    if (out) out->add(layer_name + ".self_attn", attention);
    if (record_weights) out->add(layer_name + ".self_attn.attn_weights", weights);
    const blocks::NormedSum attended = layer.final_layer_norm->forward_sum(x, attention);
    x = attended.sum + feed_forward(attended.normed, layer.fc1, layer.fc2, activation);
    // transformers' guard against float16 overflow in the residual stream.
    if (x.scalar_type() == torch::kFloat16 &&
        (x.isinf().any().item<bool>() || x.isnan().any().item<bool>())) {
      const double limit = 65504.0 - 1000.0;
      x = x.clamp(-limit, limit);
    }
    if (out) out->add(layer_name, x);
  }
  if (encode_options.pool > 1) {
    x = torch::avg_pool1d(x.transpose(1, 2), {encode_options.pool}, {encode_options.pool})
            .transpose(1, 2);
    if (out) out->add(name + "avg_pooler", x);
  }
  x = encoder.layer_norm->forward(x);
  if (out) {
    out->add(name + "layer_norm", x);
    out->add("last_hidden_state", x);
  }
  return x;
}

namespace {

// Whisper's encoder with the folder's feature extractor: one 30 s window per call, as
// transformers' WhisperFeatureExtractor pads and cuts it.
class WhisperAudioEncoder : public AudioEncoder {
 public:
  WhisperAudioEncoder(const std::string& dir, const LoadOptions& options)
      : extractor_(features::FeatureExtractor::from_pretrained(dir)), encoder_(load(dir, options)) {
    whisper_ = dynamic_cast<const features::WhisperFeatureExtractor*>(extractor_.get());
    ALTO_CHECK(whisper_, dir, ": expected a WhisperFeatureExtractor, got ", extractor_->name());
  }

  const features::FeatureExtractor& feature_extractor() const override { return *extractor_; }
  double max_seconds() const override { return whisper_->options().chunk_length; }
  AudioEmbedding embed(const torch::Tensor& wave, Intermediates* intermediates) const override {
    AudioEmbedding out;
    out.input_features = extractor_->compute_batch({wave}).input_features;
    out.last_hidden_state =
        encoder_->encode(out.input_features, intermediates).to(torch::kCPU, torch::kFloat32);
    return out;
  }

 private:
  static std::shared_ptr<const WhisperEncoder> load(const std::string& dir,
                                                    const LoadOptions& options) {
    options.require_compute_dtype_weights("the Whisper encoder");
    const WhisperConfig config = WhisperConfig::from_json(dir);  // its errors come first
    const SafetensorsCheckpoint checkpoint(dir);
    return WhisperEncoder::from_checkpoint(
        config, checkpoint, whisper_checkpoint_prefix(checkpoint) + "encoder.", options);
  }

  std::shared_ptr<const features::FeatureExtractor> extractor_;
  const features::WhisperFeatureExtractor* whisper_ = nullptr;
  std::shared_ptr<const WhisperEncoder> encoder_;
};

const Registration<AudioEncoderEntry> kRegistration(
    "whisper", {"Whisper's encoder (transformers' WhisperModel / WhisperForConditionalGeneration)",
                [](const std::string& dir, const LoadOptions& options) {
                  return std::make_shared<const WhisperAudioEncoder>(dir, options);
                }});

}  // namespace

}  // namespace alto::models
