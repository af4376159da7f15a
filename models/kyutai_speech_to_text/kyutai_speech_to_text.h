#pragma once
// Kyutai's streaming speech-to-text (transformers' KyutaiSpeechToTextForConditionalGeneration:
// kyutai/stt-1b-en_fr, kyutai/stt-2.6b-en): Mimi codes and text share one time axis. Each 80 ms
// step feeds the decoder one text token (the one it chose at the previous step) plus the 32
// codes of one Mimi frame, embedded from one table and summed; the decoder (Moshi's: RMSNorm in
// float32, rotate-half RoPE, no biases, a gating MLP, sliding-window attention over a bounded
// ring) answers the next text token. Text lags audio by audio_delay_seconds, and pad (3) and
// end-of-padding (0) tokens mark where words begin, which gives word timestamps.
//
// Steps follow moshi: step 0 feeds the audio-BOS frame, step t >= 1 code frame t - 1; a clip of
// T frames takes T + 1 steps. transformers' generate stops one step earlier and, with
// audio_window_size 1, feeds step t >= 2 frame t - 2 (its first frame is encoded twice), so its
// end-to-end transcript differs from this one by that shift alone: fed the codes generate fed
// (the golden `audio_codes`), this decoder gives generate's logits and ids exactly.

#include <torch/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "alto/core/checkpoint.h"
#include "alto/core/options.h"
#include "alto/models/blocks/attention.h"
#include "alto/models/blocks/intermediates.h"
#include "alto/models/mimi.h"
#include "alto/tokenizers/text_tokenizer.h"

namespace alto::models {

/// config.json of a transformers-format Kyutai STT folder; absent keys take
/// KyutaiSpeechToTextConfig's defaults.
struct KyutaiSpeechToTextConfig {
  int64_t vocab_size = 4001;
  int64_t hidden_size = 2048;
  int64_t num_hidden_layers = 48;
  int64_t num_attention_heads = 32;
  std::optional<int64_t> num_key_value_heads;  // absent: num_attention_heads
  std::optional<int64_t> head_dim;             // absent: hidden_size / num_attention_heads
  int64_t ffn_dim = 11264;                     // fc1's width; fc2 reads half of it
  int64_t max_position_embeddings = 750;
  int64_t sliding_window = 375;
  double rms_norm_eps = 1e-8;
  double rope_theta = 100000.0;
  std::string hidden_act = "silu";
  int64_t num_codebooks = 32;
  int64_t codebook_vocab_size = 2049;
  int64_t audio_bos_token_id = 2048;
  int64_t audio_pad_token_id = 69569;
  int64_t bos_token_id = 48000;  // the text stream's initial token
  int64_t pad_token_id = 3;      // the text padding between words
  int64_t frame_size = 1920;
  bool tie_word_embeddings = false;
  MimiConfig codec_config;

  /// `path`: config.json or its folder. alto::Unsupported for another model_type,
  /// alto::InvalidArgument naming the file and key otherwise (a codec whose codebook count or
  /// frame differs from the decoder's included).
  static KyutaiSpeechToTextConfig from_json(const std::string& path);
  static const OptionSchema<KyutaiSpeechToTextConfig>& schema();
  void validate() const;
  std::string to_string() const;

  int64_t kv_heads() const { return num_key_value_heads.value_or(num_attention_heads); }
  int64_t head_size() const { return head_dim.value_or(hidden_size / num_attention_heads); }
  /// Rows of the one embedding table: text, each codebook's ids, and the audio padding row.
  int64_t embedding_rows() const { return vocab_size + num_codebooks * codebook_vocab_size + 1; }
};

/// The processor's padding (KyutaiSpeechToTextFeatureExtractor, in processor_config.json's
/// feature_extractor or preprocessor_config.json): silence before the audio, and after it the
/// delay of the text plus one second so that the last words come out.
struct KyutaiSpeechToTextProcessorConfig {
  int64_t sampling_rate = 24000;
  double audio_delay_seconds = 0.0;
  double audio_silence_prefix_seconds = 0.0;

  static KyutaiSpeechToTextProcessorConfig from_pretrained(const std::string& dir);
  static const OptionSchema<KyutaiSpeechToTextProcessorConfig>& schema();
  void validate() const;
  int64_t prefix_samples() const;
  int64_t suffix_samples() const;
};

/// The padded waveform and which samples are real, as the processor returns them.
struct KyutaiSpeechToTextInputs {
  torch::Tensor input_values;  // float32 [1, 1, samples]
  torch::Tensor padding_mask;  // int64 [1, samples]: 1 on the audio, 0 on the added silence
};

/// One word and where it is in the input audio (seconds, the processor's padding taken off).
struct TimedWord {
  std::string text;
  double start = 0, end = 0;
  /// Seconds of input audio the model had consumed when it decided the word (a stream's
  /// latency for it is decided_at - end).
  double decided_at = 0;
};

/// What a transcription returns.
struct SpeechToTextTranscript {
  /// The text token chosen at each step (step 0 = the audio-BOS step).
  std::vector<int64_t> token_ids;
  std::string text;
  std::vector<TimedWord> words;
};

/// Per-row decoder state of a batch: the sliding-window KV rings and each row's position.
struct KyutaiSpeechToTextState {
  blocks::RingPositions positions;
  std::vector<blocks::RingKVCache> layers;
  int64_t batch() const { return positions.batch(); }
};

/// Words from the text stream as it grows, by Kyutai's rule (delayed-streams-modeling's
/// tokens_to_timestamped_text): the tokens between two end-of-padding tokens are one word
/// (several, sharing the span by their token counts, when the model left a boundary out), its
/// start and end the positions of those boundaries; the last word ends at the end-of-text
/// token or one second after it starts. A word is decided when the next boundary arrives.
class WordAssembler {
 public:
  /// Step positions become audio time by frame_rate less the processor's silence prefix and
  /// the text's delay.
  WordAssembler(std::shared_ptr<const tokenizers::TextTokenizer> tokenizer, double frame_rate,
                double prefix_seconds, double delay_seconds, int64_t padding_token_id,
                int64_t end_of_padding_id = 0);
  /// The token chosen at step `step`; returns the words it decides.
  std::vector<TimedWord> push(int64_t token, int64_t step);
  /// The stream ended: the last word, if any.
  std::vector<TimedWord> finish();

