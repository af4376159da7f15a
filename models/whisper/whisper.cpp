#include "alto/models/whisper/whisper.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <sstream>
#include <vector>

#include "alto/core/error.h"
#include "alto/core/internal/json_config.h"
#include "alto/core/threading.h"
#include "alto/models/blocks/basic.h"
#include "alto/models/blocks/intermediates.h"
#include "alto/models/internal/few_rows.h"
#include "alto/models/whisper/internal/layers.h"

namespace alto::models {

namespace {

using namespace whisper_internal;  // NOLINT: this file builds on them

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

}  // namespace

int64_t WhisperDecoderState::rows() const {
  return layers.empty() ? 0 : layers.front().self_attention.batch();
}

int64_t WhisperDecoderState::length() const {
  return layers.empty() ? 0 : layers.front().self_attention.length();
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
  const torch::Tensor index = cpu_rows.to(layers.front().cross_key.device());
  for (Layer& layer : layers) layer.self_attention.select_rows(index);
  rows_per_audio = group;
}

struct Whisper::Impl {
  Impl(const WhisperConfig& c, const LoadOptions& o)
      : config(c),
        options(o),
        activation(
            blocks::parse_activation(c.activation_function, "WhisperConfig.activation_function")),
        decoder(c, torch::TensorOptions().dtype(o.dtype).device(o.device)) {}

  WhisperConfig config;
  LoadOptions options;
  Activation activation;
  std::shared_ptr<const WhisperEncoder> encoder;
  Decoder decoder;
  torch::Tensor proj_out;  // [vocab, d_model]
  std::string prefix;      // "model." for WhisperForConditionalGeneration checkpoints

