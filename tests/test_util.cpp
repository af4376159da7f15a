#include "test_util.h"

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>

#include "alto/core/system_info.h"

namespace alto::test {

long resident_kb() { return memory_info().resident_kb; }

long peak_resident_kb() { return memory_info().peak_resident_kb; }

std::string data_path(const std::string& name) {
  return std::string(ALTO_TEST_DATA_DIR) + "/" + name;
}

std::string temp_path(const std::string& name) {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("alto_tests_" + std::to_string(getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return (dir / name).string();
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

audio::Audio sine(double frequency, double amplitude, int sample_rate, int64_t frames,
                  int channels) {
  audio::Audio a(channels, frames, sample_rate);
  for (int c = 0; c < channels; ++c)
    for (int64_t i = 0; i < frames; ++i)
      a.channel(c)[i] =
          static_cast<float>(amplitude * std::sin(2 * M_PI * frequency * i / sample_rate));
  return a;
}

audio::Audio grid_noise(int sample_rate, int64_t frames, int channels, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-16384, 16383);
  audio::Audio a(channels, frames, sample_rate);
  for (auto& s : a.samples) s = dist(rng) / 32768.0f;
  return a;
}

SineFit fit_sine(const audio::Audio& audio, double frequency, int64_t begin, int64_t end) {
  const double w = 2 * M_PI * frequency / audio.sample_rate;
  double ss = 0, cc = 0, sc = 0, xs = 0, xc = 0;
  const float* x = audio.channel(0);
  for (int64_t n = begin; n < end; ++n) {
    double s = std::sin(w * n), c = std::cos(w * n);
    ss += s * s;
    cc += c * c;
    sc += s * c;
    xs += x[n] * s;
    xc += x[n] * c;
  }
  const double det = ss * cc - sc * sc;
  const double a = (xs * cc - xc * sc) / det, b = (xc * ss - xs * sc) / det;
  double signal = 0, residual = 0;
  for (int64_t n = begin; n < end; ++n) {
    double fit = a * std::sin(w * n) + b * std::cos(w * n);
    signal += fit * fit;
    residual += (x[n] - fit) * (x[n] - fit);
  }
  return {10 * std::log10(signal / residual), -std::atan2(b, a) / w, std::hypot(a, b)};
}

namespace {
void put(std::vector<uint8_t>& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<uint8_t>(value >> (8 * i)));
}
void put_tag(std::vector<uint8_t>& out, const char* tag) { out.insert(out.end(), tag, tag + 4); }
}  // namespace

std::vector<uint8_t> make_wav(int format_tag, int bits, int channels, int sample_rate,
                              const std::vector<uint8_t>& data, int64_t declared_data_bytes) {
  const uint64_t declared = declared_data_bytes < 0 ? data.size() : declared_data_bytes;
  std::vector<uint8_t> out;
  put_tag(out, "RIFF");
  put(out, 36 + declared, 4);
  put_tag(out, "WAVE");
  put_tag(out, "fmt ");
  put(out, 16, 4);
  put(out, format_tag, 2);
  put(out, channels, 2);
  put(out, sample_rate, 4);
  put(out, static_cast<uint64_t>(sample_rate) * channels * bits / 8, 4);
  put(out, channels * bits / 8, 2);
  put(out, bits, 2);
  put_tag(out, "data");
  put(out, declared, 4);
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

}  // namespace alto::test
