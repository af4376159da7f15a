#include "alto/models/kyutai_speech_to_text/kyutai_speech_to_text.h"

#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <sstream>

#include "alto/core/error.h"
#include "alto/core/internal/json_config.h"
#include "alto/core/threading.h"
#include "alto/models/blocks/basic.h"
#include "alto/models/blocks/mlp.h"
#include "alto/models/blocks/norm.h"
#include "alto/models/blocks/rope.h"
#include "alto/models/internal/few_rows.h"

namespace alto::models {

namespace fs = std::filesystem;

const OptionSchema<KyutaiSpeechToTextConfig>& KyutaiSpeechToTextConfig::schema() {
  using C = KyutaiSpeechToTextConfig;
  static const auto schema =
      OptionSchema<C>("KyutaiSpeechToTextConfig")
          .positive("vocab_size", &C::vocab_size, "Text vocabulary (with the initial token)")
          .positive("hidden_size", &C::hidden_size, "Width")
          .positive("num_hidden_layers", &C::num_hidden_layers, "Layers")
          .positive("num_attention_heads", &C::num_attention_heads, "Query heads")
          .field("num_key_value_heads", &C::num_key_value_heads, "Key/value heads")
          .field("head_dim", &C::head_dim, "Width of one head")
          .positive("ffn_dim", &C::ffn_dim, "Width of fc1 (fc2 reads half)")
          .positive("max_position_embeddings", &C::max_position_embeddings, "Context")
          .positive("sliding_window", &C::sliding_window, "Attention window")
          .positive("rms_norm_eps", &C::rms_norm_eps, "RMSNorm epsilon")
          .positive("rope_theta", &C::rope_theta, "RoPE base")
          .field("hidden_act", &C::hidden_act, "Gating activation")
          .positive("num_codebooks", &C::num_codebooks, "Mimi codebooks per frame")
          .positive("codebook_vocab_size", &C::codebook_vocab_size, "Ids per codebook")
          .field("audio_bos_token_id", &C::audio_bos_token_id, "The first step's codes")
          .field("audio_pad_token_id", &C::audio_pad_token_id, "The zero embedding row")
          .field("bos_token_id", &C::bos_token_id, "The first step's text token")
          .field("pad_token_id", &C::pad_token_id, "Text padding")
          .positive("frame_size", &C::frame_size, "Samples per step")
          .field("tie_word_embeddings", &C::tie_word_embeddings, "Head tied to the embedding");
  return schema;
}

KyutaiSpeechToTextConfig KyutaiSpeechToTextConfig::from_json(const std::string& path) {
  const detail::JsonConfig json = detail::JsonConfig::load_model_config(
      path, "kyutai_speech_to_text", "a Kyutai speech-to-text");
  KyutaiSpeechToTextConfig c = json.read(schema());
  if (const nlohmann::json* rope = json.find("rope_parameters"); rope && rope->is_object())
    json.sub("rope_parameters").read("rope_theta", c.rope_theta);
  if (json.find("codec_config")) c.codec_config = MimiConfig::from_json(json.path(), "codec_config");
  return json.validated(c);
}

void KyutaiSpeechToTextConfig::validate() const {
  schema().check(*this);
  ALTO_CHECK(head_size() > 0 && head_size() % 2 == 0,
             "KyutaiSpeechToTextConfig.head_dim must be even and > 0, got ", head_size());
  ALTO_CHECK(kv_heads() > 0 && num_attention_heads % kv_heads() == 0,
             "KyutaiSpeechToTextConfig.num_key_value_heads (", kv_heads(),
             ") must divide num_attention_heads (", num_attention_heads, ")");
  ALTO_CHECK(ffn_dim % 2 == 0, "KyutaiSpeechToTextConfig.ffn_dim must be even (fc1 splits in two)"
             ", got ", ffn_dim);
  ALTO_CHECK(audio_bos_token_id >= 0 && audio_bos_token_id < codebook_vocab_size,
             "KyutaiSpeechToTextConfig.audio_bos_token_id must be in [0, codebook_vocab_size = ",
             codebook_vocab_size, "), got ", audio_bos_token_id);
  ALTO_CHECK(audio_pad_token_id == embedding_rows() - 1,
             "KyutaiSpeechToTextConfig.audio_pad_token_id must be the last embedding row, "
             "vocab_size + num_codebooks * codebook_vocab_size = ", embedding_rows() - 1,
             ", got ", audio_pad_token_id);
  ALTO_CHECK(bos_token_id >= 0 && bos_token_id < vocab_size,
             "KyutaiSpeechToTextConfig.bos_token_id must be a text id below vocab_size = ",
             vocab_size, ", got ", bos_token_id);
  ALTO_CHECK(codec_config.num_quantizers == num_codebooks,
             "KyutaiSpeechToTextConfig.num_codebooks (", num_codebooks,
             ") differs from its codec's codec_config.num_quantizers (",
             codec_config.num_quantizers, "): the decoder reads every codebook of a frame");
  ALTO_CHECK(codec_config.codebook_size < codebook_vocab_size,
             "KyutaiSpeechToTextConfig.codebook_vocab_size (", codebook_vocab_size,
             ") must exceed the codec's codec_config.codebook_size (", codec_config.codebook_size,
             ") by the audio-BOS id");
  ALTO_CHECK(codec_config.hop_length() == frame_size, "KyutaiSpeechToTextConfig.frame_size (",
             frame_size, ") differs from the codec's frame of ", codec_config.hop_length(),
             " samples");
  blocks::parse_activation(hidden_act, "KyutaiSpeechToTextConfig.hidden_act");
}

std::string KyutaiSpeechToTextConfig::to_string() const {
  std::ostringstream s;
  s << "KyutaiSpeechToTextConfig(hidden_size=" << hidden_size << ", layers=" << num_hidden_layers
    << ", heads=" << num_attention_heads << "/" << kv_heads() << ", head_dim=" << head_size()
    << ", ffn_dim=" << ffn_dim << ", vocab_size=" << vocab_size
    << ", codebooks=" << num_codebooks << "x" << codebook_vocab_size
    << ", sliding_window=" << sliding_window << ")";
  return s.str();
}

const OptionSchema<KyutaiSpeechToTextProcessorConfig>& KyutaiSpeechToTextProcessorConfig::schema() {
  using C = KyutaiSpeechToTextProcessorConfig;
  static const auto schema =
      OptionSchema<C>("KyutaiSpeechToTextFeatureExtractor")
          .positive("sampling_rate", &C::sampling_rate, "Sample rate")
          .field("audio_delay_seconds", &C::audio_delay_seconds, "Text delay behind the audio")
          .field("audio_silence_prefix_seconds", &C::audio_silence_prefix_seconds,
                 "Silence before the audio");
  return schema;
}

KyutaiSpeechToTextProcessorConfig KyutaiSpeechToTextProcessorConfig::from_pretrained(
    const std::string& dir) {
  using detail::JsonConfig;
  const fs::path legacy = fs::path(dir) / "preprocessor_config.json";
  const fs::path processor = fs::path(dir) / "processor_config.json";
  JsonConfig json;
  if (fs::exists(legacy)) {
    json = JsonConfig::load(legacy.string());
  } else {
    ALTO_CHECK_AS(IoError, fs::exists(processor), "cannot open ", processor.string(),
                  " (the model folder has neither processor_config.json nor "
                  "preprocessor_config.json)");
    json = JsonConfig::load(processor.string()).sub("feature_extractor");
  }
  return json.validated(json.read(schema()));
}

void KyutaiSpeechToTextProcessorConfig::validate() const {
  schema().check(*this);
  ALTO_CHECK(audio_delay_seconds >= 0 && audio_silence_prefix_seconds >= 0,
             "audio_delay_seconds and audio_silence_prefix_seconds must be >= 0, got ",
             audio_delay_seconds, " and ", audio_silence_prefix_seconds);
}

int64_t KyutaiSpeechToTextProcessorConfig::prefix_samples() const {
  return static_cast<int64_t>(audio_silence_prefix_seconds * sampling_rate);
}

int64_t KyutaiSpeechToTextProcessorConfig::suffix_samples() const {
  return static_cast<int64_t>((audio_delay_seconds + 1.0) * sampling_rate);
}

// ---------------------------------------------------------------------------------------------

WordAssembler::WordAssembler(std::shared_ptr<const tokenizers::TextTokenizer> tokenizer,
                             double frame_rate, double prefix_seconds, double delay_seconds,
                             int64_t padding_token_id, int64_t end_of_padding_id)
    : tokenizer_(std::move(tokenizer)),
      frame_rate_(frame_rate),
      prefix_(prefix_seconds),
      delay_(delay_seconds),
      pad_(padding_token_id),
      end_of_padding_(end_of_padding_id) {}

std::vector<TimedWord> WordAssembler::segment(int64_t begin, int64_t end, int64_t decided) const {
  std::vector<int64_t> text_ids;
  for (int64_t p = std::max(begin, first_); p < end && p - first_ < static_cast<int64_t>(tokens_.size()); ++p)
    if (tokens_[p - first_] > pad_) text_ids.push_back(tokens_[p - first_]);
  std::vector<TimedWord> out;
  if (text_ids.empty()) return out;
  const std::string text = tokenizer_->decode(text_ids, true);
  std::vector<std::string> words;
  std::istringstream split(text);
  for (std::string w; split >> w;) words.push_back(w);
  const double offset = prefix_ + delay_;
  const double decided_at = std::max(0.0, (decided + 1) / frame_rate_ - prefix_);
  auto timed = [&](std::string word, int64_t from, int64_t to) {
    return TimedWord{std::move(word), std::max(0.0, from / frame_rate_ - offset),
                     std::max(0.0, to / frame_rate_ - offset), decided_at};
  };
  // Words the model did not separate: each takes as many steps as it has tokens.
  for (size_t i = 0; i + 1 < words.size(); ++i) {
    const int64_t n = static_cast<int64_t>(tokenizer_->encode(words[i]).size());
    out.push_back(timed(words[i], begin, begin + n));
    begin += n;
  }
  if (!words.empty()) out.push_back(timed(words.back(), begin, end));
  return out;
}

std::vector<TimedWord> WordAssembler::push(int64_t token, int64_t step) {
  const int64_t position = step - 1;  // the position of the code frame the step consumed
  if (position < first_) return {};
  tokens_.resize(position - first_ + 1, pad_);
  tokens_[position - first_] = token;
  if (token != end_of_padding_) return {};
  std::vector<TimedWord> decided;
  if (last_boundary_ >= 0) decided = segment(last_boundary_ + 1, position, position);
  last_boundary_ = position;
  tokens_.erase(tokens_.begin(), tokens_.begin() + (position - first_));
  first_ = position;
  return decided;
}

std::vector<TimedWord> WordAssembler::finish() {
  if (last_boundary_ < 0) return {};
  const int64_t begin = last_boundary_ + 1;
  const int64_t size = first_ + static_cast<int64_t>(tokens_.size());
  const int64_t eos = tokenizer_->token_to_id("</s>");
  int64_t end = std::min<int64_t>(size, begin + static_cast<int64_t>(frame_rate_));
  for (int64_t p = begin; p < size; ++p)
    if (eos >= 0 && tokens_[p - first_] == eos) {
      end = p;
      break;
    }
  last_boundary_ = -1;
  return segment(begin, end, size - 1);
}

// ---------------------------------------------------------------------------------------------

namespace {

using blocks::Activation;

class DecoderLayerImpl : public torch::nn::Module {
 public:
  DecoderLayerImpl(const KyutaiSpeechToTextConfig& c, const torch::TensorOptions& o)
      : input_layernorm(
            register_module("input_layernorm", blocks::RmsNorm(c.hidden_size, c.rms_norm_eps, o, true))),
        post_attention_layernorm(register_module(
            "post_attention_layernorm", blocks::RmsNorm(c.hidden_size, c.rms_norm_eps, o, true))),
        mlp(register_module("mlp",
                            blocks::GatingMlp(c.hidden_size, c.ffn_dim,
                                              blocks::parse_activation(c.hidden_act, "hidden_act"),
                                              o))),
        // Bound by hand: the checkpoint names its projections "q_proj.linear.weight".
        self_attn(blocks::SelfAttentionOptions{c.hidden_size, c.num_attention_heads, c.kv_heads(),
                                               c.head_size(), false, false, "o_proj"},
                  o) {}

