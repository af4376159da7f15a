#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "alto/audio/audio_tensor.h"
#include "test_util.h"

using namespace alto;

TEST_CASE("Audio and tensors convert both ways", "[core]") {
  audio::Audio a = test::grid_noise(16000, 100, 2, 1);
  torch::Tensor t = audio::to_tensor(a);
  CHECK(t.sizes() == torch::IntArrayRef({2, 100}));
  CHECK(t[1][7].item<float>() == a.channel(1)[7]);
  audio::Audio b = audio::audio_from_tensor(t.to(torch::kFloat64), 16000);
  CHECK(b.samples == a.samples);
  audio::Audio mono = audio::audio_from_tensor(torch::ones({5}), 8000);
  CHECK(mono.channels == 1);
  CHECK(mono.frames == 5);
  CHECK_THROWS_WITH(audio::audio_from_tensor(torch::ones({1, 2, 3}), 8000),
                    Catch::Contains("[channels, frames]"));
  CHECK_THROWS_WITH(audio::audio_from_tensor(torch::ones({3}, torch::kInt64), 8000),
                    Catch::Contains("floating point"));
}
