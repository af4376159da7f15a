#include "alto/models/whisper.h"

#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <sstream>

#include "alto/core/error.h"
#include "alto/core/internal/json_config.h"
#include "alto/models/inference.h"
#include "alto/models/layers/basic.h"

namespace alto::models {

namespace {

using layers::Activation;
using layers::Conv1d;
using layers::Conv1dOptions;
using layers::Embedding;
using layers::LayerNorm;
using layers::Linear;

// transformers' nn.LayerNorm default: Whisper never overrides it.
constexpr double kLayerNormEps = 1e-5;

// [batch, time, heads * head_dim] <-> [batch, heads, time, head_dim]
torch::Tensor split_heads(const torch::Tensor& x, int64_t heads) {
  return x.view({x.size(0), x.size(1), heads, -1}).transpose(1, 2);
}
torch::Tensor merge_heads(const torch::Tensor& x) {
  return x.transpose(1, 2).reshape({x.size(0), x.size(2), -1});
}

// WhisperAttention's parameters under their checkpoint names. After loading, the projections
// are fused into one GEMM: q, k and v for self-attention; k and v for the audio of
// cross-attention. The query scaling head_dim^-0.5 is folded into the query weights, which is
// exact for Whisper's power-of-four head sizes (64 in every released model).
class AttentionImpl : public torch::nn::Module {
 public:
  AttentionImpl(int64_t dim, int64_t heads_, const torch::TensorOptions& options)
      : heads(heads_),
        q_proj(register_module("q_proj", Linear(dim, dim, true, options))),
        k_proj(register_module("k_proj", Linear(dim, dim, false, options))),
        v_proj(register_module("v_proj", Linear(dim, dim, true, options))),
        out_proj(register_module("out_proj", Linear(dim, dim, true, options))) {}

  void fuse() {
    const double scaling = std::pow(static_cast<double>(q_proj->weight.size(0) / heads), -0.5);
    const torch::Tensor zeros = torch::zeros_like(v_proj->bias);
    qkv_weight = torch::cat({q_proj->weight * scaling, k_proj->weight, v_proj->weight});
    qkv_bias = torch::cat({q_proj->bias * scaling, zeros, v_proj->bias});
    kv_weight = torch::cat({k_proj->weight, v_proj->weight});
    kv_bias = torch::cat({zeros, v_proj->bias});
    q_weight = q_proj->weight * scaling;
    q_bias = q_proj->bias * scaling;
  }

  // x [B, T, D] -> (q, k, v), each [B, H, T, hd]
  std::array<torch::Tensor, 3> project_qkv(const torch::Tensor& x) const {
    auto parts = torch::linear(x, qkv_weight, qkv_bias).chunk(3, -1);
    return {split_heads(parts[0], heads), split_heads(parts[1], heads),
            split_heads(parts[2], heads)};
  }
  // audio [A, S, D] -> (k, v), each [A, H, S, hd], contiguous for the repeated decoder steps
  std::array<torch::Tensor, 2> project_kv(const torch::Tensor& audio) const {
    auto parts = torch::linear(audio, kv_weight, kv_bias).chunk(2, -1);
    return {split_heads(parts[0], heads).contiguous(), split_heads(parts[1], heads).contiguous()};
  }
  torch::Tensor project_q(const torch::Tensor& x) const {
    return split_heads(torch::linear(x, q_weight, q_bias), heads);
  }

  int64_t heads;
  Linear q_proj, k_proj, v_proj, out_proj;
  torch::Tensor qkv_weight, qkv_bias, kv_weight, kv_bias, q_weight, q_bias;
};
TORCH_MODULE(Attention);

// softmax(q k^T + mask) v for q [.., Tq, hd], k/v [.., S, hd]; q is pre-scaled.
torch::Tensor attend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                     const torch::Tensor& mask, torch::Tensor* weights) {
  torch::Tensor scores = torch::matmul(q, k.transpose(-1, -2));
  if (mask.defined()) scores.add_(mask);
  torch::Tensor probs = torch::softmax(scores, -1);
  if (weights) *weights = probs;
  return torch::matmul(probs, v);
}

torch::Tensor feed_forward(const torch::Tensor& x, const Linear& fc1, const Linear& fc2,
                           Activation activation) {
  return fc2->forward(layers::activate(fc1->forward(x), activation));
}

class EncoderLayerImpl : public torch::nn::Module {
 public:
  EncoderLayerImpl(const WhisperConfig& c, const torch::TensorOptions& o)
      : self_attn(register_module("self_attn", Attention(c.d_model, c.encoder_attention_heads, o))),
        self_attn_layer_norm(
            register_module("self_attn_layer_norm", LayerNorm(c.d_model, kLayerNormEps, o))),
        fc1(register_module("fc1", Linear(c.d_model, c.encoder_ffn_dim, true, o))),
        fc2(register_module("fc2", Linear(c.encoder_ffn_dim, c.d_model, true, o))),
        final_layer_norm(
            register_module("final_layer_norm", LayerNorm(c.d_model, kLayerNormEps, o))) {}

