// alto encode / alto decode on the golden EnCodec folders' input.wav, offline and --stream,
// driven as a user would.

#include <torch/torch.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>

#include "alto/audio/audio_tensor.h"
#include "alto/audio/load.h"
#include "alto/audio/save.h"
#include "alto/core/safetensors.h"
#include "cli/run_cli.h"
#include "features/golden.h"
#include "models/golden_model.h"
#include "test_util.h"

namespace {

std::string run(const std::string& args, int status = 0) {
  return alto::test::run_cli(args, status, alto::test::Stderr::kMerge);
}

void check_folder(const std::string& name, const std::string& bandwidth, bool stream) {
  INFO(name << " at " << bandwidth << " kbps" << (stream ? " --stream" : ""));
  const alto::test::GoldenModel golden(name);
  const std::string prefix = "bw_" + bandwidth + ".";
  const std::string flags = " --model " + golden.dir() + (stream ? " --stream" : "");
  const std::string tag = name + "-" + bandwidth + (stream ? "-stream" : "");
  const std::string codes_path = alto::test::temp_path(tag + "-codes.safetensors");
  run("--threads 1 encode" + flags + " " + golden.dir() + "/input.wav --bandwidth " + bandwidth +
      " -o " + codes_path);
  const alto::SafetensorsFile codes(codes_path);
  CHECK(codes.tensor("codes").scalar_type() == torch::kInt64);
  CHECK(torch::equal(codes.tensor("codes"), golden.tensor(prefix + "audio_codes")));
  CHECK(codes.metadata().at("model_type") == "encodec");
  CHECK(codes.metadata().at("num_samples") ==
        std::to_string(golden.tensor("padding_mask").size(1)));
  if (codes.contains("scales"))
    golden.require_matches(codes.tensor("scales"), prefix + "audio_scales");

  const std::string audio_path = alto::test::temp_path(tag + "-audio.safetensors");
  run("--threads 1 decode" + flags + " " + codes_path + " -o " + audio_path);
  golden.require_matches(alto::SafetensorsFile(audio_path).tensor("audio"),
                         prefix + "audio_values");

  const std::string wav_path = alto::test::temp_path(tag + "-audio.wav");
  run("--threads 1 decode" + flags + " " + codes_path + " -o " + wav_path);
  const torch::Tensor wav = alto::audio::to_tensor(alto::audio::load_audio(wav_path)).unsqueeze(0);
  golden.require_matches(wav, prefix + "audio_values");
}

}  // namespace

TEST_CASE("alto encode / decode reproduce the golden EnCodec outputs", "[cli][codec][encodec]") {
  check_folder("encodec-24khz-tiny-random", "6.0", false);
  check_folder("encodec-24khz-tiny-random", "1.5", true);
  check_folder("encodec-24khz-tiny-random-parametrized", "1.5", false);
  check_folder("encodec-48khz-tiny-random", "3.0", false);
}

