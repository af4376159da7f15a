#pragma once
// Conversions between alto::Audio and torch tensors.

#include <torch/types.h>

#include "alto/audio/audio.h"

namespace alto::audio {

/// `[channels, frames]` float32 on `device` (a copy).
torch::Tensor to_tensor(const Audio& audio, torch::Device device = torch::kCPU);

/// From `[frames]` (mono) or `[channels, frames]`, any floating dtype, any device.
Audio audio_from_tensor(const torch::Tensor& samples, int sample_rate);

}  // namespace alto::audio
