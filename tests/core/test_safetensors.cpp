#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "alto/core/error.h"
#include "alto/core/safetensors.h"
#include "test_util.h"

using namespace alto;

namespace {

// A file with the given header text and `data_bytes` zero bytes of data.
std::string crafted(const std::string& name, const std::string& header, size_t data_bytes,
                    int64_t declared_header_bytes = -1) {
  std::vector<uint8_t> bytes(8);
  const uint64_t n = declared_header_bytes < 0 ? header.size() : declared_header_bytes;
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<uint8_t>(n >> (8 * i));
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.resize(bytes.size() + data_bytes, 0);
  const std::string path = test::temp_path(name);
  test::write_bytes(path, bytes);
  return path;
}

}  // namespace

TEST_CASE("safetensors round-trips every dtype with metadata", "[safetensors]") {
  torch::manual_seed(0);
  std::vector<std::pair<std::string, torch::Tensor>> tensors = {
      {"f32", torch::randn({3, 4})},
      {"f64", torch::randn({5}, torch::kFloat64)},
      {"f16", torch::randn({2, 2}).to(torch::kFloat16)},
      {"bf16", torch::randn({7}).to(torch::kBFloat16)},
      {"i64", torch::arange(6, torch::kInt64).view({2, 3})},
      {"i32", torch::tensor({-1, 2, 3}, torch::kInt32)},
      {"i16", torch::tensor({-5, 4}, torch::kInt16)},
      {"i8", torch::tensor({-7}, torch::kInt8)},
      {"u8", torch::tensor({250}, torch::kUInt8)},
      {"bool", torch::tensor({true, false})},
      {"scalar", torch::tensor(3.5f)},
      {"empty", torch::zeros({0, 4})},
      {"strided", torch::randn({4, 4}).t()}};
  const std::string path = test::temp_path("roundtrip.safetensors");
  save_safetensors(path, tensors, {{"model", "tiny"}, {"rate", "16000"}});
  const SafetensorsFile file(path);
  std::vector<std::string> expected_names;
  for (const auto& [n, t] : tensors) expected_names.push_back(n);
  CHECK(file.names() == expected_names);
  CHECK(file.metadata().at("model") == "tiny");
  for (const auto& [name, t] : tensors) {
    INFO(name);
    const torch::Tensor back = file.tensor(name);
    CHECK(back.scalar_type() == t.scalar_type());
    CHECK(back.sizes() == t.sizes());
    CHECK(torch::equal(back, t.contiguous()));
  }
  // The byte layout the Hugging Face reader expects.
  const auto bytes = test::read_bytes(path);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];
  CHECK(n % 8 == 0);
  CHECK(bytes[8] == '{');
}

TEST_CASE("safetensors tensors are zero-copy views that never write the file", "[safetensors]") {
  const std::string path = test::temp_path("view.safetensors");
  save_safetensors(path, {{"w", torch::ones({1000})}});
  const auto before = test::read_bytes(path);
  {
    const SafetensorsFile file(path);
    torch::Tensor a = file.tensor("w");
    CHECK(a.data_ptr() == file.tensor("w").data_ptr());
    a.fill_(7.0f);  // private copy-on-write pages
  }
  CHECK(test::read_bytes(path) == before);
  torch::Tensor survivor;
  {
    const SafetensorsFile file(path);
    survivor = file.tensor("w");
  }
  CHECK(survivor.sum().item<float>() == 1000.0f);  // the view keeps the mapping alive
}

TEST_CASE("safetensors reads the golden feature files", "[safetensors]") {
  const SafetensorsFile file(test::data_path("features/stft_512_128__chirp_1s.safetensors"));
  CHECK(file.info("input").shape == std::vector<int64_t>{16000});
  CHECK(file.tensor("expected_real").sizes() == torch::IntArrayRef({257, 126}));
  CHECK(file.metadata().at("kind") == "torch_stft");
}

TEST_CASE("hostile safetensors files are IoErrors naming the file", "[safetensors][errors]") {
  const std::string good = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  struct Case {
    const char* name;
    std::string path;
    const char* message;
  };
  const Case cases[] = {
      {"tiny", crafted("tiny.st", "", 0, 0).substr(0), "not valid JSON"},
      {"truncated data", crafted("trunc.st", good, 4), "outside"},
      {"header past EOF", crafted("past.st", good, 8, 4096), "does not fit"},
      {"huge header", crafted("huge.st", good, 8, int64_t{1} << 40), "does not fit"},
      {"bad json", crafted("json.st", "{\"a\": [", 0), "not valid JSON"},
      {"overlap",
       crafted("overlap.st",
               R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
               R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
               12),
       "overlap"},
      {"size mismatch",
       crafted("size.st", R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
       "expected 12"},
      {"negative shape",
       crafted("neg.st", R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8),
       "negative"},
      {"metadata", crafted("meta.st", R"({"__metadata__":{"k":1}})", 0), "not a string"},
      {"missing offsets", crafted("nooff.st", R"({"a":{"dtype":"F32","shape":[2]}})", 8),
       "data_offsets"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    CHECK_THROWS_AS(SafetensorsFile(c.path), IoError);
    CHECK_THROWS_WITH(SafetensorsFile(c.path),
                      Catch::Contains(c.path) && Catch::Contains(c.message));
  }
  const std::string f8 =
      crafted("f8.st", R"({"a":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", 2);
  CHECK_THROWS_AS(SafetensorsFile(f8), Unsupported);
  CHECK_THROWS_WITH(SafetensorsFile(f8), Catch::Contains("F8_E4M3"));
  std::ofstream(test::temp_path("short.st")) << "abc";
  CHECK_THROWS_WITH(SafetensorsFile(test::temp_path("short.st")), Catch::Contains("8-byte"));
  CHECK_THROWS_AS(SafetensorsFile(test::temp_path("does-not-exist.st")), IoError);
  CHECK_THROWS_AS(SafetensorsFile(test::temp_path("")), IoError);  // a directory
}

TEST_CASE("sharded checkpoints resolve names through the index", "[safetensors]") {
  const std::string dir = test::temp_path("sharded");
  std::filesystem::create_directories(dir);
  save_safetensors(dir + "/model-00001-of-00002.safetensors", {{"a", torch::ones({2})}});
  save_safetensors(dir + "/model-00002-of-00002.safetensors", {{"b", torch::zeros({3})}});
  std::ofstream(dir + "/model.safetensors.index.json")
      << R"({"metadata": {"total_size": 20}, "weight_map": {"a": "model-00001-of-00002.safetensors",
             "b": "model-00002-of-00002.safetensors"}})";
  const SafetensorsCheckpoint ckpt(dir);
  CHECK(ckpt.names() == std::vector<std::string>{"a", "b"});
  CHECK(ckpt.tensor("b").numel() == 3);
  CHECK(ckpt.metadata().at("total_size") == "20");
  CHECK_THROWS_WITH(ckpt.tensor("c"), Catch::Contains("'c'"));

  std::ofstream(dir + "/bad.index.json")
      << R"({"weight_map": {"a": "model-00002-of-00002.safetensors"}})";
  CHECK_THROWS_WITH(SafetensorsCheckpoint(dir + "/bad.index.json"),
                    Catch::Contains("does not contain"));
  std::ofstream(dir + "/missing.index.json") << R"({"weight_map": {"a": "nope.safetensors"}})";
  CHECK_THROWS_WITH(SafetensorsCheckpoint(dir + "/missing.index.json"),
                    Catch::Contains("nope.safetensors"));
}
