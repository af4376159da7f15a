// `alto features` on every golden case's .wav, read back and held to the case's tolerance.

#include <torch/torch.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "alto/core/safetensors.h"
#include "cli/run_cli.h"
#include "features/golden.h"
#include "test_util.h"

using namespace alto;

namespace {

SafetensorsFile run_features(const std::string& args, const std::string& out_name) {
  const std::string out = test::temp_path(out_name + ".safetensors");
  const std::string command = std::string(ALTO_CLI_PATH) + " features " + args + " -o " + out;
  INFO(command);
  REQUIRE(std::system(command.c_str()) == 0);
  return SafetensorsFile(out);
}

std::string case_args(const test::GoldenCase& c, const std::string& kind) {
  if (kind == "whisper_log_mel") return "--extractor whisper --n-mels " + c.meta("n_mels");
  if (kind == "kaldi_fbank")
    return "--extractor kaldi-fbank --num-mel-bins " + c.meta("num_mel_bins") + " --snip-edges " +
           c.meta("snip_edges") + " --waveform-scale " + c.meta("input_scale");
  if (kind == "kaldi_mfcc")
    return "--extractor kaldi-mfcc --num-ceps " + c.meta("num_ceps") + " --num-mel-bins " +
           c.meta("num_mel_bins") + " --waveform-scale " + c.meta("input_scale");
  if (kind == "seamless_m4t_features") return "--extractor seamless-m4t";
  return "--extractor mel --n-fft 400 --hop-length 160 --f-max 8000 --n-mels 80 --mel-scale " +
         c.meta("mel_scale") + " --norm " + (c.meta("norm") == "slaney" ? "slaney" : "none");
}

}  // namespace

TEST_CASE("alto features reproduces every golden case from its .wav", "[cli][features][golden]") {
  const char* cases[] = {"whisper_hf_np_80__speech_4s",
                         "whisper_hf_np_80__speech_33s",
                         "whisper_hf_np_80__short_0p3s",
                         "whisper_hf_np_80__silence_1s",
                         "whisper_hf_np_128__speech_4s",
                         "whisper_openai_80__speech_4s",
                         "whisper_openai_128__short_0p3s",
                         "kaldi_fbank80__speech_4s",
                         "kaldi_fbank80_int16scale__speech_4s",
                         "kaldi_fbank80_nosnip__short_0p3s",
                         "kaldi_fbank80_int16scale_nosnip__noise_1s",
                         "kaldi_fbank80__silence_1s",
                         "kaldi_mfcc13_int16scale__speech_4s",
                         "kaldi_mfcc13__noise_1s",
                         "seamless_m4t__speech_4s",
                         "seamless_m4t__short_0p3s",
                         "melspec_htk_nonorm__chirp_1s",
                         "melspec_htk_slaneynorm__chirp_1s",
                         "melspec_slaney_nonorm__chirp_1s",
                         "melspec_slaney_slaneynorm__chirp_1s",
                         "melspec_htk_nonorm__speech_4s"};
  for (const char* name : cases) {
    SECTION(name) {
      const test::GoldenCase c(name);
      const std::string kind = c.meta("kind");
      const SafetensorsFile out = run_features(c.wav_path() + " " + case_args(c, kind), name);
      c.require_matches(out.tensor("features"));
      CHECK(out.metadata().at("extractor") != "");
      if (kind == "seamless_m4t_features")
        CHECK(torch::equal(out.tensor("attention_mask"), c.tensor("attention_mask")));
    }
  }
}

TEST_CASE("alto features --no-pad and batches follow transformers", "[cli][features][golden]") {
  const test::GoldenCase nopad("whisper_hf_np_80_nopad__speech_4s");
  const SafetensorsFile a =
      run_features(nopad.wav_path() + " --extractor whisper --no-pad", "nopad");
  nopad.require_matches(a.tensor("features"));
  CHECK(torch::equal(a.tensor("attention_mask"), nopad.tensor("attention_mask")));

  const test::GoldenCase batch("seamless_m4t_batch__short_0p3s_and_noise_1s");
  const std::string second =
      test::data_path("features/seamless_m4t_batch__short_0p3s_and_noise_1s.input_1.wav");
  const SafetensorsFile b =
      run_features(batch.wav_path() + " " + second + " --extractor seamless-m4t", "batch");
  batch.require_matches(b.tensor("features"));
  CHECK(torch::equal(b.tensor("attention_mask"), batch.tensor("attention_mask")));
  CHECK(b.metadata().at("extractor") == "seamless-m4t");
}

