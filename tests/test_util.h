#pragma once
// Helpers shared by alto's tests: fixture paths, scratch files, synthetic signals, crafted WAVs.

#include <cstdint>
#include <string>
#include <vector>

#include "alto/audio/audio.h"

namespace alto::test {

std::string data_path(const std::string& name);  // tests/data/<name>
/// A fresh path in a per-process scratch folder.
std::string temp_path(const std::string& name);
std::vector<uint8_t> read_bytes(const std::string& path);
void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes);
/// This process's resident memory now, and the most it has had (kB).
long resident_kb();
long peak_resident_kb();

/// amplitude * sin(2 pi f n / rate) in every channel.
audio::Audio sine(double frequency, double amplitude, int sample_rate, int64_t frames,
                  int channels);
/// Deterministic white noise on the int16 grid (k / 32768).
audio::Audio grid_noise(int sample_rate, int64_t frames, int channels, uint32_t seed);

/// Least-squares fit of A sin(wn) + B cos(wn) over frames [begin, end) of channel 0.
struct SineFit {
  double snr_db;         // fitted sine power over residual power
  double delay_samples;  // lag of the fitted sine behind sin(wn)
  double gain;           // fitted amplitude
};
SineFit fit_sine(const audio::Audio& audio, double frequency, int64_t begin, int64_t end);

/// A RIFF/WAVE file: `format_tag` 1 (PCM) or 3 (float), little-endian interleaved `data`.
/// `declared_data_bytes` < 0 declares the true size.
std::vector<uint8_t> make_wav(int format_tag, int bits, int channels, int sample_rate,
                              const std::vector<uint8_t>& data, int64_t declared_data_bytes = -1);

}  // namespace alto::test
