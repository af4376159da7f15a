// save_audio -> load_audio round trips.

#include <catch2/catch.hpp>
#include <cmath>

#include "alto/audio/load.h"
#include "alto/audio/save.h"
#include "alto/core/error.h"
#include "test_util.h"

using namespace alto;

TEST_CASE("float WAV round-trips bit-exactly", "[audio][save]") {
  audio::Audio a = test::sine(440.0, 0.9, 22050, 5000, 2);
  a.channel(1)[17] = 1.5f;  // float WAV keeps out-of-range values
  std::string path = test::temp_path("f32.wav");
  audio::save_audio(path, a, {audio::FileFormat::kWav, audio::SampleEncoding::kFloat32});
  audio::Audio b = audio::load_audio(path);
  CHECK(b.sample_rate == 22050);
  CHECK(b.samples == a.samples);
}

TEST_CASE("PCM round-trips within one LSB, exactly on the grid", "[audio][save]") {
  audio::Audio grid = test::grid_noise(16000, 4000, 2, 5);
  audio::Audio smooth = test::sine(1234.5, 0.7, 16000, 4000, 2);
  for (audio::FileFormat file : {audio::FileFormat::kWav, audio::FileFormat::kFlac})
    for (auto [encoding, bits] :
         {std::pair{audio::SampleEncoding::kPcm16, 16}, {audio::SampleEncoding::kPcm24, 24}}) {
      INFO((file == audio::FileFormat::kWav ? "wav " : "flac ") << bits);
      std::string path = test::temp_path("pcm" + std::to_string(bits) +
                                         (file == audio::FileFormat::kWav ? ".wav" : ".flac"));
      audio::save_audio(path, grid, {file, encoding});
      CHECK(audio::load_audio(path).samples == grid.samples);
      audio::save_audio(path, smooth, {file, encoding});
      audio::Audio back = audio::load_audio(path);
      const double lsb = std::ldexp(1.0, 1 - bits);
      double worst = 0;
      for (size_t i = 0; i < back.samples.size(); ++i)
        worst = std::max(worst, double(std::abs(back.samples[i] - smooth.samples[i])));
      CHECK(worst <= lsb);
    }
}

TEST_CASE("PCM clips instead of wrapping", "[audio][save]") {
  audio::Audio loud(1, 3, 16000);
  loud.samples = {1.7f, -3.0f, 0.5f};
  std::string path = test::temp_path("clip.wav");
  audio::save_audio(path, loud);
  audio::Audio back = audio::load_audio(path);
  CHECK(back.samples == std::vector<float>{32767 / 32768.0f, -1.0f, 0.5f});
}

TEST_CASE("save_audio rejects what it cannot write", "[audio][save][errors]") {
  audio::Audio a = test::sine(100, 0.5, 16000, 10, 1);
  CHECK_THROWS_AS(audio::save_audio(test::temp_path("x.flac"), a,
                                    {audio::FileFormat::kFlac, audio::SampleEncoding::kFloat32}),
                  InvalidArgument);
  a.samples[3] = NAN;
  CHECK_THROWS_WITH(audio::save_audio(test::temp_path("nan.wav"), a),
                    Catch::Contains("sample 3") && Catch::Contains("nan"));
  audio::Audio b = test::sine(100, 0.5, 16000, 10, 1);
  CHECK_THROWS_AS(audio::save_audio("/nonexistent-dir/x.wav", b), IoError);
  CHECK_THROWS_AS(audio::parse_sample_encoding("12"), InvalidArgument);
}
