// Checkpoint folders whose config.json disagrees with the weights, as a hostile or careless
// download has them: each load ends in one alto error that names the mismatch, quickly and
// without allocating what the config asks for (issue 20's reproducers).

#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "alto/core/error.h"
#include "alto/models/whisper/whisper.h"
#include "alto/tokenizers/audio_tokenizer.h"
#include "models/golden_model.h"
#include "test_util.h"

using alto::test::GoldenModel;

namespace {

const std::string kDeclaresMore = "declares more weights than the checkpoint holds";

// Loading fails with an alto error containing `expected`, within seconds and 100 MB.
void require_refused(const std::function<void()>& load, const std::string& expected) {
  const long rss_before = alto::test::peak_resident_kb();
  const auto start = std::chrono::steady_clock::now();
  try {
    load();
    FAIL("loaded without an error");
  } catch (const alto::Error& e) {
    INFO(e.what());
    CHECK_THAT(e.what(), Catch::Contains(expected));
  }
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 10);
  CHECK(alto::test::peak_resident_kb() - rss_before < 100 * 1024);
}

void load_whisper(const std::string& dir) { alto::models::Whisper::from_pretrained(dir); }
void load_codec(const std::string& dir) { alto::tokenizers::AudioTokenizer::from_pretrained(dir); }

}  // namespace

TEST_CASE("Whisper configs that ask for more than the checkpoint holds are refused",
          "[models][whisper][reliability]") {
  const GoldenModel golden("whisper-tiny-random");
  for (const auto& [field, value] :
       std::vector<std::pair<std::string, std::string>>{{"encoder_layers", "1000000"},
                                                        {"decoder_layers", "1000000"},
                                                        {"d_model", "1000000000000"},
                                                        {"encoder_ffn_dim", "1000000000"},
                                                        {"vocab_size", "1000000000"},
                                                        {"max_source_positions", "1000000000000"},
                                                        {"num_mel_bins", "1000000000"}}) {
    INFO(field << " = " << value);
    const std::string dir = golden.with_config(field, value);
    require_refused([&] { load_whisper(dir); }, kDeclaresMore);
  }
}

TEST_CASE("a Whisper config one size off reports every mis-shaped tensor in one error",
          "[models][whisper][reliability]") {
  const std::string dir = GoldenModel("whisper-tiny-random").with_config("encoder_ffn_dim", "96");
  require_refused([&] { load_whisper(dir); }, "0 missing, 0 unexpected, 6 mis-shaped tensor(s)");
  try {
    load_whisper(dir);
  } catch (const alto::Error& e) {
    for (const char* name : {"encoder.layers.0.fc1.weight: expected [96, 64], found [128, 64]",
                             "encoder.layers.0.fc1.bias", "encoder.layers.1.fc2.weight"})
      CHECK_THAT(e.what(), Catch::Contains(name));
  }
}

TEST_CASE("codec configs with absurd layer counts are refused before allocating",
          "[models][codec][reliability]") {
  const std::string int64_max = "9223372036854775807";
  for (const auto& [name, field, value] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"mimi-tiny-random", "num_hidden_layers", int64_max},
           {"mimi-tiny-random", "num_quantizers", int64_max},
           {"encodec-24khz-tiny-random", "num_lstm_layers", "1000000"},
           {"dac-16khz-tiny-random", "n_codebooks", "1000000000"}}) {
    INFO(name << ": " << field << " = " << value);
    const std::string dir = GoldenModel(name).with_config(field, value);
    require_refused([&] { load_codec(dir); }, kDeclaresMore);
  }
}
