#include "alto/features/mel.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

#include "alto/core/error.h"
#include "alto/core/warning.h"

namespace alto::features {

const ChoiceNames<MelScale>& mel_scale_names() {
  static const ChoiceNames<MelScale> names = {
      {"htk", MelScale::kHtk}, {"slaney", MelScale::kSlaney}, {"kaldi", MelScale::kKaldi}};
  return names;
}

const ChoiceNames<MelNorm>& mel_norm_names() {
  static const ChoiceNames<MelNorm> names = {
      {"none", MelNorm::kNone}, {"slaney", MelNorm::kSlaney}, {"", MelNorm::kNone}};
  return names;
}

MelScale parse_mel_scale(const std::string& name) {
  return parse_choice(mel_scale_names(), name, "mel_scale");
}

MelNorm parse_mel_norm(const std::string& name) {
  return parse_choice(mel_norm_names(), name, "mel norm");
}

std::string to_string(MelScale scale) { return choice_name(mel_scale_names(), scale); }
std::string to_string(MelNorm norm) { return choice_name(mel_norm_names(), norm); }

namespace {
constexpr double kSlaneyMinLogHertz = 1000.0;
constexpr double kSlaneyMinLogMel = 15.0;
const double kSlaneyLogStep = 27.0 / std::log(6.4);

// numpy.linspace: start + i * step, with the last point exactly `stop`.
std::vector<double> linspace(double start, double stop, int num) {
  std::vector<double> out(num);
  const double step = num > 1 ? (stop - start) / (num - 1) : 0.0;
  for (int i = 0; i < num; ++i) out[i] = start + i * step;
  if (num > 1) out[num - 1] = stop;
  return out;
}
}  // namespace

double hertz_to_mel(double hertz, MelScale scale) {
  switch (scale) {
    case MelScale::kHtk:
      return 2595.0 * std::log10(1.0 + hertz / 700.0);
    case MelScale::kKaldi:
      return 1127.0 * std::log(1.0 + hertz / 700.0);
    case MelScale::kSlaney:
      if (hertz >= kSlaneyMinLogHertz)
        return kSlaneyMinLogMel + std::log(hertz / kSlaneyMinLogHertz) * kSlaneyLogStep;
      return 3.0 * hertz / 200.0;
  }
  return 0.0;
}

double mel_to_hertz(double mel, MelScale scale) {
  switch (scale) {
    case MelScale::kHtk:
      return 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0);
    case MelScale::kKaldi:
      return 700.0 * (std::exp(mel / 1127.0) - 1.0);
    case MelScale::kSlaney:
      if (mel >= kSlaneyMinLogMel)
        return kSlaneyMinLogHertz * std::exp((mel - kSlaneyMinLogMel) / kSlaneyLogStep);
      return 200.0 * mel / 3.0;
  }
  return 0.0;
}

torch::Tensor mel_filter_bank(const MelFilterBankOptions& o) {
  ALTO_CHECK(o.num_frequency_bins >= 2, "mel filterbank: num_frequency_bins must be >= 2, got ",
             o.num_frequency_bins);
  ALTO_CHECK(o.num_mel_filters >= 1, "mel filterbank: n_mels must be >= 1, got ",
             o.num_mel_filters);
  ALTO_CHECK(int64_t{o.num_frequency_bins} * o.num_mel_filters <= kMaxMelFilterBankSize,
             "mel filterbank: ", o.num_mel_filters, " filters over ", o.num_frequency_bins,
             " frequency bins (n_fft=", 2 * (int64_t{o.num_frequency_bins} - 1),
             ") exceed the largest filterbank alto builds (", kMaxMelFilterBankSize, " weights)");
  ALTO_CHECK(o.min_frequency >= 0 && o.min_frequency < o.max_frequency, "mel filterbank: f_min (",
             o.min_frequency, ") must be >= 0 and below f_max (", o.max_frequency, ")");
  ALTO_CHECK(o.max_frequency <= o.sampling_rate / 2.0, "mel filterbank: f_max (", o.max_frequency,
             ") must be <= sampling_rate / 2 (", o.sampling_rate / 2.0, ")");
  const int n_freq = o.num_frequency_bins;
  const int n_mels = o.num_mel_filters;
  const std::vector<double> mel_points =
      linspace(hertz_to_mel(o.min_frequency, o.mel_scale),
               hertz_to_mel(o.max_frequency, o.mel_scale), n_mels + 2);
  std::vector<double> filter_points(n_mels + 2);
  std::vector<double> bin_points(n_freq);
  if (o.triangularize_in_mel_space) {
    // Kaldi: bins at k * sr / n_fft, mapped to mel; SeamlessM4T passes the bins below Nyquist.
    const double bin_width = static_cast<double>(o.sampling_rate) / (n_freq * 2);
    for (int k = 0; k < n_freq; ++k) bin_points[k] = hertz_to_mel(bin_width * k, o.mel_scale);
    filter_points = mel_points;
  } else {
    bin_points = linspace(0.0, static_cast<double>(o.sampling_rate / 2), n_freq);
    for (int i = 0; i < n_mels + 2; ++i)
      filter_points[i] = mel_to_hertz(mel_points[i], o.mel_scale);
  }
  torch::Tensor filters = torch::zeros({n_freq, n_mels}, torch::kFloat64);
  auto f = filters.accessor<double, 2>();
  int empty = 0;
  for (int m = 0; m < n_mels; ++m) {
    const double lower_width = filter_points[m + 1] - filter_points[m];
    const double upper_width = filter_points[m + 2] - filter_points[m + 1];
    const double enorm =
        o.norm == MelNorm::kSlaney ? 2.0 / (filter_points[m + 2] - filter_points[m]) : 1.0;
    bool any = false;
    for (int k = 0; k < n_freq; ++k) {
      const double down = (bin_points[k] - filter_points[m]) / lower_width;
      const double up = (filter_points[m + 2] - bin_points[k]) / upper_width;
      const double w = std::max(0.0, std::min(down, up));
      f[k][m] = w * enorm;
      any = any || w > 0.0;
    }
    if (!any) ++empty;
  }
  // torchaudio and transformers warn and keep the all-zero filters (their bands stay at zero
  // power), so the features keep their shape.
  if (empty > 0)
    warn(detail::concat("mel filterbank: ", empty, " of n_mels=", n_mels,
                        " filters cover no FFT bin; n_mels may be too many for ", n_freq,
                        " frequency bins (n_fft=", 2 * (n_freq - 1), ")"));
  return filters;
}

