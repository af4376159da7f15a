// safetensors: round trips, zero-copy views, the byte layout other readers expect, the golden
// features file, sharded checkpoints and one deliberately broken file per header check.

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "alto/core/error.h"
#include "alto/core/safetensors.h"
#include "test_util.h"

using namespace alto;
using Catch::Contains;

namespace {

/// A safetensors file from its header text and data bytes, no padding.
std::vector<uint8_t> make_file(const std::string& header, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> bytes;
  bytes.reserve(8 + header.size() + data.size());
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<uint8_t>(n >> (8 * i)));
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

std::string write_file(const std::string& name, const std::vector<uint8_t>& bytes) {
  const std::string path = test::temp_path(name);
  test::write_bytes(path, bytes);
  return path;
}

std::string write_file(const std::string& name, const std::string& header, size_t data_bytes) {
  return write_file(name, make_file(header, std::vector<uint8_t>(data_bytes, 0)));
}

/// Opening `path` throws IoError naming the file and `cause`.
void check_io_error(const std::string& path, const std::string& cause) {
  CHECK_THROWS_AS(SafetensorsFile(path), IoError);
  CHECK_THROWS_WITH(SafetensorsFile(path), Contains(path) && Contains(cause));
}

std::vector<std::pair<std::string, torch::Tensor>> every_dtype() {
  return {
      {"f64", torch::arange(6, torch::kFloat64).reshape({2, 3}) / 7},
      {"u8_odd", torch::tensor({0, 7, 255}, torch::kUInt8)},
      {"f32", torch::randn({3, 4})},
      {"f16", torch::randn({5}).to(torch::kFloat16)},
      {"bf16", torch::randn({2, 2}).to(torch::kBFloat16)},
      {"i64", torch::tensor({int64_t{1} << 62, int64_t{-3}, int64_t{0}})},
      {"i32", torch::tensor({-2147483647 - 1, 7}, torch::kInt32)},
      {"i16", torch::tensor({-32768, 32767}, torch::kInt16)},
      {"i8", torch::tensor({-128, 5, 127}, torch::kInt8)},
      {"bool", torch::tensor({true, false, true})},
      {"scalar", torch::tensor(2.5f)},
      {"empty", torch::empty({0, 3})},
      {"transposed", torch::arange(12, torch::kFloat32).reshape({3, 4}).t()},
  };
}

}  // namespace

TEST_CASE("every dtype round-trips with metadata and header order", "[core][safetensors]") {
  const auto tensors = every_dtype();
  const std::map<std::string, std::string> metadata = {{"format", "pt"}, {"note", "h\u00e9llo"}};
  const std::string path = test::temp_path("every_dtype.safetensors");
  save_safetensors(path, tensors, metadata);

  SafetensorsFile file(path);
  CHECK(file.path() == path);
  CHECK(file.metadata() == metadata);
  std::vector<std::string> expected_names;
  for (const auto& [name, t] : tensors) expected_names.push_back(name);
  CHECK(file.names() == expected_names);

  const char* dtypes[] = {"F64", "U8", "F32",  "F16", "BF16", "I64", "I32",
                          "I16", "I8", "BOOL", "F32", "F32",  "F32"};
  for (size_t k = 0; k < tensors.size(); ++k) {
    const auto& [name, expected] = tensors[k];
    INFO(name);
    REQUIRE(file.contains(name));
    CHECK(file.info(name).dtype == dtypes[k]);
    CHECK(file.info(name).shape == expected.sizes().vec());
    torch::Tensor t = file.tensor(name);
    CHECK(t.device().is_cpu());
    CHECK(t.scalar_type() == expected.scalar_type());
    CHECK(t.sizes() == expected.sizes());
    CHECK(torch::equal(t, expected));
    // The writer aligns every tensor, so each non-empty one is a view of the mapping.
    if (t.numel() > 0) CHECK(file.tensor(name).data_ptr() == t.data_ptr());
  }
  CHECK(file.tensor("scalar").dim() == 0);
  CHECK(file.tensors().size() == tensors.size());
  CHECK_FALSE(file.contains("missing"));
  CHECK_THROWS_AS(file.info("missing"), InvalidArgument);
  CHECK_THROWS_WITH(file.tensor("missing"), Contains("'missing'") && Contains(path));
}