  blocks::RmsNorm input_layernorm, post_attention_layernorm;
  blocks::GatingMlp mlp;
  blocks::SelfAttention self_attn;
};
TORCH_MODULE(DecoderLayer);

class EmbeddingsImpl : public torch::nn::Module {
 public:
  EmbeddingsImpl(const KyutaiSpeechToTextConfig& c, const torch::TensorOptions& o)
      : embed_tokens(register_module("embed_tokens",
                                     blocks::Embedding(c.embedding_rows(), c.hidden_size, o))) {}
  blocks::Embedding embed_tokens;
};
TORCH_MODULE(Embeddings);

class DecoderImpl : public torch::nn::Module {
 public:
  DecoderImpl(const KyutaiSpeechToTextConfig& c, const torch::TensorOptions& o)
      : embed_tokens(register_module("embed_tokens", Embeddings(c, o))),
        layers(register_module("layers", torch::nn::ModuleList())),
        norm(register_module("norm", blocks::RmsNorm(c.hidden_size, c.rms_norm_eps, o, true))) {
    for (int64_t i = 0; i < c.num_hidden_layers; ++i) layers->push_back(DecoderLayer(c, o));
  }
  Embeddings embed_tokens;
  torch::nn::ModuleList layers;
  blocks::RmsNorm norm;
};
TORCH_MODULE(Decoder);

blocks::RotaryEmbeddingOptions rope_options(const KyutaiSpeechToTextConfig& c) {
  blocks::RotaryEmbeddingOptions o;
  o.head_dim = c.head_size();
  o.rope_theta = c.rope_theta;
  return o;
}

}  // namespace

struct KyutaiSpeechToText::Impl {
  Impl(const KyutaiSpeechToTextConfig& c, const LoadOptions& o)
      : config(c),
        options(o),
        module(c, torch::TensorOptions().dtype(o.dtype).device(o.device)),
        rope(rope_options(c)) {}

