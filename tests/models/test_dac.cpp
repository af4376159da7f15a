// DAC against transformers' DacModel (v4.45.0, itself bit-equal to descript-audio-codec) on the
// golden tiny checkpoints (tests/data/models/dac-*, copied from ../shared/golden/models;
// MANIFEST.md there): codes exactly, every continuous stage at its stated tolerance, from the
// folded checkpoint and from both weight-norm spellings.

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "alto/core/error.h"
#include "alto/core/safetensors.h"
#include "alto/models/dac.h"
#include "models/golden_model.h"
#include "test_util.h"

using alto::models::Dac;
using alto::models::DacConfig;
using alto::test::GoldenModel;
using alto::tokenizers::AudioCodes;
using alto::tokenizers::AudioEncodeOptions;
using Catch::Matchers::Contains;

namespace {

const char* const kGoldenFolders[] = {"dac-16khz-tiny-random", "dac-44khz-tiny-random"};

// The golden folder's config with another checkpoint file.
std::shared_ptr<const Dac> load(const GoldenModel& golden, const std::string& checkpoint) {
  return std::make_shared<const Dac>(DacConfig::from_json(golden.dir()),
                                     alto::SafetensorsCheckpoint(checkpoint), alto::LoadOptions{},
                                     alto::models::DacFeatureExtractorOptions::from_json(
                                         golden.dir() + "/preprocessor_config.json"));
}

// model.weight_norm.safetensors with torch.nn.utils.parametrize's names instead of
// weight_g / weight_v: what a checkpoint saved with parametrizations.weight_norm holds.
std::string parametrized_copy(const GoldenModel& golden) {
  const alto::SafetensorsFile original(golden.dir() + "/model.weight_norm.safetensors");
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  auto rename = [](const std::string& name, const std::string& from, const std::string& to) {
    return name.substr(0, name.size() - from.size()) + to;
  };
  auto ends_with = [](const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  for (const auto& name : original.names()) {
    std::string renamed = name;
    if (ends_with(name, "weight_g"))
      renamed = rename(name, "weight_g", "parametrizations.weight.original0");
    else if (ends_with(name, "weight_v"))
      renamed = rename(name, "weight_v", "parametrizations.weight.original1");
    tensors.emplace_back(renamed, original.tensor(name));
  }
  const std::string path = alto::test::temp_path(
      std::filesystem::path(golden.dir()).filename().string() + "-parametrized.safetensors");
  alto::save_safetensors(path, tensors);
  return path;
}

}  // namespace

TEST_CASE("DacConfig reads config.json with transformers' names and defaults", "[codec][dac]") {
  const DacConfig c16 = DacConfig::from_json(GoldenModel("dac-16khz-tiny-random").dir());
  CHECK(c16.sampling_rate == 16000);
  CHECK(c16.downsampling_ratios == std::vector<int64_t>{2, 4, 5, 8});
  CHECK(c16.upsampling_ratios == std::vector<int64_t>{8, 5, 4, 2});
  CHECK(c16.hop_length() == 320);
  CHECK(c16.hidden_size == 128);
  CHECK(c16.n_codebooks == 4);
  CHECK(c16.codebook_size == 64);
  CHECK(c16.codebook_dim == 8);
  const DacConfig c44 =
      DacConfig::from_json(GoldenModel("dac-44khz-tiny-random").dir() + "/config.json");
  CHECK(c44.sampling_rate == 44100);
  CHECK(c44.hop_length() == 512);

  // Only model_type: descript/dac_16khz's architecture, with the derived keys derived.
  namespace fs = std::filesystem;
  const std::string dir = alto::test::temp_path("dac-defaults");
  fs::create_directories(dir);
  std::ofstream(dir + "/config.json") << R"({"model_type": "dac"})";
  const DacConfig d = DacConfig::from_json(dir);
  CHECK(d.encoder_hidden_size == 64);
  CHECK(d.downsampling_ratios == std::vector<int64_t>{2, 4, 8, 8});
  CHECK(d.upsampling_ratios == std::vector<int64_t>{8, 8, 4, 2});
  CHECK(d.hidden_size == 1024);
  CHECK(d.decoder_hidden_size == 1536);
  CHECK(d.n_codebooks == 9);
  CHECK(d.codebook_size == 1024);
  CHECK(d.sampling_rate == 16000);
  // A 24 kHz-style config: upsampling follows the downsampling given.
  std::ofstream(dir + "/config.json")
      << R"({"model_type": "dac", "downsampling_ratios": [2, 4, 5, 8], "sampling_rate": 24000,
             "n_codebooks": 32})";
  const DacConfig d24 = DacConfig::from_json(dir);
  CHECK(d24.upsampling_ratios == std::vector<int64_t>{8, 5, 4, 2});
  CHECK(d24.hop_length() == 320);
  CHECK(d24.n_codebooks == 32);

  std::ofstream(dir + "/config.json") << R"({"model_type": "encodec"})";
  CHECK_THROWS_AS(DacConfig::from_json(dir), alto::Unsupported);
  std::ofstream(dir + "/config.json") << R"({"model_type": "dac", "codebook_size": 1000})";
  CHECK_THROWS_WITH(DacConfig::from_json(dir), Catch::Contains("config.json") &&
                                                   Catch::Contains("codebook_size") &&
                                                   Catch::Contains("power of 2"));
  std::ofstream(dir + "/config.json") << R"({"model_type": "dac", "downsampling_ratios": 8})";
  CHECK_THROWS_WITH(DacConfig::from_json(dir), Catch::Contains("downsampling_ratios"));
  std::ofstream(dir + "/config.json") << R"({"model_type": "dac", "decoder_hidden_size": 100})";
  CHECK_THROWS_WITH(DacConfig::from_json(dir), Catch::Contains("decoder_hidden_size"));
}