  Attention self_attn;
  LayerNorm self_attn_layer_norm;
  Linear fc1, fc2;
  LayerNorm final_layer_norm;
};
TORCH_MODULE(EncoderLayer);

class DecoderLayerImpl : public torch::nn::Module {
 public:
  DecoderLayerImpl(const WhisperConfig& c, const torch::TensorOptions& o)
      : self_attn(register_module("self_attn", Attention(c.d_model, c.decoder_attention_heads, o))),
        self_attn_layer_norm(
            register_module("self_attn_layer_norm", LayerNorm(c.d_model, kLayerNormEps, o))),
        encoder_attn(
            register_module("encoder_attn", Attention(c.d_model, c.decoder_attention_heads, o))),
        encoder_attn_layer_norm(
            register_module("encoder_attn_layer_norm", LayerNorm(c.d_model, kLayerNormEps, o))),
        fc1(register_module("fc1", Linear(c.d_model, c.decoder_ffn_dim, true, o))),
        fc2(register_module("fc2", Linear(c.decoder_ffn_dim, c.d_model, true, o))),
        final_layer_norm(
            register_module("final_layer_norm", LayerNorm(c.d_model, kLayerNormEps, o))) {}

  Attention self_attn;
  LayerNorm self_attn_layer_norm;
  Attention encoder_attn;
  LayerNorm encoder_attn_layer_norm;
  Linear fc1, fc2;
  LayerNorm final_layer_norm;
};
TORCH_MODULE(DecoderLayer);

class EncoderImpl : public torch::nn::Module {
 public:
  EncoderImpl(const WhisperConfig& c, const torch::TensorOptions& o)
      : conv1(
            register_module("conv1", Conv1d(Conv1dOptions{c.num_mel_bins, c.d_model, 3, 1, 1}, o))),
        conv2(register_module("conv2", Conv1d(Conv1dOptions{c.d_model, c.d_model, 3, 2, 1}, o))),
        embed_positions(
            register_module("embed_positions", Embedding(c.max_source_positions, c.d_model, o))),
        layers(register_module("layers", torch::nn::ModuleList())),
        layer_norm(register_module("layer_norm", LayerNorm(c.d_model, kLayerNormEps, o))) {
    for (int64_t i = 0; i < c.encoder_layers; ++i) layers->push_back(EncoderLayer(c, o));
  }

  Conv1d conv1, conv2;
  Embedding embed_positions;
  torch::nn::ModuleList layers;
  LayerNorm layer_norm;
};
TORCH_MODULE(Encoder);

class DecoderImpl : public torch::nn::Module {
 public:
  DecoderImpl(const WhisperConfig& c, const torch::TensorOptions& o)
      : embed_tokens(register_module("embed_tokens", Embedding(c.vocab_size, c.d_model, o))),
        embed_positions(
            register_module("embed_positions", Embedding(c.max_target_positions, c.d_model, o))),
        layers(register_module("layers", torch::nn::ModuleList())),
        layer_norm(register_module("layer_norm", LayerNorm(c.d_model, kLayerNormEps, o))) {
    for (int64_t i = 0; i < c.decoder_layers; ++i) layers->push_back(DecoderLayer(c, o));
  }

  Embedding embed_tokens, embed_positions;
  torch::nn::ModuleList layers;
  LayerNorm layer_norm;
};
TORCH_MODULE(Decoder);

// WhisperModel: the part of WhisperForConditionalGeneration under "model.".
class WhisperModelImpl : public torch::nn::Module {
 public:
  WhisperModelImpl(const WhisperConfig& c, const torch::TensorOptions& o)
      : encoder(register_module("encoder", Encoder(c, o))),
        decoder(register_module("decoder", Decoder(c, o))) {}

