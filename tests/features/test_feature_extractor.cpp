#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "alto/core/error.h"
#include "alto/core/threading.h"
#include "alto/features/feature_extractor.h"
#include "alto/features/kaldi_fbank.h"
#include "alto/features/whisper_feature_extractor.h"
#include "golden.h"
#include "test_util.h"

using namespace alto;
using namespace alto::features;

namespace {
std::string write_config(const std::string& name, const std::string& text) {
  const std::string path = test::temp_path(name);
  std::ofstream(path) << text;
  return path;
}
}  // namespace

TEST_CASE("from_pretrained builds Whisper from a model folder and matches transformers",
          "[features][config][golden]") {
  const auto fe =
      FeatureExtractor::from_pretrained(test::data_path("features/configs/whisper-tiny-random"));
  CHECK(fe->name() == "whisper");
  CHECK(fe->sampling_rate() == 16000);
  const test::GoldenCase c("whisper_hf_np_80__speech_4s");
  c.require_matches(fe->compute_one(c.tensor("input")).input_features);

  const auto large = FeatureExtractor::from_pretrained(
      test::data_path("features/configs/whisper-128mel/preprocessor_config.json"));
  CHECK(large->compute_one(torch::zeros({1600})).input_features.size(0) == 128);
}

TEST_CASE("from_pretrained reads SeamlessM4T and Wav2Vec2 configs", "[features][config]") {
  const auto seamless = FeatureExtractor::from_pretrained(
      write_config("seamless.json",
                   R"({"feature_extractor_type": "SeamlessM4TFeatureExtractor", "feature_size": 80,
          "num_mel_bins": 80, "padding_side": "right", "padding_value": 1, "stride": 2,
          "return_attention_mask": true, "sampling_rate": 16000,
          "processor_class": "Wav2Vec2BertProcessor"})"));
  CHECK(seamless->name() == "seamless-m4t");
  CHECK(seamless->compute_one(torch::randn({4800})).input_features.size(1) == 160);
  const auto w2v = FeatureExtractor::from_pretrained(
      write_config("w2v.json",
                   R"({"feature_extractor_type": "Wav2Vec2FeatureExtractor", "do_normalize": false,
          "feature_size": 1, "padding_side": "right", "padding_value": 0.0,
          "return_attention_mask": true, "sampling_rate": 16000})"));
  const torch::Tensor x = torch::randn({100});
  const BatchFeature out = w2v->compute_one(x);
  CHECK(torch::equal(out.input_features, x));  // do_normalize false
  CHECK(out.attention_mask.sum().item<int64_t>() == 100);
}

TEST_CASE("from_pretrained names the file and the bad field", "[features][config][errors]") {
  CHECK_THROWS_WITH(
      FeatureExtractor::from_pretrained(write_config(
          "bad_type.json",
          R"({"feature_extractor_type": "WhisperFeatureExtractor", "hop_length": "160"})")),
      Catch::Contains("bad_type.json") && Catch::Contains("hop_length"));
  CHECK_THROWS_WITH(FeatureExtractor::from_pretrained(write_config(
                        "bad_value.json",
                        R"({"feature_extractor_type": "WhisperFeatureExtractor", "n_fft": 0})")),
                    Catch::Contains("bad_value.json") && Catch::Contains("n_fft"));
  CHECK_THROWS_WITH(
      FeatureExtractor::from_pretrained(write_config(
          "side.json",
          R"({"feature_extractor_type": "Wav2Vec2FeatureExtractor", "padding_side": "up"})")),
      Catch::Contains("padding_side"));
  CHECK_THROWS_AS(FeatureExtractor::from_pretrained(write_config(
                      "unknown.json", R"({"feature_extractor_type": "ClapFeatureExtractor"})")),
                  Unsupported);
  CHECK_THROWS_WITH(FeatureExtractor::from_pretrained(write_config(
                        "unknown2.json", R"({"feature_extractor_type": "ClapFeatureExtractor"})")),
                    Catch::Contains("ClapFeatureExtractor"));
  CHECK_THROWS_WITH(FeatureExtractor::from_pretrained(write_config("notype.json", "{}")),
                    Catch::Contains("feature_extractor_type"));
  CHECK_THROWS_AS(FeatureExtractor::from_pretrained(write_config("broken.json", "{\"a\": ")),
                  IoError);
  CHECK_THROWS_AS(FeatureExtractor::from_pretrained(test::temp_path("missing-folder")), IoError);
  // Found by fuzz_configs: n_fft 4006000 asked for a 1.3 GB filterbank before any audio came.
  const long rss_before = test::peak_resident_kb();
  CHECK_THROWS_WITH(
      FeatureExtractor::from_pretrained(write_config(
          "huge_fft.json",
          R"({"feature_extractor_type": "WhisperFeatureExtractor", "n_fft": 4006000})")),
      Catch::Contains("80 filters over 2003001 frequency bins (n_fft=4006000) exceed the "
                      "largest filterbank alto builds"));
  CHECK(test::peak_resident_kb() - rss_before < 100 * 1024);
}

TEST_CASE("Batches give the same features on one thread and on all", "[features][threads]") {
  torch::manual_seed(4);
  std::vector<torch::Tensor> clips;
  for (int n : {16000, 12345, 4000, 8001}) clips.push_back(torch::randn({n}) * 0.1);
  KaldiFbankOptions o;
  o.num_mel_bins = 80;
  const KaldiFbank fbank(o);
  const WhisperFeatureExtractor whisper;
  const int threads = num_threads();
  set_num_threads(1);
  const BatchFeature a = fbank.compute_batch(clips);
  const torch::Tensor wa = whisper.compute(clips[0]);
  set_num_threads(2);
  const BatchFeature b = fbank.compute_batch(clips);
  const torch::Tensor wb = whisper.compute(clips[0]);
  set_num_threads(threads);
  CHECK(torch::equal(a.input_features, b.input_features));
  CHECK(torch::equal(a.attention_mask, b.attention_mask));
  CHECK(torch::equal(wa, wb));
  CHECK(a.input_features.sizes() == torch::IntArrayRef({4, 98, 80}));
  CHECK(torch::equal(a.attention_mask.sum(1), torch::tensor({98, 75, 23, 48}, torch::kInt64)));
}

TEST_CASE("no extractor hands on features that overflow", "[features][errors]") {
  // Samples of +-3e38 (a float WAV no one clipped): torchaudio's float32 power spectrum overflows
  // (alto's MelSpectrogram refuses it), the float64 pipelines of transformers' extractors hold it.
  const torch::Tensor quiet = torch::randn({16000}) * 0.1;
  const torch::Tensor loud = quiet.sign() * 3e38f;
  for (const std::string& name : feature_extractors().keys()) {
    INFO(name);
    const auto extractor = feature_extractors().at(name, "test").create({});
    CHECK_NOTHROW(extractor->compute_batch({quiet}));
    try {
      const BatchFeature batch = extractor->compute_batch({quiet, loud});
      CHECK(torch::isfinite(batch.input_features).all().item<bool>());
    } catch (const InvalidArgument& e) {
      CHECK_THAT(e.what(), Catch::Contains("clip 1") || Catch::Contains("NaN or Inf"));
    }
  }
  const auto mel = feature_extractors().at("mel", "test").create({});
  CHECK_THROWS_WITH(mel->compute_batch({quiet, loud}),
                    Catch::Contains("the mel features of clip 1 are not finite") &&
                        Catch::Contains("samples reach 3e+38"));
}