TEST_CASE("DAC matches transformers' DacModel on the golden checkpoints", "[codec][dac]") {
  for (const char* name : kGoldenFolders) {
    const GoldenModel golden(name);
    for (const std::string checkpoint :
         {golden.dir() + "/model.safetensors", golden.dir() + "/model.weight_norm.safetensors",
          parametrized_copy(golden)}) {
      INFO(name << " from " << checkpoint);
      const auto model = load(golden, checkpoint);
      const torch::Tensor raw = golden.tensor("raw_audio").view({1, 1, -1});
      const torch::Tensor input_values = golden.tensor("input_values");

      // DacFeatureExtractor's padding to a multiple of hop_length.
      CHECK(torch::equal(model->pad_input(raw), input_values));
      CHECK(torch::equal(model->pad_input(input_values), input_values));

      const torch::Tensor latents = model->encode_latents(input_values);
      golden.require_matches(latents, "encoder_output");
      for (const std::string suffix : {"", "_nq2"}) {
        const int64_t k = suffix.empty() ? 0 : 2;
        // Stages after the encoder run on the reference's own encoder output, so that each
        // comparison measures one stage.
        const auto q = model->quantize(golden.tensor("encoder_output"), k);
        golden.require_matches(q.audio_codes, "audio_codes" + suffix);
        golden.require_matches(q.projected_latents, "projected_latents" + suffix);
        golden.require_matches(q.quantized_representation, "quantized_representation" + suffix);
        // And end to end from alto's own latents: the same codes.
        CHECK(torch::equal(model->quantize(latents, k).audio_codes,
                           golden.tensor("audio_codes" + suffix)));

        const torch::Tensor codes = golden.tensor("audio_codes" + suffix);
        golden.require_matches(model->dequantize(codes),
                               "quantized_representation_from_codes" + suffix);
        // DacModel.forward: decoder(quantized_representation) truncated to the input length.
        const torch::Tensor forward =
            model->decode_latents(golden.tensor("quantized_representation" + suffix))
                .squeeze(1)
                .narrow(1, 0, golden.tensor("audio_values" + suffix).size(1));
        golden.require_matches(forward, "audio_values" + suffix);

        // The AudioTokenizer face: raw audio -> codes; codes -> DacModel.decode's full length.
        AudioEncodeOptions options;
        options.num_quantizers = k;
        const AudioCodes encoded = model->encode(raw, options);
        CHECK(!encoded.scales.defined());
        golden.require_matches(encoded.codes, "audio_codes" + suffix);
        const torch::Tensor decoded = model->decode(AudioCodes{codes, {}});
        CHECK(decoded.scalar_type() == torch::kFloat32);
        REQUIRE(decoded.dim() == 3);
        CHECK(decoded.size(1) == 1);
        golden.require_matches(decoded.squeeze(1), "audio_values_from_codes" + suffix);
      }
    }
  }
}

