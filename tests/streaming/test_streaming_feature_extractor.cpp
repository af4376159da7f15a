#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <random>

#include "alto/core/error.h"
#include "alto/streaming/streaming_feature_extractor.h"
#include "features/golden.h"

using namespace alto;
using namespace alto::features;
using alto::streaming::StreamingFeatureExtractor;

namespace {

// Feeds x in chunks of the given sizes (cycled), collecting frames as they become ready.
torch::Tensor stream(StreamingFeatureExtractor& s, const torch::Tensor& x,
                     const std::vector<int64_t>& chunks) {
  std::vector<torch::Tensor> out;
  int64_t pos = 0;
  for (size_t i = 0; pos < x.numel(); ++i) {
    const int64_t n = std::min(chunks[i % chunks.size()], x.numel() - pos);
    out.push_back(s.push(x.slice(0, pos, pos + n)));
    pos += n;
  }
  out.push_back(s.flush());
  return torch::cat(out);
}

std::vector<std::vector<int64_t>> chunkings() {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int64_t> size(1, 3000);
  std::vector<int64_t> random;
  for (int i = 0; i < 64; ++i) random.push_back(size(rng));
  return {{1}, {160}, {1000}, {7, 401, 13}, random, {1 << 20}};
}

void require_streams_like(StreamingFeatureExtractor& s, const torch::Tensor& offline,
                          const torch::Tensor& x) {
  for (const auto& chunks : chunkings()) {
    s.reset();
    INFO("first chunk " << chunks[0] << ", " << chunks.size() << " sizes");
    test::require_close(stream(s, x, chunks), offline, 1e-6, 0, std::nullopt, "streaming");
  }
}

}  // namespace

TEST_CASE("Streaming Whisper log-mel equals the offline long-form frames for any chunking",
          "[streaming][features]") {
  const test::GoldenCase c("whisper_hf_np_80__speech_4s");
  const torch::Tensor x = c.tensor("input").slice(0, 0, 20011);
  WhisperFeatureExtractorOptions o;
  o.clamp_dynamic_range = false;
  PaddingOptions longest;
  longest.padding = PaddingOptions::Strategy::kLongest;
  longest.truncation = false;
  const torch::Tensor offline = WhisperFeatureExtractor(o).compute(x, longest).t();
  CHECK(offline.size(0) == 20011 / 160);
  StreamingFeatureExtractor s(o);
  require_streams_like(s, offline, x);
}

TEST_CASE("Streaming Kaldi fbank equals offline, with and without snip_edges",
          "[streaming][features]") {
  const test::GoldenCase c("kaldi_fbank80__speech_4s");
  const torch::Tensor x = c.tensor("input").slice(0, 0, 15999) * 32768;
  for (bool snip : {true, false}) {
    KaldiFbankOptions o;
    o.num_mel_bins = 80;
    o.snip_edges = snip;
    o.use_energy = true;
    StreamingFeatureExtractor s(o);
    require_streams_like(s, KaldiFbank(o).compute(x), x);
  }
}

TEST_CASE("Streaming MelSpectrogram equals offline for reflect and constant padding",
          "[streaming][features]") {
  torch::manual_seed(9);
  const torch::Tensor x = torch::randn({9000}) * 0.2;
  for (PadMode pad : {PadMode::kReflect, PadMode::kConstant}) {
    MelSpectrogramOptions o;
    o.n_mels = 64;
    o.hop_length = 128;
    o.n_fft = 512;
    o.pad_mode = pad;
    StreamingFeatureExtractor s(o);
    require_streams_like(s, MelSpectrogram(o).compute(x).t(), x);
  }
}

TEST_CASE("Streaming uses Kaldi's online verbs", "[streaming][features]") {
  KaldiFbankOptions o;
  o.num_mel_bins = 40;
  StreamingFeatureExtractor s(o);
  s.accept_waveform(16000, torch::randn({399}));
  CHECK(s.num_frames_ready() == 0);
  s.accept_waveform(16000, torch::randn({1}));
  CHECK(s.num_frames_ready() == 1);
  s.accept_waveform(16000, torch::randn({1600}));
  CHECK(s.num_frames_ready() == 11);
  CHECK(s.frames(3, 2).sizes() == torch::IntArrayRef({2, 40}));
  s.pop(5);
  CHECK_THROWS_WITH(s.frames(0, 1), Catch::Contains("available"));
  CHECK(s.frames(5, 6).size(0) == 6);
  s.input_finished();
  CHECK(s.is_finished());
  CHECK_THROWS_WITH(s.accept_waveform(16000, torch::zeros({10})), Catch::Contains("reset"));
  CHECK_THROWS_WITH(StreamingFeatureExtractor(o).accept_waveform(8000, torch::zeros({10})),
                    Catch::Contains("resample"));
  torch::Tensor nan = torch::zeros({10});
  nan[3] = NAN;
  CHECK_THROWS_WITH(StreamingFeatureExtractor(o).accept_waveform(16000, nan),
                    Catch::Contains("NaN"));
  o.subtract_mean = true;
  CHECK_THROWS_WITH(StreamingFeatureExtractor{o}, Catch::Contains("subtract_mean"));
}
