#include "alto/models/csm/csm.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <sstream>

#include "alto/core/error.h"
#include "alto/core/internal/json_config.h"
#include "alto/core/threading.h"
#include "alto/models/blocks/basic.h"

namespace alto::models {

namespace fs = std::filesystem;

const OptionSchema<CsmConfig>& CsmConfig::schema() {
  using C = CsmConfig;
  static const auto schema =
      OptionSchema<C>("CsmConfig")
          .positive("num_codebooks", &C::num_codebooks, "Mimi codebooks per frame")
          .positive("vocab_size", &C::vocab_size, "Ids per codebook (codes, eos, pad)")
          .positive("text_vocab_size", &C::text_vocab_size, "Rows of the text table")
          .field("bos_token_id", &C::bos_token_id, "<|begin_of_text|>")
          .field("audio_token_id", &C::audio_token_id, "<|AUDIO|>, one per context frame")
          .field("audio_eos_token_id", &C::audio_eos_token_id, "<|audio_eos|>")
          .field("codebook_eos_token_id", &C::codebook_eos_token_id, "The end frame's code")
          .field("codebook_pad_token_id", &C::codebook_pad_token_id, "Code after the end")
          .field("tie_codebooks_embeddings", &C::tie_codebooks_embeddings,
                 "One audio table for the backbone and the depth decoder");
  return schema;
}

CsmConfig CsmConfig::from_json(const std::string& path) {
  const detail::JsonConfig json = detail::JsonConfig::load_model_config(path, "csm", "a CSM");
  CsmConfig c = json.read(schema());
  // transformers' CsmConfig defaults are csm-1b's backbone (Llama-3.2-1B) and depth decoder.
  c.backbone.vocab_size = c.vocab_size, c.backbone.hidden_size = 2048;
  c.backbone.intermediate_size = 8192, c.backbone.num_hidden_layers = 16;
  c.backbone.num_attention_heads = 32, c.backbone.num_key_value_heads = 8;
  c.backbone.head_dim = 64, c.backbone.max_position_embeddings = 2048;
  c.backbone.rms_norm_eps = 1e-5, c.backbone.rope_theta = 500000;
  c.backbone.rope_scaling = {"llama3", 32.0, 1.0, 4.0, 8192};
  c.backbone.model_type = "llama";
  c.depth_decoder = c.backbone;
  c.depth_decoder.hidden_size = 1024, c.depth_decoder.intermediate_size = 8192;
  c.depth_decoder.num_hidden_layers = 4, c.depth_decoder.num_attention_heads = 8;
  c.depth_decoder.num_key_value_heads = 2, c.depth_decoder.head_dim = 128;
  c.depth_decoder.max_position_embeddings = 33;
  // Keys the file writes replace those defaults; both are read as a Llama's keys.
  const TextDecoderConfig backbone_defaults = c.backbone, depth_defaults = c.depth_decoder;
  c.backbone = TextDecoderConfig::from_json(json.path(), "", &backbone_defaults);
  c.backbone.vocab_size = c.vocab_size;  // the head predicts codebook 0
  c.depth_decoder =
      TextDecoderConfig::from_json(json.path(), "depth_decoder_config", &depth_defaults);
  const detail::JsonConfig depth = json.sub("depth_decoder_config");
  c.backbone_hidden_size = c.backbone.hidden_size;
  depth.read("backbone_hidden_size", c.backbone_hidden_size);
  int64_t depth_codebooks = c.num_codebooks, depth_vocab = c.vocab_size;
  depth.read("num_codebooks", depth_codebooks);
  depth.read("vocab_size", depth_vocab);
  ALTO_CHECK(depth_codebooks == c.num_codebooks && depth_vocab == c.vocab_size,
             json.where("depth_decoder_config"), ": num_codebooks / vocab_size (",
             depth_codebooks, " / ", depth_vocab, ") differ from the model's (", c.num_codebooks,
             " / ", c.vocab_size, ")");
  c.depth_decoder.vocab_size = c.vocab_size;
  json.require("codec_config");
  c.codec_config = MimiConfig::from_json(json.path(), "codec_config");
  return json.validated(c);
}

void CsmConfig::validate() const {
  schema().check(*this);
  backbone.validate();
  depth_decoder.validate();
  ALTO_CHECK(backbone_hidden_size == backbone.hidden_size,
             "CsmConfig.depth_decoder_config.backbone_hidden_size (", backbone_hidden_size,
             ") differs from the backbone's hidden_size (", backbone.hidden_size, ")");
  ALTO_CHECK(depth_decoder.max_position_embeddings >= num_codebooks,
             "CsmConfig.depth_decoder_config.max_position_embeddings (",
             depth_decoder.max_position_embeddings, ") must cover num_codebooks (", num_codebooks,
             ")");
  ALTO_CHECK(num_codebooks >= 2, "CsmConfig.num_codebooks must be >= 2, got ", num_codebooks);
  ALTO_CHECK(codec_config.num_quantizers >= num_codebooks, "CsmConfig.num_codebooks (",
             num_codebooks, ") exceeds its codec's codec_config.num_quantizers (",
             codec_config.num_quantizers, ")");
  ALTO_CHECK(codec_config.codebook_size <= vocab_size, "CsmConfig.vocab_size (", vocab_size,
             ") must cover the codec's codec_config.codebook_size (", codec_config.codebook_size,
             ")");
  for (auto [name, id] : {std::pair<const char*, int64_t>{"codebook_eos_token_id",
                                                          codebook_eos_token_id},
                          {"codebook_pad_token_id", codebook_pad_token_id}})
    ALTO_CHECK(id >= 0 && id < vocab_size, "CsmConfig.", name, " must be in [0, vocab_size = ",
               vocab_size, "), got ", id);
  for (auto [name, id] : {std::pair<const char*, int64_t>{"bos_token_id", bos_token_id},
                          {"audio_token_id", audio_token_id},
                          {"audio_eos_token_id", audio_eos_token_id}})
    ALTO_CHECK(id >= 0 && id < text_vocab_size, "CsmConfig.", name,
               " must be in [0, text_vocab_size = ", text_vocab_size, "), got ", id);
}

std::string CsmConfig::to_string() const {
  std::ostringstream s;
  s << "CsmConfig(backbone=" << backbone.to_string()
    << ", depth_decoder=" << depth_decoder.to_string() << ", codebooks=" << num_codebooks << "x"
    << vocab_size << ", text_vocab_size=" << text_vocab_size << ")";
  return s.str();
}

CsmGenerationConfig CsmGenerationConfig::from_json(const std::string& path) {
  CsmGenerationConfig c;
  c.backbone = GenerationConfig::from_json(path);
  c.depth_decoder = GenerationConfig::from_json(path, "depth_decoder_");
  return c;
}

void CsmGenerationConfig::validate() const {
  backbone.validate();
  depth_decoder.validate();
}

std::string CsmGenerationConfig::to_string() const {
  return "CsmGenerationConfig(backbone=" + backbone.to_string() +
         ", depth_decoder=" + depth_decoder.to_string() + ")";
}

void CsmGenerationConfig::set_temperature(double temperature) {
  ALTO_CHECK(temperature >= 0, "CsmGenerationConfig: temperature must be >= 0, got ",
             temperature);
  for (GenerationConfig* c : {&backbone, &depth_decoder}) {
    c->do_sample = temperature > 0;
    c->temperature = temperature;
  }
}

struct Csm::Impl {
  CsmConfig config;
  CsmGenerationConfig generation;
  LoadOptions options;
  std::shared_ptr<const TextDecoder> backbone, depth_decoder;
  torch::Tensor embed_text_tokens;   // [text_vocab_size, hidden_size]
  torch::Tensor embed_audio_tokens;  // [K * vocab_size, hidden_size]: the backbone's codebooks
  torch::Tensor depth_embed_tokens;  // the depth decoder's (the same tensor when equal)
  torch::Tensor audio_offsets;       // int64 [K]: k * vocab_size
  torch::Tensor inputs_embeds_projector;  // [depth hidden, backbone hidden]
  torch::Tensor codebooks_head;           // [K - 1, vocab_size, depth hidden], Linear layout
  std::shared_ptr<const Mimi> codec;
  std::shared_ptr<const tokenizers::TextTokenizer> tokenizer;
};

bool Csm::recognizes(const std::string& dir) {
  return detail::JsonConfig::model_type_in(dir) == "csm";
}

std::shared_ptr<const Csm> Csm::from_pretrained(const std::string& dir,
                                                const LoadOptions& options) {
  return std::make_shared<const Csm>(dir, options);
}

Csm::Csm(const std::string& dir, const LoadOptions& options) {
  require_checkpoint_folder(dir, "Csm::from_pretrained");
  options.validate();
  auto impl = std::make_shared<Impl>();
  impl->config = CsmConfig::from_json(dir);
  impl->generation = CsmGenerationConfig::from_json(dir);
  impl->options = options;
  const CsmConfig& c = impl->config;
  const fs::path processor = fs::path(dir) / "processor_config.json";
  if (fs::exists(processor)) {
    const detail::JsonConfig json = detail::JsonConfig::load(processor.string());
    int64_t rate = c.codec_config.sampling_rate;
    if (json.has("feature_extractor")) json.sub("feature_extractor").read("sampling_rate", rate);
    ALTO_CHECK(rate == c.codec_config.sampling_rate, processor.string(),
               ": the feature extractor's sampling_rate (", rate, ") differs from the codec's (",
               c.codec_config.sampling_rate, ")");
  }
  impl->tokenizer = tokenizers::TextTokenizer::from_pretrained(dir);

  const SafetensorsCheckpoint checkpoint(dir);
  CheckpointBinder binder(checkpoint, options, c.to_string());
  impl->backbone = std::make_shared<const TextDecoder>(c.backbone, binder, "backbone_model.",
                                                       "lm_head.weight", options, false);
  impl->depth_decoder = std::make_shared<const TextDecoder>(
      c.depth_decoder, binder, "depth_decoder.model.", "", options, false);
  const auto dense = torch::TensorOptions().dtype(options.dtype).device(options.device);
  const int64_t K = c.num_codebooks, V = c.vocab_size, H = c.backbone.hidden_size;
  const int64_t depth_width = c.depth_decoder.hidden_size;
  impl->embed_text_tokens = declare_weight({c.text_vocab_size, H}, dense);
  binder.bind(impl->embed_text_tokens, "embed_text_tokens.weight");
  const std::string backbone_table = "backbone_model.embed_tokens.embed_audio_tokens.weight";
  const std::string depth_table = "depth_decoder.model.embed_tokens.weight";
  impl->embed_audio_tokens = declare_weight({K * V, H}, dense);
  binder.bind(impl->embed_audio_tokens, backbone_table,
              c.tie_codebooks_embeddings ? depth_table : "");
  // Each decoder reads its own table, as transformers does when the checkpoint holds both; the
  // tie supplies a missing one. Equal tables are kept once.
  impl->depth_embed_tokens = declare_weight({K * V, H}, dense);
  binder.bind(impl->depth_embed_tokens, depth_table,
              c.tie_codebooks_embeddings ? backbone_table : "");
  impl->inputs_embeds_projector = declare_weight({depth_width, H}, dense);
  binder.bind(impl->inputs_embeds_projector, "depth_decoder.model.inputs_embeds_projector.weight");
  torch::Tensor head = declare_weight({K - 1, depth_width, V}, dense);
  binder.bind(head, "depth_decoder.codebooks_head.weight");
  LoadOptions codec_options = options;
  codec_options.dtype = torch::kFloat32;  // transformers keeps the codec in float32
  codec_options.linear_weights = LoadOptions::LinearWeights::kComputeDtype;
  binder.set_dtype(torch::kFloat32);
  impl->codec = std::make_shared<const Mimi>(c.codec_config, binder, "codec_model.",
                                             codec_options);
  binder.finish();
  if (torch::equal(impl->depth_embed_tokens, impl->embed_audio_tokens))
    impl->depth_embed_tokens = impl->embed_audio_tokens;
  // transformers multiplies by weight[k] ([hidden, vocab]); blocks::linear reads [out, in].
  impl->codebooks_head = head.transpose(1, 2).contiguous();
  impl->audio_offsets =
      torch::arange(K, torch::TensorOptions().dtype(torch::kInt64).device(options.device)) * V;
  impl_ = std::move(impl);
}

const CsmConfig& Csm::config() const { return impl_->config; }
const CsmGenerationConfig& Csm::generation_config() const { return impl_->generation; }
const LoadOptions& Csm::load_options() const { return impl_->options; }
const Mimi& Csm::codec() const { return *impl_->codec; }
const tokenizers::TextTokenizer& Csm::tokenizer() const { return *impl_->tokenizer; }
int64_t Csm::sampling_rate() const { return impl_->codec->sample_rate(); }

std::string Csm::render_chat(const std::vector<ChatMessage>& conversation) {
  std::string out;
  for (const ChatMessage& message : conversation) {
    out += "<|begin_of_text|>[" + message.role + "]";
    for (const ChatPart& part : message.content)
      if (!part.is_audio() && !part.is_codes()) out += part.text;
    out += "<|end_of_text|>";
    for (const ChatPart& part : message.content)
      if (part.is_audio() || part.is_codes()) out += "<|AUDIO|><|audio_eos|>";
  }
  return out;
}

namespace {

bool is_speaker_id(const std::string& role) {
  return !role.empty() && role.size() <= 9 &&
         std::all_of(role.begin(), role.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
}

}  // namespace

CsmInputs Csm::process(const std::vector<ChatMessage>& conversation) const {
  const CsmConfig& c = impl_->config;
  const tokenizers::TextTokenizer& tokens = *impl_->tokenizer;
  ALTO_CHECK(!conversation.empty(), "Csm::process: the conversation is empty");
  const std::vector<std::pair<std::string, int64_t>> specials = {
      {"<|begin_of_text|>", c.bos_token_id},
      {"<|end_of_text|>", -1},
      {"<|AUDIO|>", c.audio_token_id},
      {"<|audio_eos|>", c.audio_eos_token_id}};
  for (const auto& [token, id] : specials) {
    const int64_t found = tokens.token_to_id(token);
    ALTO_CHECK(found >= 0 && (id < 0 || found == id), "Csm: the tokenizer's '", token, "' is ",
               found < 0 ? std::string("missing") : "id " + std::to_string(found),
               id < 0 ? std::string() : ", the config's is " + std::to_string(id));
  }
  CsmInputs out;
  for (size_t m = 0; m < conversation.size(); ++m) {
    const ChatMessage& message = conversation[m];
    const std::string turn = "Csm::process: turn " + std::to_string(m) + " (speaker '" +
                             message.role + "')";
    ALTO_CHECK(is_speaker_id(message.role), turn,
               ": the speaker id must be a non-negative decimal integer, as CSM's prompts "
               "'[0]', '[1]' write it");
    // A speaker the tokenizer cannot spell (an unknown piece) would be read as another one.
    const std::string tag = "[" + message.role + "]";
    ALTO_CHECK(tokens.decode(tokens.encode(tag), false) == tag, turn,
               ": the tokenizer cannot encode the speaker tag '", tag, "'");
    std::string text;
    int audio_parts = 0;
    for (const ChatPart& part : message.content) {
      if (part.is_audio() || part.is_codes()) {
        ++audio_parts;
        continue;
      }
      text += part.text;
    }
    ALTO_CHECK(text.find_first_not_of(" \t\r\n") != std::string::npos, turn,
               ": the text is empty (CSM speaks a turn's text)");
    for (const auto& [token, id] : specials)
      ALTO_CHECK(text.find(token) == std::string::npos, turn, ": the text holds '", token,
                 "', a token of the prompt template");
    ALTO_CHECK(audio_parts <= 1, turn, ": ", audio_parts,
               " audio parts; a context turn carries one clip");
    for (const ChatPart& part : message.content) {
      if (part.is_audio()) {
        const torch::Tensor& a = part.audio;
        ALTO_CHECK(a.is_floating_point() && (a.dim() == 1 || (a.dim() == 2 && a.size(0) == 1)) &&
                       a.numel() > 0,
                   turn, ": audio must be mono float samples at ", sampling_rate(),
                   " Hz ([samples] or [1, samples]), got ", a.scalar_type(), " ", a.sizes());
        ALTO_CHECK(torch::isfinite(a).all().item<bool>(), turn,
                   ": the audio holds NaN or infinite samples");
        const torch::Tensor wave = a.reshape({1, 1, -1}).to(torch::kFloat32);
        tokenizers::AudioEncodeOptions encode;
        encode.num_quantizers = c.num_codebooks;
        out.context_codes.push_back(impl_->codec->encode(wave, encode).codes[0].cpu());
      } else if (part.is_codes()) {
        const torch::Tensor& codes = part.codes;
        ALTO_CHECK(!codes.is_floating_point() && codes.dim() == 2 &&
                       codes.size(0) == c.num_codebooks && codes.size(1) > 0,
                   turn, ": codes must be integers [num_codebooks = ", c.num_codebooks,
                   ", frames > 0], got ", codes.scalar_type(), " ", codes.sizes());
        const torch::Tensor ids = codes.to(torch::kCPU, torch::kInt64);
        const int64_t low = ids.min().item<int64_t>(), high = ids.max().item<int64_t>();
        const int64_t size = c.codec_config.codebook_size;
        ALTO_CHECK(low >= 0 && high < size, turn, ": code ", low < 0 ? low : high,
                   " is outside the codec's codebooks [0, ", size, ")");
        out.context_codes.push_back(ids.contiguous());
      }
    }
  }
  out.prompt = render_chat(conversation);
  const std::vector<int64_t> ids = tokens.encode(out.prompt);
  std::vector<int64_t> expanded;
  size_t clip = 0;
  for (int64_t id : ids) {
    if (id != c.audio_token_id) {
      expanded.push_back(id);
      continue;
    }
    ALTO_CHECK(clip < out.context_codes.size(), "Csm::process: more <|AUDIO|> tokens than clips");
    expanded.insert(expanded.end(), out.context_codes[clip++].size(1), id);
  }
  ALTO_CHECK(clip == out.context_codes.size(), "Csm::process: ", out.context_codes.size(),
             " clips for ", clip, " <|AUDIO|> tokens in the prompt");
  out.input_ids = torch::tensor(expanded, torch::kInt64).unsqueeze(0);
  return out;
}

torch::Tensor Csm::embed_frames(const torch::Tensor& codes) const {
  const CsmConfig& c = impl_->config;
  ALTO_CHECK(codes.scalar_type() == torch::kInt64 && codes.dim() >= 1 &&
                 codes.size(-1) == c.num_codebooks,
             "Csm::embed_frames: codes must be int64 [..., num_codebooks = ", c.num_codebooks,
             "], got ", codes.scalar_type(), " ", codes.sizes());
  if (codes.numel() > 0) {
    const int64_t low = codes.min().item<int64_t>(), high = codes.max().item<int64_t>();
    ALTO_CHECK(low >= 0 && high < c.vocab_size, "Csm::embed_frames: code ",
               low < 0 ? low : high, " is outside [0, vocab_size = ", c.vocab_size, ")");
  }
  torch::NoGradGuard no_grad;
  const torch::Tensor rows = codes.to(impl_->options.device) + impl_->audio_offsets;
  return torch::embedding(impl_->embed_audio_tokens, rows).sum(-2);
}

torch::Tensor Csm::embed(const CsmInputs& inputs) const {
  const CsmConfig& c = impl_->config;
  const torch::Tensor& ids = inputs.input_ids;
  ALTO_CHECK(ids.defined() && ids.scalar_type() == torch::kInt64 && ids.dim() == 2 &&
                 ids.size(0) == 1 && ids.size(1) > 0,
             "Csm::embed: input_ids must be int64 [1, T > 0]");
  const int64_t low = ids.min().item<int64_t>(), high = ids.max().item<int64_t>();
  ALTO_CHECK(low >= 0 && high < c.text_vocab_size, "Csm::embed: token id ", low < 0 ? low : high,
             " is outside the text vocabulary [0, ", c.text_vocab_size, ")");
  torch::NoGradGuard no_grad;
  const torch::Device device = impl_->options.device;
  const torch::Tensor row = ids[0].to(device);
  torch::Tensor embeds = torch::embedding(impl_->embed_text_tokens, row);
  const torch::Tensor audio_positions = (row == c.audio_token_id).nonzero().squeeze(1);
  int64_t frames = 0;
  for (const torch::Tensor& codes : inputs.context_codes) frames += codes.size(1);
  ALTO_CHECK(audio_positions.size(0) == frames, "Csm::embed: the prompt has ",
             audio_positions.size(0), " <|AUDIO|> tokens for ", frames, " context frames");
  if (frames > 0) {
    std::vector<torch::Tensor> parts;
    for (const torch::Tensor& codes : inputs.context_codes) parts.push_back(codes.t());
    embeds.index_copy_(0, audio_positions, embed_frames(torch::cat(parts).contiguous()));
  }
  const torch::Tensor eos_positions = (row == c.audio_eos_token_id).nonzero().squeeze(1);
  if (eos_positions.size(0) > 0) {
    const torch::Tensor eos_frame = embed_frames(
        torch::full({1, c.num_codebooks}, c.codebook_eos_token_id, torch::kInt64));
    embeds.index_copy_(0, eos_positions, eos_frame.expand({eos_positions.size(0), -1}));
  }
  return embeds.unsqueeze(0);
}

TextDecoderState Csm::start(int64_t capacity) const { return impl_->backbone->start(1, capacity); }

torch::Tensor Csm::forward(const torch::Tensor& inputs_embeds, TextDecoderState& state,
                           Intermediates* intermediates) const {
  return impl_->backbone->forward(inputs_embeds, torch::Tensor(), state, intermediates);
}

torch::Tensor Csm::logits(const torch::Tensor& hidden) const {
  return impl_->backbone->logits(hidden);
}

torch::Tensor Csm::decode_depth(const torch::Tensor& backbone_last_hidden_state,
                                const torch::Tensor& first_codes, const GenerationConfig& config,
                                at::Generator& generator, torch::Tensor* logits) const {
  const CsmConfig& c = impl_->config;
  const torch::Tensor& last = backbone_last_hidden_state;
  ALTO_CHECK(last.dim() == 2 && last.size(1) == c.backbone.hidden_size,
             "Csm::decode_depth: backbone_last_hidden_state must be [B, ", c.backbone.hidden_size,
             "], got ", last.sizes());
  ALTO_CHECK(first_codes.scalar_type() == torch::kInt64 && first_codes.dim() == 1 &&
                 first_codes.size(0) == last.size(0),
             "Csm::decode_depth: first_codes must be int64 [", last.size(0), "], got ",
             first_codes.scalar_type(), " ", first_codes.sizes());
  const int64_t rows = last.size(0), K = c.num_codebooks;
  torch::NoGradGuard no_grad;
  const torch::Device device = impl_->options.device;
  const torch::ScalarType dtype = impl_->options.dtype;
  TextDecoderState state = impl_->depth_decoder->start(rows, K);
  auto project = [&](const torch::Tensor& x) {
    return blocks::linear(x, impl_->inputs_embeds_projector);
  };
  // Position 0 holds the backbone's hidden state, position k >= 1 codebook k - 1.
  torch::Tensor code = first_codes.to(device);
  torch::Tensor inputs = torch::stack(
      {last.to(device, dtype), torch::embedding(impl_->depth_embed_tokens, code)}, 1);
  std::vector<torch::Tensor> codes = {code}, step_logits;
  for (int64_t k = 1; k < K; ++k) {
    const torch::Tensor hidden =
        impl_->depth_decoder->forward(project(inputs), torch::Tensor(), state).select(1, -1);
    const torch::Tensor scores =
        blocks::linear(hidden, impl_->codebooks_head[k - 1]).to(torch::kFloat32);
    code = next_tokens(scores, torch::Tensor(), config, generator).to(device);
    codes.push_back(code);
    if (logits) step_logits.push_back(scores);
    if (k + 1 < K)
      inputs = torch::embedding(impl_->depth_embed_tokens, code + k * c.vocab_size).unsqueeze(1);
  }
  if (logits) *logits = torch::stack(step_logits, 1);
  return torch::stack(codes, 1);
}

namespace {

/// Whether each row of frames [..., K] is transformers' end frame: codebooks 0 .. K-2 all eos.
bool ends_generation(const torch::Tensor& frame, int64_t eos) {
  return (frame.narrow(-1, 0, frame.size(-1) - 1) == eos).all().item<bool>();
}

/// frames [n, K]: alto::InvalidArgument naming the first frame (counted from `first_index`) that
/// holds an id the codec has no code for.
void check_codec_codes(const torch::Tensor& frames, int64_t first_index, int64_t codebook_size) {
  const torch::Tensor bad = (frames >= codebook_size).any(1).nonzero();
  if (bad.size(0) == 0) return;
  const int64_t row = bad[0][0].item<int64_t>();
  throw InvalidArgument("Csm: generated frame " + std::to_string(first_index + row) +
                        " holds code " + std::to_string(frames[row].max().item<int64_t>()) +
                        ", not a codec code (codebook_size " + std::to_string(codebook_size) +
                        "): the codec cannot decode it (transformers raises IndexError here)");
}

}  // namespace

CsmGeneration Csm::generate(const CsmInputs& inputs, const CsmGenerationConfig& config,
                            const CsmGenerateOptions& options) const {
  using clock = std::chrono::steady_clock;
  const auto started = clock::now();
  auto seconds_since = [](clock::time_point t) {
    return std::chrono::duration<double>(clock::now() - t).count();
  };
  config.validate();
  const CsmConfig& c = impl_->config;
  const int64_t K = c.num_codebooks, eos = c.codebook_eos_token_id;
  torch::NoGradGuard no_grad;
  const torch::Tensor prompt = embed(inputs);
  const int64_t length = prompt.size(1);
  const int64_t context = c.backbone.max_position_embeddings;
  ALTO_CHECK(length < context, "Csm::generate: the prompt of ", length,
             " positions leaves no room in the backbone's max_position_embeddings = ", context);
  const int64_t max_frames = std::min(config.backbone.max_new_tokens, context - length);
  TextDecoderState state = start(length + max_frames);
  torch::Tensor hidden = forward(prompt, state).select(1, -1);  // [1, hidden]
  CsmGeneration out;
  out.prefill_seconds = seconds_since(started);

  at::Generator generator = at::detail::createCPUGenerator(config.backbone.seed);
  std::unique_ptr<tokenizers::AudioTokenizerStream> decoder;
  tokenizers::AudioEncodeOptions codec_options;
  codec_options.num_quantizers = K;
  if (options.decode_audio) decoder = impl_->codec->stream(codec_options, 1);
  std::vector<torch::Tensor> frames, audio, backbone_logits, hiddens, depth_logits;
  for (int64_t f = 0; f < max_frames; ++f) {
    // A frame's time: the backbone step on the previous frame (the prefill for frame 0 is
    // prefill_seconds), the depth decoder, the codec and the callback.
    const auto frame_started = clock::now();
    if (f > 0) hidden = forward(embed_frames(frames.back().view({1, 1, K})), state).select(1, -1);
    const torch::Tensor scores = logits(hidden);  // [1, vocab]
    const torch::Tensor first = next_tokens(scores, torch::Tensor(), config.backbone, generator);
    torch::Tensor step_depth_logits;
    const torch::Tensor frame =
        decode_depth(hidden, first, config.depth_decoder, generator,
                     options.return_logits ? &step_depth_logits : nullptr)
            .cpu();  // [1, K]
    frames.push_back(frame[0]);
    if (options.return_logits) {
      backbone_logits.push_back(scores[0].cpu());
      hiddens.push_back(hidden[0].to(torch::kCPU, torch::kFloat32));
      depth_logits.push_back(step_depth_logits[0].cpu());
    }
    out.ended = ends_generation(frame, eos);
    CsmFrame event{f, frame[0], {}};
    if (decoder && !(frame == eos).all().item<bool>()) {
      check_codec_codes(frame, f, c.codec_config.codebook_size);
      event.audio = decoder->decode_step(frame.t().unsqueeze(0)).reshape({-1}).cpu();
      audio.push_back(event.audio);
      if (audio.size() == 1) out.first_audio_seconds = seconds_since(started);
    }
    const bool go_on = options.on_frame ? options.on_frame(event) : true;
    out.frame_seconds.push_back(seconds_since(frame_started));
    if (out.ended || !go_on) break;
  }
  out.audio_codes = torch::stack(frames);
  out.audio = audio.empty() ? torch::zeros({0}) : torch::cat(audio);
  if (options.return_logits) {
    out.backbone_logits = torch::stack(backbone_logits);
    out.backbone_last_hidden_state = torch::stack(hiddens);
    out.depth_decoder_logits = torch::stack(depth_logits);
  }
  return out;
}

torch::Tensor Csm::decode(const torch::Tensor& audio_codes) const {
  const CsmConfig& c = impl_->config;
  ALTO_CHECK(audio_codes.scalar_type() == torch::kInt64 && audio_codes.dim() == 2 &&
                 audio_codes.size(1) == c.num_codebooks,
             "Csm::decode: audio_codes must be int64 [frames, ", c.num_codebooks, "], got ",
             audio_codes.scalar_type(), " ", audio_codes.sizes());
  const torch::Tensor all_eos = (audio_codes == c.codebook_eos_token_id).all(1).nonzero();
  const int64_t frames = all_eos.size(0) > 0 ? all_eos[0][0].item<int64_t>() : audio_codes.size(0);
  if (frames == 0) return torch::zeros({0});
  const torch::Tensor kept = audio_codes.narrow(0, 0, frames);
  check_codec_codes(kept, 0, c.codec_config.codebook_size);
  tokenizers::AudioCodes codes;
  codes.codes = kept.t().unsqueeze(0).to(impl_->options.device);
  return impl_->codec->decode(codes).reshape({-1}).cpu();
}

}  // namespace alto::models