TEST_CASE("alto features refuses a rate mismatch unless told to resample", "[cli][features]") {
  const std::string wav = test::data_path("stereo44k_f32.wav");
  const std::string out = test::temp_path("rate.safetensors");
  const std::string base = std::string(ALTO_CLI_PATH) + " features " + wav + " -o " + out;
  CHECK(std::system((base + " --extractor whisper 2>/dev/null").c_str()) != 0);
  REQUIRE(std::system((base + " --extractor whisper --resample").c_str()) == 0);
  CHECK(SafetensorsFile(out).tensor("features").sizes() == torch::IntArrayRef({80, 3000}));
  CHECK(std::system((base + " --extractor kaldi-fbank --snip-edges maybe 2>/dev/null").c_str()) !=
        0);
}

TEST_CASE("alto features --sample-rate: Kaldi fbank and mel at 22.05 kHz equal torchaudio",
          "[cli][features][parity]") {
  const std::string wav = test::data_path("features/extra/chirp_22050.wav");
  const SafetensorsFile fbank(test::data_path("features/extra/fbank_22050.safetensors"));
  const torch::Tensor f = run_features(wav +
                                           " --extractor kaldi-fbank --sample-rate 22050 "
                                           "--num-mel-bins 40 --waveform-scale 32768",
                                       "fbank22050")
                              .tensor("features");
  test::require_close(f, fbank.tensor("expected"), 5e-3, 0, 1e-4, "fbank_22050");
  const SafetensorsFile mel(test::data_path("features/extra/melspec_22050.safetensors"));
  const SafetensorsFile out = run_features(
      wav + " --extractor mel --sample-rate 22050 --n-fft 1024 --hop-length 256 --n-mels 80",
      "mel22050");
  const torch::Tensor expected = mel.tensor("expected");
  test::require_close(out.tensor("features"), expected, 1e-6 * expected.abs().max().item<double>(),
                      2e-3, std::nullopt, "melspec_22050");
  CHECK(out.metadata().at("sample_rate") == "22050");
  // A flag the chosen extractor lacks is named with the extractor's own options.
  const std::string base =
      std::string(ALTO_CLI_PATH) + " features " + wav + " -o " + test::temp_path("bad.safetensors");
  CHECK(std::system((base + " --extractor mel --num-ceps 13 2>/dev/null").c_str()) != 0);
  const std::string err = test::temp_path("flag.err");
  std::system((base + " --extractor mel --num-ceps 13 2>" + err).c_str());
  std::ifstream in(err);
  const std::string message((std::istreambuf_iterator<char>(in)), {});
  CHECK(message.find("--num-ceps is not an option of the mel extractor") != std::string::npos);
}

TEST_CASE("alto features: a boolean option stands alone or takes true/false, anywhere",
          "[cli][features]") {
  const std::string wav = test::data_path("features/extra/chirp_22050.wav");
  const std::string base = " --extractor kaldi-fbank --sample-rate 22050";
  // Before the input (which CLI11 first hands to the flag), after it, and with a value.
  for (const std::string& args : {" --use-energy " + wav + base, wav + base + " --use-energy",
                                  base + " --use-energy true " + wav}) {
    INFO(args);
    const torch::Tensor f = run_features(args, "energy").tensor("features");
    CHECK(f.size(1) == 24);  // 23 mel bins + the log energy
  }
  CHECK(run_features(wav + base + " --use-energy false", "no_energy").tensor("features").size(1) ==
        23);
}

TEST_CASE("alto: a failure is one line on stderr; --verbose adds the full text and the stages",
          "[cli][features]") {
  // A 512 GB filterbank: libtorch's allocator refuses it with a multi-line message.
  const std::string args = "features --extractor mel --n-fft 1000000000 " +
                           test::data_path("stereo44k_f32.wav") + " -o " +
                           test::temp_path("huge.safetensors");
  const std::string brief = test::run_cli(args, 1, test::Stderr::kMerge);
  INFO(brief);
  CHECK(std::count(brief.begin(), brief.end(), '\n') == 1);
  CHECK(brief.rfind("alto: ", 0) == 0);
  const std::string verbose = test::run_cli("--verbose " + args, 1, test::Stderr::kMerge);
  INFO(verbose);
  CHECK(verbose.find("build extractor ") != std::string::npos);
  CHECK(verbose.find("peak RSS ") != std::string::npos);
}
