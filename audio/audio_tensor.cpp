#include "alto/audio/audio_tensor.h"

#include <torch/torch.h>

#include <algorithm>

#include "alto/core/error.h"

namespace alto::audio {

torch::Tensor to_tensor(const Audio& audio, torch::Device device) {
  auto cpu = torch::empty({audio.channels, audio.frames}, torch::kFloat32);
  std::copy(audio.samples.begin(), audio.samples.end(), cpu.data_ptr<float>());
  return cpu.to(device);
}

Audio audio_from_tensor(const torch::Tensor& samples, int sample_rate) {
  ALTO_CHECK(samples.dim() == 1 || samples.dim() == 2,
             "audio_from_tensor: samples must be [frames] or [channels, frames], got ",
             samples.sizes());
  ALTO_CHECK(samples.is_floating_point(), "audio_from_tensor: samples must be floating point, got ",
             samples.dtype());
  ALTO_CHECK(sample_rate > 0, "audio_from_tensor: sample_rate must be > 0, got ", sample_rate);
  auto rows = samples.dim() == 1 ? samples.unsqueeze(0) : samples;
  auto cpu = rows.to(torch::kCPU, torch::kFloat32).contiguous();
  Audio audio(static_cast<int>(cpu.size(0)), cpu.size(1), sample_rate);
  std::copy_n(cpu.data_ptr<float>(), cpu.numel(), audio.samples.data());
  return audio;
}

}  // namespace alto::audio
