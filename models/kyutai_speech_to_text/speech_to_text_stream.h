#pragma once
// Live transcription with Kyutai STT: audio in any chunking -> one Mimi encoder step and one
// decoder step per 80 ms frame -> words as soon as they are decided. State is bounded (Mimi's
// convolution caches and sliding-window KV, the decoder's KV rings), so a stream of any length
// runs in constant memory. Output equals KyutaiSpeechToText::transcribe on the whole recording
// for every chunking.
//
// SpeechToTextBatch serves many streams at once as moshi-server's batched ASR does: fixed slots,
// each stream joins a free slot and leaves it at any time, and every step() advances each
// stream that has a frame ready by one decoder step, all in one batch (the step reads the
// weights once for every stream). Each stream's output equals running it alone.

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "alto/models/kyutai_speech_to_text/kyutai_speech_to_text.h"

namespace alto::models {

struct SpeechToTextStreamOptions {
  /// Audio at another rate is resampled (libsoxr, chunk by chunk) instead of rejected.
  bool resample = false;

  static const OptionSchema<SpeechToTextStreamOptions>& schema();
  std::string to_string() const;
};

class SpeechToTextBatch {
 public:
  /// `slots` streams at most at once; the decoder state is allocated for all of them.
  SpeechToTextBatch(std::shared_ptr<const KyutaiSpeechToText> model, int64_t slots,
                    const SpeechToTextStreamOptions& options = {});
  ~SpeechToTextBatch();

  /// A new stream in a free slot (its state reset); -1 when every slot is taken.
  int64_t open();
  /// The stream leaves; its slot is free again.
  void close(int64_t slot);
  /// Mono samples (float [n] or [1, n]; any n) at `sample_rate`: runs the slot's Mimi encoder
  /// over them and queues every frame they complete. alto::InvalidArgument for a closed or
  /// missing slot, a finished stream, NaN or infinite samples, or a rate other than the model's
  /// without `resample` (the stream is left as it was).
  void accept_waveform(int64_t slot, int64_t sample_rate, const torch::Tensor& samples);
  /// Ends the slot's audio: the text delay's silence and the last partial frame are queued.
  void input_finished(int64_t slot);
  /// One decoder step for every open stream with a queued frame, in one batch. Returns how
  /// many streams it advanced (0: none had a frame).
  int64_t step();
  /// step() until no stream has a queued frame.
  void run();

  /// Words decided since the last call.
  std::vector<TimedWord> take_words(int64_t slot);
  /// Everything so far: the token chosen at each step, the text, every word.
  SpeechToTextTranscript transcript(int64_t slot) const;
  /// Whether the stream's input is finished and its last word decided.
  bool done(int64_t slot) const;
  /// Frames queued and not yet stepped.
  int64_t pending_frames(int64_t slot) const;
  /// Seconds of audio the slot has received.
  double seconds_received(int64_t slot) const;
  int64_t slots() const;
  const KyutaiSpeechToText& model() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// One live stream: a SpeechToTextBatch of one slot that steps as soon as frames are ready.
class SpeechToTextStream {
 public:
  explicit SpeechToTextStream(std::shared_ptr<const KyutaiSpeechToText> model,
                              const SpeechToTextStreamOptions& options = {});
  /// Mono samples at `sample_rate` -> the words they decide.
  std::vector<TimedWord> accept_waveform(int64_t sample_rate, const torch::Tensor& samples);
  /// Ends the audio -> the remaining words. Feeding audio afterwards is an error until reset().
  std::vector<TimedWord> input_finished();
  /// Starts a new stream.
  void reset();
  SpeechToTextTranscript transcript() const;
  double seconds_received() const;

 private:
  SpeechToTextBatch batch_;
  int64_t slot_;
};

}  // namespace alto::models
