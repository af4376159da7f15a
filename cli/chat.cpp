// alto chat --model DIR [--audio FILE]... [--system TEXT] [--max-new-tokens N] [--temperature T]
//           [--top-p P] [--seed S] [--json] PROMPT
// and the audio-LM side of alto transcribe (Qwen2-Audio, Voxtral).

#include <torch/torch.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "alto/audio/audio_tensor.h"
#include "alto/audio/load.h"
#include "alto/core/error.h"
#include "alto/models/audio_language_model.h"
#include "commands.h"

namespace alto::cli {

namespace {

using models::AudioLanguageModel;

struct ChatArgs {
  std::string model, device = "cpu", dtype = "float32";
  std::vector<std::string> audio;
  std::string system, prompt, language;
  std::optional<int64_t> max_new_tokens, top_k;
  std::optional<double> temperature, top_p, min_p, repetition_penalty;
  uint64_t seed = 0;
  bool json = false;
};

torch::Tensor load_clip(const std::string& path, int rate) {
  audio::DecodeOptions load;
  load.mono = true;
  load.sample_rate = rate;
  return audio::to_tensor(audio::load_audio(path, load))[0];
}

// Prints a reply as its tokens arrive: the decoded text grows, and what is new is printed once
// it ends in whole characters.
class ReplyPrinter {
 public:
  explicit ReplyPrinter(const tokenizers::TextTokenizer& tokenizer) : tokenizer_(tokenizer) {}
  void add(int64_t token) {
    ids_.push_back(token);
    const std::string text = tokenizer_.decode(ids_, /*skip_special_tokens=*/true);
    if (text.size() >= 3 && text.compare(text.size() - 3, 3, "\xEF\xBF\xBD") == 0) return;
    if (text.size() > printed_) std::cout << text.substr(printed_) << std::flush;
    printed_ = text.size();
  }