TEST_CASE("views share the mapping, outlive the file and never write to it",
          "[core][safetensors]") {
  const std::string path = test::temp_path("views.safetensors");
  const auto values = torch::arange(16, torch::kFloat32);
  save_safetensors(path, {{"x", values}});
  const auto before = test::read_bytes(path);

  torch::Tensor kept;
  {
    SafetensorsFile file(path);
    torch::Tensor a = file.tensor("x");
    torch::Tensor b = file.tensor("x");
    CHECK(a.data_ptr() == b.data_ptr());
    a.fill_(7);  // copy-on-write pages: no SIGSEGV, and b is the same memory
    CHECK(b[3].item<float>() == 7);
    kept = SafetensorsFile(path).tensor("x");
  }
  CHECK(torch::equal(kept, values));  // its file object is gone; its mapping is not
  CHECK(test::read_bytes(path) == before);
  CHECK(torch::equal(SafetensorsFile(path).tensor("x"), values));
}

TEST_CASE("misaligned data from other writers is copied", "[core][safetensors]") {
  // U8 [1] first puts the F32 at an odd address.
  std::string header = R"({"b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                       R"("f":{"dtype":"F32","shape":[1],"data_offsets":[1,5]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  const float value = 1.5f;
  std::vector<uint8_t> data(5, 9);
  std::memcpy(data.data() + 1, &value, 4);
  SafetensorsFile file(write_file("misaligned.safetensors", make_file(header, data)));
  torch::Tensor f = file.tensor("f");
  CHECK(f.item<float>() == 1.5f);
  CHECK(reinterpret_cast<uintptr_t>(f.data_ptr()) % 4 == 0);
  CHECK(file.tensor("f").data_ptr() != f.data_ptr());
  CHECK(file.tensor("b").item<uint8_t>() == 9);
}

TEST_CASE("written bytes follow the safetensors layout", "[core][safetensors]") {
  const std::string path = test::temp_path("layout.safetensors");
  save_safetensors(
      path, {{"u", torch::tensor({1, 2, 3}, torch::kUInt8)}, {"f", torch::tensor({0.5f, -2.0f})}},
      {{"kind", "layout"}});
  const auto bytes = test::read_bytes(path);
  REQUIRE(bytes.size() >= 8);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t{bytes[i]} << (8 * i);
  CHECK(n % 8 == 0);
  REQUIRE(bytes.size() == 8 + n + 8 + 3);
  CHECK(bytes[8] == '{');
  const std::string text(bytes.begin() + 8, bytes.begin() + 8 + n);
  CHECK(text.find_last_not_of(' ') == text.find_last_of('}'));  // padded with spaces only

  const auto header = nlohmann::ordered_json::parse(text);
  std::vector<std::string> keys;
  for (const auto& [key, value] : header.items()) keys.push_back(key);
  CHECK(keys == std::vector<std::string>{"__metadata__", "u", "f"});
  CHECK(header["__metadata__"]["kind"] == "layout");
  CHECK(header["u"]["dtype"] == "U8");
  CHECK(header["u"]["shape"] == nlohmann::ordered_json::array({3}));
  // Data by item size: the floats first, then the bytes.
  CHECK(header["f"]["data_offsets"] == nlohmann::ordered_json::array({0, 8}));
  CHECK(header["u"]["data_offsets"] == nlohmann::ordered_json::array({8, 11}));
  float f[2];
  std::memcpy(f, bytes.data() + 8 + n, 8);
  CHECK(f[0] == 0.5f);
  CHECK(f[1] == -2.0f);
  CHECK(std::vector<uint8_t>(bytes.end() - 3, bytes.end()) == std::vector<uint8_t>{1, 2, 3});

  const std::string empty = test::temp_path("no_tensors.safetensors");
  save_safetensors(empty, {});
  const std::string spaces(6, ' ');
  CHECK(test::read_bytes(empty) == make_file("{}" + spaces, {}));
  CHECK(SafetensorsFile(empty).names().empty());
}