TEST_CASE("DAC describes itself as an AudioTokenizer", "[codec][dac]") {
  const auto m16 = Dac::from_pretrained(GoldenModel("dac-16khz-tiny-random").dir());
  CHECK(m16->model_type() == "dac");
  CHECK(m16->sample_rate() == 16000);
  CHECK(m16->channels() == 1);
  CHECK(m16->hop_length() == 320);
  CHECK(m16->frame_rate() == Approx(50.0));
  CHECK(m16->num_codebooks() == 4);
  CHECK(m16->codebook_size() == 64);
  CHECK(m16->feature_extractor().hop_length == 320);
  AudioEncodeOptions two;
  two.num_quantizers = 2;
  CHECK(m16->num_codebooks(two) == 2);
  CHECK(m16->num_codebooks(AudioEncodeOptions{}) == 4);
  CHECK_FALSE(m16->supports_streaming());
  const auto m44 = Dac::from_pretrained(GoldenModel("dac-44khz-tiny-random").dir());
  CHECK(m44->frame_rate() == Approx(44100.0 / 512));

  // AudioTokenizer::from_pretrained dispatches on model_type.
  const GoldenModel golden("dac-44khz-tiny-random");
  const auto tokenizer = alto::tokenizers::AudioTokenizer::from_pretrained(golden.dir());
  CHECK(tokenizer->model_type() == "dac");
  const AudioCodes encoded = tokenizer->encode(golden.tensor("raw_audio").view({1, 1, -1}));
  CHECK(encoded.num_samples == golden.tensor("raw_audio").numel());
  golden.require_matches(encoded.codes, "audio_codes");
  AudioCodes truncated = encoded;
  truncated.num_samples = 66150;
  CHECK(tokenizer->decode(truncated).sizes() == torch::IntArrayRef({1, 1, 66150}));
  CHECK_THROWS_AS(m44->stream(), alto::Unsupported);

  // Frames: ceil(samples / hop) after the extractor's padding; decode alone gives what the
  // decoder returns for them (the 16 kHz decoder loses one sample per odd stride 5, scaled by
  // 4 * 2), and the input's length with encode's num_samples: cut, or filled with zeros.
  for (const int64_t samples : {321, 633, 640}) {
    const torch::Tensor input = torch::randn({2, 1, samples}) * 0.1;
    const AudioCodes codes = m16->encode(input);
    CHECK(codes.codes.sizes() == torch::IntArrayRef({2, 4, 2}));
    CHECK(codes.num_samples == samples);
    const torch::Tensor natural = m16->decode(AudioCodes{codes.codes, {}});
    CHECK(natural.sizes() == torch::IntArrayRef({2, 1, 2 * 320 - 8}));
    const torch::Tensor exact = m16->decode(codes);
    REQUIRE(exact.sizes() == torch::IntArrayRef({2, 1, samples}));
    const int64_t kept = std::min<int64_t>(samples, natural.size(2));
    CHECK(torch::equal(exact.narrow(2, 0, kept), natural.narrow(2, 0, kept)));
    CHECK(exact.narrow(2, kept, samples - kept).abs().sum().item<float>() == 0);
  }
  // A codes file's num_samples cannot ask for more than its frames encode (issue 20: zeros
  // without bound).
  const AudioCodes two_frames = m16->encode(torch::zeros({1, 1, 640}));
  CHECK(m16->decode(AudioCodes{two_frames.codes, {}, 640}).size(2) == 640);
  CHECK_THROWS_WITH(m16->decode(AudioCodes{two_frames.codes, {}, 641}),
                    Contains("num_samples 641 is more than the 2 frames encode (640 samples)"));
}