  torch::Tensor decode(const torch::Tensor& tokens, WhisperDecoderState& state,
                       Intermediates* out) const;
};

std::shared_ptr<const Whisper> Whisper::from_pretrained(const std::string& dir,
                                                        const LoadOptions& options) {
  require_checkpoint_folder(dir, "Whisper::from_pretrained");
  const WhisperConfig config = WhisperConfig::from_json(dir);  // its errors come first
  return std::make_shared<const Whisper>(config, SafetensorsCheckpoint(dir), options);
}

Whisper::Whisper(const WhisperConfig& config, const SafetensorsCheckpoint& checkpoint,
                 const LoadOptions& options) {
  config.validate();
  CheckpointBinder binder(checkpoint, options, "Whisper (" + config.to_string() + ")");
  auto impl = std::make_shared<Impl>(config, options);
  impl->prefix = whisper_checkpoint_prefix(checkpoint);
  impl->encoder =
      std::make_shared<const WhisperEncoder>(config, binder, impl->prefix + "encoder.", options);
  binder.bind(*impl->decoder, impl->prefix + "decoder.");
  impl->proj_out =
      declare_weight({config.vocab_size, config.d_model},
                     torch::TensorOptions().dtype(options.dtype).device(options.device));
  binder.bind(impl->proj_out, "proj_out.weight",
              config.tie_word_embeddings ? impl->prefix + "decoder.embed_tokens.weight" : "");
  binder.then([impl = impl.get()] {
    torch::NoGradGuard no_grad;
    const bool int8 = impl->options.linear_weights == LoadOptions::LinearWeights::kInt8;
    for (auto& layer : *impl->decoder->layers) {
      auto* l = layer->as<DecoderLayerImpl>();
      l->self_attn->fuse_self_attention();
      l->encoder_attn->fuse_cross_attention();
      if (!int8) continue;
      l->self_attn->quantize_int8();
      l->encoder_attn->quantize_int8();
      l->fc1->quantize_int8();
      l->fc2->quantize_int8();
    }
    // Its own int8 copy when tied: the token table stays float32 for the embedding lookup.
    if (int8) impl->proj_out = kernels::quantize_int8(impl->proj_out);
  });
  binder.finish();
  impl_ = std::move(impl);
}

const WhisperConfig& Whisper::config() const { return impl_->config; }
const LoadOptions& Whisper::load_options() const { return impl_->options; }

torch::Tensor Whisper::encode(const torch::Tensor& input_features,
                              Intermediates* intermediates) const {
  return impl_->encoder->encode(input_features, intermediates);
}

const WhisperEncoder& Whisper::encoder() const { return *impl_->encoder; }

WhisperDecoderState Whisper::start(const torch::Tensor& encoder_hidden_states,
                                   int64_t rows_per_audio) const {
  const WhisperConfig& c = impl_->config;
  ALTO_CHECK(encoder_hidden_states.dim() == 3 && encoder_hidden_states.size(0) > 0 &&
                 encoder_hidden_states.size(2) == c.d_model,
             "Whisper::start: encoder_hidden_states must be [audios, frames, ", c.d_model,
             "], got ", shape_of(encoder_hidden_states));
  ALTO_CHECK(rows_per_audio > 0, "Whisper::start: rows_per_audio must be positive, got ",
             rows_per_audio);
  torch::NoGradGuard no_grad;
  const torch::Tensor audio = encoder_hidden_states.to(impl_->options.device, impl_->options.dtype);
  const int64_t rows = audio.size(0) * rows_per_audio;
  const int64_t heads = c.decoder_attention_heads;
  WhisperDecoderState state;
  state.rows_per_audio = rows_per_audio;
  for (const auto& layer : *impl_->decoder->layers) {
    auto [k, v] = layer->as<DecoderLayerImpl>()->encoder_attn->project_kv(audio);
    state.layers.push_back({blocks::KVCache(rows, heads, 0, c.d_model / heads, audio.options(),
                                            c.max_target_positions),
                            k, v});
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
  ALTO_CHECK(state.length() + tokens.size(1) <= c.max_target_positions,
             "Whisper::decode: ", state.length(), " cached + ", tokens.size(1),
             " new tokens exceed the decoder's ", c.max_target_positions,
             " positions (max_target_positions)");
  const auto [lowest, highest] = torch::aminmax(tokens);
  ALTO_CHECK(lowest.item<int64_t>() >= 0 && highest.item<int64_t>() < c.vocab_size,
             "Whisper::decode: token ids must be in [0, ", c.vocab_size, "), got ",
             lowest.item<int64_t>(), " .. ", highest.item<int64_t>());
  torch::NoGradGuard no_grad;
  return impl_->decode(tokens, state, intermediates);
}

torch::Tensor Whisper::Impl::decode(const torch::Tensor& tokens, WhisperDecoderState& state,
                                    Intermediates* out) const {
  const DecoderImpl& decoder = *this->decoder;
  const std::string name = prefix + "decoder.";
  const int64_t rows = tokens.size(0), length = tokens.size(1), past = state.length();
  const int64_t audios = state.layers.front().cross_key.size(0);
  const int64_t group = rows / audios;
  // The products run on alto's threads (a few rows) or OpenBLAS's pool (beams, prompts);
  // libtorch's OpenMP team would spin on their cores between operators (TextDecoder).
  const TorchThreads operators_inline(1);

  torch::Tensor x = decoder.embed_tokens->forward(tokens.to(options.device));
  if (config.scale_embedding) x = x * std::sqrt(static_cast<double>(config.d_model));
  x = x + decoder.embed_positions->weight.narrow(0, past, length);
  if (out) out->add(name + "embeddings", x);

  // Token i (at position past + i) sees the cache and the new tokens up to itself.
  const kernels::AttentionBand causal{true, 0, past};
  const bool record_weights = out && out->attention_weights;
  for (size_t i = 0; i < decoder.layers->size(); ++i) {
    const auto& layer = decoder.layers->at<DecoderLayerImpl>(i);
    WhisperDecoderState::Layer& cache = state.layers[i];
    const std::string layer_name = name + "layers." + std::to_string(i);
    torch::Tensor weights;

    auto [q, k, v] = layer.self_attn->project_qkv(layer.self_attn_layer_norm->forward(x));
    const auto [keys, values] = cache.self_attention.append(k, v);
    torch::Tensor attention = layer.self_attn->out_proj->forward(
        merge_heads(attend(q, keys, values, causal, {}, record_weights ? &weights : nullptr)));
    if (out) out->add(layer_name + ".self_attn", attention);
    if (record_weights) out->add(layer_name + ".self_attn.attn_weights", weights);
    const blocks::NormedSum attended = layer.encoder_attn_layer_norm->forward_sum(x, attention);
    x = attended.sum;

    // The rows of one audio window attend to its keys together: fold them into the query
    // length, [A * G, H, T, hd] -> [A, H, G * T, hd], so the audio is never copied per row.
    torch::Tensor cross_q = layer.encoder_attn->project_q(attended.normed);
    const int64_t heads = cross_q.size(1), head_dim = cross_q.size(3);
    cross_q = cross_q.view({audios, group, heads, length, head_dim})
                  .transpose(1, 2)
                  .reshape({audios, heads, group * length, head_dim});
    torch::Tensor cross = attend(cross_q, cache.cross_key, cache.cross_value, {}, {},
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
    const blocks::NormedSum crossed = layer.final_layer_norm->forward_sum(x, cross_attention);
    x = crossed.sum + feed_forward(crossed.normed, layer.fc1, layer.fc2, activation);
    if (out) out->add(layer_name, x);
  }
  x = decoder.layer_norm->forward(x);
  if (out) out->add(name + "layer_norm", x);
  torch::Tensor logits = blocks::linear(x, proj_out).to(torch::kFloat32);
  if (out) out->add("proj_out", logits);
  return logits;
}

}  // namespace alto::models
