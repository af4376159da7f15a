#include "alto/models/voxtral/voxtral.h"

#include <torch/torch.h>

#include <filesystem>

#include "alto/core/error.h"
#include "alto/core/internal/json_config.h"
#include "alto/models/blocks/basic.h"

namespace alto::models {

struct Voxtral::Projector {
  blocks::Linear linear_1{nullptr}, linear_2{nullptr};  // multi_modal_projector.*
  blocks::Activation activation = blocks::Activation::kGelu;
};

std::shared_ptr<const Voxtral> Voxtral::from_pretrained(const std::string& dir,
                                                        const LoadOptions& options) {
  return std::make_shared<const Voxtral>(dir, options);
}

Voxtral::Voxtral(const std::string& dir, const LoadOptions& options) {
  require_checkpoint_folder(dir, "Voxtral::from_pretrained");
  const auto json = detail::JsonConfig::load_model_config(dir, "voxtral", "a Voxtral");
  json.require("audio_token_id");
  json.read("audio_token_id", audio_token_id_);
  std::string projector_act = "gelu";
  json.read("projector_hidden_act", projector_act);
  const WhisperConfig audio = WhisperConfig::from_json(json.path(), "audio_config");
  const TextDecoderConfig text = TextDecoderConfig::from_json(json.path(), "text_config");
  ALTO_CHECK(audio_token_id_ >= 0 && audio_token_id_ < text.vocab_size, json.path(),
             ": audio_token_id ", audio_token_id_, " is outside the text vocabulary [0, ",
             text.vocab_size, ")");
  // The projector reshapes the encoder output to rows of audio_config.intermediate_size.
  ALTO_CHECK(audio.encoder_ffn_dim % audio.d_model == 0, json.path(),
             ": audio_config.intermediate_size (", audio.encoder_ffn_dim,
             ") must be a multiple of audio_config.hidden_size (", audio.d_model, ")");
  frames_per_token_ = audio.encoder_ffn_dim / audio.d_model;
  ALTO_CHECK(audio.max_source_positions % frames_per_token_ == 0, json.path(),
             ": audio_config.max_source_positions (", audio.max_source_positions,
             ") must be a multiple of the ", frames_per_token_, " frames of one audio token");
  namespace fs = std::filesystem;
  load_common(dir, fs::exists(fs::path(dir) / "tekken.json")
                       ? tokenizers::TextTokenizer::from_pretrained(
                             (fs::path(dir) / "tekken.json").string())
                       : nullptr);
  if (tokenizer_)
    ALTO_CHECK(tokenizer_->token_to_id("[AUDIO]") == audio_token_id_, dir,
               "/tekken.json: [AUDIO] is id ", tokenizer_->token_to_id("[AUDIO]"),
               " but config.json's audio_token_id is ", audio_token_id_);
  ALTO_CHECK(extractor_->options().nb_max_frames() == audio.input_frames(), dir,
             ": the feature extractor's ", extractor_->options().nb_max_frames(),
             " frames per chunk do not fill the encoder's window of ", audio.input_frames());

  const SafetensorsCheckpoint checkpoint(dir);
  CheckpointBinder binder(checkpoint, options, "Voxtral (" + audio.to_string() + ", " +
                                                   text.to_string() + ")");
  encoder_ = std::make_shared<const WhisperEncoder>(audio, binder, "audio_tower.", options);
  const auto tensor_options = torch::TensorOptions().dtype(options.dtype).device(options.device);
  auto projector = std::make_shared<Projector>();
  projector->linear_1 =
      blocks::Linear(audio.encoder_ffn_dim, text.hidden_size, false, tensor_options);
  projector->linear_2 = blocks::Linear(text.hidden_size, text.hidden_size, false, tensor_options);
  projector->activation = blocks::parse_activation(projector_act, "projector_hidden_act");
  binder.bind(*projector->linear_1, "multi_modal_projector.linear_1.");
  binder.bind(*projector->linear_2, "multi_modal_projector.linear_2.");
  projector_ = projector;
  decoder_ = std::make_shared<const TextDecoder>(text, binder, audio_lm_text_prefix(checkpoint),
                                                 "language_model.lm_head.weight", options);
  binder.finish();
}

int64_t Voxtral::audio_token_count(int64_t samples) const {
  const int64_t chunk = extractor_->options().n_samples();
  const int64_t chunks = (samples + chunk - 1) / chunk;
  return chunks * encoder_->config().max_source_positions / frames_per_token_;
}

torch::Tensor Voxtral::clip_features(const torch::Tensor& wave) const {
  // VoxtralProcessor: pad to a multiple of 30 s (never truncate), one log-mel over the whole
  // clip, then its frames cut into 3000-frame chunks.
  features::PaddingOptions padding;
  padding.padding = features::PaddingOptions::Strategy::kLongest;
  padding.truncation = false;
  padding.pad_to_multiple_of = extractor_->options().n_samples();
  padding.return_attention_mask = false;
  const torch::Tensor mel = extractor_->compute_batch({wave}, padding).input_features;
  const int64_t bins = mel.size(1), window = extractor_->options().nb_max_frames();
  return mel.reshape({bins, -1, window}).transpose(0, 1).contiguous();
}

AudioLmInputs Voxtral::process(const std::vector<ChatMessage>& conversation,
                               bool add_generation_prompt) const {
  const tokenizers::TextTokenizer& t = tokenizer();
  auto special = [&](const char* token) { return t.require_token(token, "Voxtral's prompt"); };
  AudioLmInputs out;
  std::vector<int64_t> ids{special("<s>")};
  std::vector<torch::Tensor> chunks;
  auto append_text = [&](const std::string& text) {
    const std::vector<int64_t> encoded = t.encode(text, /*split_special_tokens=*/true);
    ids.insert(ids.end(), encoded.begin(), encoded.end());
    out.prompt += text;
  };
  auto append_special = [&](const char* token) {
    ids.push_back(special(token));
    out.prompt += token;
  };
  out.prompt = "<s>";
  for (size_t m = 0; m < conversation.size(); ++m) {
    const ChatMessage& message = conversation[m];
    const bool user = message.role == "user";
    ALTO_CHECK(user || message.role == "system" || message.role == "assistant",
               "Voxtral: unknown role '", message.role, "' (system, user or assistant)");
    if (message.role == "system") append_special("[SYSTEM_PROMPT]");
    if (user) append_special("[INST]");
    for (const ChatPart& part : message.content) {
      ALTO_CHECK(!part.is_codes(), "Voxtral: a chat part holds codec codes; the model takes "
                 "audio clips");
      if (!part.is_audio()) {
        append_text(part.text);
        continue;
      }
      ALTO_CHECK(user, "Voxtral: audio parts belong in user turns, not in a ", message.role,
                 " turn");
      const torch::Tensor clip = checked_clip(part.audio, 0);
      const int64_t n = audio_token_count(clip.numel());
      append_special("[BEGIN_AUDIO]");
      ids.insert(ids.end(), n, audio_token_id_);
      out.prompt += "[AUDIO]x" + std::to_string(n);
      out.audio_tokens.push_back(n);
      chunks.push_back(clip_features(clip));
    }
    if (message.role == "system") append_special("[/SYSTEM_PROMPT]");
    if (user) append_special("[/INST]");
    // A final assistant turn without a generation prompt is left open for the model to go on.
    const bool continued = m + 1 == conversation.size() && !add_generation_prompt;
    if (message.role == "assistant" && !continued) append_special("</s>");
  }
  out.input_ids = torch::tensor(ids, torch::kInt64).unsqueeze(0);
  out.attention_mask = torch::ones_like(out.input_ids);
  if (!chunks.empty()) out.input_features = torch::cat(chunks);
  return out;
}

AudioLmInputs Voxtral::transcription_inputs(const torch::Tensor& wave,
                                            const std::string& language) const {
  AudioLmInputs out = process({{"user", {ChatPart::audio_part(wave)}}});
  std::vector<int64_t> ids(out.input_ids.data_ptr<int64_t>(),
                           out.input_ids.data_ptr<int64_t>() + out.input_ids.numel());
  if (!language.empty()) {
    const std::vector<int64_t> lang = tokenizer().encode("lang:" + language, true);
    ids.insert(ids.end(), lang.begin(), lang.end());
    out.prompt += "lang:" + language;
  }
  ids.push_back(tokenizer().require_token("[TRANSCRIBE]", "Voxtral's transcription mode"));
  out.prompt += "[TRANSCRIBE]";
  out.input_ids = torch::tensor(ids, torch::kInt64).unsqueeze(0);
  out.attention_mask = torch::ones_like(out.input_ids);
  return out;
}

torch::Tensor Voxtral::audio_embeds(const AudioLmInputs& inputs,
                                    Intermediates* intermediates) const {
  const torch::Tensor& features = inputs.input_features;
  ALTO_CHECK(features.defined() && features.dim() == 3,
             "Voxtral: input_features must be [chunks, num_mel_bins, frames]");
  torch::NoGradGuard no_grad;
  const torch::Tensor hidden = encoder_->encode(features, intermediates);
  const int64_t width = hidden.size(-1) * frames_per_token_;
  const Projector& p = *projector_;
  const torch::Tensor projected =
      p.linear_2->forward(p.linear_1->forward(hidden.reshape({-1, width}), p.activation));
  if (intermediates) intermediates->add("multi_modal_projector", projected);
  return projected;
}

namespace {
const Registration<AudioLanguageModelEntry> kRegistration(
    "voxtral", {"Voxtral (transformers' VoxtralForConditionalGeneration)",
                [](const std::string& dir, const LoadOptions& options) {
                  return std::static_pointer_cast<const AudioLanguageModel>(
                      Voxtral::from_pretrained(dir, options));
                }});
}  // namespace

}  // namespace alto::models