TEST_CASE("DAC load options: bfloat16", "[codec][dac]") {
  const GoldenModel golden("dac-16khz-tiny-random");
  alto::LoadOptions bf16;
  bf16.dtype = torch::kBFloat16;
  const auto model = Dac::from_pretrained(golden.dir(), bf16);
  const torch::Tensor latents = model->encode_latents(golden.tensor("input_values"));
  CHECK(latents.scalar_type() == torch::kBFloat16);
  // bfloat16 keeps 8 mantissa bits; over the tiny random model's 40-odd layers (measured:
  // 10% on the latents, 14% on the audio) that is a sanity bound, not a parity check.
  CHECK(alto::test::relative_distance(latents, golden.tensor("encoder_output")) < 0.3);
  const AudioCodes codes = model->encode(golden.tensor("input_values"));
  CHECK(codes.codes.sizes() == golden.tensor("audio_codes").sizes());
  const torch::Tensor audio = model->decode(AudioCodes{golden.tensor("audio_codes"), {}});
  CHECK(audio.scalar_type() == torch::kFloat32);
  CHECK(alto::test::relative_distance(audio.squeeze(1), golden.tensor("audio_values_from_codes")) <
        0.3);
}

TEST_CASE("DAC batches independent clips", "[codec][dac]") {
  const GoldenModel golden("dac-44khz-tiny-random");
  const auto model = Dac::from_pretrained(golden.dir());
  const torch::Tensor x = golden.tensor("input_values");
  const torch::Tensor batch = torch::cat({x, x.flip(-1) * 0.5});
  const torch::Tensor codes = model->encode(batch).codes;
  CHECK(torch::equal(codes[0], model->encode(x).codes[0]));
  CHECK(torch::equal(codes[1], model->encode(x.flip(-1) * 0.5).codes[0]));
  const torch::Tensor audio = model->decode(AudioCodes{codes, {}});
  // Equal up to the GEMMs' summation order, which OpenBLAS picks by the row count: within the
  // golden decode tolerance (MANIFEST: 4e-5; 1.04e-5 measured on an AVX2-only EPYC).
  CHECK(
      torch::allclose(audio[0], model->decode(AudioCodes{codes.narrow(0, 0, 1), {}})[0], 0, 4e-5));
}

TEST_CASE("DAC rejects bad audio, codes and options naming the problem", "[codec][dac]") {
  const auto model = Dac::from_pretrained(GoldenModel("dac-16khz-tiny-random").dir());
  CHECK_THROWS_WITH(model->encode(torch::zeros({1, 320})),
                    Catch::Contains("[batch, 1, samples]") && Catch::Contains("[1, 320]"));
  CHECK_THROWS_WITH(model->encode(torch::zeros({1, 2, 320})),
                    Catch::Contains("mono") && Catch::Contains("[1, 2, 320]"));
  CHECK_THROWS_AS(model->encode(torch::zeros({1, 1, 0})), alto::InvalidArgument);
  CHECK_THROWS_WITH(model->encode(torch::zeros({1, 1, 320}, torch::kInt16)),
                    Catch::Contains("floating point"));
  torch::Tensor nan = torch::zeros({1, 1, 640});
  nan[0][0][100] = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_WITH(model->encode(nan), Catch::Contains("NaN"));

  AudioEncodeOptions too_many;
  too_many.num_quantizers = 5;
  CHECK_THROWS_WITH(
      model->encode(torch::zeros({1, 1, 320}), too_many),
      Catch::Contains("num_quantizers") && Catch::Contains("[0, 4]") && Catch::Contains("got 5"));
  AudioEncodeOptions negative;
  negative.num_quantizers = -1;
  CHECK_THROWS_WITH(model->num_codebooks(negative), Catch::Contains("num_quantizers"));
  AudioEncodeOptions bandwidth;
  bandwidth.bandwidth = 6.0;
  CHECK_THROWS_WITH(model->num_codebooks(bandwidth), Catch::Contains("bandwidth"));

  auto codes = [](std::vector<int64_t> shape, int64_t value) {
    return AudioCodes{torch::full(shape, value, torch::kInt64), {}};
  };
  CHECK_THROWS_WITH(model->decode(codes({1, 5, 3}, 0)),
                    Catch::Contains("1 <= K <= 4") && Catch::Contains("[1, 5, 3]"));
  CHECK_THROWS_WITH(model->decode(codes({1, 0, 3}, 0)), Catch::Contains("1 <= K <= 4"));
  CHECK_THROWS_WITH(model->decode(codes({4, 3}, 0)), Catch::Contains("[batch >= 1, K, frames]"));
  CHECK_THROWS_WITH(model->decode(codes({1, 4, 3}, 64)), Catch::Contains("[0, 64)"));
  CHECK_THROWS_WITH(model->decode(codes({1, 4, 3}, -1)), Catch::Contains("[0, 64)"));
  CHECK_THROWS_WITH(model->decode(AudioCodes{torch::zeros({1, 4, 3}, torch::kInt32), {}}),
                    Catch::Contains("int64"));
  CHECK_THROWS_WITH(
      model->decode(AudioCodes{torch::zeros({1, 4, 3}, torch::kInt64), torch::ones({1, 1, 1, 1})}),
      Catch::Contains("scales"));
  CHECK_THROWS_WITH(model->decode_latents(torch::zeros({1, 64, 3})),
                    Catch::Contains("[batch, 128, frames]"));
  CHECK_THROWS_WITH(model->quantize(torch::zeros({1, 64, 3})),
                    Catch::Contains("[batch, 128, frames]"));
}

