#include "alto/models/text_decoder.h"

#include <torch/torch.h>

#include <filesystem>
#include <sstream>

#include "alto/core/error.h"
#include "alto/core/internal/json_config.h"
#include "alto/core/threading.h"
#include "alto/models/blocks/basic.h"
#include "alto/models/blocks/mlp.h"
#include "alto/models/blocks/norm.h"
#include "alto/models/internal/few_rows.h"

namespace alto::models {

const OptionSchema<TextDecoderConfig>& TextDecoderConfig::schema() {
  using C = TextDecoderConfig;
  static const auto schema =
      OptionSchema<C>("TextDecoderConfig")
          .positive("vocab_size", &C::vocab_size, "Vocabulary size")
          .positive("hidden_size", &C::hidden_size, "Width")
          .positive("intermediate_size", &C::intermediate_size, "MLP width")
          .positive("num_hidden_layers", &C::num_hidden_layers, "Layers")
          .positive("num_attention_heads", &C::num_attention_heads, "Query heads")
          .field("num_key_value_heads", &C::num_key_value_heads, "Key/value heads (GQA)")
          .field("head_dim", &C::head_dim, "Width of one head")
          .field("hidden_act", &C::hidden_act, "MLP activation")
          .positive("max_position_embeddings", &C::max_position_embeddings, "Context length")
          .positive("rms_norm_eps", &C::rms_norm_eps, "RMSNorm epsilon")
          .positive("rope_theta", &C::rope_theta, "RoPE base")
          .field("attention_bias", &C::attention_bias, "Biases of the attention projections")
          .field("mlp_bias", &C::mlp_bias, "Biases of the MLP")
          .field("tie_word_embeddings", &C::tie_word_embeddings, "Head tied to the embedding")
          .field("sliding_window", &C::sliding_window, "Attention window")
          .field("use_sliding_window", &C::use_sliding_window, "qwen2: windows on")
          .field("max_window_layers", &C::max_window_layers, "qwen2: first windowed layer");
  return schema;
}

namespace {

// The decoder keys of `json` over `c`.
TextDecoderConfig read_keys(const detail::JsonConfig& json, TextDecoderConfig c) {
  if (json.written("sliding_window") && !json.has("sliding_window")) c.sliding_window.reset();
  if (json.written("head_dim") && !json.has("head_dim")) c.head_dim.reset();
  c = json.read(TextDecoderConfig::schema(), c);
  // transformers 5 writes rope_parameters {rope_theta, rope_type, factor, ...}; Hub configs
  // rope_theta beside a rope_scaling object.
  if (json.has("rope_parameters")) {
    const detail::JsonConfig rope = json.sub("rope_parameters");
    rope.read("rope_theta", c.rope_theta);
    c.rope_scaling = rope.read(blocks::RopeScaling::schema());
  } else if (json.has("rope_scaling")) {
    c.rope_scaling = json.sub("rope_scaling").read(blocks::RopeScaling::schema());
  }
  if (const nlohmann::json* types = json.find("layer_types")) {
    if (!types->is_array()) json.bad("layer_types", "a list of strings");
    for (const auto& t : *types) {
      if (!t.is_string()) json.bad("layer_types", "a list of strings");
      c.layer_types.push_back(t.get<std::string>());
    }
  }
  return c;
}

}  // namespace

TextDecoderConfig TextDecoderConfig::from_json(const std::string& path,
                                               const std::string& sub_config,
                                               const TextDecoderConfig* defaults) {
  const detail::JsonConfig file = detail::JsonConfig::load_model_config(path, "", "");
  const detail::JsonConfig json = sub_config.empty() ? file : file.sub(sub_config.c_str());
  if (defaults) return json.validated(read_keys(json, *defaults));
  TextDecoderConfig c;
  json.require("model_type");
  json.read("model_type", c.model_type);
  ALTO_CHECK_AS(Unsupported,
                c.model_type == "llama" || c.model_type == "mistral" || c.model_type == "qwen2",
                json.where("model_type"), ": '", c.model_type,
                "' is not a text decoder alto runs (llama, mistral, qwen2)");
  // The family's transformers defaults for keys a config may leave out.
  if (c.model_type == "qwen2") {
    c.vocab_size = 151936, c.intermediate_size = 22016, c.max_position_embeddings = 32768;
    c.sliding_window = 4096;
  } else if (c.model_type == "mistral") {
    c.intermediate_size = 14336, c.num_key_value_heads = 8, c.max_position_embeddings = 131072;
    if (!json.written("sliding_window")) c.sliding_window = 4096;
  }
  return json.validated(read_keys(json, c));
}

void TextDecoderConfig::validate() const {
  schema().check(*this);
  ALTO_CHECK(head_dim || hidden_size % num_attention_heads == 0, "TextDecoderConfig.hidden_size (",
             hidden_size, ") must be a multiple of num_attention_heads (", num_attention_heads,
             ") when head_dim is not given");
  ALTO_CHECK(head_size() > 0 && head_size() % 2 == 0,
             "TextDecoderConfig.head_dim must be even and > 0, got ", head_size());
  ALTO_CHECK(kv_heads() > 0 && num_attention_heads % kv_heads() == 0,
             "TextDecoderConfig.num_key_value_heads (", kv_heads(),
             ") must divide num_attention_heads (", num_attention_heads, ")");
  ALTO_CHECK(!sliding_window || *sliding_window > 0,
             "TextDecoderConfig.sliding_window must be > 0 or null, got ", *sliding_window);
  ALTO_CHECK(layer_types.empty() || static_cast<int64_t>(layer_types.size()) == num_hidden_layers,
             "TextDecoderConfig.layer_types has ", layer_types.size(), " entries for ",
             num_hidden_layers, " layers");
  for (const auto& t : layer_types)
    ALTO_CHECK_AS(Unsupported, t == "full_attention" || t == "sliding_attention",
                  "TextDecoderConfig.layer_types: '", t,
                  "' is not one alto runs (full_attention, sliding_attention)");
  blocks::parse_activation(hidden_act, "TextDecoderConfig.hidden_act");
  rope_scaling.validate();
}

int64_t TextDecoderConfig::window_of(int64_t layer) const {
  if (!sliding_window) return 0;
  if (!layer_types.empty()) return layer_types[layer] == "sliding_attention" ? *sliding_window : 0;
  if (model_type == "mistral") return *sliding_window;
  if (model_type == "qwen2" && use_sliding_window && layer >= max_window_layers)
    return *sliding_window;
  return 0;
}

std::string TextDecoderConfig::to_string() const {
  std::ostringstream s;
  s << "TextDecoderConfig(model_type=" << model_type << ", hidden_size=" << hidden_size
    << ", layers=" << num_hidden_layers << ", heads=" << num_attention_heads << "/" << kv_heads()
    << ", head_dim=" << head_size() << ", intermediate_size=" << intermediate_size
    << ", vocab_size=" << vocab_size << ", rope_theta=" << format_number(rope_theta)
    << ", rope_type=" << rope_scaling.rope_type << ")";
  return s.str();
}

namespace {

using blocks::Activation;

class DecoderLayerImpl : public torch::nn::Module {
 public:
  DecoderLayerImpl(const TextDecoderConfig& c, const torch::TensorOptions& o)
      : self_attn(register_module(
            "self_attn", blocks::SelfAttention(
                             blocks::SelfAttentionOptions{c.hidden_size, c.num_attention_heads,
                                                          c.kv_heads(), c.head_size(), c.qkv_bias(),
                                                          c.output_bias(), "o_proj"},
                             o))),
        mlp(register_module(
            "mlp", blocks::GatedMlp(c.hidden_size, c.intermediate_size, c.mlp_bias,
                                    blocks::parse_activation(c.hidden_act, "hidden_act"), o))),
        input_layernorm(
            register_module("input_layernorm", blocks::RmsNorm(c.hidden_size, c.rms_norm_eps, o))),
        post_attention_layernorm(register_module(
            "post_attention_layernorm", blocks::RmsNorm(c.hidden_size, c.rms_norm_eps, o))) {}