 private:
  std::vector<TimedWord> segment(int64_t begin, int64_t end, int64_t decided) const;
  std::shared_ptr<const tokenizers::TextTokenizer> tokenizer_;
  double frame_rate_, prefix_, delay_;
  int64_t pad_, end_of_padding_;
  // The tokens from the newest boundary on (older ones are never read again, so a stream of any
  // length keeps only the current word's), by position (step - 1) from `first_`.
  std::vector<int64_t> tokens_;
  int64_t first_ = 0;
  int64_t last_boundary_ = -1;  // position of the newest end-of-padding token, -1 before one
};

class KyutaiSpeechToText {
 public:
  /// A transformers-format folder (config.json, model.safetensors, processor_config.json or
  /// preprocessor_config.json, tokenizer.json or tokenizer*.model). The decoder takes
  /// `options` (with int8 linear weights: every projection and the head); the codec always
  /// runs in float32 on the same device, as transformers keeps it.
  static std::shared_ptr<const KyutaiSpeechToText> from_pretrained(const std::string& dir,
                                                                   const LoadOptions& options = {});
  KyutaiSpeechToText(const std::string& dir, const LoadOptions& options);
  /// Whether `dir` holds a config.json with model_type "kyutai_speech_to_text".
  static bool recognizes(const std::string& dir);

  const KyutaiSpeechToTextConfig& config() const;
  const KyutaiSpeechToTextProcessorConfig& processor_config() const;
  const LoadOptions& load_options() const;
  const Mimi& codec() const;
  std::shared_ptr<const Mimi> codec_ptr() const;
  const std::shared_ptr<const tokenizers::TextTokenizer>& tokenizer() const;
  int64_t sample_rate() const { return processor_config().sampling_rate; }
  double frame_rate() const;
  /// audio_silence_prefix_seconds + audio_delay_seconds: step positions -> audio time.
  double time_offset_seconds() const;

  /// The processor: mono samples float [n] or [1, n] at sample_rate() -> the padded input.
  /// alto::InvalidArgument for non-finite samples.
  KyutaiSpeechToTextInputs process(const torch::Tensor& samples) const;
  /// input_values [B, 1, samples] -> codes int64 [B, num_codebooks, ceil(samples / 1920)].
  torch::Tensor encode(const torch::Tensor& input_values) const;
  /// input_ids int64 [B, T, 1 + num_codebooks] (text token, then the frame's codes; the audio
  /// padding id left as is) -> inputs_embeds [B, T, hidden_size], the sum of their rows.
  torch::Tensor embed(const torch::Tensor& input_ids) const;
  /// Empty decoder state for `batch` rows.
  KyutaiSpeechToTextState start(int64_t batch) const;
  /// inputs_embeds [B, T, hidden] after each row's earlier positions -> final-norm hidden
  /// [B, T, hidden]. With `advancing` (bool [B], T = 1) only those rows advance; the others'
  /// outputs are meaningless and their state is kept. With `intermediates`, each layer's output
  /// under the checkpoint's names.
  torch::Tensor forward(const torch::Tensor& inputs_embeds, KyutaiSpeechToTextState& state,
                        const torch::Tensor& advancing = {},
                        Intermediates* intermediates = nullptr) const;
  /// hidden [..., hidden_size] -> text logits [..., vocab_size] float32.
  torch::Tensor logits(const torch::Tensor& hidden) const;
  /// One step's input ids [B, 1, 1 + K]: `text` int64 [B] and `codes` int64 [B, K], or the
  /// audio-BOS frame where `codes` is undefined.
  torch::Tensor step_ids(const torch::Tensor& text, const torch::Tensor& codes) const;

  /// Greedy decoding of codes int64 [1, K, T] (as encode or `alto encode` give them): T + 1
  /// steps. `logits`, when given, receives every step's [T + 1, vocab_size].
  SpeechToTextTranscript transcribe_codes(const torch::Tensor& codes,
                                          torch::Tensor* logits = nullptr) const;
  /// process, encode, transcribe_codes: mono samples at sample_rate().
  SpeechToTextTranscript transcribe(const torch::Tensor& samples) const;
  /// A WordAssembler with this model's tokenizer, frame rate, offset and padding ids.
  WordAssembler word_assembler() const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace alto::models