TEST_CASE("the golden STFT features file", "[core][safetensors]") {
  const std::string path = test::data_path("features/stft_512_128__chirp_1s.safetensors");
  SafetensorsFile file(path);
  CHECK(file.names() == std::vector<std::string>{"input", "expected_real", "expected_imag"});
  CHECK(file.tensor("input").sizes() == torch::IntArrayRef({16000}));
  CHECK(file.tensor("expected_real").sizes() == torch::IntArrayRef({257, 126}));
  CHECK(file.tensor("expected_imag").sizes() == torch::IntArrayRef({257, 126}));
  CHECK(file.tensor("input").scalar_type() == torch::kFloat32);
  CHECK(file.metadata().at("kind") == "torch_stft");
  CHECK(file.tensor("input").abs().max().item<float>() <= 0.5f);
  SafetensorsCheckpoint checkpoint(path);
  CHECK(checkpoint.names() == file.names());
  CHECK(checkpoint.metadata().at("n_fft") == "512");
}

TEST_CASE("missing, empty, short and directory paths", "[core][safetensors]") {
  check_io_error("/no/such/model.safetensors", "No such file");
  const std::string dir = test::temp_path("a_folder.safetensors");
  std::filesystem::create_directories(dir);
  check_io_error(dir, "directory");
  check_io_error(write_file("empty.safetensors", {}), "empty");
  check_io_error(write_file("short.safetensors", {1, 0, 0}), "too short");
}

