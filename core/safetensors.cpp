#include "alto/core/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>

#include "alto/core/error.h"
#include "alto/core/internal/output_file.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors data is little-endian and alto maps it in place");

namespace alto {
namespace {

using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

struct Dtype {
  const char* name;
  torch::ScalarType type;
};
// SafetensorsTensorInfo::dtype's list, as libtorch types.
constexpr Dtype kDtypes[] = {{"F64", torch::kFloat64}, {"F32", torch::kFloat32},
                             {"F16", torch::kFloat16}, {"BF16", torch::kBFloat16},
                             {"I64", torch::kInt64},   {"I32", torch::kInt32},
                             {"I16", torch::kInt16},   {"I8", torch::kInt8},
                             {"U8", torch::kUInt8},    {"BOOL", torch::kBool}};

torch::ScalarType torch_dtype(const std::string& name) {
  for (const Dtype& d : kDtypes)
    if (name == d.name) return d.type;
  throw Error("safetensors dtype " + name + " has no libtorch type");  // the parser refused it
}

const Dtype* find_dtype(torch::ScalarType type) {
  for (const Dtype& d : kDtypes)
    if (type == d.type) return &d;
  return nullptr;
}

std::string dtype_names() {
  std::string names;
  for (const Dtype& d : kDtypes) names += (names.empty() ? "" : ", ") + std::string(d.name);
  return names;
}

/// Closes on destruction.
struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int fd) : fd(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

struct SafetensorsFile::Mapping {
  uint8_t* bytes = nullptr;
  size_t size = 0;
  Mapping(uint8_t* bytes, size_t size) : bytes(bytes), size(size) {}
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() { ::munmap(bytes, size); }
};

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  // stat before open: opening a FIFO would block.
  struct stat st;
  ALTO_CHECK_AS(IoError, ::stat(path.c_str(), &st) == 0, path, ": ", std::strerror(errno));
  ALTO_CHECK_AS(IoError, !S_ISDIR(st.st_mode), path, ": is a directory, not a safetensors file");
  ALTO_CHECK_AS(IoError, S_ISREG(st.st_mode), path, ": is not a regular file");
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  ALTO_CHECK_AS(IoError, fd.fd >= 0, path, ": ", std::strerror(errno));
  ALTO_CHECK_AS(IoError, ::fstat(fd.fd, &st) == 0, path, ": ", std::strerror(errno));
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < 8) {  // too short to map: the parser says why
    const uint8_t none[8] = {};
    parse_safetensors_header(none, size, path);
  }

  // Private and writable, so tensors are copy-on-write views that never reach the file;
  // MAP_NORESERVE so a checkpoint larger than RAM + swap is not refused up front.
  void* bytes =
      ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd.fd, 0);
  ALTO_CHECK_AS(IoError, bytes != MAP_FAILED, path, ": cannot map ", size,
                " bytes: ", std::strerror(errno));
  mapping_ = std::make_shared<Mapping>(static_cast<uint8_t*>(bytes), size);

  SafetensorsHeader header = parse_safetensors_header(mapping_->bytes, size, path);
  data_start_ = header.data_start;
  infos_ = std::move(header.tensors);
  metadata_ = std::move(header.metadata);
  for (size_t k = 0; k < infos_.size(); ++k) index_[infos_[k].name] = k;
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> names;
  names.reserve(infos_.size());
  for (const auto& info : infos_) names.push_back(info.name);
  return names;
}

const SafetensorsTensorInfo& SafetensorsFile::info(const std::string& name) const {
  auto it = index_.find(name);
  ALTO_CHECK(it != index_.end(), path_, ": no tensor named '", name, "' (the file holds ",
             infos_.size(), " tensors)");
  return infos_[it->second];
}

torch::Tensor SafetensorsFile::tensor(const std::string& name) const {
  const SafetensorsTensorInfo& info = this->info(name);
  const torch::ScalarType type = torch_dtype(info.dtype);
  const auto options = torch::TensorOptions().dtype(type);
  if (info.begin == info.end) return torch::empty(info.shape, options);  // no bytes to point at
  uint8_t* data = mapping_->bytes + data_start_ + info.begin;
  if (reinterpret_cast<uintptr_t>(data) % c10::elementSize(type) == 0) {
    auto keep_alive = mapping_;
    return torch::from_blob(
        data, info.shape, [keep_alive](void*) {}, options);
  }
  // Other writers need not align tensors, and libtorch's kernels assume aligned elements.
  auto copy = torch::empty(info.shape, options);
  std::memcpy(copy.data_ptr(), data, info.end - info.begin);
  return copy;
}

std::map<std::string, torch::Tensor> SafetensorsFile::tensors() const {
  std::map<std::string, torch::Tensor> all;
  for (const auto& info : infos_) all.emplace(info.name, tensor(info.name));
  return all;
}

