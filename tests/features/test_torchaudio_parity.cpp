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

template <typename T>
void set(const json& j, const char* key, T& field) {
  if (j.contains(key)) field = j[key].get<T>();
}

KaldiMfccOptions kaldi_options(const json& j) {
  KaldiMfccOptions o;
  set(j, "num_mel_bins", o.num_mel_bins);
  set(j, "num_ceps", o.num_ceps);
  set(j, "cepstral_lifter", o.cepstral_lifter);
  set(j, "frame_length", o.frame_length);
  set(j, "frame_shift", o.frame_shift);
  set(j, "low_freq", o.low_freq);
  set(j, "high_freq", o.high_freq);
  set(j, "snip_edges", o.snip_edges);
  set(j, "use_energy", o.use_energy);
  set(j, "htk_compat", o.htk_compat);
  set(j, "raw_energy", o.raw_energy);
  set(j, "energy_floor", o.energy_floor);
  set(j, "use_power", o.use_power);
  set(j, "use_log_fbank", o.use_log_fbank);
  set(j, "round_to_power_of_two", o.round_to_power_of_two);
  set(j, "preemphasis_coefficient", o.preemphasis_coefficient);
  set(j, "remove_dc_offset", o.remove_dc_offset);
  set(j, "subtract_mean", o.subtract_mean);
  set(j, "dither", o.dither);
  set(j, "blackman_coeff", o.blackman_coeff);
  if (j.contains("window_type")) o.window_type = parse_window_type(j["window_type"]);
  return o;
}

}  // namespace

TEST_CASE("Kaldi fbank and MFCC options equal torchaudio.compliance.kaldi",
          "[features][kaldi][parity]") {
  const char* cases[] = {"fbank_hamming",          "fbank_hanning",      "fbank_blackman",
                         "fbank_rectangular",      "fbank_energy",       "fbank_energy_htk",
                         "fbank_magnitude_linear", "fbank_frames_freqs", "fbank_plain",
                         "fbank_dither",           "mfcc_energy",        "mfcc_htk",
                         "mfcc_htk_energy"};
  for (const char* name : cases) {
    SECTION(name) {
      const SafetensorsFile file(
          test::data_path(std::string("features/extra/") + name + ".safetensors"));
      const json options = json::parse(file.metadata().at("options"));
      const KaldiMfccOptions o = kaldi_options(options);
      const bool mfcc = file.metadata().at("function") == "torchaudio.compliance.kaldi.mfcc";
      const torch::Tensor x = file.tensor("input");
      const torch::Tensor actual = mfcc ? KaldiMfcc(o).compute(x) : KaldiFbank(o).compute(x);
      const torch::Tensor expected = file.tensor("expected");
      if (o.use_log_fbank) {
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
  for (const char* name : {"melspec_power1_nocenter", "melspec_constant_normalized"}) {
    SECTION(name) {
      const SafetensorsFile file(
          test::data_path(std::string("features/extra/") + name + ".safetensors"));
      const json j = json::parse(file.metadata().at("options"));
      MelSpectrogramOptions o;
      set(j, "n_fft", o.n_fft);
      set(j, "win_length", o.win_length);
      set(j, "hop_length", o.hop_length);
      set(j, "n_mels", o.n_mels);
      set(j, "power", o.power);
      set(j, "center", o.center);
      set(j, "normalized", o.normalized);
      set(j, "f_min", o.f_min);
      if (j.contains("f_max")) o.f_max = j["f_max"].get<double>();
      if (j.contains("pad_mode")) o.pad_mode = parse_pad_mode(j["pad_mode"]);
      if (j.contains("norm")) o.norm = parse_mel_norm(j["norm"]);
      if (j.contains("mel_scale")) o.mel_scale = parse_mel_scale(j["mel_scale"]);
      const torch::Tensor expected = file.tensor("expected");
      test::require_close(MelSpectrogram(o).compute(file.tensor("input")), expected,
                          1e-6 * expected.abs().max().item<double>(), 2e-3, std::nullopt, name);
    }
  }
}