  Encoder encoder;
  Decoder decoder;
};
TORCH_MODULE(WhisperModel);

std::string shape_of(const torch::Tensor& t) {
  std::ostringstream s;
  s << t.sizes();
  return s.str();
}

}  // namespace

WhisperConfig WhisperConfig::from_json(const std::string& path) {
  const detail::JsonConfig json =
      detail::JsonConfig::load_model_config(path, "whisper", "a Whisper");
  WhisperConfig c;
  json.read("vocab_size", c.vocab_size);
  json.read("num_mel_bins", c.num_mel_bins);
  json.read("d_model", c.d_model);
  json.read("encoder_layers", c.encoder_layers);
  json.read("encoder_attention_heads", c.encoder_attention_heads);
  json.read("encoder_ffn_dim", c.encoder_ffn_dim);
  json.read("decoder_layers", c.decoder_layers);
  json.read("decoder_attention_heads", c.decoder_attention_heads);
  json.read("decoder_ffn_dim", c.decoder_ffn_dim);
  json.read("max_source_positions", c.max_source_positions);
  json.read("max_target_positions", c.max_target_positions);
  json.read("activation_function", c.activation_function);
  json.read("scale_embedding", c.scale_embedding);
  json.read("tie_word_embeddings", c.tie_word_embeddings);
  json.read("pad_token_id", c.pad_token_id);
  json.read("bos_token_id", c.bos_token_id);
  json.read("eos_token_id", c.eos_token_id);
  json.read("decoder_start_token_id", c.decoder_start_token_id);
  return json.validated(c);
}

void WhisperConfig::validate() const {
  for (const auto& [name, value] : {std::pair{"vocab_size", vocab_size},
                                    {"num_mel_bins", num_mel_bins},
                                    {"d_model", d_model},
                                    {"encoder_layers", encoder_layers},
                                    {"encoder_attention_heads", encoder_attention_heads},
                                    {"encoder_ffn_dim", encoder_ffn_dim},
                                    {"decoder_layers", decoder_layers},
                                    {"decoder_attention_heads", decoder_attention_heads},
                                    {"decoder_ffn_dim", decoder_ffn_dim},
                                    {"max_source_positions", max_source_positions},
                                    {"max_target_positions", max_target_positions}})
    ALTO_CHECK(value > 0, "WhisperConfig.", name, " must be positive, got ", value);
  ALTO_CHECK(d_model % encoder_attention_heads == 0, "WhisperConfig.d_model (", d_model,
             ") must be a multiple of encoder_attention_heads (", encoder_attention_heads, ")");
  ALTO_CHECK(d_model % decoder_attention_heads == 0, "WhisperConfig.d_model (", d_model,
             ") must be a multiple of decoder_attention_heads (", decoder_attention_heads, ")");
  layers::parse_activation(activation_function, "WhisperConfig.activation_function");
}

std::string WhisperConfig::to_string() const {
  std::ostringstream s;
  s << "WhisperConfig(d_model=" << d_model << ", encoder_layers=" << encoder_layers
    << ", decoder_layers=" << decoder_layers << ", heads=" << encoder_attention_heads << "/"
    << decoder_attention_heads << ", ffn=" << encoder_ffn_dim << "/" << decoder_ffn_dim
    << ", num_mel_bins=" << num_mel_bins << ", vocab_size=" << vocab_size
    << ", activation=" << activation_function << ")";
  return s.str();
}

int64_t WhisperDecoderState::rows() const {
  return layers.empty() ? 0 : layers.front().self_key.size(0);
}

