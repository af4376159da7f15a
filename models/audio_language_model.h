#pragma once
// The continuous path end to end: a conversation of text and audio parts -> the model's processor
// (prompt, token ids with every audio placeholder expanded, log-mel features) -> Whisper-style
// encoder and projector -> embeddings scattered into the placeholders -> the text decoder
// generates. One interface over the registered architectures (Qwen2-Audio, Voxtral), loaded
// from a Hub folder by config.json's model_type. Applications with their own backbone
// (llama.cpp, a serving engine) stop at embed(): the expanded ids, the projected audio
// embeddings and the positions they go to.

#include <torch/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "alto/core/checkpoint.h"
#include "alto/core/registry.h"
#include "alto/features/whisper_feature_extractor.h"
#include "alto/models/blocks/intermediates.h"
#include "alto/models/generation.h"
#include "alto/models/text_decoder.h"
#include "alto/tokenizers/text_tokenizer.h"

namespace alto::models {

/// One part of a message: text, a mono clip at the model's sampling rate, or (for the models
/// that embed codec tokens, CSM) that clip's codec codes.
struct ChatPart {
  std::string text;
  torch::Tensor audio;  // float [samples]; defined for an audio part
  torch::Tensor codes;  // int64 [num_codebooks, frames]; defined for a codes part

  static ChatPart text_part(std::string text) { return {std::move(text), {}, {}}; }
  static ChatPart audio_part(torch::Tensor wave) { return {"", std::move(wave), {}}; }
  static ChatPart codes_part(torch::Tensor codes) { return {"", {}, std::move(codes)}; }
  bool is_audio() const { return audio.defined(); }
  bool is_codes() const { return codes.defined(); }
};

/// A turn of a conversation: role "system", "user" or "assistant".
struct ChatMessage {
  std::string role;
  std::vector<ChatPart> content;
};

/// What the model's processor gives (transformers' processor outputs, one sequence).
struct AudioLmInputs {
  std::string prompt;            // the rendered text before placeholder expansion
  torch::Tensor input_ids;       // [1, T] int64, each audio placeholder expanded
  torch::Tensor attention_mask;  // [1, T] int64
  /// [chunks, num_mel_bins, frames]: one 30 s window per clip (Qwen2-Audio) or per 30 s chunk
  /// of each clip (Voxtral), clips in order. Undefined without audio.
  torch::Tensor input_features;
  /// [chunks, frames] int64, 1 on frames of real audio (Qwen2-Audio); undefined for Voxtral.
  torch::Tensor feature_attention_mask;
  /// Placeholder tokens of each audio part, in order.
  std::vector<int64_t> audio_tokens;
};

/// The merged decoder input, and for applications with their own backbone, its parts.
struct AudioLmEmbeddings {
  torch::Tensor input_ids;        // [1, T] int64 (expanded)
  torch::Tensor audio_positions;  // [n] int64: where each audio embedding row goes in input_ids
  torch::Tensor audio_embeds;     // [n, hidden_size] projected audio, float32 on the CPU
  torch::Tensor inputs_embeds;    // [1, T, hidden_size] in the model's dtype on its device
};

/// Immutable after loading and safe to share between threads.
class AudioLanguageModel {
 public:
  virtual ~AudioLanguageModel() = default;

  /// The architecture registered for `dir`'s config.json model_type ("qwen2_audio",
  /// "voxtral"); alto::Unsupported naming the model_type and the known ones otherwise.
  static std::shared_ptr<const AudioLanguageModel> from_pretrained(
      const std::string& dir, const LoadOptions& options = {});

  /// Whether `dir` holds a config.json whose model_type is a registered audio LM.
  static bool recognizes(const std::string& dir);

  virtual std::string model_type() const = 0;
  /// The processor: a conversation -> prompt, expanded ids and features, exactly as the
  /// model's transformers processor and chat template give them. Needs the folder's tokenizer.
  /// alto::InvalidArgument for an empty or too-long clip (the model's limit, named).
  virtual AudioLmInputs process(const std::vector<ChatMessage>& conversation,
                                bool add_generation_prompt = true) const = 0;
  /// The model's request to transcribe one clip (`language`: an ISO code, or "" to let the
  /// model detect it where it can).
  virtual AudioLmInputs transcription_inputs(const torch::Tensor& wave,
                                             const std::string& language = "") const = 0;
  /// Encoder and projector over inputs.input_features -> [n, hidden_size], the rows for the
  /// audio placeholders in order (padded frames left out), in the model's dtype on its device.
  /// With `intermediates`, each module's output under the checkpoint's names.
  virtual torch::Tensor audio_embeds(const AudioLmInputs& inputs,
                                     Intermediates* intermediates = nullptr) const = 0;

  /// The decoder's input with the audio embeddings scattered into the placeholders.
  /// alto::InvalidArgument when the placeholders and the audio embeddings differ in number.
  AudioLmEmbeddings embed(const AudioLmInputs& inputs,
                          Intermediates* intermediates = nullptr) const;
  /// Logits [1, T, vocab_size] float32 of every prompt position (one forward pass).
  torch::Tensor logits(const AudioLmInputs& inputs, Intermediates* intermediates = nullptr) const;
  /// Generates the reply; `config` starts from generation_config().
  GenerationResult generate(const AudioLmInputs& inputs, const GenerationConfig& config,
                            const GenerateOptions& options = {}) const;

  const TextDecoder& text_decoder() const { return *decoder_; }
  const GenerationConfig& generation_config() const { return generation_config_; }
  const features::WhisperFeatureExtractor& feature_extractor() const { return *extractor_; }
  /// alto::IoError naming the folder when it ships no tokenizer this architecture reads.
  const tokenizers::TextTokenizer& tokenizer() const;
  bool has_tokenizer() const { return tokenizer_ != nullptr; }
  int64_t audio_token_id() const { return audio_token_id_; }
  int sampling_rate() const { return extractor_->sampling_rate(); }
  const LoadOptions& load_options() const { return decoder_->load_options(); }

 protected:
  /// The shared parts every architecture loads from its folder: features (processor_config.json
  /// or preprocessor_config.json), the tokenizer when there is one, generation_config.json.
  void load_common(const std::string& dir, std::shared_ptr<const tokenizers::TextTokenizer> tokenizer);
  /// A clip of a conversation checked against the model's limits; `max_seconds` 0: none.
  torch::Tensor checked_clip(const torch::Tensor& wave, double max_seconds) const;

  std::string dir_;
  std::shared_ptr<const TextDecoder> decoder_;
  std::shared_ptr<const features::WhisperFeatureExtractor> extractor_;
  std::shared_ptr<const tokenizers::TextTokenizer> tokenizer_;
  GenerationConfig generation_config_;
  int64_t audio_token_id_ = -1;
};

/// A registered audio LM architecture, keyed by model_type.
struct AudioLanguageModelEntry {
  static const char* kind() { return "audio language model model_type"; }
  std::string description;
  std::function<std::shared_ptr<const AudioLanguageModel>(const std::string& dir,
                                                          const LoadOptions& options)>
      from_pretrained;
};
const Registry<AudioLanguageModelEntry>& audio_language_models();

/// The text decoder's prefix in an audio LM checkpoint: the Hub's files say
/// "language_model.model.", transformers 5 writes "language_model.model.model." (both with the
/// head at "language_model.lm_head.weight"). alto::InvalidArgument when neither holds the
/// embedding.
std::string audio_lm_text_prefix(const SafetensorsCheckpoint& checkpoint);

}  // namespace alto::models