 private:
  const tokenizers::TextTokenizer& tokenizer_;
  std::vector<int64_t> ids_;
  size_t printed_ = 0;
};

models::GenerationConfig generation_config(const AudioLanguageModel& model, const ChatArgs& a) {
  models::GenerationConfig c = model.generation_config();
  if (a.max_new_tokens) c.max_new_tokens = *a.max_new_tokens;
  if (a.temperature) {
    c.temperature = *a.temperature;
    c.do_sample = *a.temperature > 0;  // --temperature 0 is greedy
  }
  if (a.top_p) c.top_p = *a.top_p;
  if (a.top_k) c.top_k = *a.top_k;
  if (a.min_p) c.min_p = *a.min_p;
  if (a.repetition_penalty) c.repetition_penalty = *a.repetition_penalty;
  c.seed = a.seed;
  c.validate();
  return c;
}

std::vector<int64_t> to_vector(const torch::Tensor& ids) {
  const torch::Tensor flat = ids.to(torch::kCPU, torch::kInt64).contiguous().flatten();
  return std::vector<int64_t>(flat.data_ptr<int64_t>(), flat.data_ptr<int64_t>() + flat.numel());
}

// Encodes the audio, prefills and generates; streams text unless --json, then prints the JSON.
void reply(const AudioLanguageModel& model, const models::AudioLmInputs& inputs,
           const ChatArgs& a) {
  using clock = std::chrono::steady_clock;
  const models::GenerationConfig config = generation_config(model, a);
  const auto start = clock::now();
  const models::AudioLmEmbeddings e = model.embed(inputs);
  const double encode_seconds = std::chrono::duration<double>(clock::now() - start).count();
  ReplyPrinter printer(model.tokenizer());
  models::GenerateOptions options;
  if (!a.json)
    options.on_token = [&](int64_t, int64_t token) {
      printer.add(token);
      return true;
    };
  const models::GenerationResult result = models::generate(
      model.text_decoder(), e.inputs_embeds, inputs.attention_mask, e.input_ids, config, options);
  std::vector<int64_t> generated = to_vector(result.generated_ids);
  // A row that ended is padded: the reply stops at its first eos.
  for (size_t i = 0; i < generated.size(); ++i)
    if (std::count(config.eos_token_id.begin(), config.eos_token_id.end(), generated[i])) {
      generated.resize(i + 1);
      break;
    }
  const std::string text = model.tokenizer().decode(generated, true);
  if (!a.json) {
    std::cout << "\n" << std::flush;
    return;
  }
  double decode_total = 0;
  for (double s : result.token_seconds) decode_total += s;
  std::cout
      << nlohmann::json{{"model_type", model.model_type()},
                        {"precision", model.load_options().precision()},
                        {"prompt", inputs.prompt},
                        {"input_ids", to_vector(e.input_ids)},
                        {"audio_tokens", inputs.audio_tokens},
                        {"generated_ids", generated},
                        {"text", text},
                        {"timings",
                         {{"audio_encode_s", encode_seconds},
                          {"prefill_s", result.prefill_seconds},
                          {"prefill_tokens_per_s", e.input_ids.size(1) / result.prefill_seconds},
                          {"per_token_s", result.token_seconds},
                          {"decode_tokens_per_s",
                           decode_total > 0 ? result.token_seconds.size() / decode_total : 0.0}}}}
             .dump()
      << "\n";
}

void run_chat(const ChatArgs& a) {
  const auto model =
      AudioLanguageModel::from_pretrained(a.model, LoadOptions::parse(a.device, a.dtype));
  std::vector<models::ChatMessage> conversation;
  if (!a.system.empty())
    conversation.push_back({"system", {models::ChatPart::text_part(a.system)}});
  models::ChatMessage user{"user", {}};
  for (const std::string& path : a.audio)
    user.content.push_back(models::ChatPart::audio_part(load_clip(path, model->sampling_rate())));
  user.content.push_back(models::ChatPart::text_part(a.prompt));
  conversation.push_back(user);
  reply(*model, model->process(conversation), a);
}

}  // namespace

bool is_audio_lm(const std::string& dir) { return AudioLanguageModel::recognizes(dir); }

void transcribe_with_audio_lm(const std::string& dir, const std::string& device,
                              const std::string& dtype, const std::vector<std::string>& inputs,
                              const std::string& language, bool json,
                              std::optional<int64_t> max_new_tokens) {
  const auto model = AudioLanguageModel::from_pretrained(dir, LoadOptions::parse(device, dtype));
  ChatArgs a;
  a.json = json;
  a.max_new_tokens = max_new_tokens;
  a.temperature = 0.0;
  for_each_input(inputs, [&](const std::string& input) {
    reply(*model,
          model->transcription_inputs(load_clip(input, model->sampling_rate()),
                                      language == "auto" ? "" : language),
          a);
  }).throw_if_failed();
}

void add_chat_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "chat", "Ask an audio LM (Qwen2-Audio, Voxtral) about audio; the reply streams to stdout");
  auto a = std::make_shared<ChatArgs>();
  cmd->add_option("--model", a->model, "Audio LM folder as the Hub ships it")->required();
  cmd->add_option("--device", a->device, "cpu, cuda or cuda:N (default cpu)");
  cmd->add_option("--dtype", a->dtype,
                  "float32, bfloat16, or int8: int8 linear weights in the text decoder with "
                  "float32 activations (default float32)");
  cmd->add_option("--audio", a->audio,
                  "Audio file for the user turn, before the prompt (any format; resampled to the "
                  "model's rate); repeatable");
  cmd->add_option("--system", a->system, "System turn");
  cmd->add_option("--max-new-tokens", a->max_new_tokens, "Tokens to generate at most")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--temperature", a->temperature, "Sampling temperature; 0 is greedy")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--top-p", a->top_p, "Nucleus sampling mass");
  cmd->add_option("--top-k", a->top_k, "Sample among the k most likely tokens (0: all)");
  cmd->add_option("--min-p", a->min_p, "Drop tokens below min-p times the top probability");
  cmd->add_option("--repetition-penalty", a->repetition_penalty, "Penalty of seen tokens");
  cmd->add_option("--seed", a->seed, "Seed of sampling (default 0)");
  cmd->add_flag("--json", a->json,
                "Print one JSON object: input_ids, generated_ids, text, timings");
  cmd->add_option("prompt", a->prompt, "The user's text")->required();
  cmd->callback([a] { run_chat(*a); });
}

}  // namespace alto::cli