void WhisperDecoderState::select_rows(const torch::Tensor& rows) {
  ALTO_CHECK(rows.dim() == 1 && rows.scalar_type() == torch::kInt64,
             "WhisperDecoderState::select_rows: expected int64 [n] row indices, got ",
             rows.scalar_type(), " ", rows.sizes());
  const int64_t audios = layers.empty() ? 0 : layers.front().cross_key.size(0);
  ALTO_CHECK(audios > 0 && rows.size(0) % audios == 0,
             "WhisperDecoderState::select_rows: ", rows.size(0),
             " rows cannot be split evenly over ", audios, " audio windows");
  const int64_t group = rows.size(0) / audios;
  const torch::Tensor cpu_rows = rows.to(torch::kCPU);
  const int64_t* r = cpu_rows.data_ptr<int64_t>();
  for (int64_t i = 0; i < rows.size(0); ++i)
    ALTO_CHECK(r[i] >= 0 && r[i] < this->rows() && r[i] / rows_per_audio == i / group,
               "WhisperDecoderState::select_rows: row ", i, " takes row ", r[i],
               ", which is not a row of audio window ", i / group);
  const torch::Tensor index = cpu_rows.to(layers.front().self_key.device());
  for (Layer& layer : layers) {
    layer.self_key = layer.self_key.index_select(0, index);
    layer.self_value = layer.self_value.index_select(0, index);
  }
  rows_per_audio = group;
}

struct Whisper::Impl {
  Impl(const WhisperConfig& c, const LoadOptions& o)
      : config(c),
        options(o),
        activation(
            layers::parse_activation(c.activation_function, "WhisperConfig.activation_function")),
        model(c, torch::TensorOptions().dtype(o.dtype).device(o.device)) {}

  WhisperConfig config;
  LoadOptions options;
  Activation activation;
  WhisperModel model;
  torch::Tensor proj_out;  // [vocab, d_model]
  std::string prefix;      // "model." for WhisperForConditionalGeneration checkpoints

  torch::Tensor encode(const torch::Tensor& features, Intermediates* out) const;
  torch::Tensor decode(const torch::Tensor& tokens, WhisperDecoderState& state,
                       Intermediates* out) const;
};

Whisper Whisper::from_pretrained(const std::string& dir, const LoadOptions& options) {
  namespace fs = std::filesystem;
  ALTO_CHECK_AS(IoError, fs::is_directory(dir), "Whisper::from_pretrained: ", dir,
                " is not a folder (expected a checkpoint folder with config.json and "
                "model.safetensors)");
  const WhisperConfig config = WhisperConfig::from_json(dir);  // its errors come first
  return Whisper(config, SafetensorsCheckpoint(dir), options);
}

Whisper::Whisper(const WhisperConfig& config, const SafetensorsCheckpoint& checkpoint,
                 const LoadOptions& options) {
  config.validate();
  auto impl = std::make_shared<Impl>(config, options);
  // WhisperForConditionalGeneration stores "model.encoder..."; a bare WhisperModel "encoder...".
  impl->prefix = checkpoint.contains("encoder.conv1.weight") ? "" : "model.";
  CheckpointBinder binder(checkpoint, options, "Whisper (" + config.to_string() + ")");
  binder.bind(*impl->model, impl->prefix);
  impl->proj_out = torch::empty({config.vocab_size, config.d_model},
                                torch::TensorOptions().dtype(options.dtype).device(options.device));
  binder.bind(impl->proj_out, "proj_out.weight",
              config.tie_word_embeddings ? impl->prefix + "decoder.embed_tokens.weight" : "");
  binder.finish();
  c10::InferenceMode guard;
  for (auto& layer : *impl->model->encoder->layers)
    layer->as<EncoderLayerImpl>()->self_attn->fuse();
  for (auto& layer : *impl->model->decoder->layers) {
    auto* l = layer->as<DecoderLayerImpl>();
    l->self_attn->fuse();
    l->encoder_attn->fuse();
  }
  impl_ = std::move(impl);
}

const WhisperConfig& Whisper::config() const { return impl_->config; }
const LoadOptions& Whisper::load_options() const { return impl_->options; }

torch::Tensor Whisper::encode(const torch::Tensor& input_features,
                              Intermediates* intermediates) const {
  const WhisperConfig& c = impl_->config;
  ALTO_CHECK(input_features.dim() == 3 && input_features.size(1) == c.num_mel_bins &&
                 input_features.size(2) == c.input_frames(),
             "Whisper::encode: input_features must be [batch, ", c.num_mel_bins, ", ",
             c.input_frames(), "] (pad with WhisperFeatureExtractor), got ",
             shape_of(input_features));
  ALTO_CHECK(input_features.is_floating_point(),
             "Whisper::encode: input_features must be floating point, got ",
             input_features.scalar_type());
  torch::Tensor hidden;
  {
    c10::InferenceMode guard;
    hidden = impl_->encode(input_features, intermediates);
  }
  outside_inference(intermediates);
  return outside_inference(hidden);
}

