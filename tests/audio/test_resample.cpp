// Resampling quality by the method of shared/golden/features/README.md (resampling cases):
// sines of amplitude 0.5 in both channels of a 1 s 44.1 kHz clip, mean downmix, 16 kHz, a
// least-squares sine fit over output frames 1600-14399.

#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include "alto/audio/load.h"
#include "alto/audio/resample.h"
#include "alto/audio/save.h"
#include "alto/core/error.h"
#include "test_util.h"

using namespace alto;

namespace {

audio::Audio through_pipeline(double frequency, audio::ResamplerEngine engine) {
  std::string path = test::temp_path("tone_" + std::to_string(int(frequency)) + ".wav");
  audio::save_audio(path, test::sine(frequency, 0.5, 44100, 44100, 2),
                    {audio::FileFormat::kWav, audio::SampleEncoding::kFloat32});
  audio::DecodeOptions options;
  options.mono = true;
  options.sample_rate = 16000;
  options.resampler = engine;
  return audio::load_audio(path, options);
}

// Power of frames [1600, 14400) relative to the 0.5-amplitude passband tone, in dB.
double residual_db(const audio::Audio& a) {
  double power = 0;
  for (int64_t n = 1600; n < 14400; ++n) power += double(a.channel(0)[n]) * a.channel(0)[n];
  return 10 * std::log10(power / 12800 / 0.125);
}

// 1 kHz kept at `min_snr_db` with unit gain and zero delay; 9 kHz (above the new Nyquist)
// removed to `max_alias_db` relative to the passband tone.
void check_quality(audio::ResamplerEngine engine, double min_snr_db, double max_alias_db) {
  audio::Audio tone = through_pipeline(1000, engine);
  REQUIRE(tone.frames == 16000);
  auto fit = test::fit_sine(tone, 1000, 1600, 14400);
  CHECK(fit.snr_db >= min_snr_db);
  CHECK(std::abs(fit.delay_samples) < 1e-3);
  CHECK(20 * std::log10(fit.gain / 0.5) == Approx(0.0).margin(0.02));
  audio::Audio alias = through_pipeline(9000, engine);
  REQUIRE(alias.frames == 16000);
  CHECK(residual_db(alias) <= max_alias_db);
}

}  // namespace

TEST_CASE("soxr: 1 kHz at >= 120 dB SNR, 9 kHz removed by >= 100 dB, zero delay",
          "[audio][resample]") {
  check_quality(audio::ResamplerEngine::kSoxr, 120.0, -100.0);
}

TEST_CASE("swr engine: the tuned filter clears 100 dB both ways", "[audio][resample]") {
  check_quality(audio::ResamplerEngine::kSwr, 100.0, -100.0);
}

TEST_CASE("output length is exact for common rate pairs", "[audio][resample]") {
  for (auto [in, out] :
       {std::pair{44100, 16000}, {48000, 16000}, {16000, 24000}, {22050, 16000}, {8000, 44100}}) {
    INFO(in << " -> " << out);
    audio::Audio a = test::grid_noise(in, 3 * in, 1, 1);
    CHECK(audio::resample(a, out).frames == 3 * out);
  }
}

TEST_CASE("any chunking of the input gives bit-identical output", "[audio][resample][streaming]") {
  audio::Audio input = test::grid_noise(44100, 30000, 2, 9);
  audio::Audio offline = audio::resample(input, 16000);
  std::mt19937 rng(4);
  for (int mode : {1, 160, 1000, 0}) {
    INFO("chunk mode " << mode);
    audio::Resampler r({44100, 16000, 2});
    audio::Audio streamed(2, 0, 16000);
    for (int64_t pos = 0; pos < input.frames;) {
      int64_t n = mode > 0 ? mode : std::uniform_int_distribution<int64_t>(1, 3000)(rng);
      n = std::min(n, input.frames - pos);
      streamed.append(r.process(input.slice(pos, n)));
      pos += n;
    }
    streamed.append(r.flush());
    CHECK(streamed.samples == offline.samples);
  }
}

TEST_CASE("Resampler validates its options and input", "[audio][resample][errors]") {
  CHECK_THROWS_WITH(audio::Resampler({0, 16000, 1}), Catch::Contains("input_rate"));
  CHECK_THROWS_WITH(audio::Resampler({16000, -1, 1}), Catch::Contains("output_rate"));
  CHECK_THROWS_WITH(audio::Resampler({16000, 8000, 0}), Catch::Contains("channels"));
  // Rates a corrupt or hostile header claims: 1 Hz would grow 3 KB into 72 MB at 24 kHz, 2 GHz
  // would shrink 1500 frames to none.
  CHECK_THROWS_WITH(audio::Resampler({1, 24000, 1}),
                    Catch::Contains("resampling 1 Hz audio to 24000 Hz changes its length 24000 "
                                    "times, beyond ResamplerOptions.max_ratio (256)"));
  CHECK_THROWS_WITH(audio::Resampler({2000000000, 16000, 1}),
                    Catch::Contains("a rate of 2000000000 Hz is unlikely"));
  CHECK_NOTHROW(audio::Resampler({8000, 768000, 1}));
  audio::ResamplerOptions wide{1000, 1000000, 1};
  wide.max_ratio = 1000;
  CHECK_NOTHROW(audio::Resampler(wide));
  wide.max_ratio = 0.5;
  CHECK_THROWS_WITH(audio::Resampler(wide), Catch::Contains("max_ratio must be >= 1"));
  audio::Resampler r({16000, 8000, 1});
  CHECK_THROWS_WITH(r.process(test::sine(100, 0.5, 16000, 10, 2)), Catch::Contains("2 channels"));
  CHECK_THROWS_WITH(r.process(test::sine(100, 0.5, 8000, 10, 1)), Catch::Contains("8000 Hz"));
}
