// Times alto's feature extractors on a long speech signal, on one thread and on all cores.
// Driven by bench/features, which times the Python references on the same samples in the same
// run and reports the ratios.
//
// alto_bench_features SPEECH_FILE SECONDS [--write-input RAW_F32] [--repeat N]

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "alto/audio/audio_tensor.h"
#include "alto/audio/load.h"
#include "alto/core/threading.h"
#include "alto/features/kaldi_fbank.h"
#include "alto/features/mel_spectrogram.h"
#include "alto/features/whisper_feature_extractor.h"

namespace {

double best_seconds(int repeat, const std::function<void()>& fn) {
  fn();  // warm-up: FFTW plans, allocations
  double best = 1e30;
  for (int i = 0; i < repeat; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr
        << "usage: alto_bench_features SPEECH_FILE SECONDS [--write-input RAW] [--repeat N]\n";
    return 1;
  }
  try {
    const std::string speech = argv[1];
    const double seconds = std::stod(argv[2]);
    std::string raw;
    int repeat = 5;
    for (int i = 3; i + 1 < argc; i += 2) {
      if (std::strcmp(argv[i], "--write-input") == 0) raw = argv[i + 1];
      if (std::strcmp(argv[i], "--repeat") == 0) repeat = std::stoi(argv[i + 1]);
    }
    alto::audio::DecodeOptions load;
    load.sample_rate = 16000;
    load.mono = true;
    const torch::Tensor clip = alto::audio::to_tensor(alto::audio::load_audio(speech, load))[0];
    // Tile the sample to the requested duration.
    const int64_t n = static_cast<int64_t>(seconds * 16000);
    const torch::Tensor x = clip.repeat({n / clip.numel() + 1}).slice(0, 0, n).contiguous();
    if (!raw.empty()) {
      std::ofstream(raw, std::ios::binary)
          .write(static_cast<const char*>(x.data_ptr()), static_cast<std::streamsize>(n * 4));
    }

    alto::features::PaddingOptions long_form;
    long_form.padding = alto::features::PaddingOptions::Strategy::kLongest;
    long_form.truncation = false;
    const alto::features::WhisperFeatureExtractor whisper;
    alto::features::KaldiFbankOptions fbank_options;
    fbank_options.num_mel_bins = 80;
    const alto::features::KaldiFbank fbank(fbank_options);
    alto::features::MelSpectrogramOptions mel_options;
    mel_options.n_mels = 80;
    mel_options.hop_length = 160;
    const alto::features::MelSpectrogram mel(mel_options);

    const std::vector<std::pair<std::string, std::function<void()>>> jobs = {
        {"whisper_log_mel_80", [&] { whisper.compute(x, long_form); }},
        {"kaldi_fbank_80", [&] { fbank.compute(x); }},
        {"mel_spectrogram_80", [&] { mel.compute(x); }}};
    nlohmann::json out = {{"seconds", seconds}, {"cores", alto::default_num_threads()}};
    for (const auto& [name, fn] : jobs) {
      alto::set_num_threads(1);
      const double one = best_seconds(repeat, fn);
      alto::set_num_threads(alto::default_num_threads());
      const double all = best_seconds(repeat, fn);
      out[name] = {{"one_thread_s", one}, {"all_threads_s", all}};
    }
    std::cout << out.dump() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "alto_bench_features: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
