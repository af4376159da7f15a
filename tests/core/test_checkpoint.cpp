// CheckpointBinder on hand-made checkpoints: names, shapes, tied weights, weight norm, dtypes.

#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "alto/core/checkpoint.h"
#include "alto/core/error.h"
#include "alto/models/blocks/basic.h"
#include "test_util.h"

using alto::CheckpointBinder;
using alto::LoadOptions;

namespace {

struct TinyNet : torch::nn::Module {
  TinyNet()
      : conv(register_module(
            "conv", alto::models::blocks::Conv1d(alto::models::blocks::Conv1dOptions{2, 4, 3},
                                                 torch::TensorOptions()))),
        proj(register_module("proj",
                             alto::models::blocks::Linear(4, 5, true, torch::TensorOptions()))) {}
  alto::models::blocks::Conv1d conv;
  alto::models::blocks::Linear proj;
};

alto::SafetensorsCheckpoint write(const std::string& name,
                                  const std::vector<std::pair<std::string, torch::Tensor>>& t) {
  const std::string path = alto::test::temp_path(name + ".safetensors");
  alto::save_safetensors(path, t);
  return alto::SafetensorsCheckpoint(path);
}

}  // namespace

TEST_CASE("binder fills parameters by name and views float32 data without copying",
          "[checkpoint][models]") {
  torch::manual_seed(3);
  const auto w = torch::randn({4, 2, 3}), b = torch::randn({4});
  const auto pw = torch::randn({5, 4}), pb = torch::randn({5});
  const auto checkpoint = write("plain", {{"net.conv.weight", w},
                                          {"net.conv.bias", b},
                                          {"net.proj.weight", pw},
                                          {"net.proj.bias", pb}});
  TinyNet net;
  CheckpointBinder binder(checkpoint, {}, "TinyNet");
  binder.bind(net, "net.");
  binder.finish();
  CHECK(torch::equal(net.conv->weight, w));
  CHECK(torch::equal(net.proj->bias, pb));
  CHECK(net.conv->weight.data_ptr() == checkpoint.tensor("net.conv.weight").data_ptr());
  const auto x = torch::randn({1, 2, 7});
  CHECK(torch::allclose(net.conv->forward(x), torch::conv1d(x, w, b)));
}

TEST_CASE("binder folds weight norm from both of PyTorch's namings", "[checkpoint][models]") {
  torch::manual_seed(4);
  const auto v = torch::randn({4, 2, 3}), g = torch::rand({4, 1, 1}) + 0.5;
  // w = g v / ||v||, the norm over every dimension but 0 (torch.nn.utils.weight_norm, dim=0).
  const auto expected = g * v / v.pow(2).sum({1, 2}, true).sqrt();
  const auto rest =
      std::vector<std::pair<std::string, torch::Tensor>>{{"conv.bias", torch::zeros({4})},
                                                         {"proj.weight", torch::zeros({5, 4})},
                                                         {"proj.bias", torch::zeros({5})}};
  for (const auto& [g_name, v_name] : {std::pair{"conv.weight_g", "conv.weight_v"},
                                       std::pair{"conv.parametrizations.weight.original0",
                                                 "conv.parametrizations.weight.original1"}}) {
    auto tensors = rest;
    tensors.emplace_back(g_name, g);
    tensors.emplace_back(v_name, v);
    const auto checkpoint = write(std::string("wn_") + g_name, tensors);
    TinyNet net;
    CheckpointBinder binder(checkpoint, {}, "TinyNet");
    binder.bind(net);
    binder.finish();  // g and v count as used
    CHECK(torch::allclose(net.conv->weight, expected, 1e-6, 1e-6));
  }
}

TEST_CASE("binder reports every mismatch at once and follows tied weights",
          "[checkpoint][models]") {
  const auto checkpoint = write("broken", {{"conv.weight", torch::zeros({4, 2, 5})},
                                           {"conv.bias", torch::zeros({4})},
                                           {"proj.bias", torch::zeros({5})},
                                           {"stray", torch::zeros({2, 2})}});
  TinyNet net;
  CheckpointBinder binder(checkpoint, {}, "TinyNet");
  binder.bind(net);
  CHECK(binder.contains("stray"));
  CHECK_THROWS_WITH(
      binder.finish(),
      Catch::Contains("does not fit TinyNet: 1 missing, 1 unexpected, 1 mis-shaped") &&
          Catch::Contains("missing: proj.weight (expected [5, 4])") &&
          Catch::Contains("unexpected: stray [2, 2]") &&
          Catch::Contains("mis-shaped: conv.weight: expected [4, 2, 3], found [4, 2, 5]"));

  const auto embedding = torch::randn({5, 4});
  const auto tied = write("tied", {{"embed.weight", embedding}});
  torch::Tensor head = torch::empty({5, 4});
  CheckpointBinder tied_binder(tied, {}, "head");
  tied_binder.bind(head, "head.weight", "embed.weight");
  tied_binder.finish();
  CHECK(torch::equal(head, embedding));
}

TEST_CASE("load options convert dtypes and reject what this libtorch cannot run",
          "[checkpoint][models]") {
  CHECK(alto::parse_dtype("bf16") == torch::kBFloat16);
  CHECK(alto::parse_dtype("float16") == torch::kFloat16);
  CHECK_THROWS_WITH(alto::parse_dtype("int8"), Catch::Contains("'int8'"));
  CHECK(alto::parse_device("cpu") == torch::Device(torch::kCPU));
  CHECK_THROWS_WITH(alto::parse_device("tpu"), Catch::Contains("'tpu'"));

  LoadOptions options;
  options.dtype = torch::kFloat16;
  CHECK_THROWS_AS(options.validate(), alto::Unsupported);
  options.dtype = torch::kInt32;
  CHECK_THROWS_WITH(options.validate(), Catch::Contains("dtype"));
  if (!torch::cuda::is_available()) {
    options = {};
    options.device = torch::Device(torch::kCUDA, 0);
    CHECK_THROWS_WITH(options.validate(), Catch::Contains("not available"));
  }

  // A float16 file loads into float32 or bfloat16 modules.
  const auto half = torch::randn({5, 4}).to(torch::kFloat16);
  const auto checkpoint = write("half", {{"w", half}});
  for (auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    LoadOptions o;
    o.dtype = dtype;
    torch::Tensor target = torch::empty({5, 4}, torch::TensorOptions().dtype(dtype));
    CheckpointBinder binder(checkpoint, o, "w");
    binder.bind(target, "w");
    binder.finish();
    CHECK(target.scalar_type() == dtype);
    CHECK(torch::allclose(target.to(torch::kFloat32), half.to(torch::kFloat32), 0, 1e-2));
  }
}
