// CheckpointBinder on hand-made checkpoints: names, shapes, tied weights, weight norm, dtypes,
// and weights declared without memory until the checkpoint is known to fit.

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

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

// A checkpoint of float32 zeros written without allocating them: the header, then a sparse file.
void write_sparse_checkpoint(const std::string& path,
                             const std::vector<std::pair<std::string, std::vector<int64_t>>>& t) {
  std::string header = "{";
  uint64_t offset = 0;
  for (const auto& [name, shape] : t) {
    uint64_t bytes = 4;
    std::string dims;
    for (const int64_t d : shape) {
      bytes *= d;
      dims += (dims.empty() ? "" : ",") + std::to_string(d);
    }
    header += (offset ? "," : "") +
              ("\"" + name + "\":{\"dtype\":\"F32\",\"shape\":[" + dims + "],\"data_offsets\":[" +
               std::to_string(offset) + "," + std::to_string(offset + bytes) + "]}");
    offset += bytes;
  }
  header += "}";
  header.resize((header.size() + 7) / 8 * 8, ' ');
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    const uint64_t length = header.size();  // little-endian on every machine alto builds for
    out.write(reinterpret_cast<const char*>(&length), 8);
    out << header;
  }
  std::filesystem::resize_file(path, 8 + header.size() + offset);
}

struct TwoLayers : torch::nn::Module {
  TwoLayers(int64_t width, int64_t last_width)
      : first(register_module(
            "first", alto::models::blocks::Linear(width, width, false, torch::TensorOptions()))),
        last(register_module("last", alto::models::blocks::Linear(width, last_width, false,
                                                                  torch::TensorOptions()))) {}
  alto::models::blocks::Linear first, last;
};

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
  // int8 is a load option, not a tensor dtype: float32 activations with int8 linear weights.
  const LoadOptions int8 = LoadOptions::parse("cpu", "int8");
  CHECK(int8.dtype == torch::kFloat32);
  CHECK(int8.linear_weights == LoadOptions::LinearWeights::kInt8);
  CHECK(int8.precision() == "int8");
  CHECK(int8.to_string() == "LoadOptions(device=cpu, dtype=float32, linear_weights=int8)");
  CHECK(LoadOptions::parse("cpu", "bf16").precision() == "bfloat16");
  CHECK_THROWS_WITH(LoadOptions::parse("cpu", "int4"),
                    Catch::Contains("'int4'") && Catch::Contains("int8"));
  LoadOptions int8_bf16 = int8;
  int8_bf16.dtype = torch::kBFloat16;
  CHECK_THROWS_WITH(int8_bf16.validate(), Catch::Contains("float32 activations"));
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

TEST_CASE("weights declared under a binder hold no memory until the checkpoint fits",
          "[checkpoint][models]") {
  // 64 MiB of float32 weights; the config's last layer disagrees with the checkpoint.
  const std::string path = alto::test::temp_path("sparse.safetensors");
  write_sparse_checkpoint(path, {{"first.weight", {4096, 4096}}, {"last.weight", {8, 4096}}});
  const alto::SafetensorsCheckpoint checkpoint(path);
  LoadOptions bf16;
  bf16.dtype = torch::kBFloat16;  // every tensor would be converted: read and copied
  const long before = alto::test::peak_resident_kb();
  {
    CheckpointBinder binder(checkpoint, bf16, "TwoLayers");
    TwoLayers net(4096, 9);
    CHECK(net.first->weight.sizes() == torch::IntArrayRef({4096, 4096}));
    CHECK(net.first->weight.stride(0) == 0);                 // a placeholder
    CHECK_THROWS_AS(net.first->weight.add_(1), c10::Error);  // never written by mistake
    binder.bind(net);
    CHECK_THROWS_WITH(
        binder.finish(),
        Catch::Contains("mis-shaped: last.weight: expected [9, 4096], found [8, 4096]"));
    CHECK(net.first->weight.stride(0) == 0);  // nothing was read or converted
  }
  CHECK(alto::test::peak_resident_kb() - before < 16 * 1024);

  // The same checkpoint with a config that fits: the weights arrive, converted, in finish().
  CheckpointBinder binder(checkpoint, bf16, "TwoLayers");
  TwoLayers net(4096, 8);
  binder.bind(net);
  bool prepared = false;
  binder.then([&] { prepared = net.first->weight.stride(0) == 4096; });
  CHECK_FALSE(prepared);
  binder.finish();
  CHECK(prepared);
  CHECK(net.first->weight.scalar_type() == torch::kBFloat16);
  CHECK(net.first->weight.abs().max().item<float>() == 0);
  CHECK(alto::test::peak_resident_kb() - before > 24 * 1024);  // the measure sees a load
}

TEST_CASE("a config declaring more weights than the checkpoint holds is refused while declaring",
          "[checkpoint][models]") {
  const std::string path = alto::test::temp_path("small.safetensors");
  write_sparse_checkpoint(path, {{"first.weight", {64, 64}}, {"last.weight", {8, 64}}});
  const alto::SafetensorsCheckpoint checkpoint(path);
  CheckpointBinder binder(checkpoint, {}, "TwoLayers");
  // A width from a hostile config.json: refused before libtorch is asked for 4 PB.
  CHECK_THROWS_WITH(TwoLayers(1 << 25, 8),
                    Catch::Contains("small.safetensors does not fit TwoLayers") &&
                        Catch::Contains("declares more weights than the checkpoint holds") &&
                        Catch::Contains("[33554432, 33554432]"));
  // Layer after layer of small weights: stopped once they outnumber the checkpoint's tensors.
  std::vector<alto::models::blocks::Linear> layers;
  CHECK_THROWS_WITH(
      [&] {
        for (int i = 0; i < 1000000; ++i) layers.emplace_back(1, 1, false, torch::TensorOptions());
      }(),
      Catch::Contains("declares more weights than the checkpoint holds"));
  CHECK(layers.size() < 100);
  CHECK_THROWS_WITH(alto::declare_weight({INT64_MAX, INT64_MAX}, {}),
                    Catch::Contains("more elements than a tensor can hold"));
  CHECK_THROWS_WITH(alto::declare_weight({-1, 4}, {}), Catch::Contains("negative size"));
}

TEST_CASE("a weight declared but never bound is an error, not a placeholder in use",
          "[checkpoint][models]") {
  const std::string path = alto::test::temp_path("one.safetensors");
  write_sparse_checkpoint(path, {{"w", {2, 2}}});
  const alto::SafetensorsCheckpoint checkpoint(path);
  CheckpointBinder binder(checkpoint, {}, "Forgetful");
  torch::Tensor w = alto::declare_weight({2, 2}, {});
  torch::Tensor forgotten = alto::declare_weight({3}, {});
  binder.bind(w, "w");
  CHECK_THROWS_WITH(binder.finish(), Catch::Contains("Forgetful: 1 declared weight(s) were never "
                                                     "bound"));
}
