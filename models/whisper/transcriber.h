#pragma once
// Audio of any length -> text and timed segments, as openai-whisper's transcribe(): 30-second
// windows over the log-mel of the whole recording, each decoded with temperature fallback
// (compression-ratio and log-prob thresholds, no-speech skipping), the next window starting
// at the last timestamp the model predicted, previous text as the prompt.

#include <torch/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "alto/features/whisper_feature_extractor.h"
#include "alto/models/whisper/decoding.h"
#include "alto/models/whisper/whisper.h"
#include "alto/tokenizers/bpe_tokenizer.h"

namespace alto::models {

struct WhisperTranscribeOptions {
  /// Language, task, beam size, ... for every window. `timestamps` asks for timed segments;
  /// audio longer than one window is always decoded with timestamps, which drive the seeking.
  WhisperDecodingOptions decoding;
  /// Tried in order until a window's result passes the thresholds.
  std::vector<double> temperatures = {0.0, 0.2, 0.4, 0.6, 0.8, 1.0};
  /// A result whose text compresses better than this (gzip ratio) is repetitive: fall back.
  std::optional<double> compression_ratio_threshold = 2.4;
  /// A result whose average token logprob is below this is unreliable: fall back.
  std::optional<double> logprob_threshold = -1.0;
  /// A window with P(<|nospeech|>) above this and a failing logprob is silence: skipped.
  std::optional<double> no_speech_threshold = 0.6;
  /// Prompt each window with the text so far (reset after a window at temperature > 0.5).
  bool condition_on_previous_text = true;
  std::string initial_prompt;
  /// openai-whisper lets a segment end after the audio does (at the last timestamp the model
  /// predicted, up to 30 s into the last window); true clamps segment times to the audio's
  /// length, false keeps the reference's times.
  bool clamp_segments = true;
  /// Called after each window with the seconds done and the total.
  std::function<void(double, double)> progress;

  void validate() const;
};

struct WhisperSegment {
  double start = 0, end = 0;  // seconds
  std::string text;
  std::vector<int64_t> tokens;  // text and timestamp tokens
  double temperature = 0, avg_logprob = 0, compression_ratio = 0, no_speech_prob = 0;
};

struct WhisperTranscript {
  std::string language;
  std::string text;
  std::vector<WhisperSegment> segments;
};

/// The gzip compression ratio openai-whisper uses to spot repetition loops.
double compression_ratio(const std::string& text);

class WhisperTranscriber {
 public:
  /// `model_dir` holds the checkpoint, preprocessor_config.json and (optionally)
  /// generation_config.json; the tokenizer is read from `tokenizer` (a folder or .tiktoken
  /// file), or from `model_dir` when empty.
  static std::shared_ptr<const WhisperTranscriber> from_pretrained(
      const std::string& model_dir, const LoadOptions& options = {},
      const std::string& tokenizer = "");
  WhisperTranscriber(Whisper model, features::WhisperFeatureExtractor extractor,
                     tokenizers::BpeTokenizer tokenizer, WhisperGenerationConfig generation = {});

  /// wave: [samples] mono at the extractor's rate (16 kHz).
  WhisperTranscript transcribe(const torch::Tensor& wave,
                               const WhisperTranscribeOptions& options = {}) const;

  const Whisper& model() const { return model_; }
  const features::WhisperFeatureExtractor& feature_extractor() const { return extractor_; }
  const tokenizers::BpeTokenizer& tokenizer() const { return tokenizer_; }
  const WhisperDecoder& decoder() const { return decoder_; }

 private:
  WhisperDecodingResult decode_with_fallback(const torch::Tensor& encoder_output,
                                             WhisperDecodingOptions decoding,
                                             const WhisperTranscribeOptions& options) const;
  std::string text_of(const std::vector<int64_t>& tokens) const;

  Whisper model_;
  features::WhisperFeatureExtractor extractor_;
  tokenizers::BpeTokenizer tokenizer_;
  WhisperDecoder decoder_;
};

}  // namespace alto::models