TEST_CASE("hostile headers are IoErrors naming the file", "[core][safetensors]") {
  const std::string good = R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  CHECK_NOTHROW(SafetensorsFile(write_file("good.safetensors", good, 8)));

  check_io_error(write_file("truncated_data.safetensors", good, 4), "past the end of the data");
  std::vector<uint8_t> past_eof = make_file("{}", {});
  past_eof[0] = 200;
  check_io_error(write_file("past_eof.safetensors", past_eof), "past the end of the file");
  std::vector<uint8_t> huge = make_file("{}", {});
  huge[7] = 0x40;
  check_io_error(write_file("huge.safetensors", huge), "100 MB");
  check_io_error(write_file("bad_json.safetensors", R"({"t":{"dtype":)", 0), "not valid JSON");
  check_io_error(write_file("array.safetensors", "[1, 2]", 0), "JSON object");
  check_io_error(write_file("entry.safetensors", R"({"t":3})", 0), "'t'");
  check_io_error(write_file("no_offsets.safetensors", R"({"t":{"dtype":"F32","shape":[]}})", 4),
                 "data_offsets");
  check_io_error(write_file("overlap.safetensors",
                            R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                            R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                            12),
                 "overlap");
  // The data section is tiled exactly: no tensor named twice, no gap, nothing after the last.
  check_io_error(write_file("duplicate.safetensors",
                            R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                            R"("t":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                            8),
                 "names 't' twice");
  check_io_error(write_file("gap.safetensors",
                            R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                            R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                            12),
                 "bytes [4, 8) of the data section belong to no tensor");
  check_io_error(write_file("trailing.safetensors", good, 12),
                 "4 bytes after the last tensor's data");
  check_io_error(write_file("out_of_bounds.safetensors",
                            R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", 8),
                 "past the end of the data");
  check_io_error(write_file("reversed.safetensors",
                            R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8),
                 "end before they begin");
  check_io_error(write_file("size_mismatch.safetensors",
                            R"({"t":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
                 "needs 12 bytes");
  check_io_error(write_file("negative.safetensors",
                            R"({"t":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8),
                 "non-negative");
  check_io_error(
      write_file("overflow.safetensors",
                 R"({"t":{"dtype":"F32","shape":[4294967296,4294967296,0],"data_offsets":[0,0]}})",
                 0),
      "too large");
  check_io_error(write_file("metadata_number.safetensors", R"({"__metadata__":{"k":1}})", 0),
                 "__metadata__");
  check_io_error(write_file("metadata_list.safetensors", R"({"__metadata__":["k"]})", 0),
                 "__metadata__");
  check_io_error(write_file("number_overflow.safetensors",
                            R"({"t":{"dtype":"F32","shape":[1e999],"data_offsets":[0,4]}})", 4),
                 "number overflow");

  const std::string fp8 = write_file(
      "fp8.safetensors", R"({"w":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", 2);
  CHECK_THROWS_AS(SafetensorsFile(fp8), Unsupported);
  CHECK_THROWS_WITH(SafetensorsFile(fp8), Contains(fp8) && Contains("'w'") && Contains("F8_E4M3"));
}

TEST_CASE("every truncation of a valid file is an IoError", "[core][safetensors]") {
  const std::string path = test::temp_path("whole.safetensors");
  save_safetensors(path, {{"a", torch::ones({3})}, {"b", torch::zeros({2}, torch::kInt16)}},
                   {{"k", "v"}});
  const auto bytes = test::read_bytes(path);
  const std::string cut = test::temp_path("cut.safetensors");
  for (size_t size = 0; size < bytes.size(); ++size) {
    test::write_bytes(cut, std::vector<uint8_t>(bytes.begin(), bytes.begin() + size));
    INFO(size);
    CHECK_THROWS_AS(SafetensorsFile(cut), IoError);
  }
}

TEST_CASE("sharded and single-file checkpoints", "[core][safetensors]") {
  const std::filesystem::path dir = test::temp_path("sharded");
  std::filesystem::create_directories(dir);
  const auto a = torch::randn({2, 3});
  const auto b = torch::arange(4, torch::kInt64);
  const auto c = torch::randn({5}).to(torch::kBFloat16);
  save_safetensors((dir / "model-00001-of-00002.safetensors").string(), {{"a", a}, {"b", b}},
                   {{"format", "pt"}});
  save_safetensors((dir / "model-00002-of-00002.safetensors").string(), {{"c", c}});
  auto write_index = [&](const nlohmann::json& weight_map) {
    std::ofstream((dir / "model.safetensors.index.json").string())
        << nlohmann::json{{"metadata", {{"total_size", 123}}}, {"weight_map", weight_map}};
  };
  const nlohmann::json weight_map = {{"a", "model-00001-of-00002.safetensors"},
                                     {"b", "model-00001-of-00002.safetensors"},
                                     {"c", "model-00002-of-00002.safetensors"}};
  write_index(weight_map);

  for (const auto& path : {dir, dir / "model.safetensors.index.json"}) {
    SafetensorsCheckpoint checkpoint(path.string());
    CHECK(checkpoint.names() == std::vector<std::string>{"a", "b", "c"});
    CHECK(checkpoint.shards().size() == 2);
    CHECK(torch::equal(checkpoint.tensor("a"), a));
    CHECK(torch::equal(checkpoint.tensor("b"), b));
    CHECK(torch::equal(checkpoint.tensor("c"), c));
    CHECK(checkpoint.info("c").dtype == "BF16");
    CHECK(checkpoint.metadata() == std::map<std::string, std::string>{{"total_size", "123"}});
    CHECK(checkpoint.contains("a"));
    CHECK_FALSE(checkpoint.contains("d"));
    CHECK_THROWS_AS(checkpoint.tensor("d"), InvalidArgument);
    CHECK_THROWS_WITH(checkpoint.info("d"), Contains("'d'") && Contains(path.string()));
  }

  const std::string index = (dir / "model.safetensors.index.json").string();
  auto broken = weight_map;
  broken["d"] = "model-00003-of-00003.safetensors";
  write_index(broken);
  CHECK_THROWS_AS(SafetensorsCheckpoint(dir.string()), IoError);
  CHECK_THROWS_WITH(
      SafetensorsCheckpoint(dir.string()),
      Contains(index) && Contains("model-00003-of-00003.safetensors") && Contains("No such file"));

  broken = weight_map;
  broken["d"] = "model-00001-of-00002.safetensors";
  write_index(broken);
  CHECK_THROWS_WITH(SafetensorsCheckpoint(dir.string()),
                    Contains(index) && Contains("'d'") && Contains("does not hold it"));

  save_safetensors((dir / "model-00003-of-00003.safetensors").string(), {{"a", a}});
  broken = weight_map;
  broken["x"] = "model-00003-of-00003.safetensors";
  write_index(broken);
  CHECK_THROWS_WITH(SafetensorsCheckpoint(dir.string()), Contains("'a'") && Contains("two shards"));

  std::ofstream(index) << R"({"metadata": {}})";
  CHECK_THROWS_WITH(SafetensorsCheckpoint(dir.string()), Contains(index) && Contains("weight_map"));
  std::ofstream(index) << "{";
  CHECK_THROWS_WITH(SafetensorsCheckpoint(dir.string()), Contains(index) && Contains("JSON"));
  // Found by fuzz_safetensors: a number past double's range was not an alto error.
  std::ofstream(index) << R"({"metadata": 555555552777755555555555e883})";
  CHECK_THROWS_WITH(SafetensorsCheckpoint(dir.string()),
                    Contains(index) && Contains("not valid JSON") && Contains("number overflow"));
  // A shard is a file beside the index, named once.
  for (const char* shard : {"../model-00001-of-00002.safetensors", "/etc/passwd", ".."}) {
    write_index({{"a", shard}});
    CHECK_THROWS_WITH(SafetensorsCheckpoint(dir.string()),
                      Contains(index) && Contains("not a file name beside the index"));
  }
  std::ofstream(index) << R"({"weight_map": {"a": "model-00001-of-00002.safetensors", )"
                          R"("a": "model-00002-of-00002.safetensors"}})";
  CHECK_THROWS_WITH(SafetensorsCheckpoint(dir.string()),
                    Contains(index) && Contains("names 'a' twice"));

  // A folder with model.safetensors, and the file itself.
  const std::filesystem::path single = test::temp_path("single");
  std::filesystem::create_directories(single);
  save_safetensors((single / "model.safetensors").string(), {{"w", a}}, {{"format", "pt"}});
  for (const auto& path : {single, single / "model.safetensors"}) {
    SafetensorsCheckpoint checkpoint(path.string());
    CHECK(checkpoint.names() == std::vector<std::string>{"w"});
    CHECK(torch::equal(checkpoint.tensor("w"), a));
    CHECK(checkpoint.metadata().at("format") == "pt");
  }
  const std::string bare = test::temp_path("bare_folder");
  std::filesystem::create_directories(bare);
  CHECK_THROWS_AS(SafetensorsCheckpoint(bare), IoError);
  CHECK_THROWS_WITH(SafetensorsCheckpoint(bare), Contains(bare) && Contains("model.safetensors"));
}

TEST_CASE("save_safetensors rejects bad input and leaves no partial file", "[core][safetensors]") {
  const std::filesystem::path dir = test::temp_path("writes");
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "out.safetensors").string();
  const auto x = torch::ones({2});

  CHECK_THROWS_WITH(save_safetensors(path, {{"x", x}, {"x", x}}),
                    Contains(path) && Contains("'x'") && Contains("twice"));
  CHECK_THROWS_WITH(save_safetensors(path, {{"__metadata__", x}}), Contains("__metadata__"));
  CHECK_THROWS_WITH(save_safetensors(path, {{"u", torch::Tensor()}}), Contains("'u'"));
  CHECK_THROWS_AS(save_safetensors(path, {{"z", torch::ones({2}, torch::kComplexFloat)}}),
                  Unsupported);
  CHECK_THROWS_WITH(save_safetensors("/no/such/folder/out.safetensors", {{"x", x}}),
                    Contains("/no/such/folder/out.safetensors") && Contains("No such file"));

  // The second tensor fails mid-write: a meta tensor has no data to copy.
  const auto meta = torch::empty({2}, torch::TensorOptions().device(torch::kMeta));
  CHECK_THROWS_AS(save_safetensors(path, {{"x", x}, {"m", meta}}), Error);
  CHECK_THROWS_WITH(save_safetensors(path, {{"x", x}, {"m", meta}}),
                    Contains(path) && Contains("'m'"));
  // The rename fails when the target is a folder.
  const std::string folder = (dir / "taken").string();
  std::filesystem::create_directories(folder);
  CHECK_THROWS_AS(save_safetensors(folder, {{"x", x}}), IoError);
  std::vector<std::string> left;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    left.push_back(entry.path().filename().string());
  CHECK(left == std::vector<std::string>{"taken"});

  // Replacing an existing file.
  save_safetensors(path, {{"x", x}});
  save_safetensors(path, {{"y", x * 2}});
  CHECK(SafetensorsFile(path).names() == std::vector<std::string>{"y"});
}
