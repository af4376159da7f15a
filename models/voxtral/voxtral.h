#pragma once
// Voxtral (transformers' VoxtralForConditionalGeneration) from its Hub folder: audio padded to a
// multiple of 30 s, its log-mel cut into 3000-frame chunks stacked on the batch axis; the Whisper
// encoder without pooling; a projector over 4 stacked frames (Linear-GELU-Linear, 12.5 tokens
// per second); a Llama/Mistral decoder. Prompts are built as mistral-common builds them from
// tekken.json's special tokens ([INST], [BEGIN_AUDIO], [AUDIO] x n, [TRANSCRIBE]).

#include <memory>
#include <string>
#include <vector>

#include "alto/models/audio_language_model.h"
#include "alto/models/whisper/whisper_encoder.h"

namespace alto::models {

class Voxtral : public AudioLanguageModel {
 public:
  /// config.json (model_type "voxtral"), model.safetensors or its sharded index,
  /// preprocessor_config.json, tekken.json (for process() and transcription_inputs()),
  /// generation_config.json.
  static std::shared_ptr<const Voxtral> from_pretrained(const std::string& dir,
                                                        const LoadOptions& options = {});
  Voxtral(const std::string& dir, const LoadOptions& options);

  std::string model_type() const override { return "voxtral"; }
  /// mistral-common's instruct layout: <s>, [SYSTEM_PROMPT]...[/SYSTEM_PROMPT] for a system
  /// turn, [INST] user parts [/INST] (each audio as [BEGIN_AUDIO] and its [AUDIO] tokens, text
  /// encoded without specials), assistant text followed by </s>.
  AudioLmInputs process(const std::vector<ChatMessage>& conversation,
                        bool add_generation_prompt = true) const override;
  /// Transcription mode: <s>[INST][BEGIN_AUDIO][AUDIO]...[/INST], "lang:xx" when `language` is
  /// given, then [TRANSCRIBE].
  AudioLmInputs transcription_inputs(const torch::Tensor& wave,
                                     const std::string& language = "") const override;
  torch::Tensor audio_embeds(const AudioLmInputs& inputs,
                             Intermediates* intermediates = nullptr) const override;

  /// [AUDIO] tokens of a clip of `samples` samples: 375 per started 30 s chunk.
  int64_t audio_token_count(int64_t samples) const;
  /// The clip's log-mel as the processor gives it: [chunks, num_mel_bins, 3000].
  torch::Tensor clip_features(const torch::Tensor& wave) const;

  const WhisperEncoder& audio_tower() const { return *encoder_; }

 private:
  // Encoder frames stacked into one projector input (audio intermediate_size / hidden_size).
  int64_t frames_per_token_ = 4;
  std::shared_ptr<const WhisperEncoder> encoder_;
  struct Projector;
  std::shared_ptr<const Projector> projector_;
};

}  // namespace alto::models