TEST_CASE("alto encode / decode name what does not fit", "[cli][codec][encodec]") {
  using Catch::Matchers::Contains;
  const alto::test::GoldenModel golden("encodec-24khz-tiny-random");
  const std::string model = " --model " + golden.dir() + " ";
  const std::string out = alto::test::temp_path("bad-out.safetensors");
  CHECK_THAT(run("encode" + model + golden.dir() + "/input.wav --bandwidth 5 -o " + out, 1),
             Contains("bandwidth 5 kbps is not one of"));
  CHECK_THAT(run("encode" + model + golden.dir() + "/input.wav -o out.txt", 1),
             Contains("OUT.safetensors"));
  const alto::test::GoldenModel stereo("encodec-48khz-tiny-random");
  CHECK_THAT(
      run("encode --model " + stereo.dir() + " --stream " + golden.dir() + "/input.wav -o " + out,
          1),
      Contains("only the causal EnCodec model streams"));

  auto write_codes = [](const std::string& tag, const torch::Tensor& codes) {
    const std::string path = alto::test::temp_path(tag + ".safetensors");
    alto::save_safetensors(path, {{"codes", codes}});
    return path;
  };
  for (const bool stream : {false, true}) {
    const std::string flags = stream ? " --stream" : "";
    CHECK_THAT(run("decode" + model +
                       write_codes("too-many-k", torch::zeros({1, 1, 40, 5}, torch::kInt64)) +
                       flags + " -o " + out,
                   1),
               Contains("1 <= K <= 32"));
    CHECK_THAT(
        run("decode" + model + write_codes("big-id", torch::full({1, 1, 3, 5}, 64, torch::kInt64)) +
                flags + " -o " + out,
            1),
        Contains("[0, 64)"));
    CHECK_THAT(run("decode" + model +
                       write_codes("negative", torch::full({1, 1, 3, 5}, -2, torch::kInt64)) +
                       flags + " -o " + out,
                   1),
               Contains("[0, 64)"));
  }
  CHECK_THAT(
      run("decode" + model + write_codes("float-codes", torch::zeros({1, 1, 3, 5})) + " -o " + out,
          1),
      Contains("must be int64"));
  CHECK_THAT(run("decode" + model + write_codes("rank3", torch::zeros({1, 3, 5}, torch::kInt64)) +
                     " -o " + out,
                 1),
             Contains("[chunks, batch, K, frames]"));
  // Another codec's codes (issue 20: DAC codes were decoded by Mimi without a word).
  const std::string dac_codes = alto::test::temp_path("dac-codes.safetensors");
  alto::save_safetensors(dac_codes, {{"codes", torch::zeros({1, 1, 3, 5}, torch::kInt64)}},
                         {{"model_type", "dac"}});
  CHECK_THAT(run("decode" + model + dac_codes + " -o " + out, 1),
             Contains(dac_codes + " holds codes of a dac model; this model is encodec (decode "
                                  "with the model that encoded them)"));
  const std::string other_rate = alto::test::temp_path("48k-codes.safetensors");
  alto::save_safetensors(other_rate, {{"codes", torch::zeros({1, 1, 3, 5}, torch::kInt64)}},
                         {{"model_type", "encodec"}, {"sample_rate", "48000"}});
  CHECK_THAT(run("decode" + model + other_rate + " -o " + out, 1),
             Contains("holds codes of a 48000 Hz model; this model runs at 24000 Hz"));
  for (const std::string count : {"12x", "-1", "", "99999999999999999999"}) {
    const std::string bad_count = alto::test::temp_path("bad-count-codes.safetensors");
    alto::save_safetensors(bad_count, {{"codes", torch::zeros({1, 1, 3, 5}, torch::kInt64)}},
                           {{"num_samples", count}});
    CHECK_THAT(run("decode" + model + bad_count + " -o " + out, 1),
               Contains("metadata num_samples '" + count + "' is not a sample count"));
  }
}

TEST_CASE("alto encode / decode reproduce the golden Mimi outputs", "[cli][codec][mimi]") {
  const alto::test::GoldenModel golden("mimi-tiny-random");
  for (const bool stream : {false, true}) {
    for (const std::string quantizers : {"", "4"}) {
      INFO("num_quantizers '" << quantizers << "'" << (stream ? " --stream" : ""));
      const std::string suffix = quantizers.empty() ? "" : "_nq4";
      const std::string flags = " --model " + golden.dir() + (stream ? " --stream" : "");
      const std::string tag = "mimi" + suffix + (stream ? "-stream" : "");
      const std::string codes_path = alto::test::temp_path(tag + "-codes.safetensors");
      run("--threads 1 encode" + flags + " " + golden.dir() + "/input.wav" +
          (quantizers.empty() ? "" : " --num-quantizers " + quantizers) + " -o " + codes_path);
      const alto::SafetensorsFile codes(codes_path);
      CHECK(torch::equal(codes.tensor("codes"), golden.tensor("audio_codes" + suffix)));
      CHECK(codes.metadata().at("model_type") == "mimi");
      const std::string audio_path = alto::test::temp_path(tag + "-audio.safetensors");
      run("--threads 1 decode" + flags + " " + codes_path + " -o " + audio_path);
      golden.require_matches(alto::SafetensorsFile(audio_path).tensor("audio"),
                             "audio_values" + suffix);
    }
  }
}