  KyutaiSpeechToTextConfig config;
  KyutaiSpeechToTextProcessorConfig processor;
  LoadOptions options;
  Decoder module;
  torch::Tensor lm_head;         // [vocab_size, hidden_size]
  torch::Tensor audio_offsets;   // int64 [1 + K]: 0 for the text, vocab + k * codebook_vocab
  blocks::RotaryEmbedding rope;
  std::shared_ptr<const Mimi> codec;
  std::shared_ptr<const tokenizers::TextTokenizer> tokenizer;
};

std::shared_ptr<const KyutaiSpeechToText> KyutaiSpeechToText::from_pretrained(
    const std::string& dir, const LoadOptions& options) {
  return std::make_shared<const KyutaiSpeechToText>(dir, options);
}

KyutaiSpeechToText::KyutaiSpeechToText(const std::string& dir, const LoadOptions& options) {
  require_checkpoint_folder(dir, "KyutaiSpeechToText::from_pretrained");
  options.validate();
  const KyutaiSpeechToTextConfig config = KyutaiSpeechToTextConfig::from_json(dir);
  const SafetensorsCheckpoint checkpoint(dir);
  CheckpointBinder binder(checkpoint, options, config.to_string());
  auto impl = std::make_shared<Impl>(config, options);
  impl->processor = KyutaiSpeechToTextProcessorConfig::from_pretrained(dir);
  ALTO_CHECK(impl->processor.sampling_rate == config.codec_config.sampling_rate, dir,
             ": the processor's sampling_rate (", impl->processor.sampling_rate,
             ") differs from the codec's (", config.codec_config.sampling_rate, ")");
  impl->tokenizer = tokenizers::TextTokenizer::from_pretrained(dir);
  binder.bind(*impl->module, "model.");
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    auto& attention = *impl->module->layers->at<DecoderLayerImpl>(i).self_attn;
    const std::string name = "model.layers." + std::to_string(i) + ".self_attn.";
    binder.bind(attention.q_proj->weight, name + "q_proj.linear.weight");
    binder.bind(attention.k_proj->weight, name + "k_proj.linear.weight");
    binder.bind(attention.v_proj->weight, name + "v_proj.linear.weight");
    binder.bind(attention.output_proj->weight, name + "o_proj.linear.weight");
  }
  impl->lm_head =
      declare_weight({config.vocab_size, config.hidden_size},
                     torch::TensorOptions().dtype(options.dtype).device(options.device));
  binder.bind(impl->lm_head, "lm_head.weight",
              config.tie_word_embeddings ? "model.embed_tokens.embed_tokens.weight" : "");
  if (options.linear_weights == LoadOptions::LinearWeights::kInt8)
    binder.then([impl, layers = config.num_hidden_layers] {
      blocks::quantize_linears(*impl->module);
      for (int64_t i = 0; i < layers; ++i)  // bound by hand, not registered
        blocks::quantize_linears(*impl->module->layers->at<DecoderLayerImpl>(i).self_attn);
      impl->lm_head = kernels::quantize_int8(impl->lm_head);
    });
  // transformers keeps the codec in float32 whatever the decoder's dtype.
  LoadOptions codec_options = options;
  codec_options.dtype = torch::kFloat32;
  codec_options.linear_weights = LoadOptions::LinearWeights::kComputeDtype;
  binder.set_dtype(torch::kFloat32);
  impl->codec = std::make_shared<const Mimi>(config.codec_config, binder, "codec_model.",
                                             codec_options);
  binder.finish();