torch::Tensor Whisper::Impl::encode(const torch::Tensor& features, Intermediates* out) const {
  const EncoderImpl& encoder = *model->encoder;
  const std::string name = prefix + "encoder.";
  torch::Tensor x = features.to(options.device, options.dtype);
  x = encoder.conv1->forward(x);
  if (out) out->add(name + "conv1", x);
  x = encoder.conv2->forward(torch::gelu(x));
  if (out) out->add(name + "conv2", x);
  x = torch::gelu(x).permute({0, 2, 1}) + encoder.embed_positions->weight;
  for (size_t i = 0; i < encoder.layers->size(); ++i) {
    const auto& layer = encoder.layers->at<EncoderLayerImpl>(i);
    const std::string layer_name = name + "layers." + std::to_string(i);
    const bool record_weights = out && out->attention_weights;
    torch::Tensor weights;
    auto [q, k, v] = layer.self_attn->project_qkv(layer.self_attn_layer_norm->forward(x));
    torch::Tensor attention = layer.self_attn->out_proj->forward(
        merge_heads(attend(q, k, v, {}, record_weights ? &weights : nullptr)));
    if (out) out->add(layer_name + ".self_attn", attention);
    if (record_weights) out->add(layer_name + ".self_attn.attn_weights", weights);
    x = x + attention;
    x = x + feed_forward(layer.final_layer_norm->forward(x), layer.fc1, layer.fc2, activation);
    // transformers' guard against float16 overflow in the residual stream.
    if (x.scalar_type() == torch::kFloat16 &&
        (x.isinf().any().item<bool>() || x.isnan().any().item<bool>())) {
      const double limit = 65504.0 - 1000.0;
      x = x.clamp(-limit, limit);
    }
    if (out) out->add(layer_name, x);
  }
  x = encoder.layer_norm->forward(x);
  if (out) {
    out->add(name + "layer_norm", x);
    out->add("last_hidden_state", x);
  }
  return x;
}

WhisperDecoderState Whisper::start(const torch::Tensor& encoder_hidden_states,
                                   int64_t rows_per_audio) const {
  const WhisperConfig& c = impl_->config;
  ALTO_CHECK(encoder_hidden_states.dim() == 3 && encoder_hidden_states.size(0) > 0 &&
                 encoder_hidden_states.size(2) == c.d_model,
             "Whisper::start: encoder_hidden_states must be [audios, frames, ", c.d_model,
             "], got ", shape_of(encoder_hidden_states));
  ALTO_CHECK(rows_per_audio > 0, "Whisper::start: rows_per_audio must be positive, got ",
             rows_per_audio);
  c10::InferenceMode guard;
  const torch::Tensor audio = encoder_hidden_states.to(impl_->options.device, impl_->options.dtype);
  const int64_t rows = audio.size(0) * rows_per_audio;
  const int64_t heads = c.decoder_attention_heads;
  const torch::Tensor empty = torch::empty({rows, heads, 0, c.d_model / heads}, audio.options());
  WhisperDecoderState state;
  state.rows_per_audio = rows_per_audio;
  for (const auto& layer : *impl_->model->decoder->layers) {
    auto [k, v] = layer->as<DecoderLayerImpl>()->encoder_attn->project_kv(audio);
    state.layers.push_back({empty, empty, k, v});
  }
  return state;
}

torch::Tensor Whisper::decode(const torch::Tensor& tokens, WhisperDecoderState& state,
                              Intermediates* intermediates) const {
  const WhisperConfig& c = impl_->config;
  ALTO_CHECK(static_cast<int64_t>(state.layers.size()) == c.decoder_layers,
             "Whisper::decode: the state was not made by Whisper::start of this model");
  ALTO_CHECK(tokens.dim() == 2 && tokens.scalar_type() == torch::kInt64 &&
                 tokens.size(0) == state.rows() && tokens.size(1) > 0,
             "Whisper::decode: tokens must be int64 [", state.rows(), ", new tokens], got ",
             tokens.scalar_type(), " ", shape_of(tokens));
  ALTO_CHECK(state.length + tokens.size(1) <= c.max_target_positions,
             "Whisper::decode: ", state.length, " cached + ", tokens.size(1),
             " new tokens exceed the decoder's ", c.max_target_positions,
             " positions (max_target_positions)");
  const auto [lowest, highest] = torch::aminmax(tokens);
  ALTO_CHECK(lowest.item<int64_t>() >= 0 && highest.item<int64_t>() < c.vocab_size,
             "Whisper::decode: token ids must be in [0, ", c.vocab_size, "), got ",
             lowest.item<int64_t>(), " .. ", highest.item<int64_t>());
  torch::Tensor logits;
  {
    c10::InferenceMode guard;
    logits = impl_->decode(tokens, state, intermediates);
  }
  outside_inference(intermediates);
  return outside_inference(logits);
}