SafetensorsCheckpoint::SafetensorsCheckpoint(const std::string& path) : path_(path) {
  fs::path file(path);
  std::error_code ec;
  if (fs::is_directory(file, ec)) {
    if (fs::exists(file / "model.safetensors.index.json", ec))
      file /= "model.safetensors.index.json";
    else if (fs::exists(file / "model.safetensors", ec))
      file /= "model.safetensors";
    else
      throw IoError(detail::concat(
          path, ": folder holds neither model.safetensors.index.json nor model.safetensors"));
  }

  if (file.extension() != ".json") {
    shards_.emplace_back(file.string());
    names_ = shards_[0].names();
    for (const auto& name : names_) shard_of_[name] = 0;
    metadata_ = shards_[0].metadata();
    return;
  }

  const std::string where = file.string();
  std::ifstream in(file, std::ios::binary);
  ALTO_CHECK_AS(IoError, in.is_open(), where,
                ": cannot open checkpoint index: ", std::strerror(errno));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  SafetensorsIndex index = parse_safetensors_index(text, where);

  for (const auto& shard_file : index.shard_files) {
    try {
      shards_.emplace_back((file.parent_path() / shard_file).string());
    } catch (const IoError& e) {
      throw IoError(detail::concat(where, ": shard ", e.what()));
    }
    const size_t s = shards_.size() - 1;
    for (const auto& name : shards_[s].names()) {
      auto [it, added] = shard_of_.emplace(name, s);
      ALTO_CHECK_AS(IoError, added, where, ": tensor '", name, "' is in two shards, ",
                    shards_[it->second].path(), " and ", shards_[s].path());
      names_.push_back(name);
    }
  }
  for (const auto& [name, s] : index.weight_map) {
    auto it = shard_of_.find(name);
    ALTO_CHECK_AS(IoError, it != shard_of_.end() && it->second == s, where, ": weight_map puts '",
                  name, "' in ", shards_[s].path(), ", which does not hold it");
  }

  metadata_ = std::move(index.metadata);
}

const SafetensorsFile& SafetensorsCheckpoint::shard(const std::string& name) const {
  auto it = shard_of_.find(name);
  ALTO_CHECK(it != shard_of_.end(), path_, ": no tensor named '", name, "' in the checkpoint");
  return shards_[it->second];
}

const SafetensorsTensorInfo& SafetensorsCheckpoint::info(const std::string& name) const {
  return shard(name).info(name);
}

torch::Tensor SafetensorsCheckpoint::tensor(const std::string& name) const {
  return shard(name).tensor(name);
}

void save_safetensors(const std::string& path,
                      const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  std::set<std::string> seen;
  for (const auto& [name, t] : tensors) {
    ALTO_CHECK(name != "__metadata__", path,
               ": '__metadata__' is the metadata's key and cannot name a tensor");
    ALTO_CHECK(seen.insert(name).second, path, ": tensor '", name, "' is given twice");
    ALTO_CHECK(t.defined(), path, ": tensor '", name, "' is undefined");
    ALTO_CHECK(t.layout() == torch::kStrided, path, ": tensor '", name, "' has layout ", t.layout(),
               "; only dense tensors can be written");
    ALTO_CHECK_AS(Unsupported, find_dtype(t.scalar_type()) != nullptr, path, ": tensor '", name,
                  "' has dtype ", t.dtype(), ", which safetensors files from alto cannot hold (",
                  dtype_names(), ")");
  }

  // Larger items first keeps every tensor aligned for zero-copy reading.
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return tensors[a].second.element_size() > tensors[b].second.element_size();
  });
  std::vector<uint64_t> begin(tensors.size());
  uint64_t offset = 0;
  for (size_t k : order) {
    begin[k] = offset;
    offset += tensors[k].second.numel() * tensors[k].second.element_size();
  }

  Json header = Json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  for (size_t k = 0; k < tensors.size(); ++k) {
    const torch::Tensor& t = tensors[k].second;
    header[tensors[k].first] = {
        {"dtype", find_dtype(t.scalar_type())->name},
        {"shape", t.sizes().vec()},
        {"data_offsets", Json::array({begin[k], begin[k] + t.numel() * t.element_size()})}};
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const Json::type_error& e) {
    throw InvalidArgument(
        detail::concat(path, ": tensor names and metadata must be UTF-8: ", e.what()));
  }
  // Spaces up to a multiple of 8, as the Hugging Face writer pads, so the data section is
  // 8-aligned.
  text.append((8 - text.size() % 8) % 8, ' ');

  internal::OutputFile file(path);
  const uint64_t header_bytes = text.size();
  file.write(&header_bytes, 8, "the header length");
  file.write(text.data(), text.size(), "the header");
  for (size_t k : order) {
    const auto& [name, t] = tensors[k];
    torch::Tensor cpu;
    try {
      cpu = t.to(torch::kCPU).contiguous();
    } catch (const c10::Error& e) {
      throw Error(detail::concat(path, ": cannot copy tensor '", name,
                                 "' to the CPU: ", e.what_without_backtrace()));
    }
    file.write(cpu.data_ptr(), cpu.numel() * cpu.element_size(),
               detail::concat("tensor '", name, "'"));
  }
  file.commit();
}

}  // namespace alto
