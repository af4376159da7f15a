#include "alto/models/generation.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <chrono>
#include <filesystem>
#include <limits>
#include <sstream>

#include "alto/core/error.h"
#include "alto/core/internal/json_config.h"
#include "alto/core/threading.h"

namespace alto::models {

const OptionSchema<GenerationConfig>& GenerationConfig::schema() {
  using C = GenerationConfig;
  static const auto schema =
      OptionSchema<C>("GenerationConfig")
          .field("do_sample", &C::do_sample, "Sample instead of greedy")
          .field("temperature", &C::temperature, "Softmax temperature (0: greedy)")
          .field("top_k", &C::top_k, "Keep the k most likely tokens (0: off)")
          .field("top_p", &C::top_p, "Keep the most likely tokens up to this mass")
          .field("min_p", &C::min_p, "Drop tokens below min_p times the top probability")
          .positive("repetition_penalty", &C::repetition_penalty, "Penalty of seen tokens")
          .positive("max_new_tokens", &C::max_new_tokens, "Tokens to generate at most")
          .field("pad_token_id", &C::pad_token_id, "Token after a row has ended")
          .field("seed", &C::seed, "Seed of the sampling generator");
  return schema;
}

GenerationConfig GenerationConfig::from_json(const std::string& path,
                                             const std::string& key_prefix) {
  namespace fs = std::filesystem;
  const fs::path file =
      fs::is_directory(path) ? fs::path(path) / "generation_config.json" : fs::path(path);
  GenerationConfig c;
  if (fs::is_directory(path) && !fs::exists(file)) return c;
  const detail::JsonConfig file_json = detail::JsonConfig::load(file.string());
  const detail::JsonConfig json =
      key_prefix.empty() ? file_json : file_json.with_key_prefix(key_prefix);
  // transformers bounds the whole sequence by max_length when max_new_tokens is absent; alto
  // keeps its own default then, since a chat prompt alone outgrows the usual max_length of 20.
  c = json.read(schema(), c);
  if (const nlohmann::json* eos = json.find("eos_token_id")) {
    if (eos->is_number_integer())
      c.eos_token_id = {eos->get<int64_t>()};
    else
      json.read("eos_token_id", c.eos_token_id);
  }
  return json.validated(c);
}

void GenerationConfig::validate() const {
  schema().check(*this);
  ALTO_CHECK(temperature >= 0, "GenerationConfig.temperature must be >= 0, got ", temperature);
  ALTO_CHECK(top_k >= 0, "GenerationConfig.top_k must be >= 0, got ", top_k);
  ALTO_CHECK(top_p > 0 && top_p <= 1, "GenerationConfig.top_p must be in (0, 1], got ", top_p);
  ALTO_CHECK(!min_p || (*min_p >= 0 && *min_p <= 1),
             "GenerationConfig.min_p must be in [0, 1], got ", *min_p);
}

std::string GenerationConfig::to_string() const {
  std::string eos;
  for (int64_t id : eos_token_id) eos += (eos.empty() ? "" : ", ") + std::to_string(id);
  std::string text = schema().to_string(*this);
  return text.substr(0, text.size() - 1) + ", eos_token_id=[" + eos + "])";
}

torch::Tensor next_tokens(const torch::Tensor& logits, const torch::Tensor& history,
                          const GenerationConfig& config, at::Generator& generator) {
  ALTO_CHECK(logits.dim() == 2, "next_tokens: logits must be [batch, vocab], got ", logits.sizes());
  // Between two steps: libtorch's OpenMP team would spin on the cores of the next step's
  // products for milliseconds after each of these operators (see TextDecoder::logits).
  const TorchThreads operators_inline(1);
  torch::Tensor scores = logits.to(torch::kFloat32);
  if (config.repetition_penalty != 1.0 && history.defined() && history.numel() > 0) {
    const torch::Tensor ids = history.to(scores.device(), torch::kInt64);
    torch::Tensor seen = scores.gather(1, ids);
    seen = torch::where(seen < 0, seen * config.repetition_penalty,
                        seen / config.repetition_penalty);
    scores = scores.scatter(1, ids, seen);
  }
  if (config.greedy()) return scores.argmax(-1);
  const double lowest = -std::numeric_limits<double>::infinity();
  if (config.temperature != 1.0) scores = scores / config.temperature;
  if (config.top_k > 0) {
    const int64_t k = std::min(config.top_k, scores.size(-1));
    const torch::Tensor kth = std::get<0>(scores.topk(k, -1)).narrow(-1, k - 1, 1);
    scores = scores.masked_fill(scores < kth, lowest);
  }
  if (config.top_p < 1.0) {
    auto [sorted, order] = scores.sort(-1, /*descending=*/false);
    torch::Tensor remove = sorted.softmax(-1).cumsum(-1) <= (1 - config.top_p);
    remove.narrow(-1, remove.size(-1) - 1, 1).fill_(false);  // keep at least one
    scores = scores.masked_fill(remove.scatter(1, order, remove), lowest);
  }
  if (config.min_p) {
    const torch::Tensor probs = scores.softmax(-1);
    torch::Tensor remove = probs < (*config.min_p * probs.amax(-1, /*keepdim=*/true));
    remove.scatter_(1, scores.argmax(-1, /*keepdim=*/true), false);  // keep at least one
    scores = scores.masked_fill(remove, lowest);
  }
  return torch::multinomial(scores.softmax(-1), 1, false, generator).squeeze(1);
}

GenerationResult generate(const TextDecoder& decoder, const torch::Tensor& inputs_embeds,
                          const torch::Tensor& attention_mask, const torch::Tensor& input_ids,
                          const GenerationConfig& config, const GenerateOptions& options) {
  using clock = std::chrono::steady_clock;
  config.validate();
  const TextDecoderConfig& c = decoder.config();
  ALTO_CHECK(inputs_embeds.dim() == 3 && inputs_embeds.size(1) > 0,
             "generate: inputs_embeds must be [batch, T > 0, hidden], got ", inputs_embeds.sizes());
  const int64_t batch = inputs_embeds.size(0), prompt = inputs_embeds.size(1);
  ALTO_CHECK(prompt < c.max_position_embeddings, "generate: the prompt of ", prompt,
             " tokens does not fit the model's context of max_position_embeddings = ",
             c.max_position_embeddings, " (with room for one new token)");
  // Generation stops at the context's end.
  const int64_t max_new = std::min(config.max_new_tokens, c.max_position_embeddings - prompt);
  torch::NoGradGuard no_grad;
  const torch::Device device = decoder.load_options().device;
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(device);
  at::Generator generator = at::detail::createCPUGenerator(config.seed);
  torch::Tensor history =
      input_ids.defined() ? input_ids.to(device, torch::kInt64) : torch::empty({batch, 0}, i64);
  const torch::Tensor eos = torch::tensor(config.eos_token_id, i64.device(torch::kCPU)).to(device);
  const int64_t pad =
      config.pad_token_id.value_or(config.eos_token_id.empty() ? 0 : config.eos_token_id.front());

  GenerationResult result;
  const auto prefill_start = clock::now();
  TextDecoderState state = decoder.start(batch, prompt + max_new - 1);
  torch::Tensor hidden = decoder.forward(inputs_embeds, attention_mask, state);
  torch::Tensor logits = decoder.logits(hidden.select(1, prompt - 1));
  torch::Tensor finished = torch::zeros({batch}, i64.dtype(torch::kBool));
  std::vector<torch::Tensor> tokens, step_logits;
  auto mark = clock::now();
  result.prefill_seconds = std::chrono::duration<double>(mark - prefill_start).count();
  for (int64_t step = 0; step < max_new; ++step) {
    if (options.return_logits) step_logits.push_back(logits.cpu());
    torch::Tensor next = next_tokens(logits.cpu(), history.cpu(), config, generator).to(device);
    next = torch::where(finished, torch::full_like(next, pad), next);
    tokens.push_back(next);
    if (step > 0) {  // a decoding step: the forward pass of the previous token and this choice
      const auto now = clock::now();
      result.token_seconds.push_back(std::chrono::duration<double>(now - mark).count());
      mark = now;
    }
    bool keep_going = true;
    const torch::Tensor next_cpu = next.cpu(), finished_cpu = finished.cpu();
    if (options.on_token)
      for (int64_t row = 0; row < batch; ++row)
        if (!finished_cpu[row].item<bool>())
          keep_going = options.on_token(row, next_cpu[row].item<int64_t>()) && keep_going;
    if (eos.numel() > 0) finished = finished.logical_or(torch::isin(next, eos));
    history = torch::cat({history, next.unsqueeze(1)}, 1);
    mark = clock::now();  // the callback's time is the caller's
    if (!keep_going || finished.all().item<bool>() || step + 1 == max_new) break;
    hidden = decoder.forward(decoder.embed(next.unsqueeze(1)), torch::Tensor(), state);
    logits = decoder.logits(hidden.select(1, 0));
  }
  result.generated_ids = torch::stack(tokens, 1).cpu();
  if (options.return_logits) result.logits = torch::stack(step_logits);
  return result;
}

}  // namespace alto::models
