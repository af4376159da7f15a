#include "alto/models/whisper/live_transcriber.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "alto/core/error.h"
#include "alto/core/text.h"

namespace alto::models {

void WhisperLiveOptions::validate() const {
  transcribe.validate();
  ALTO_CHECK(std::isfinite(step_seconds) && step_seconds > 0,
             "WhisperLiveOptions.step_seconds must be > 0, got ", step_seconds);
  ALTO_CHECK(std::isfinite(max_buffer_seconds) && max_buffer_seconds >= 2 * step_seconds &&
                 max_buffer_seconds <= 30.0,
             "WhisperLiveOptions.max_buffer_seconds must lie in [2 * step_seconds, 30], got ",
             max_buffer_seconds);
}

/// One pass's transcript of the buffer, its words and the segment each lies in.
struct WhisperLiveTranscriber::Hypothesis {
  WhisperTranscript transcript;  // times from the buffer's start
  std::vector<std::string> words;
  std::vector<size_t> segment_of;
};

WhisperLiveTranscriber::WhisperLiveTranscriber(
    std::shared_ptr<const WhisperTranscriber> transcriber, WhisperLiveOptions options)
    : transcriber_(std::move(transcriber)),
      options_(std::move(options)),
      sample_rate_(transcriber_ ? transcriber_->feature_extractor().sampling_rate() : 0) {
  ALTO_CHECK(transcriber_ != nullptr, "WhisperLiveTranscriber: no transcriber");
  options_.validate();
  buffer_ = torch::zeros({0}, torch::kFloat32);
}

double WhisperLiveTranscriber::seconds_received() const { return seconds(received_); }

const WhisperTranscript& WhisperLiveTranscriber::transcript() const {
  ALTO_CHECK(finished_, "WhisperLiveTranscriber::transcript: call finish() first");
  return transcript_;
}

WhisperLiveTranscriber::Hypothesis WhisperLiveTranscriber::run_pass(bool last) {
  WhisperTranscribeOptions o = options_.transcribe;
  o.progress = nullptr;
  if (!last) o.decoding.timestamps = true;
  if (!cut_text_.empty()) {
    // After a cut the prompt carries the text before it, and the language stays as found.
    o.initial_prompt = strip(strip(o.initial_prompt) + " " + strip(cut_text_));
    if (o.decoding.language.empty()) o.decoding.language = language_;
  }
  Hypothesis h;
  h.transcript = transcriber_->transcribe(buffer_, o);
  ++passes_;
  since_pass_ = 0;
  if (language_.empty()) language_ = h.transcript.language;
  for (size_t s = 0; s < h.transcript.segments.size(); ++s) {
    std::istringstream words(h.transcript.segments[s].text);
    for (std::string word; words >> word;) {
      h.words.push_back(word);
      h.segment_of.push_back(s);
    }
  }
  return h;
}

// Words of `h` after those already final that the previous pass also had, in order.
std::vector<WhisperLiveWord> WhisperLiveTranscriber::agree(const Hypothesis& h) {
  std::vector<WhisperLiveWord> decided;
  const double offset = seconds(buffer_offset_);
  size_t i = final_words_.size(), k = 0;
  for (; i < h.words.size() && k < pending_.size() && h.words[i] == pending_[k]; ++i, ++k) {
    const WhisperSegment& s = h.transcript.segments[h.segment_of[i]];
    decided.push_back({h.words[i], offset + s.start, offset + s.end, seconds_received()});
    final_words_.push_back(h.words[i]);
  }
  pending_.assign(h.words.begin() + static_cast<std::ptrdiff_t>(std::min(i, h.words.size())),
                  h.words.end());
  return decided;
}

void WhisperLiveTranscriber::drop_buffer_until(double at,
                                               const std::vector<WhisperSegment>& segments) {
  const double offset = seconds(buffer_offset_);
  for (WhisperSegment s : segments) {
    s.start += offset;
    s.end += offset;
    cut_text_ += s.text;
    cut_segments_.push_back(std::move(s));
  }
  const int64_t samples = std::clamp<int64_t>(std::llround(at * sample_rate_), 0, buffer_.size(0));
  buffer_ = buffer_.narrow(0, samples, buffer_.size(0) - samples).clone();
  buffer_offset_ += samples;
}

// Past the buffer limit: cut after the last segment whose words are all final; without one,
// the words before the last segment (all of them for a single segment) become final first.
std::vector<WhisperLiveWord> WhisperLiveTranscriber::cut(const Hypothesis& h) {
  const auto& segments = h.transcript.segments;
  std::vector<WhisperLiveWord> decided;
  if (segments.empty()) {
    drop_buffer_until(seconds(buffer_.size(0)), {});
    final_words_.clear();
    pending_.clear();
    return decided;
  }
  // Words through segment s.
  std::vector<size_t> through(segments.size(), 0);
  for (size_t w = 0; w < h.words.size(); ++w) through[h.segment_of[w]] = w + 1;
  for (size_t s = 1; s < segments.size(); ++s) through[s] = std::max(through[s], through[s - 1]);
  size_t keep = segments.size();  // segments from here stay in the buffer
  for (size_t s = segments.size() - 1; s-- > 0;)
    if (through[s] <= final_words_.size()) {
      keep = s + 1;
      break;
    }
  if (keep == segments.size()) {
    keep = segments.size() > 1 ? segments.size() - 1 : 1;
    const double offset = seconds(buffer_offset_);
    for (size_t w = final_words_.size(); w < through[keep - 1]; ++w) {
      const WhisperSegment& s = segments[h.segment_of[w]];
      decided.push_back({h.words[w], offset + s.start, offset + s.end, seconds_received()});
      final_words_.push_back(h.words[w]);
    }
  }
  const size_t words_cut = through[keep - 1];
  const double at = keep < segments.size() ? segments[keep].start : segments[keep - 1].end;
  drop_buffer_until(at, std::vector<WhisperSegment>(segments.begin(), segments.begin() + keep));
  final_words_.erase(
      final_words_.begin(),
      final_words_.begin() + static_cast<std::ptrdiff_t>(std::min(words_cut, final_words_.size())));
  pending_.clear();  // the next pass sees a new buffer
  return decided;
}

std::vector<WhisperLiveWord> WhisperLiveTranscriber::accept_waveform(const torch::Tensor& samples) {
  ALTO_CHECK(!finished_, "WhisperLiveTranscriber::accept_waveform after finish()");
  ALTO_CHECK(samples.dim() == 1,
             "WhisperLiveTranscriber::accept_waveform: expected mono samples "
             "[samples] at 16 kHz, got ",
             samples.sizes());
  const int64_t step = std::llround(options_.step_seconds * sample_rate_);
  std::vector<WhisperLiveWord> decided;
  const torch::Tensor x = samples.to(torch::kCPU, torch::kFloat32).contiguous();
  for (int64_t at = 0; at < x.size(0);) {
    const int64_t n = std::min(step - since_pass_, x.size(0) - at);
    buffer_ = torch::cat({buffer_, x.narrow(0, at, n)});
    received_ += n;
    since_pass_ += n;
    at += n;
    if (since_pass_ < step) continue;
    const Hypothesis h = run_pass(false);
    for (auto& w : agree(h)) decided.push_back(std::move(w));
    if (seconds(buffer_.size(0)) > options_.max_buffer_seconds - options_.step_seconds)
      for (auto& w : cut(h)) decided.push_back(std::move(w));
  }
  return decided;
}

std::vector<WhisperLiveWord> WhisperLiveTranscriber::finish() {
  ALTO_CHECK(!finished_, "WhisperLiveTranscriber::finish called twice");
  finished_ = true;
  std::vector<WhisperLiveWord> decided;
  const double offset = seconds(buffer_offset_);
  WhisperTranscript last;
  if (buffer_.size(0) > 0) {
    const Hypothesis h = run_pass(true);
    for (size_t w = final_words_.size(); w < h.words.size(); ++w) {
      const WhisperSegment& s = h.transcript.segments[h.segment_of[w]];
      decided.push_back({h.words[w], offset + s.start, offset + s.end, seconds_received()});
    }
    last = h.transcript;
  }
  if (cut_segments_.empty() && buffer_offset_ == 0) {
    transcript_ = last;  // never cut: the offline transcript itself
    return decided;
  }
  transcript_.language = last.language.empty() ? language_ : last.language;
  transcript_.segments = cut_segments_;
  for (WhisperSegment s : last.segments) {
    s.start += offset;
    s.end += offset;
    transcript_.segments.push_back(std::move(s));
  }
  transcript_.text = cut_text_ + last.text;
  return decided;
}

}  // namespace alto::models
