// load_audio / probe_audio against the fixtures and against signals built in the test.

#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "alto/audio/load.h"
#include "alto/audio/save.h"
#include "test_util.h"

using namespace alto;
using alto::test::data_path;

namespace {

nlohmann::json fixtures() {
  std::ifstream in(data_path("fixtures.json"));
  return nlohmann::json::parse(in);
}

double snr_db(const float* reference, const float* actual, int64_t n) {
  double signal = 0, noise = 0;
  for (int64_t i = 0; i < n; ++i) {
    signal += double(reference[i]) * reference[i];
    noise += double(actual[i] - reference[i]) * (actual[i] - reference[i]);
  }
  return 10 * std::log10(signal / noise);
}

// The lag (in frames, within +-max_lag) at which `actual` best matches `reference`.
int64_t best_lag(const float* reference, const float* actual, int64_t n, int64_t max_lag) {
  int64_t best = 0;
  double best_score = -1e300;
  for (int64_t lag = -max_lag; lag <= max_lag; ++lag) {
    double score = 0;
    for (int64_t i = max_lag; i < n - max_lag; ++i) score += double(reference[i]) * actual[i + lag];
    if (score > best_score) best_score = score, best = lag;
  }
  return best;
}

// Little-endian integer samples of `bits` from floats on the grid.
std::vector<uint8_t> pcm_bytes(const audio::Audio& a, int bits) {
  std::vector<uint8_t> out;
  for (int64_t i = 0; i < a.frames; ++i)
    for (int c = 0; c < a.channels; ++c) {
      int64_t v = std::llround(a.channel(c)[i] * std::ldexp(1.0, bits - 1));
      if (bits == 8) v += 128;  // 8-bit WAV is unsigned
      for (int b = 0; b < bits / 8; ++b) out.push_back(static_cast<uint8_t>(v >> (8 * b)));
    }
  return out;
}

}  // namespace

TEST_CASE("probe_audio reports what ffmpeg reports for every fixture", "[audio][load]") {
  const nlohmann::json references = fixtures();
  for (auto& [name, expected] : references.items()) {
    std::string path =
        name.rfind("speech", 0) == 0 ? std::string(ALTO_SAMPLES_DIR) + "/" + name : data_path(name);
    INFO(name);
    audio::AudioInfo info = audio::probe_audio(path);
    CHECK(info.sample_rate == expected["sample_rate"].get<int>());
    CHECK(info.channels == expected["channels"].get<int>());
    CHECK(info.frames == expected["frames"].get<int64_t>());
    audio::Audio audio = audio::load_audio(path);
    CHECK(audio.frames == info.frames);
    CHECK(audio.channels == info.channels);
  }
}

TEST_CASE("lossy fixtures decode aligned with their source", "[audio][load]") {
  audio::Audio source = audio::load_audio(data_path("stereo44k_f32.wav"));
  REQUIRE(source.frames == 44100);
  // Encoder delay is removed (LAME's, AAC priming, Opus pre-skip): the decoded speech channel
  // lines up with the source's at lag 0 and resembles it.
  audio::DecodeOptions to_44k;
  to_44k.sample_rate = 44100;  // Opus decodes at 48 kHz
  for (const char* name :
       {"stereo44k.mp3", "stereo44k.m4a", "video.mp4", "stereo44k.opus", "stereo44k.webm"}) {
    INFO(name);
    audio::Audio decoded = audio::load_audio(data_path(name), to_44k);
    REQUIRE(decoded.frames >= source.frames);
    const bool opus = std::string(name).find("stereo44k.") == 0 &&
                      (std::string(name).find("opus") != std::string::npos ||
                       std::string(name).find("webm") != std::string::npos);
    // libopus' pre-skip covers its look-ahead to within a few samples at 48 kHz.
    const int64_t tolerance = opus ? 4 : 0;
    CHECK(std::abs(best_lag(source.channel(0), decoded.channel(0), source.frames, 1500)) <=
          tolerance);
    CHECK(snr_db(source.channel(0), decoded.channel(0), source.frames) > 3.0);
  }
  // Matroska stores no MP3 encoder delay, so its audio keeps LAME's 1105-sample lead, as ffmpeg
  // decodes it too.
  audio::Audio mkv = audio::load_audio(data_path("video.mkv"));
  CHECK(best_lag(source.channel(0), mkv.channel(0), source.frames, 1500) == 1105);
}

