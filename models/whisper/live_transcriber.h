#pragma once
// Whisper on audio as it arrives (whisper_streaming's local agreement): every step the audio
// buffered since the last cut is transcribed again, with the text before the cut as the prompt;
// words that two successive passes agree on are final and handed out. When the buffer nears one
// 30 s window it is cut after the last segment whose words are all final. When the input ends,
// a last pass over the buffer with the options as given finishes the transcript — for input
// shorter than the buffer limit, exactly WhisperTranscriber::transcribe's.

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "alto/models/whisper/transcriber.h"

namespace alto::models {

struct WhisperLiveOptions {
  /// Every pass's options; passes before the last decode with timestamps (segments place the
  /// cuts) whatever `transcribe.decoding.timestamps` says.
  WhisperTranscribeOptions transcribe;
  /// Seconds of new audio between passes.
  double step_seconds = 1.0;
  /// The buffer is cut once it holds more than this (at most one window, 30 s).
  double max_buffer_seconds = 30.0;

  /// alto::InvalidArgument naming the field.
  void validate() const;
};

struct WhisperLiveWord {
  std::string text;
  double start = 0, end = 0;  // the times of the segment holding the word, from the input's start
  double decided_at = 0;      // seconds of input received when the word became final
};

class WhisperLiveTranscriber {
 public:
  WhisperLiveTranscriber(std::shared_ptr<const WhisperTranscriber> transcriber,
                         WhisperLiveOptions options = {});

  /// Appends mono samples at the feature extractor's rate (16 kHz); runs a pass for each
  /// `step_seconds` of new audio. Returns the words that became final.
  std::vector<WhisperLiveWord> accept_waveform(const torch::Tensor& samples);
  /// The input has ended: the last pass. Returns the words not handed out before.
  std::vector<WhisperLiveWord> finish();

  /// The whole transcript, once finish() has run.
  const WhisperTranscript& transcript() const;
  double seconds_received() const;
  int64_t passes() const { return passes_; }

 private:
  struct Hypothesis;
  Hypothesis run_pass(bool last);
  std::vector<WhisperLiveWord> agree(const Hypothesis& hypothesis);
  std::vector<WhisperLiveWord> cut(const Hypothesis& hypothesis);
  void drop_buffer_until(double at, const std::vector<WhisperSegment>& segments);
  double seconds(int64_t samples) const {
    return static_cast<double>(samples) / static_cast<double>(sample_rate_);
  }

  std::shared_ptr<const WhisperTranscriber> transcriber_;
  WhisperLiveOptions options_;
  const int64_t sample_rate_;                 // the feature extractor's
  torch::Tensor buffer_;                      // samples since the last cut
  int64_t buffer_offset_ = 0;                 // samples cut before it
  int64_t received_ = 0;                      // samples received
  int64_t since_pass_ = 0;                    // samples received since the last pass
  std::vector<std::string> final_words_;      // of the buffer: handed out
  std::vector<std::string> pending_;          // the last pass's words after them
  std::vector<WhisperSegment> cut_segments_;  // before the buffer, times from the input's start
  std::string cut_text_, language_;
  int64_t passes_ = 0;
  bool finished_ = false;
  WhisperTranscript transcript_;
};

}  // namespace alto::models
