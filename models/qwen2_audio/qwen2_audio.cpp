#include "alto/models/qwen2_audio/qwen2_audio.h"

#include <torch/torch.h>

#include <filesystem>

#include "alto/core/error.h"
#include "alto/core/internal/json_config.h"
#include "alto/models/blocks/basic.h"

namespace alto::models {

namespace {
constexpr const char* kAudioToken = "<|AUDIO|>";
constexpr int64_t kPool = 2;  // Qwen2AudioEncoder.avg_pooler
}  // namespace

struct Qwen2Audio::Projector {
  blocks::Linear linear{nullptr};  // multi_modal_projector.linear
};

std::shared_ptr<const Qwen2Audio> Qwen2Audio::from_pretrained(const std::string& dir,
                                                              const LoadOptions& options) {
  return std::make_shared<const Qwen2Audio>(dir, options);
}

Qwen2Audio::Qwen2Audio(const std::string& dir, const LoadOptions& options) {
  require_checkpoint_folder(dir, "Qwen2Audio::from_pretrained");
  const auto json = detail::JsonConfig::load_model_config(dir, "qwen2_audio", "a Qwen2-Audio");
  json.require("audio_token_index");
  json.read("audio_token_index", audio_token_id_);
  const WhisperConfig audio = WhisperConfig::from_json(json.path(), "audio_config");
  const TextDecoderConfig text = TextDecoderConfig::from_json(json.path(), "text_config");
  ALTO_CHECK(audio_token_id_ >= 0 && audio_token_id_ < text.vocab_size, json.path(),
             ": audio_token_index ", audio_token_id_, " is outside the text vocabulary [0, ",
             text.vocab_size, ")");
  namespace fs = std::filesystem;
  load_common(dir, fs::exists(fs::path(dir) / "tokenizer.json")
                       ? tokenizers::TextTokenizer::from_pretrained(dir)
                       : nullptr);
  if (tokenizer_)
    ALTO_CHECK(tokenizer_->token_to_id(kAudioToken) == audio_token_id_, dir,
               ": the tokenizer's ", kAudioToken, " is id ", tokenizer_->token_to_id(kAudioToken),
               " but config.json's audio_token_index is ", audio_token_id_);

  const SafetensorsCheckpoint checkpoint(dir);
  CheckpointBinder binder(checkpoint, options, "Qwen2Audio (" + audio.to_string() + ", " +
                                                   text.to_string() + ")");
  encoder_ = std::make_shared<const WhisperEncoder>(audio, binder, "audio_tower.", options);
  auto projector = std::make_shared<Projector>();
  projector->linear = blocks::Linear(
      audio.d_model, text.hidden_size, true,
      torch::TensorOptions().dtype(options.dtype).device(options.device));
  binder.bind(*projector->linear, "multi_modal_projector.linear.");
  projector_ = projector;
  const std::string text_prefix = audio_lm_text_prefix(checkpoint);
  decoder_ = std::make_shared<const TextDecoder>(text, binder, text_prefix,
                                                 "language_model.lm_head.weight", options);
  binder.finish();
}

int64_t Qwen2Audio::audio_token_count(int64_t mel_frames) {
  return (WhisperEncoder::valid_frames(mel_frames) - kPool) / kPool + 1;
}

std::string Qwen2Audio::render_chat(const std::vector<ChatMessage>& conversation,
                                    bool add_generation_prompt) {
  std::string out;
  int audio_count = 0;
  for (size_t i = 0; i < conversation.size(); ++i) {
    const ChatMessage& message = conversation[i];
    if (i == 0 && message.role != "system")
      out += "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n";
    out += "<|im_start|>" + message.role + "\n";
    for (const ChatPart& part : message.content) {
      ALTO_CHECK(!part.is_codes(), "Qwen2Audio: a chat part holds codec codes; the model takes "
                 "audio clips");
      if (part.is_audio())
        out += "Audio " + std::to_string(++audio_count) +
               ": <|audio_bos|><|AUDIO|><|audio_eos|>\n";
      else
        out += part.text;
    }
    out += "<|im_end|>\n";
  }
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

AudioLmInputs Qwen2Audio::process(const std::vector<ChatMessage>& conversation,
                                  bool add_generation_prompt) const {
  const tokenizers::TextTokenizer& tokens = tokenizer();
  std::vector<torch::Tensor> clips;
  for (const ChatMessage& message : conversation)
    for (const ChatPart& part : message.content)
      if (part.is_audio())
        clips.push_back(checked_clip(part.audio, extractor_->options().chunk_length));
  AudioLmInputs out;
  out.prompt = render_chat(conversation, add_generation_prompt);
  const std::vector<int64_t> ids = tokens.encode(out.prompt);
  const int64_t placeholders = std::count(ids.begin(), ids.end(), audio_token_id_);
  ALTO_CHECK(placeholders == static_cast<int64_t>(clips.size()), "Qwen2Audio: the prompt has ",
             placeholders, " ", kAudioToken, " placeholders for ", clips.size(),
             " audio parts (text parts must not spell ", kAudioToken, ")");
  if (!clips.empty()) {
    features::PaddingOptions padding;
    padding.return_attention_mask = true;
    const features::BatchFeature batch = extractor_->compute_batch(clips, padding);
    out.input_features = batch.input_features;
    out.feature_attention_mask = batch.attention_mask.to(torch::kInt64);
    const torch::Tensor frames = out.feature_attention_mask.sum(-1);
    for (int64_t k = 0; k < frames.size(0); ++k)
      out.audio_tokens.push_back(audio_token_count(frames[k].item<int64_t>()));
  }
  // Expanding ids equals expanding the text: <|AUDIO|> is an added token, so it splits the text
  // the same either way.
  std::vector<int64_t> expanded;
  size_t audio = 0;
  for (int64_t id : ids) {
    const int64_t copies = id == audio_token_id_ ? out.audio_tokens[audio++] : 1;
    expanded.insert(expanded.end(), copies, id);
  }
  out.input_ids = torch::tensor(expanded, torch::kInt64).unsqueeze(0);
  out.attention_mask = torch::ones_like(out.input_ids);
  return out;
}

AudioLmInputs Qwen2Audio::transcription_inputs(const torch::Tensor& wave,
                                               const std::string& language) const {
  std::string instruction = "Detect the language and recognize the speech:";
  if (!language.empty()) instruction += " <|" + language + "|>";
  return process({{"user", {ChatPart::audio_part(wave), ChatPart::text_part(instruction)}}});
}

torch::Tensor Qwen2Audio::audio_embeds(const AudioLmInputs& inputs,
                                       Intermediates* intermediates) const {
  const torch::Tensor& features = inputs.input_features;
  ALTO_CHECK(features.defined() && features.dim() == 3, "Qwen2Audio: input_features must be "
             "[clips, num_mel_bins, frames]");
  torch::NoGradGuard no_grad;
  WhisperEncodeOptions encode;
  encode.feature_attention_mask = inputs.feature_attention_mask;
  encode.pool = kPool;
  const torch::Tensor hidden = encoder_->encode(features, encode, intermediates);
  const torch::Tensor projected = projector_->linear->forward(hidden);
  if (intermediates) intermediates->add("multi_modal_projector", projected);
  // The first N frames of each clip, N its placeholder count (transformers'
  // audio_features_mask); without a mask every frame counts.
  std::vector<torch::Tensor> rows;
  for (int64_t k = 0; k < projected.size(0); ++k) {
    const int64_t n =
        inputs.feature_attention_mask.defined()
            ? audio_token_count(inputs.feature_attention_mask[k].sum().item<int64_t>())
            : projected.size(1);
    rows.push_back(projected[k].narrow(0, 0, n));
  }
  return torch::cat(rows);
}

namespace {
const Registration<AudioLanguageModelEntry> kRegistration(
    "qwen2_audio",
    {"Qwen2-Audio (transformers' Qwen2AudioForConditionalGeneration)",
     [](const std::string& dir, const LoadOptions& options) {
       return std::static_pointer_cast<const AudioLanguageModel>(
           Qwen2Audio::from_pretrained(dir, options));
     }});
}  // namespace

}  // namespace alto::models
