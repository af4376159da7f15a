#pragma once
// Qwen2-Audio (transformers' Qwen2AudioForConditionalGeneration and Qwen2AudioProcessor) from its
// Hub folder: Whisper-large-v3's encoder with padded frames masked in self-attention, then
// AvgPool1d(2, 2) and a LayerNorm; a Linear projector into the Qwen2 decoder's width; each
// <|AUDIO|> of the ChatML prompt expanded to the clip's token count and replaced by its
// embeddings.

#include <memory>
#include <string>
#include <vector>

#include "alto/models/audio_language_model.h"
#include "alto/models/whisper/whisper_encoder.h"

namespace alto::models {

class Qwen2Audio : public AudioLanguageModel {
 public:
  /// config.json (model_type "qwen2_audio"), model.safetensors or its sharded index,
  /// processor_config.json (transformers 5) or preprocessor_config.json (the Hub's),
  /// tokenizer.json, generation_config.json.
  static std::shared_ptr<const Qwen2Audio> from_pretrained(const std::string& dir,
                                                           const LoadOptions& options = {});
  Qwen2Audio(const std::string& dir, const LoadOptions& options);

  std::string model_type() const override { return "qwen2_audio"; }
  AudioLmInputs process(const std::vector<ChatMessage>& conversation,
                        bool add_generation_prompt = true) const override;
  /// A user turn of the clip and "Detect the language and recognize the speech:" (Qwen's ASR
  /// instruction), followed by " <|xx|>" when `language` is given.
  AudioLmInputs transcription_inputs(const torch::Tensor& wave,
                                     const std::string& language = "") const override;
  torch::Tensor audio_embeds(const AudioLmInputs& inputs,
                             Intermediates* intermediates = nullptr) const override;

  /// Qwen2-Audio-7B-Instruct's chat template: ChatML, a default system turn when the first
  /// turn is not one, each audio part as "Audio k: <|audio_bos|><|AUDIO|><|audio_eos|>\n".
  static std::string render_chat(const std::vector<ChatMessage>& conversation,
                                 bool add_generation_prompt);
  /// <|AUDIO|> tokens for a clip of `mel_frames` valid mel frames (the processor's count:
  /// the stride-2 stem, then the pool of 2).
  static int64_t audio_token_count(int64_t mel_frames);

  const WhisperEncoder& audio_tower() const { return *encoder_; }

 private:
  std::shared_ptr<const WhisperEncoder> encoder_;
  struct Projector;
  std::shared_ptr<const Projector> projector_;
};

}  // namespace alto::models
