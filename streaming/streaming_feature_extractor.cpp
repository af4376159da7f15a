#include "alto/streaming/streaming_feature_extractor.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <algorithm>

#include "alto/core/error.h"

namespace alto::streaming {

namespace {

features::WhisperFeatureExtractorOptions streaming_whisper(
    features::WhisperFeatureExtractorOptions o) {
  o.clamp_dynamic_range = false;
  return o;
}

features::KaldiFbankOptions streaming_kaldi(features::KaldiFbankOptions o) {
  ALTO_CHECK(!o.subtract_mean,
             "KaldiFbankOptions.subtract_mean needs the whole utterance and cannot stream; "
             "subtract the mean of the collected frames instead");
  return o;
}

}  // namespace

StreamingFeatureExtractor::StreamingFeatureExtractor(Parts parts)
    : extractor_(std::move(parts.extractor)),
      processor_(parts.processor),
      sampling_rate_(parts.sampling_rate),
      dim_(parts.processor->feature_dim()),
      dither_(parts.dither),
      dither_seed_(parts.dither_seed),
      workspace_(parts.processor->n_fft()),
      frame_(parts.processor->layout().frame_length),
      generator_(at::detail::createCPUGenerator(parts.dither_seed)) {}

namespace {
template <typename Extractor, typename Options>
std::shared_ptr<const Extractor> make(Options options) {
  return std::make_shared<const Extractor>(std::move(options));
}
}  // namespace

StreamingFeatureExtractor::StreamingFeatureExtractor(features::WhisperFeatureExtractorOptions o)
    : StreamingFeatureExtractor([&] {
        auto e = make<features::WhisperFeatureExtractor>(streaming_whisper(o));
        return Parts{e, &e->frame_processor(), o.sampling_rate, o.dither, o.dither_seed};
      }()) {}

StreamingFeatureExtractor::StreamingFeatureExtractor(features::KaldiFbankOptions o)
    : StreamingFeatureExtractor([&] {
        auto e = make<features::KaldiFbank>(streaming_kaldi(o));
        return Parts{e, &e->frame_processor(), e->sampling_rate(), o.dither, o.dither_seed};
      }()) {}

StreamingFeatureExtractor::StreamingFeatureExtractor(features::MelSpectrogramOptions o)
    : StreamingFeatureExtractor([&] {
        auto e = make<features::MelSpectrogram>(o);
        return Parts{e, &e->frame_processor(), o.sample_rate, 0.0, 0};
      }()) {}

void StreamingFeatureExtractor::accept_waveform(int sample_rate, const torch::Tensor& samples) {
  ALTO_CHECK(!finished_,
             "StreamingFeatureExtractor: accept_waveform after input_finished; "
             "call reset() to start a new stream");
  ALTO_CHECK(sample_rate == sampling_rate_, "StreamingFeatureExtractor: got ", sample_rate,
             " Hz audio but the extractor runs at ", sampling_rate_, " Hz; resample first");
  ALTO_CHECK(samples.defined() && samples.dim() == 1 && samples.is_floating_point(),
             "StreamingFeatureExtractor: expected 1-D float samples, got ",
             samples.defined() ? samples.sizes() : torch::IntArrayRef{});
  if (samples.numel() == 0) return;
  const torch::Tensor x = samples.to(torch::kCPU, torch::kFloat32).contiguous();
  ALTO_CHECK(torch::isfinite(x).all().item<bool>(),
             "StreamingFeatureExtractor: the chunk contains NaN or Inf samples");
  const float* p = x.data_ptr<float>();
  samples_.insert(samples_.end(), p, p + x.numel());
  received_ += x.numel();
  compute_ready_frames();
}

void StreamingFeatureExtractor::input_finished() {
  if (finished_) return;
  finished_ = true;
  compute_ready_frames();
}

void StreamingFeatureExtractor::compute_ready_frames() {
  const features::FrameLayout& layout = processor_->layout();
  const int64_t available = layout.num_frames(received_);
  while (next_frame_ < available) {
    // Before the end, a frame may only read samples that have arrived.
    if (!finished_ && layout.frame_start(next_frame_) + layout.frame_length > received_) break;
    layout.copy_frame(samples_.data(), buffer_start_, received_, next_frame_, frame_.data());
    if (dither_ > 0) {
      const torch::Tensor noise = torch::randn({layout.frame_length}, generator_) * dither_;
      const float* n = noise.data_ptr<float>();
      for (int k = 0; k < layout.frame_length; ++k) frame_[k] += n[k];
    }
    const size_t offset = rows_.size();
    rows_.resize(offset + dim_);
    processor_->process(frame_.data(), rows_.data() + offset, workspace_);
    ++next_frame_;
  }
  // Keep one frame length before the next frame: edge reflection at the end reads back that far.
  // Short streams keep everything, since a reflection may wrap around the whole signal.
  const int64_t keep_from =
      std::max<int64_t>(0, layout.frame_start(next_frame_) - layout.frame_length);
  if (received_ > 2 * layout.frame_length && keep_from > buffer_start_) {
    samples_.erase(samples_.begin(), samples_.begin() + (keep_from - buffer_start_));
    buffer_start_ = keep_from;
  }
}

torch::Tensor StreamingFeatureExtractor::frames(int64_t start, int64_t n) const {
  ALTO_CHECK(n >= 0 && start >= first_frame_ && start + n <= num_frames_ready(),
             "StreamingFeatureExtractor.frames(", start, ", ", n, "): frames [", first_frame_, ", ",
             num_frames_ready(), ") are available");
  torch::Tensor out = torch::empty({n, dim_}, torch::kFloat32);
  std::copy_n(rows_.data() + (start - first_frame_) * dim_, n * dim_, out.data_ptr<float>());
  return out;
}

void StreamingFeatureExtractor::pop(int64_t n) {
  ALTO_CHECK(n >= 0 && first_frame_ + n <= num_frames_ready(), "StreamingFeatureExtractor.pop(", n,
             "): only ", num_frames_ready() - first_frame_, " frames are held");
  rows_.erase(rows_.begin(), rows_.begin() + n * dim_);
  first_frame_ += n;
}

void StreamingFeatureExtractor::reset() {
  samples_.clear();
  rows_.clear();
  buffer_start_ = received_ = next_frame_ = first_frame_ = 0;
  finished_ = false;
  generator_ = at::detail::createCPUGenerator(dither_seed_);
}

torch::Tensor StreamingFeatureExtractor::take_all() {
  const int64_t n = num_frames_ready() - first_frame_;
  torch::Tensor out = frames(first_frame_, n);
  pop(n);
  return out;
}

torch::Tensor StreamingFeatureExtractor::push(const torch::Tensor& samples) {
  accept_waveform(sampling_rate_, samples);
  return take_all();
}

torch::Tensor StreamingFeatureExtractor::flush() {
  input_finished();
  return take_all();
}

}  // namespace alto::streaming