  blocks::SelfAttention self_attn;
  blocks::GatedMlp mlp;
  blocks::RmsNorm input_layernorm, post_attention_layernorm;
};
TORCH_MODULE(DecoderLayer);

class DecoderImpl : public torch::nn::Module {
 public:
  DecoderImpl(const TextDecoderConfig& c, const torch::TensorOptions& o, bool with_embedding)
      : layers(register_module("layers", torch::nn::ModuleList())),
        norm(register_module("norm", blocks::RmsNorm(c.hidden_size, c.rms_norm_eps, o))) {
    if (with_embedding)
      embed_tokens =
          register_module("embed_tokens", blocks::Embedding(c.vocab_size, c.hidden_size, o));
    for (int64_t i = 0; i < c.num_hidden_layers; ++i) layers->push_back(DecoderLayer(c, o));
  }

  blocks::Embedding embed_tokens{nullptr};  // null when the caller embeds (CSM)
  torch::nn::ModuleList layers;
  blocks::RmsNorm norm;
};
TORCH_MODULE(Decoder);

blocks::RotaryEmbeddingOptions rope_options(const TextDecoderConfig& c) {
  blocks::RotaryEmbeddingOptions o;
  o.head_dim = c.head_size();
  o.rope_theta = c.rope_theta;
  o.rope_scaling = c.rope_scaling;
  return o;
}

}  // namespace

struct TextDecoder::Impl {
  Impl(const TextDecoderConfig& c, std::string p, const LoadOptions& o, bool with_embedding)
      : config(c),
        prefix(std::move(p)),
        options(o),
        module(c, torch::TensorOptions().dtype(o.dtype).device(o.device), with_embedding),
        rope(rope_options(c)) {}