  const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(options.device);
  impl->audio_offsets = torch::cat(
      {torch::zeros({1}, i64),
       torch::arange(config.num_codebooks, i64) * config.codebook_vocab_size + config.vocab_size});
  impl_ = std::move(impl);
}

bool KyutaiSpeechToText::recognizes(const std::string& dir) {
  return detail::JsonConfig::model_type_in(dir) == "kyutai_speech_to_text";
}

const KyutaiSpeechToTextConfig& KyutaiSpeechToText::config() const { return impl_->config; }
const KyutaiSpeechToTextProcessorConfig& KyutaiSpeechToText::processor_config() const {
  return impl_->processor;
}
const LoadOptions& KyutaiSpeechToText::load_options() const { return impl_->options; }
const Mimi& KyutaiSpeechToText::codec() const { return *impl_->codec; }
std::shared_ptr<const Mimi> KyutaiSpeechToText::codec_ptr() const { return impl_->codec; }
const std::shared_ptr<const tokenizers::TextTokenizer>& KyutaiSpeechToText::tokenizer() const {
  return impl_->tokenizer;
}
double KyutaiSpeechToText::frame_rate() const {
  return static_cast<double>(sample_rate()) / impl_->config.frame_size;
}
double KyutaiSpeechToText::time_offset_seconds() const {
  return impl_->processor.audio_silence_prefix_seconds + impl_->processor.audio_delay_seconds;
}

