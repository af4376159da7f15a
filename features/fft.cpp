#include "alto/features/fft.h"

#include <fftw3.h>

#include <map>
#include <mutex>
#include <new>

#include "alto/core/error.h"

namespace alto::features {

template <typename T>
AlignedBuffer<T>::AlignedBuffer(size_t size) : size_(size) {
  void* p = fftwf_malloc(sizeof(T) * (size == 0 ? 1 : size));
  if (p == nullptr) throw std::bad_alloc();
  data_.reset(static_cast<T*>(p));
  for (size_t i = 0; i < size; ++i) data_.get()[i] = T();
}

template <typename T>
void AlignedBuffer<T>::Free::operator()(T* p) const {
  fftwf_free(p);
}

template class AlignedBuffer<float>;
template class AlignedBuffer<std::complex<float>>;

namespace {

struct PlanPair {
  fftwf_plan forward;
  fftwf_plan inverse;
};

// Plans live for the whole process: they are small, and destroying them while another thread
// executes one would be a race. The cache itself is never destroyed either, so the plans stay
// reachable (and usable by threads still running) at exit.
PlanPair plans_for(int n) {
  static std::mutex mutex;
  static auto* const cache = new std::map<int, PlanPair>;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache->find(n);
  if (it != cache->end()) return it->second;
  AlignedBuffer<float> real(n);
  AlignedBuffer<std::complex<float>> complex(n / 2 + 1);
  auto* c = reinterpret_cast<fftwf_complex*>(complex.data());
  // FFTW_ESTIMATE, not FFTW_MEASURE: a measured plan is picked by timing, so two processes (two
  // corpus workers, a rerun) could pick different algorithms and round differently; features
  // must be the same bits in every process.
  PlanPair plans{fftwf_plan_dft_r2c_1d(n, real.data(), c, FFTW_ESTIMATE),
                 fftwf_plan_dft_c2r_1d(n, c, real.data(), FFTW_ESTIMATE)};
  ALTO_CHECK_AS(Error, plans.forward != nullptr && plans.inverse != nullptr,
                "FFTW could not plan a real FFT of size ", n);
  cache->emplace(n, plans);
  return plans;
}

}  // namespace

RealFft::RealFft(int n) : n_(n) {
  ALTO_CHECK(n >= 1, "FFT size must be >= 1, got ", n);
  const PlanPair plans = plans_for(n);
  forward_plan_ = plans.forward;
  inverse_plan_ = plans.inverse;
}

void RealFft::forward(const float* in, std::complex<float>* out) const {
  // An out-of-place r2c transform leaves its input intact; FFTW's signature is just not const.
  fftwf_execute_dft_r2c(static_cast<fftwf_plan>(forward_plan_), const_cast<float*>(in),
                        reinterpret_cast<fftwf_complex*>(out));
}

void RealFft::inverse(std::complex<float>* in, float* out) const {
  fftwf_execute_dft_c2r(static_cast<fftwf_plan>(inverse_plan_),
                        reinterpret_cast<fftwf_complex*>(in), out);
}

}  // namespace alto::features