TEST_CASE("alto --verbose: Mimi encodes and decodes 10 minutes offline in bounded memory",
          "[cli][codec][mimi]") {
  // The offline transformer once built time x time masks and the SEANet held the whole input's
  // activations: 10 minutes took 2.3 GB to encode (an hour could not be encoded). Now the
  // stages' report shows a peak near the process's own size.
  const alto::test::GoldenModel golden("mimi-tiny-random");
  const std::string wav = alto::test::temp_path("mimi-10-minutes.wav");
  torch::manual_seed(7);
  const torch::Tensor noise = torch::randn({1, 24000 * 600}) * 0.1;
  alto::audio::save_audio(wav, alto::audio::audio_from_tensor(noise, 24000));
  const std::string codes = alto::test::temp_path("mimi-10-minutes.safetensors");
  auto peak_mb = [](const std::string& report) {
    const size_t at = report.find("peak RSS ");
    REQUIRE(at != std::string::npos);
    return std::stod(report.substr(at + 9));
  };
  const std::string encoded =
      run("--verbose encode --model " + golden.dir() + " " + wav + " -o " + codes);
  INFO(encoded);
  for (const std::string stage : {"start-up ", "load model ", "read audio ", "encode ", "write "})
    CHECK(encoded.find(stage) != std::string::npos);
  CHECK(peak_mb(encoded) < 800);
  CHECK(alto::SafetensorsFile(codes).tensor("codes").size(2) == 7500);
  const std::string decoded = run("--verbose decode --model " + golden.dir() + " " + codes +
                                  " -o " + alto::test::temp_path("mimi-10-minutes-out.wav"));
  INFO(decoded);
  CHECK(decoded.find("decode ") != std::string::npos);
  CHECK(peak_mb(decoded) < 800);
}

TEST_CASE("alto encode / decode reproduce the golden DAC outputs", "[cli][codec][dac]") {
  for (const std::string name : {"dac-16khz-tiny-random", "dac-44khz-tiny-random"}) {
    const alto::test::GoldenModel golden(name);
    const int64_t samples = golden.tensor("raw_audio").numel();
    for (const std::string quantizers : {"", "2"}) {
      INFO(name << " num_quantizers '" << quantizers << "'");
      const std::string suffix = quantizers.empty() ? "" : "_nq2";
      const std::string flags = " --model " + golden.dir();
      const std::string codes_path = alto::test::temp_path(name + suffix + "-codes.safetensors");
      // input.wav is the raw speech; alto pads it to whole hops as DacFeatureExtractor does.
      run("--threads 1 encode" + flags + " " + golden.dir() + "/input.wav" +
          (quantizers.empty() ? "" : " --num-quantizers " + quantizers) + " -o " + codes_path);
      const alto::SafetensorsFile codes(codes_path);
      CHECK(torch::equal(codes.tensor("codes"), golden.tensor("audio_codes" + suffix)));
      CHECK(codes.metadata().at("model_type") == "dac");
      CHECK(codes.metadata().at("num_samples") == std::to_string(samples));
      // transformers' DacModel.decode returns every decoded sample ([batch, samples]) of the
      // padded input; alto decode gives the input's length (cut, or a shortfall as zeros).
      const std::string audio_path = alto::test::temp_path(name + suffix + "-audio.safetensors");
      run("--threads 1 decode" + flags + " " + codes_path + " -o " + audio_path);
      const torch::Tensor audio = alto::SafetensorsFile(audio_path).tensor("audio");
      REQUIRE(audio.sizes() == torch::IntArrayRef({1, 1, samples}));
      const std::string reference = "audio_values_from_codes" + suffix;
      const int64_t kept = std::min(golden.tensor(reference).size(-1), samples);
      CHECK(torch::allclose(audio.squeeze(1).narrow(1, 0, kept),
                            golden.tensor(reference).narrow(1, 0, kept), 0,
                            golden.tolerance(reference)));
      CHECK(audio.narrow(2, kept, samples - kept).abs().sum().item<float>() == 0);
    }
    // DAC is not causal: no stream.
    const std::string out =
        run("--threads 1 encode --stream --model " + golden.dir() + " " + golden.dir() +
                "/input.wav -o " + alto::test::temp_path(name + "-stream.safetensors"),
            1);
    CHECK_THAT(out, Catch::Contains("stream"));
  }
}

TEST_CASE("an allocation past the machine's memory is an alto error, not libtorch's",
          "[cli][codec][mimi][reliability]") {
  // A stream keeps sliding_window positions per layer: 10^12 asks for 160 TB.
  const alto::test::GoldenModel golden("mimi-tiny-random");
  const std::string dir = golden.with_config("sliding_window", "1000000000000");
  const std::string out = run("encode --stream --model " + dir + " " + golden.dir() +
                                  "/input.wav -o " + alto::test::temp_path("oom.safetensors"),
                              1);
  CHECK_THAT(out, Catch::StartsWith("alto: error: ") && Catch::Contains("out of memory: ") &&
                      Catch::Contains("GB asked for at once"));
  CHECK_THAT(out, !Catch::Contains("enforce fail"));
}