KyutaiSpeechToTextInputs KyutaiSpeechToText::process(const torch::Tensor& samples) const {
  ALTO_CHECK(samples.defined(), "KyutaiSpeechToText::process: samples are undefined");
  ALTO_CHECK(samples.is_floating_point() &&
                 (samples.dim() == 1 || (samples.dim() == 2 && samples.size(0) == 1)) &&
                 samples.numel() > 0,
             "KyutaiSpeechToText::process: samples must be float mono [n] or [1, n], n >= 1, got ",
             samples.sizes());
  ALTO_CHECK(torch::isfinite(samples).all().item<bool>(),
             "KyutaiSpeechToText::process: the samples hold NaN or infinite values");
  const KyutaiSpeechToTextProcessorConfig& p = impl_->processor;
  const torch::Tensor wave = samples.reshape({1, -1}).to(torch::kFloat32);
  const int64_t before = p.prefix_samples(), after = p.suffix_samples(), n = wave.size(1);
  KyutaiSpeechToTextInputs out;
  out.input_values = torch::constant_pad_nd(wave, {before, after}).unsqueeze(1);
  out.padding_mask = torch::zeros({1, before + n + after}, torch::kInt64);
  out.padding_mask.narrow(1, before, n).fill_(1);
  return out;
}

torch::Tensor KyutaiSpeechToText::encode(const torch::Tensor& input_values) const {
  return impl_->codec->encode(input_values).codes;
}