torch::Tensor Whisper::Impl::decode(const torch::Tensor& tokens, WhisperDecoderState& state,
                                    Intermediates* out) const {
  const DecoderImpl& decoder = *model->decoder;
  const std::string name = prefix + "decoder.";
  const int64_t rows = tokens.size(0), length = tokens.size(1), past = state.length;
  const int64_t audios = state.layers.front().cross_key.size(0);
  const int64_t group = rows / audios;

  torch::Tensor x = decoder.embed_tokens->forward(tokens.to(options.device));
  if (config.scale_embedding) x = x * std::sqrt(static_cast<double>(config.d_model));
  x = x + decoder.embed_positions->weight.narrow(0, past, length);
  if (out) out->add(name + "embeddings", x);

  // Token i (at position past + i) sees the cache and the new tokens up to itself.
  torch::Tensor causal;
  if (length > 1) {
    causal =
        torch::full({length, past + length}, -std::numeric_limits<float>::infinity(), x.options())
            .triu_(past + 1);
  }
  const bool record_weights = out && out->attention_weights;
  for (size_t i = 0; i < decoder.layers->size(); ++i) {
    const auto& layer = decoder.layers->at<DecoderLayerImpl>(i);
    WhisperDecoderState::Layer& cache = state.layers[i];
    const std::string layer_name = name + "layers." + std::to_string(i);
    torch::Tensor weights;

    auto [q, k, v] = layer.self_attn->project_qkv(layer.self_attn_layer_norm->forward(x));
    cache.self_key = torch::cat({cache.self_key, k}, 2);
    cache.self_value = torch::cat({cache.self_value, v}, 2);
    torch::Tensor attention = layer.self_attn->out_proj->forward(merge_heads(
        attend(q, cache.self_key, cache.self_value, causal, record_weights ? &weights : nullptr)));
    if (out) out->add(layer_name + ".self_attn", attention);
    if (record_weights) out->add(layer_name + ".self_attn.attn_weights", weights);
    x = x + attention;

    // The rows of one audio window attend to its keys together: fold them into the query
    // length, [A * G, H, T, hd] -> [A, H, G * T, hd], so the audio is never copied per row.
    torch::Tensor cross_q =
        layer.encoder_attn->project_q(layer.encoder_attn_layer_norm->forward(x));
    const int64_t heads = cross_q.size(1), head_dim = cross_q.size(3);
    cross_q = cross_q.view({audios, group, heads, length, head_dim})
                  .transpose(1, 2)
                  .reshape({audios, heads, group * length, head_dim});
    torch::Tensor cross = attend(cross_q, cache.cross_key, cache.cross_value, {},
                                 record_weights ? &weights : nullptr);
    cross = cross.view({audios, heads, group, length, head_dim})
                .transpose(1, 2)
                .reshape({rows, heads, length, head_dim});
    torch::Tensor cross_attention = layer.encoder_attn->out_proj->forward(merge_heads(cross));
    if (out) out->add(layer_name + ".encoder_attn", cross_attention);
    if (record_weights)
      out->add(layer_name + ".encoder_attn.attn_weights",
               weights.view({audios, heads, group, length, -1})
                   .transpose(1, 2)
                   .reshape({rows, heads, length, -1}));
    x = x + cross_attention;

    x = x + feed_forward(layer.final_layer_norm->forward(x), layer.fc1, layer.fc2, activation);
    if (out) out->add(layer_name, x);
  }
  state.length += length;
  x = decoder.layer_norm->forward(x);
  if (out) out->add(name + "layer_norm", x);
  torch::Tensor logits = torch::linear(x, proj_out).to(torch::kFloat32);
  if (out) out->add("proj_out", logits);
  return logits;
}

}  // namespace alto::models
