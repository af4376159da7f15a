// Every bad input is an alto::Error that names the file and the cause; nothing crashes.

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "alto/audio/load.h"
#include "alto/audio/stream_reader.h"
#include "alto/core/error.h"
#include "test_util.h"

using namespace alto;
using Catch::Contains;

namespace {
std::vector<uint8_t> pcm16_silence(int frames) { return std::vector<uint8_t>(2 * frames, 0); }
}  // namespace

TEST_CASE("missing file, directory, empty and non-audio files", "[audio][errors]") {
  CHECK_THROWS_AS(audio::load_audio("/no/such/file.wav"), IoError);
  CHECK_THROWS_WITH(audio::load_audio("/no/such/file.wav"),
                    Contains("/no/such/file.wav") && Contains("No such file"));
  std::string dir = test::temp_path("a_directory");
  std::filesystem::create_directories(dir);
  CHECK_THROWS_WITH(audio::load_audio(dir), Contains(dir) && Contains("directory"));

  std::string empty = test::temp_path("empty.wav");
  test::write_bytes(empty, {});
  CHECK_THROWS_WITH(audio::load_audio(empty), Contains(empty));

  std::string text = test::temp_path("notes.txt");
  const char* words = "these are not audio samples, just words in a text file\n";
  test::write_bytes(text, std::vector<uint8_t>(words, words + std::strlen(words)));
  CHECK_THROWS_AS(audio::load_audio(text), IoError);
  CHECK_THROWS_WITH(audio::probe_audio(text), Contains(text));
}

TEST_CASE("truncated and zero-length files", "[audio][errors]") {
  // Header declares 16000 frames, the file holds 100.
  auto truncated = test::make_wav(1, 16, 1, 16000, pcm16_silence(100), 32000);
  std::string path = test::temp_path("truncated.wav");
  test::write_bytes(path, truncated);
  CHECK_THROWS_WITH(audio::load_audio(path), Contains(path) && Contains("truncated"));
  CHECK_THROWS_WITH(audio::load_audio_from_memory(truncated.data(), truncated.size(), {}, "t.wav"),
                    Contains("t.wav") && Contains("truncated"));

  // A header cut in the middle.
  auto header_only = test::make_wav(1, 16, 1, 16000, pcm16_silence(100));
  header_only.resize(30);
  CHECK_THROWS_AS(audio::load_audio_from_memory(header_only.data(), header_only.size()), IoError);

  // A valid file with no samples.
  auto no_frames = test::make_wav(1, 16, 1, 16000, {});
  std::string zero = test::temp_path("zero.wav");
  test::write_bytes(zero, no_frames);
  CHECK_THROWS_WITH(audio::load_audio(zero), Contains(zero) && Contains("no audio"));

  // An MP3 cut to its first bytes.
  auto mp3 = test::read_bytes(test::data_path("stereo44k.mp3"));
  mp3.resize(200);
  CHECK_THROWS_AS(audio::load_audio_from_memory(mp3.data(), mp3.size(), {}, "cut.mp3"), Error);
}

TEST_CASE("NaN and Inf samples are rejected with their position", "[audio][errors]") {
  std::vector<float> samples(64, 0.25f);
  samples[40] = NAN;
  std::vector<uint8_t> bytes(reinterpret_cast<uint8_t*>(samples.data()),
                             reinterpret_cast<uint8_t*>(samples.data() + samples.size()));
  auto wav = test::make_wav(3, 32, 1, 16000, bytes);
  CHECK_THROWS_WITH(audio::load_audio_from_memory(wav.data(), wav.size(), {}, "nan.wav"),
                    Contains("nan.wav") && Contains("sample 40") && Contains("finite"));
}

TEST_CASE("impossible options name the field", "[audio][errors]") {
  const std::string wav = test::data_path("stereo44k_f32.wav");
  audio::DecodeOptions o;
  o.sample_rate = 0;
  CHECK_THROWS_WITH(audio::load_audio(wav, o), Contains("DecodeOptions.sample_rate"));
  o = {};
  o.channel = 2;
  CHECK_THROWS_WITH(audio::load_audio(wav, o),
                    Contains("DecodeOptions.channel") && Contains("2 channels"));
  o = {};
  o.offset = 5.0;
  CHECK_THROWS_WITH(audio::load_audio(wav, o),
                    Contains("DecodeOptions.offset") && Contains("past the end"));
  o.offset = 5.0;  // an MP3 has no exact length up front; the error comes after decoding
  CHECK_THROWS_WITH(audio::load_audio(test::data_path("stereo44k.mp3"), o),
                    Contains("DecodeOptions.offset"));
  o = {};
  o.offset = -1;
  CHECK_THROWS_WITH(audio::load_audio(wav, o), Contains("DecodeOptions.offset"));
  o = {};
  o.duration = 0.0;
  CHECK_THROWS_WITH(audio::load_audio(wav, o), Contains("DecodeOptions.duration"));
  o = {};
  o.mono = true;
  o.channel = 0;
  CHECK_THROWS_WITH(audio::load_audio(wav, o), Contains("exclude"));
  o = {};
  o.raw = audio::RawPcmFormat{"s17le", 16000, 1};
  CHECK_THROWS_WITH(audio::load_audio(wav, o), Contains("raw.sample_format"));
  CHECK_THROWS_WITH(audio::AudioStreamReader(wav, {}, 0), Contains("chunk_frames"));
}

TEST_CASE("random bytes never crash the in-memory decoder", "[audio][errors]") {
  auto good = test::read_bytes(test::data_path("stereo44k.m4a"));
  uint32_t state = 12345;
  for (int trial = 0; trial < 50; ++trial) {
    auto bytes = good;
    for (int k = 0; k < 40; ++k) {
      state = state * 1664525u + 1013904223u;
      bytes[state % bytes.size()] ^= static_cast<uint8_t>(state >> 24);
    }
    try {
      audio::load_audio_from_memory(bytes.data(), bytes.size());
    } catch (const Error&) {
      // A clear error is the expected outcome for most corruptions.
    }
  }
  SUCCEED("50 corrupted files decoded or raised alto::Error");
}