torch::Tensor KyutaiSpeechToText::embed(const torch::Tensor& input_ids) const {
  const KyutaiSpeechToTextConfig& c = impl_->config;
  ALTO_CHECK(input_ids.defined(), "KyutaiSpeechToText::embed: input_ids are undefined");
  ALTO_CHECK(input_ids.scalar_type() == torch::kInt64 &&
                 input_ids.dim() == 3 && input_ids.size(2) == 1 + c.num_codebooks,
             "KyutaiSpeechToText::embed: input_ids must be int64 [batch, T, ", 1 + c.num_codebooks,
             "] (text token, then one code per codebook), got ",
             input_ids.sizes());
  torch::NoGradGuard no_grad;
  const torch::Tensor ids = input_ids.to(impl_->options.device);
  const torch::Tensor pad = ids == c.audio_pad_token_id;
  // Each column's ids below its limit, or the padding id.
  auto in_range = [&](const torch::Tensor& t, int64_t limit) {
    return (t >= 0).logical_and(t < limit).logical_or(t == c.audio_pad_token_id).all().item<bool>();
  };
  if (ids.numel() > 0) {
    ALTO_CHECK(in_range(ids.select(2, 0), c.vocab_size),
               "KyutaiSpeechToText::embed: text ids must be in [0, vocab_size = ", c.vocab_size,
               ") or audio_pad_token_id");
    ALTO_CHECK(in_range(ids.narrow(2, 1, c.num_codebooks), c.codebook_vocab_size),
               "KyutaiSpeechToText::embed: codes must be in [0, codebook_vocab_size = ",
               c.codebook_vocab_size, ") or audio_pad_token_id");
  }
  const torch::Tensor rows = torch::where(pad, ids, ids + impl_->audio_offsets);
  return impl_->module->embed_tokens->embed_tokens->forward(rows).sum(2);
}

KyutaiSpeechToTextState KyutaiSpeechToText::start(int64_t batch) const {
  const KyutaiSpeechToTextConfig& c = impl_->config;
  ALTO_CHECK(batch > 0, "KyutaiSpeechToText::start: batch must be > 0, got ", batch);
  // The rings are float32 whatever the weights: libtorch's bfloat16 batched products on CPU
  // ran 3 ms per layer over a 750-key ring, twelve times the time of reading it.
  const auto options =
      torch::TensorOptions().dtype(torch::kFloat32).device(impl_->options.device);
  KyutaiSpeechToTextState state;
  state.positions = blocks::RingPositions(batch, c.sliding_window, impl_->options.device);
  for (int64_t i = 0; i < c.num_hidden_layers; ++i)
    state.layers.emplace_back(batch, c.kv_heads(), c.sliding_window, c.head_size(), options);
  return state;
}

torch::Tensor KyutaiSpeechToText::forward(const torch::Tensor& inputs_embeds,
                                          KyutaiSpeechToTextState& state,
                                          const torch::Tensor& advancing,
                                          Intermediates* intermediates) const {
  const KyutaiSpeechToTextConfig& c = impl_->config;
  ALTO_CHECK(inputs_embeds.defined(), "KyutaiSpeechToText::forward: inputs_embeds are undefined");
  ALTO_CHECK(inputs_embeds.dim() == 3 &&
                 inputs_embeds.size(0) == state.batch() && inputs_embeds.size(1) >= 1 &&
                 inputs_embeds.size(2) == c.hidden_size,
             "KyutaiSpeechToText::forward: inputs_embeds must be [", state.batch(), ", T, ",
             c.hidden_size, "] for this state, got ",
             inputs_embeds.sizes());
  torch::NoGradGuard no_grad;
  const int64_t batch = inputs_embeds.size(0), time = inputs_embeds.size(1);
  // A step's few-row products stream the weights on alto's threads (blocks::linear); libtorch's
  // OpenMP team would spin on their cores between its tiny operators.
  std::optional<TorchThreads> step_threads;
  if (batch * time <= kernels::kMaxFewRows) step_threads.emplace(1);
  const blocks::RingPositions::Step step = state.positions.plan(time, advancing, torch::kFloat32);
  auto [cos, sin] = impl_->rope.cos_sin(step.positions);
  torch::Tensor x = inputs_embeds.to(impl_->options.device, impl_->options.dtype);
  const DecoderImpl& decoder = *impl_->module;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const auto& layer = decoder.layers->at<DecoderLayerImpl>(i);
    const blocks::NormedSum attended = layer.post_attention_layernorm->forward_sum(
        x, layer.self_attn->forward(layer.input_layernorm->forward(x), impl_->rope, cos, sin,
                                    state.layers[i], step));
    x = attended.sum + layer.mlp->forward(attended.normed);
    if (intermediates) intermediates->add("model.layers." + std::to_string(i), x);
  }
  state.positions.commit(step);
  x = decoder.norm->forward(x);
  if (intermediates) intermediates->add("model.norm", x);
  return x;
}