  TextDecoderConfig config;
  std::string prefix;
  LoadOptions options;
  Decoder module;
  torch::Tensor lm_head;  // [vocab_size, hidden_size]; undefined without a head
  blocks::RotaryEmbedding rope;
};

TextDecoder::TextDecoder(const TextDecoderConfig& config, CheckpointBinder& binder,
                         const std::string& prefix, const std::string& head_name,
                         const LoadOptions& options, bool embed_tokens) {
  config.validate();
  auto impl = std::make_shared<Impl>(config, prefix, options, embed_tokens);
  binder.bind(*impl->module, prefix);
  if (head_name.empty()) {
    // The caller reads its own outputs.
  } else if (embed_tokens && config.tie_word_embeddings && !binder.contains(head_name)) {
    impl->lm_head = impl->module->embed_tokens->weight;
  } else {
    // Its own tensor (binding replaces the target's storage): untied, or a tied copy saved.
    impl->lm_head =
        declare_weight({config.vocab_size, config.hidden_size},
                       torch::TensorOptions().dtype(options.dtype).device(options.device));
    binder.bind(impl->lm_head, head_name);
  }
  if (options.linear_weights == LoadOptions::LinearWeights::kInt8)
    binder.then([impl] {
      blocks::quantize_linears(*impl->module);
      // Its own int8 copy when tied: the token table stays float32 for embed().
      if (impl->lm_head.defined()) impl->lm_head = kernels::quantize_int8(impl->lm_head);
    });
  impl_ = std::move(impl);
}

std::shared_ptr<const TextDecoder> TextDecoder::from_pretrained(const std::string& dir,
                                                                const LoadOptions& options) {
  require_checkpoint_folder(dir, "TextDecoder::from_pretrained");
  const TextDecoderConfig config = TextDecoderConfig::from_json(dir);  // its errors come first
  const SafetensorsCheckpoint checkpoint(dir);
  CheckpointBinder binder(checkpoint, options, config.to_string());
  auto decoder =
      std::make_shared<const TextDecoder>(config, binder, "model.", "lm_head.weight", options);
  binder.finish();
  return decoder;
}

const TextDecoderConfig& TextDecoder::config() const { return impl_->config; }
const LoadOptions& TextDecoder::load_options() const { return impl_->options; }
const std::string& TextDecoder::prefix() const { return impl_->prefix; }

torch::Tensor TextDecoder::embed(const torch::Tensor& input_ids) const {
  ALTO_CHECK(input_ids.scalar_type() == torch::kInt64 && input_ids.dim() == 2,
             "TextDecoder::embed: input_ids must be int64 [batch, T], got ",
             input_ids.scalar_type(), " ", input_ids.sizes());
  const int64_t vocab = impl_->config.vocab_size;
  if (input_ids.numel() > 0) {
    const int64_t low = input_ids.min().item<int64_t>(), high = input_ids.max().item<int64_t>();
    ALTO_CHECK(low >= 0 && high < vocab, "TextDecoder::embed: token id ", low < 0 ? low : high,
               " is outside the vocabulary [0, ", vocab, ")");
  }
  ALTO_CHECK(!impl_->module->embed_tokens.is_empty(), "TextDecoder::embed: the decoder at '",
             impl_->prefix, "' was bound without its token table");
  torch::NoGradGuard no_grad;
  return impl_->module->embed_tokens->forward(input_ids.to(impl_->options.device));
}

TextDecoderState TextDecoder::start(int64_t batch, int64_t capacity) const {
  const TextDecoderConfig& c = impl_->config;
  ALTO_CHECK(batch > 0 && capacity > 0, "TextDecoder::start: batch and capacity must be > 0, got ",
             batch, " and ", capacity);
  ALTO_CHECK(capacity <= c.max_position_embeddings, "TextDecoder::start: ", capacity,
             " positions exceed the model's context of max_position_embeddings = ",
             c.max_position_embeddings);
  const auto options =
      torch::TensorOptions().dtype(impl_->options.dtype).device(impl_->options.device);
  TextDecoderState state;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i)
    state.layers.emplace_back(batch, c.kv_heads(), capacity, c.head_size(), options);
  state.key_padding = torch::zeros({batch, capacity}, options.dtype(torch::kInt64));
  state.real_tokens = torch::zeros({batch}, options.dtype(torch::kInt64));
  return state;
}