TEST_CASE("WAV of every integer width and float decodes to the exact grid values",
          "[audio][load]") {
  audio::Audio noise = test::grid_noise(16000, 1000, 2, 7);
  for (int bits : {8, 16, 24, 32}) {
    INFO(bits << "-bit PCM");
    // Restrict to the coarsest grid so every width represents the values exactly.
    audio::Audio grid = noise;
    for (auto& s : grid.samples) s = std::round(s * 128) / 128;
    auto bytes = test::make_wav(1, bits, 2, 16000, pcm_bytes(grid, bits));
    audio::Audio decoded = audio::load_audio_from_memory(bytes.data(), bytes.size());
    REQUIRE(decoded.frames == 1000);
    CHECK(decoded.samples == grid.samples);
  }
  std::vector<uint8_t> floats;
  for (int64_t i = 0; i < noise.frames; ++i)
    for (int c = 0; c < 2; ++c) {
      const auto* p = reinterpret_cast<const uint8_t*>(&noise.channel(c)[i]);
      floats.insert(floats.end(), p, p + 4);
    }
  auto bytes = test::make_wav(3, 32, 2, 16000, floats);
  CHECK(audio::load_audio_from_memory(bytes.data(), bytes.size()).samples == noise.samples);
}

TEST_CASE("memory and file decoding agree for every container", "[audio][load]") {
  for (const char* name : {"stereo44k.mp3", "stereo44k.m4a", "stereo44k.opus", "stereo44k.webm",
                           "video.mkv", "stereo44k_f32.wav"}) {
    INFO(name);
    auto bytes = test::read_bytes(data_path(name));
    CHECK(audio::load_audio_from_memory(bytes.data(), bytes.size()).samples ==
          audio::load_audio(data_path(name)).samples);
  }
}

TEST_CASE("mono is the mean of the channels; channel picks one", "[audio][load]") {
  audio::Audio stereo = audio::load_audio(data_path("stereo44k_f32.wav"));
  audio::DecodeOptions mono;
  mono.mono = true;
  audio::Audio m = audio::load_audio(data_path("stereo44k_f32.wav"), mono);
  REQUIRE(m.channels == 1);
  for (int64_t i = 0; i < m.frames; i += 97)
    CHECK(m.channel(0)[i] ==
          Approx((stereo.channel(0)[i] + stereo.channel(1)[i]) / 2).margin(1e-7));
  audio::DecodeOptions right;
  right.channel = 1;
  audio::Audio r = audio::load_audio(data_path("stereo44k_f32.wav"), right);
  REQUIRE(r.channels == 1);
  CHECK(std::equal(r.samples.begin(), r.samples.end(), stereo.channel(1)));
}

TEST_CASE("offset and duration select exact frames", "[audio][load]") {
  audio::Audio full = audio::load_audio(data_path("stereo44k_f32.wav"));
  audio::DecodeOptions part;
  part.offset = 0.25;
  part.duration = 0.5;
  audio::Audio slice = audio::load_audio(data_path("stereo44k_f32.wav"), part);
  REQUIRE(slice.frames == 22050);
  CHECK(slice.samples == full.slice(11025, 22050).samples);

  // FLAC seeks exactly too.
  std::string flac = test::temp_path("seek.flac");
  audio::Audio grid = test::grid_noise(16000, 48000, 1, 3);
  audio::save_audio(flac, grid, {audio::FileFormat::kFlac, audio::SampleEncoding::kPcm16});
  part.offset = 1.0;
  part.duration = 0.75;
  CHECK(audio::load_audio(flac, part).samples == grid.slice(16000, 12000).samples);

  // MP3 seeks (with pre-roll) land on the same samples as decoding from the start.
  audio::Audio mp3 = audio::load_audio(data_path("stereo44k.mp3"));
  part.offset = 0.6;
  part.duration = std::nullopt;
  audio::Audio mp3_tail = audio::load_audio(data_path("stereo44k.mp3"), part);
  REQUIRE(mp3_tail.frames == mp3.frames - 26460);
  audio::Audio expected = mp3.slice(26460, mp3_tail.frames);
  CHECK(snr_db(expected.channel(0), mp3_tail.channel(0), expected.frames) > 60.0);
}

TEST_CASE("raw PCM with a given format", "[audio][load]") {
  audio::Audio grid = test::grid_noise(8000, 800, 2, 11);
  auto bytes = pcm_bytes(grid, 16);
  std::string path = test::temp_path("raw.s16le");
  test::write_bytes(path, bytes);
  audio::DecodeOptions options;
  options.raw = audio::RawPcmFormat{"s16le", 8000, 2};
  audio::Audio decoded = audio::load_audio(path, options);
  CHECK(decoded.sample_rate == 8000);
  CHECK(decoded.samples == grid.samples);
}
