// Options the shared golden cases leave at their defaults, against torchaudio itself
// (tests/data/features/extra, written by scripts/gen-feature-parity.py).

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "alto/core/safetensors.h"
#include "alto/features/kaldi_mfcc.h"
#include "alto/features/mel_spectrogram.h"
#include "golden.h"
#include "test_util.h"

using namespace alto;
using namespace alto::features;
using nlohmann::json;

namespace {

// The torchaudio call's keyword arguments, set through the options' schema (the path JSON
// configs, CLI flags and Python keywords take).
template <typename Options>
Options options_of(const SafetensorsFile& file) {
  OptionValues values;
  const json options = json::parse(file.metadata().at("options"));
  for (const auto& [key, v] : options.items()) {
    if (v.is_boolean())
      values[key] = v.template get<bool>();
    else if (v.is_number_integer())
      values[key] = v.template get<int64_t>();
    else if (v.is_number())
      values[key] = v.template get<double>();
    else
      values[key] = v.template get<std::string>();
  }
  return Options::schema().make(values);
}

}  // namespace

TEST_CASE("Kaldi fbank and MFCC options equal torchaudio.compliance.kaldi",
          "[features][kaldi][parity]") {
  const char* cases[] = {"fbank_hamming",          "fbank_hanning",      "fbank_blackman",
                         "fbank_rectangular",      "fbank_energy",       "fbank_energy_htk",
                         "fbank_magnitude_linear", "fbank_frames_freqs", "fbank_plain",
                         "fbank_dither",           "mfcc_energy",        "mfcc_htk",
                         "mfcc_htk_energy",        "fbank_22050"};
  for (const char* name : cases) {
    SECTION(name) {
      const SafetensorsFile file(
          test::data_path(std::string("features/extra/") + name + ".safetensors"));
      const bool mfcc = file.metadata().at("function") == "torchaudio.compliance.kaldi.mfcc";
      const torch::Tensor x = file.tensor("input");
      const torch::Tensor actual = mfcc
                                       ? KaldiMfcc(options_of<KaldiMfccOptions>(file)).compute(x)
                                       : KaldiFbank(options_of<KaldiFbankOptions>(file)).compute(x);
      const bool log_fbank = mfcc || options_of<KaldiFbankOptions>(file).use_log_fbank;
      const torch::Tensor expected = file.tensor("expected");
      if (log_fbank) {
        // float32 noise in the weakest bins, as in the golden Kaldi cases.
        test::require_close(actual, expected, mfcc ? 2e-2 : 5e-3, 0, mfcc ? 1e-3 : 1e-4, name);
      } else {
        test::require_close(actual, expected, 1e-6 * expected.abs().max().item<double>(), 1e-3,
                            std::nullopt, name);
      }
    }
  }
}

TEST_CASE("MelSpectrogram options equal torchaudio.transforms.MelSpectrogram",
          "[features][mel][parity]") {
  for (const char* name :
       {"melspec_power1_nocenter", "melspec_constant_normalized", "melspec_22050",
        "melspec_defaults"}) {
    SECTION(name) {
      const SafetensorsFile file(
          test::data_path(std::string("features/extra/") + name + ".safetensors"));
      const MelSpectrogramOptions o = options_of<MelSpectrogramOptions>(file);
      const torch::Tensor expected = file.tensor("expected");
      test::require_close(MelSpectrogram(o).compute(file.tensor("input")), expected,
                          1e-6 * expected.abs().max().item<double>(), 2e-3, std::nullopt, name);
    }
  }
}