torch::Tensor TextDecoder::forward(const torch::Tensor& inputs_embeds,
                                   const torch::Tensor& attention_mask, TextDecoderState& state,
                                   Intermediates* intermediates) const {
  const TextDecoderConfig& c = impl_->config;
  const torch::Device device = impl_->options.device;
  ALTO_CHECK(inputs_embeds.dim() == 3 && inputs_embeds.size(2) == c.hidden_size &&
                 !state.layers.empty() && inputs_embeds.size(0) == state.key_padding.size(0),
             "TextDecoder::forward: inputs_embeds must be [", state.key_padding.size(0), ", T, ",
             c.hidden_size, "] for this state, got ", inputs_embeds.sizes());
  const int64_t batch = inputs_embeds.size(0), time = inputs_embeds.size(1);
  const int64_t past = state.length();
  ALTO_CHECK(past + time <= state.capacity(), "TextDecoder::forward: ", past, " cached + ", time,
             " new positions exceed the state's capacity of ", state.capacity());
  torch::NoGradGuard no_grad;
  // A step's few-row products run on alto's threads (blocks::linear), a float32 prompt's GEMMs
  // on OpenBLAS's pool. libtorch's OpenMP team, left spinning after each of the small operators
  // between them, would take their cores: a 64-token float32 Qwen2-0.5B prefill took 1.4 s on 2
  // threads with the team and 0.5 s without (0.7 s on 1 thread). A bfloat16 prompt's GEMMs and
  // elementwise operators run on that team (oneDNN on AVX-512 BF16), so it keeps it: a 4-layer
  // Qwen2-0.5B's 1000-token prefill took 0.66 s on 2 threads held and 0.52 s not.
  const bool bfloat16_prompt =
      impl_->options.dtype == torch::kBFloat16 && batch * time > kernels::kMaxFewRows;
  const TorchThreads team(bfloat16_prompt ? num_threads() : 1);
  torch::Tensor real =
      attention_mask.defined()
          ? attention_mask.to(device, torch::kInt64)
          : torch::ones({batch, time}, torch::TensorOptions().dtype(torch::kInt64).device(device));
  ALTO_CHECK(real.dim() == 2 && real.size(0) == batch && real.size(1) == time,
             "TextDecoder::forward: attention_mask must be [", batch, ", ", time, "], got ",
             real.sizes());
  state.key_padding.narrow(1, past, time).copy_(real);
  // transformers' generate: position = real tokens before (cumsum - 1), 1 on padding.
  torch::Tensor positions = state.real_tokens.unsqueeze(1) + real.cumsum(1) - 1;
  positions = positions.masked_fill(real == 0, 1);
  state.real_tokens += real.sum(1);
  auto [cos, sin] = impl_->rope.cos_sin(positions);

  const torch::Tensor keys_padding = state.key_padding.narrow(1, 0, past + time);
  const bool all_real = keys_padding.min().item<int64_t>() == 1;
  const blocks::AttentionMask causal{{true, 0}, past, all_real ? torch::Tensor() : keys_padding};
  auto mask_for = [&](int64_t window) {
    blocks::AttentionMask mask = causal;
    mask.options.sliding_window = window;
    return mask;
  };

  const DecoderImpl& decoder = *impl_->module;
  torch::Tensor x = inputs_embeds.to(device, impl_->options.dtype);
  const bool record_weights = intermediates && intermediates->attention_weights;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const auto& layer = decoder.layers->at<DecoderLayerImpl>(i);
    const std::string name = impl_->prefix + "layers." + std::to_string(i);
    torch::Tensor weights;
    const torch::Tensor attention = layer.self_attn->forward(
        layer.input_layernorm->forward(x), impl_->rope, cos, sin, mask_for(c.window_of(i)),
        &state.layers[i], record_weights ? &weights : nullptr);
    if (record_weights) intermediates->add(name + ".self_attn.attn_weights", weights);
    const blocks::NormedSum attended = layer.post_attention_layernorm->forward_sum(x, attention);
    x = attended.sum + layer.mlp->forward(attended.normed);
    if (intermediates) intermediates->add(name, x);
  }
  x = decoder.norm->forward(x);
  if (intermediates) intermediates->add(impl_->prefix + "norm", x);
  return x;
}

torch::Tensor TextDecoder::logits(const torch::Tensor& hidden) const {
  ALTO_CHECK(hidden.dim() >= 1 && hidden.size(-1) == impl_->config.hidden_size,
             "TextDecoder::logits: hidden must be [..., ", impl_->config.hidden_size, "], got ",
             hidden.sizes());
  ALTO_CHECK(impl_->lm_head.defined(), "TextDecoder::logits: the decoder at '", impl_->prefix,
             "' was bound without a head");
  torch::NoGradGuard no_grad;
  // The widening of a step's bfloat16 logits (150k values) is an OpenMP operator of libtorch's;
  // its team then spun on the other core through the next step's products (a bfloat16 4-layer
  // Qwen2-0.5B step on 2 threads: 14 ms, 8 ms without the team).
  const TorchThreads operators_inline(1);
  return blocks::linear(hidden.to(impl_->options.device, impl_->options.dtype), impl_->lm_head)
      .to(torch::kFloat32);
}

}  // namespace alto::models