torch::Tensor KyutaiSpeechToText::logits(const torch::Tensor& hidden) const {
  ALTO_CHECK(hidden.defined() && hidden.dim() >= 1 && hidden.size(-1) == impl_->config.hidden_size,
             "KyutaiSpeechToText::logits: hidden must be [..., ", impl_->config.hidden_size, "]");
  torch::NoGradGuard no_grad;
  return blocks::linear(hidden.to(impl_->options.device, impl_->options.dtype), impl_->lm_head)
      .to(torch::kFloat32);
}

torch::Tensor KyutaiSpeechToText::step_ids(const torch::Tensor& text,
                                           const torch::Tensor& codes) const {
  const KyutaiSpeechToTextConfig& c = impl_->config;
  ALTO_CHECK(text.defined() && text.dim() == 1, "KyutaiSpeechToText::step_ids: text must be [B]");
  const int64_t batch = text.size(0);
  torch::Tensor audio;
  if (codes.defined()) {
    ALTO_CHECK(codes.dim() == 2 && codes.size(0) == batch && codes.size(1) == c.num_codebooks,
               "KyutaiSpeechToText::step_ids: codes must be [", batch, ", ", c.num_codebooks,
               "], got ", codes.sizes());
    audio = codes.to(torch::kInt64);
  } else {
    audio = torch::full({batch, c.num_codebooks}, c.audio_bos_token_id, torch::kInt64);
  }
  return torch::cat({text.to(torch::kInt64).cpu().unsqueeze(1), audio.cpu()}, 1).unsqueeze(1);
}

WordAssembler KyutaiSpeechToText::word_assembler() const {
  return WordAssembler(impl_->tokenizer, frame_rate(),
                       impl_->processor.audio_silence_prefix_seconds,
                       impl_->processor.audio_delay_seconds, impl_->config.pad_token_id);
}

SpeechToTextTranscript KyutaiSpeechToText::transcribe_codes(const torch::Tensor& codes,
                                                            torch::Tensor* logits) const {
  const KyutaiSpeechToTextConfig& c = impl_->config;
  ALTO_CHECK(codes.defined(), "KyutaiSpeechToText::transcribe_codes: codes are undefined");
  ALTO_CHECK(codes.scalar_type() == torch::kInt64 && codes.dim() == 3 &&
                 codes.size(0) == 1 && codes.size(1) == c.num_codebooks,
             "KyutaiSpeechToText::transcribe_codes: codes must be int64 [1, ", c.num_codebooks,
             ", frames] (this model's codebooks), got ",
             codes.sizes());
  ALTO_CHECK(codes.numel() == 0 || (codes.min().item<int64_t>() >= 0 &&
                                    codes.max().item<int64_t>() < c.codec_config.codebook_size),
             "KyutaiSpeechToText::transcribe_codes: codes must be in [0, ",
             c.codec_config.codebook_size, ")");
  torch::NoGradGuard no_grad;
  KyutaiSpeechToTextState state = start(1);
  WordAssembler words = word_assembler();
  SpeechToTextTranscript out;
  std::vector<torch::Tensor> step_logits;
  const torch::Tensor frames = codes[0].cpu();
  int64_t token = c.bos_token_id;
  for (int64_t s = 0; s <= frames.size(1); ++s) {
    const torch::Tensor frame = s == 0 ? torch::Tensor() : frames.select(1, s - 1).unsqueeze(0);
    const torch::Tensor ids = step_ids(torch::tensor({token}, torch::kInt64), frame);
    const torch::Tensor l = this->logits(forward(embed(ids), state)).view({-1});
    if (logits) step_logits.push_back(l);
    token = l.argmax().item<int64_t>();
    out.token_ids.push_back(token);
    for (auto& w : words.push(token, s)) out.words.push_back(std::move(w));
  }
  for (auto& w : words.finish()) out.words.push_back(std::move(w));
  out.text = impl_->tokenizer->decode(out.token_ids, true);
  if (logits) *logits = torch::stack(step_logits);
  return out;
}

SpeechToTextTranscript KyutaiSpeechToText::transcribe(const torch::Tensor& samples) const {
  return transcribe_codes(encode(process(samples).input_values));
}

}  // namespace alto::models