TEST_CASE("DAC checkpoint folder errors", "[codec][dac]") {
  namespace fs = std::filesystem;
  const GoldenModel golden("dac-16khz-tiny-random");
  CHECK_THROWS_AS(Dac::from_pretrained(alto::test::temp_path("no-such-dac")), alto::IoError);

  // A checkpoint with a missing, an unexpected and a mis-shaped tensor: one error names all.
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  const alto::SafetensorsFile original(golden.dir() + "/model.safetensors");
  for (const auto& name : original.names()) {
    if (name == "encoder.block.1.res_unit2.snake1.alpha") continue;
    torch::Tensor t = original.tensor(name);
    if (name == "quantizer.quantizers.2.codebook.weight") t = t.narrow(0, 0, 32);
    tensors.emplace_back(name, t);
  }
  tensors.emplace_back("quantizer.quantizers.4.codebook.weight", torch::zeros({64, 8}));
  const std::string damaged = alto::test::temp_path("damaged-dac");
  fs::create_directories(damaged);
  fs::copy_file(golden.dir() + "/config.json", damaged + "/config.json",
                fs::copy_options::overwrite_existing);
  alto::save_safetensors(damaged + "/model.safetensors", tensors);
  CHECK_THROWS_WITH(
      Dac::from_pretrained(damaged),
      Catch::Contains("1 missing, 1 unexpected, 1 mis-shaped") &&
          Catch::Contains(
              "missing: encoder.block.1.res_unit2.snake1.alpha (expected [1, 16, 1])") &&
          Catch::Contains("unexpected: quantizer.quantizers.4.codebook.weight [64, 8]") &&
          Catch::Contains("mis-shaped: quantizer.quantizers.2.codebook.weight: expected [64, 8], "
                          "found [32, 8]"));

  // A preprocessor_config.json of the wrong kind or with a bad field names file and field.
  fs::copy_file(golden.dir() + "/model.safetensors", damaged + "/model.safetensors",
                fs::copy_options::overwrite_existing);
  std::ofstream(damaged + "/preprocessor_config.json")
      << R"({"feature_extractor_type": "DacFeatureExtractor", "hop_length": 0})";
  CHECK_THROWS_WITH(Dac::from_pretrained(damaged),
                    Catch::Contains("preprocessor_config.json") && Catch::Contains("hop_length"));
  std::ofstream(damaged + "/preprocessor_config.json")
      << R"({"feature_extractor_type": "DacFeatureExtractor", "feature_size": 2})";
  CHECK_THROWS_AS(Dac::from_pretrained(damaged), alto::Unsupported);
  // Without one, the input is padded to the model's hop.
  fs::remove(damaged + "/preprocessor_config.json");
  CHECK(Dac::from_pretrained(damaged)->feature_extractor().hop_length == 320);
}
