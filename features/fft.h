#pragma once
// Single-precision real FFTs on FFTW. Plans are made once per size in a process-wide cache
// (FFTW's planner is not thread-safe, its executor is), so a RealFft is cheap to construct and
// one instance may be used from many threads at once, each with its own buffers.

#include <complex>
#include <cstddef>
#include <memory>
#include <vector>

namespace alto::features {

/// FFTW-aligned storage: every buffer handed to RealFft must come from here, because FFTW's
/// new-array execute requires the alignment the plan was made with.
template <typename T>
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t size);
  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  size_t size() const { return size_; }
  T& operator[](size_t i) { return data_.get()[i]; }
  const T& operator[](size_t i) const { return data_.get()[i]; }

 private:
  struct Free {
    void operator()(T* p) const;
  };
  std::unique_ptr<T, Free> data_;
  size_t size_ = 0;
};

/// |z|^2. std::norm computes it through hypot unless built with -ffast-math, which costs more
/// than the FFT itself.
inline float power_of(std::complex<float> z) { return z.real() * z.real() + z.imag() * z.imag(); }

class RealFft {
 public:
  /// n >= 1, any size (FFTW handles non powers of two such as Whisper's 400).
  explicit RealFft(int n);
  int size() const { return n_; }
  int num_bins() const { return n_ / 2 + 1; }
  /// in: n reals -> out: n/2 + 1 complex values (unnormalised, as numpy/torch rfft).
  void forward(const float* in, std::complex<float>* out) const;
  /// in: n/2 + 1 complex values (overwritten) -> out: n reals, unnormalised (n times irfft).
  void inverse(std::complex<float>* in, float* out) const;

 private:
  int n_;
  void* forward_plan_;
  void* inverse_plan_;
};

}  // namespace alto::features
