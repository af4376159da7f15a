#include "alto/models/audio_language_model.h"

#include <torch/torch.h>

#include <filesystem>

#include "alto/core/error.h"
#include "alto/core/internal/json_config.h"

namespace alto::models {

const Registry<AudioLanguageModelEntry>& audio_language_models() {
  return Registry<AudioLanguageModelEntry>::instance();
}

std::shared_ptr<const AudioLanguageModel> AudioLanguageModel::from_pretrained(
    const std::string& dir, const LoadOptions& options) {
  const auto [config, model_type] =
      detail::JsonConfig::load_model_type(dir, "AudioLanguageModel::from_pretrained");
  return audio_language_models().at(model_type, config.path()).from_pretrained(dir, options);
}

bool AudioLanguageModel::recognizes(const std::string& dir) {
  namespace fs = std::filesystem;
  if (!fs::exists(fs::path(dir) / "config.json")) return false;
  const auto config = detail::JsonConfig::load((fs::path(dir) / "config.json").string());
  std::string model_type;
  config.read("model_type", model_type);
  return audio_language_models().find(model_type) != nullptr;
}

std::string audio_lm_text_prefix(const SafetensorsCheckpoint& checkpoint) {
  // The Hub's files (transformers 4) and what transformers 5.17's save_pretrained writes.
  for (const char* prefix : {"language_model.model.", "language_model.model.model."})
    if (checkpoint.contains(std::string(prefix) + "embed_tokens.weight")) return prefix;
  throw InvalidArgument(
      "audio LM checkpoint: no text decoder embedding (expected "
      "language_model.model.embed_tokens.weight, or transformers 5's "
      "language_model.model.model.embed_tokens.weight)");
}

void AudioLanguageModel::load_common(const std::string& dir,
                                     std::shared_ptr<const tokenizers::TextTokenizer> tokenizer) {
  dir_ = dir;
  auto extractor = features::FeatureExtractor::from_pretrained(dir);
  extractor_ = std::dynamic_pointer_cast<const features::WhisperFeatureExtractor>(extractor);
  ALTO_CHECK(extractor_, dir, ": expected a WhisperFeatureExtractor, got ", extractor->name());
  tokenizer_ = std::move(tokenizer);
  generation_config_ = GenerationConfig::from_json(dir);
}

const tokenizers::TextTokenizer& AudioLanguageModel::tokenizer() const {
  ALTO_CHECK_AS(IoError, tokenizer_, dir_, ": no tokenizer this model reads (", model_type(),
                " needs ", model_type() == "voxtral" ? "tekken.json" : "tokenizer.json", ")");
  return *tokenizer_;
}

torch::Tensor AudioLanguageModel::checked_clip(const torch::Tensor& wave,
                                               double max_seconds) const {
  ALTO_CHECK(wave.defined() && wave.dim() == 1 && wave.is_floating_point(), model_type(),
             ": an audio part must be a float [samples] clip at ", sampling_rate(), " Hz, got ",
             wave.defined() ? wave.sizes() : torch::IntArrayRef{});
  ALTO_CHECK(wave.numel() > 0, model_type(), ": an audio part is empty (0 samples)");
  const double seconds = static_cast<double>(wave.numel()) / sampling_rate();
  ALTO_CHECK(max_seconds <= 0 || seconds <= max_seconds, model_type(), ": an audio part of ",
             seconds, " s is longer than the ", max_seconds,
             " s the model encodes in one window (transformers would cut it silently; split it "
             "into several audio parts)");
  return wave.to(torch::kFloat32).contiguous();
}

AudioLmEmbeddings AudioLanguageModel::embed(const AudioLmInputs& inputs,
                                            Intermediates* intermediates) const {
  ALTO_CHECK(inputs.input_ids.defined() && inputs.input_ids.dim() == 2 &&
                 inputs.input_ids.size(0) == 1,
             model_type(), ": input_ids must be [1, T], got ",
             inputs.input_ids.defined() ? inputs.input_ids.sizes() : torch::IntArrayRef{});
  torch::NoGradGuard no_grad;
  AudioLmEmbeddings out;
  out.input_ids = inputs.input_ids.to(torch::kInt64).cpu();
  const torch::Tensor placeholders = out.input_ids[0] == audio_token_id_;
  out.audio_positions = placeholders.nonzero().flatten();
  const int64_t slots = out.audio_positions.numel();
  torch::Tensor embeds = decoder_->embed(out.input_ids);
  if (inputs.input_features.defined()) {
    const torch::Tensor audio = audio_embeds(inputs, intermediates);
    ALTO_CHECK(audio.size(0) == slots, model_type(), ": the prompt has ", slots,
               " audio placeholder tokens (id ", audio_token_id_, ") but the audio gives ",
               audio.size(0), " embeddings");
    out.audio_embeds = audio.to(torch::kCPU, torch::kFloat32);
    embeds.index_put_({torch::indexing::Slice(), out.audio_positions.to(embeds.device())},
                      audio.to(embeds.scalar_type()).unsqueeze(0));
  } else {
    ALTO_CHECK(slots == 0, model_type(), ": the prompt has ", slots,
               " audio placeholder tokens but no audio features were given");
    out.audio_embeds = torch::empty({0, decoder_->config().hidden_size});
  }
  if (intermediates) intermediates->add("inputs_embeds", embeds);
  out.inputs_embeds = embeds;
  return out;
}

torch::Tensor AudioLanguageModel::logits(const AudioLmInputs& inputs,
                                         Intermediates* intermediates) const {
  const AudioLmEmbeddings e = embed(inputs, intermediates);
  TextDecoderState state = decoder_->start(1, e.input_ids.size(1));
  const torch::Tensor hidden =
      decoder_->forward(e.inputs_embeds, inputs.attention_mask, state, intermediates);
  torch::Tensor out = decoder_->logits(hidden);
  if (intermediates) intermediates->add("logits", out);
  return out;
}

GenerationResult AudioLanguageModel::generate(const AudioLmInputs& inputs,
                                              const GenerationConfig& config,
                                              const GenerateOptions& options) const {
  const AudioLmEmbeddings e = embed(inputs);
  return models::generate(*decoder_, e.inputs_embeds, inputs.attention_mask, e.input_ids, config,
                          options);
}

}  // namespace alto::models