torch::Tensor kaldi_mel_banks(int num_bins, int padded_window_size, double sample_frequency,
                              double low_freq, double high_freq) {
  ALTO_CHECK(num_bins > 3, "num_mel_bins must be > 3, got ", num_bins);
  ALTO_CHECK(int64_t{num_bins} * (padded_window_size / 2 + 1) <= kMaxMelFilterBankSize,
             "Kaldi mel banks: ", num_bins, " bins over a padded window of ", padded_window_size,
             " samples exceed the largest filterbank alto builds (", kMaxMelFilterBankSize,
             " weights)");
  const double nyquist = 0.5 * sample_frequency;
  if (high_freq <= 0.0) high_freq += nyquist;
  ALTO_CHECK(low_freq >= 0.0 && low_freq < nyquist && high_freq > 0.0 && high_freq <= nyquist &&
                 low_freq < high_freq,
             "bad values in options: low_freq ", low_freq, " and high_freq ", high_freq,
             " vs. nyquist ", nyquist);
  const int num_fft_bins = padded_window_size / 2;
  // torchaudio evaluates these in float32; doing the same keeps the weights bit-close.
  const float fft_bin_width = static_cast<float>(sample_frequency / padded_window_size);
  const double mel_low = 1127.0 * std::log(1.0 + low_freq / 700.0);
  const double mel_high = 1127.0 * std::log(1.0 + high_freq / 700.0);
  const float mel_low_f = static_cast<float>(mel_low);
  const float delta = static_cast<float>((mel_high - mel_low) / (num_bins + 1));
  torch::Tensor banks = torch::zeros({num_bins, num_fft_bins + 1}, torch::kFloat32);
  auto b = banks.accessor<float, 2>();
  for (int m = 0; m < num_bins; ++m) {
    const float left = mel_low_f + static_cast<float>(m) * delta;
    const float center = mel_low_f + (static_cast<float>(m) + 1.0f) * delta;
    const float right = mel_low_f + (static_cast<float>(m) + 2.0f) * delta;
    bool any = false;
    for (int k = 0; k < num_fft_bins; ++k) {
      const float freq = fft_bin_width * static_cast<float>(k);
      const float mel = 1127.0f * std::log(1.0f + freq / 700.0f);
      const float up = (mel - left) / (center - left);
      const float down = (right - mel) / (right - center);
      b[m][k] = std::max(0.0f, std::min(up, down));
      any = any || b[m][k] > 0.0f;
    }
    ALTO_CHECK(any, "Kaldi mel bank ", m, " of num_mel_bins=", num_bins,
               " covers no FFT bin; num_mel_bins is too many for a ", padded_window_size,
               "-point FFT between low_freq ", low_freq, " and high_freq ", high_freq);
  }
  return banks;
}

SparseMelBank::SparseMelBank(const torch::Tensor& filters) {
  ALTO_CHECK(filters.dim() == 2, "mel filters must be [n_freq, n_mels], got ", filters.sizes());
  const torch::Tensor f = filters.to(torch::kFloat32).contiguous();
  num_bins_ = static_cast<int>(f.size(0));
  const int n_mels = static_cast<int>(f.size(1));
  auto a = f.accessor<float, 2>();
  offset_.push_back(0);
  for (int m = 0; m < n_mels; ++m) {
    int first = 0;
    while (first < num_bins_ && a[first][m] == 0.0f) ++first;
    int last = num_bins_ - 1;
    while (last >= first && a[last][m] == 0.0f) --last;
    begin_.push_back(first);
    for (int k = first; k <= last; ++k) weights_.push_back(a[k][m]);
    offset_.push_back(static_cast<int>(weights_.size()));
  }
}

void SparseMelBank::apply(const float* power, float* mel) const {
  const int n_mels = num_mels();
  for (int m = 0; m < n_mels; ++m) {
    const float* w = weights_.data() + offset_[m];
    const float* p = power + begin_[m];
    const int count = offset_[m + 1] - offset_[m];
    float sum = 0.0f;
    for (int k = 0; k < count; ++k) sum += w[k] * p[k];
    mel[m] = sum;
  }
}

}  // namespace alto::features
