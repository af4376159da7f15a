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
#include <limits>
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

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the Hugging Face reader's limit

struct Dtype {
  const char* name;
  torch::ScalarType type;
};
constexpr Dtype kDtypes[] = {{"F64", torch::kFloat64}, {"F32", torch::kFloat32},
                             {"F16", torch::kFloat16}, {"BF16", torch::kBFloat16},
                             {"I64", torch::kInt64},   {"I32", torch::kInt32},
                             {"I16", torch::kInt16},   {"I8", torch::kInt8},
                             {"U8", torch::kUInt8},    {"BOOL", torch::kBool}};
constexpr const char* kSupported = "F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL";

const Dtype* find_dtype(const std::string& name) {
  for (const Dtype& d : kDtypes)
    if (name == d.name) return &d;
  return nullptr;
}

const Dtype* find_dtype(torch::ScalarType type) {
  for (const Dtype& d : kDtypes)
    if (type == d.type) return &d;
  return nullptr;
}

/// A JSON value for an error message: scalars as written, containers by kind only, since a
/// hostile header can make them arbitrarily large.
std::string describe(const Json& value) {
  return value.is_number() || value.is_boolean() || value.is_null() ? value.dump()
                                                                    : value.type_name();
}

SafetensorsTensorInfo parse_entry(const std::string& path, const std::string& name,
                                  const Json& entry, uint64_t data_bytes) {
  const std::string where = detail::concat(path, ": tensor '", name, "'");
  ALTO_CHECK_AS(IoError, entry.is_object(), where,
                ": header entry must be an object with dtype, shape and data_offsets, got ",
                describe(entry));
  auto field = [&](const char* key) -> const Json& {
    auto it = entry.find(key);
    ALTO_CHECK_AS(IoError, it != entry.end(), where, ": header entry has no \"", key, "\"");
    return *it;
  };

  SafetensorsTensorInfo info;
  info.name = name;
  const Json& dtype = field("dtype");
  ALTO_CHECK_AS(IoError, dtype.is_string(), where, ": dtype must be a string, got ",
                describe(dtype));
  info.dtype = dtype.get<std::string>();
  const Dtype* known = find_dtype(info.dtype);
  ALTO_CHECK_AS(Unsupported, known != nullptr, where, " has dtype ", info.dtype,
                ", which alto does not support (supported: ", kSupported, ")");

  const Json& shape = field("shape");
  ALTO_CHECK_AS(IoError, shape.is_array(), where, ": shape must be an array, got ",
                describe(shape));
  // Hostile sizes must not wrap around and pass the size check below.
  uint64_t bytes = c10::elementSize(known->type);
  bool overflow = false;
  for (const Json& dim : shape) {
    ALTO_CHECK_AS(
        IoError,
        dim.is_number_unsigned() && dim.get<uint64_t>() <= std::numeric_limits<int64_t>::max(),
        where, ": shape entries must be non-negative integers, got ", describe(dim));
    info.shape.push_back(dim.get<int64_t>());
    overflow |= __builtin_mul_overflow(bytes, dim.get<uint64_t>(), &bytes);
  }

  const Json& offsets = field("data_offsets");
  ALTO_CHECK_AS(IoError,
                offsets.is_array() && offsets.size() == 2 && offsets[0].is_number_unsigned() &&
                    offsets[1].is_number_unsigned(),
                where, ": data_offsets must be [begin, end], two non-negative integers");
  info.begin = offsets[0].get<uint64_t>();
  info.end = offsets[1].get<uint64_t>();
  ALTO_CHECK_AS(IoError, info.begin <= info.end, where, ": data_offsets [", info.begin, ", ",
                info.end, "] end before they begin");
  ALTO_CHECK_AS(IoError, info.end <= data_bytes, where, ": data_offsets [", info.begin, ", ",
                info.end, "] run past the end of the data section (", data_bytes,
                " bytes); is the file truncated?");
  ALTO_CHECK_AS(IoError, !overflow, where, ": shape ", c10::IntArrayRef(info.shape),
                " is too large");
  ALTO_CHECK_AS(IoError, info.end - info.begin == bytes, where, ": ", info.dtype, " shape ",
                c10::IntArrayRef(info.shape), " needs ", bytes, " bytes but data_offsets [",
                info.begin, ", ", info.end, "] hold ", info.end - info.begin);
  return info;
}

/// The tensors tile the data section exactly, as the safetensors format requires: sorted by
/// offset, each begins where the one before ends, the first at 0 and the last at its end. An
/// overlap would alias two tensors, a gap or trailing bytes hide data no tensor accounts for.
void check_layout(const std::string& path, const std::vector<SafetensorsTensorInfo>& infos,
                  uint64_t data_bytes) {
  std::vector<const SafetensorsTensorInfo*> sorted;
  for (const auto& info : infos)
    if (info.begin < info.end) sorted.push_back(&info);  // empty tensors occupy no bytes
  std::sort(sorted.begin(), sorted.end(),
            [](const auto* a, const auto* b) { return a->begin < b->begin; });
  uint64_t covered = 0;
  for (size_t k = 0; k < sorted.size(); ++k) {
    const auto& b = *sorted[k];
    if (k > 0) {
      const auto& a = *sorted[k - 1];
      ALTO_CHECK_AS(IoError, b.begin >= a.end, path, ": tensors '", a.name, "' [", a.begin, ", ",
                    a.end, "] and '", b.name, "' [", b.begin, ", ", b.end, "] overlap");
    }
    ALTO_CHECK_AS(IoError, b.begin == covered, path, ": bytes [", covered, ", ", b.begin,
                  ") of the data section belong to no tensor (a gap before '", b.name, "')");
    covered = b.end;
  }
  ALTO_CHECK_AS(IoError, covered == data_bytes, path, ": ", data_bytes - covered,
                " bytes after the last tensor's data belong to no tensor");
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
  ALTO_CHECK_AS(IoError, size > 0, path, ": file is empty, not a safetensors file");
  ALTO_CHECK_AS(IoError, size >= 8, path, ": ", size,
                " bytes is too short for a safetensors file (its header length alone takes 8)");

  // Private and writable, so tensors are copy-on-write views that never reach the file;
  // MAP_NORESERVE so a checkpoint larger than RAM + swap is not refused up front.
  void* bytes =
      ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd.fd, 0);
  ALTO_CHECK_AS(IoError, bytes != MAP_FAILED, path, ": cannot map ", size,
                " bytes: ", std::strerror(errno));
  mapping_ = std::make_shared<Mapping>(static_cast<uint8_t*>(bytes), size);

  uint64_t header_bytes;
  std::memcpy(&header_bytes, mapping_->bytes, 8);
  ALTO_CHECK_AS(IoError, header_bytes <= kMaxHeaderBytes, path, ": header length ", header_bytes,
                " is over the 100 MB limit; not a safetensors file?");
  ALTO_CHECK_AS(IoError, header_bytes <= size - 8, path, ": header length ", header_bytes,
                " runs past the end of the file (", size, " bytes); is it truncated?");
  data_start_ = 8 + header_bytes;

  Json header;
  const char* header_text = reinterpret_cast<const char*>(mapping_->bytes) + 8;
  // nlohmann keeps the last of two equal keys; a tensor named twice is refused instead.
  std::set<std::string> names;
  std::string duplicate;
  const Json::parser_callback_t no_duplicates = [&](int depth, Json::parse_event_t event,
                                                    Json& parsed) {
    if (depth == 1 && event == Json::parse_event_t::key &&
        !names.insert(parsed.get<std::string>()).second && duplicate.empty())
      duplicate = parsed.get<std::string>();
    return true;
  };
  try {
    header = Json::parse(header_text, header_text + header_bytes, no_duplicates);
  } catch (const Json::parse_error& e) {
    throw IoError(detail::concat(path, ": header is not valid JSON: ", e.what()));
  }
  ALTO_CHECK_AS(IoError, duplicate.empty(), path, ": the header names '", duplicate, "' twice");
  ALTO_CHECK_AS(IoError, header.is_object(), path, ": header must be a JSON object, got ",
                describe(header));

  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      ALTO_CHECK_AS(IoError, value.is_object(), path,
                    ": __metadata__ must map strings to strings, got ", describe(value));
      for (const auto& [name, text] : value.items()) {
        ALTO_CHECK_AS(IoError, text.is_string(), path, ": __metadata__ \"", name,
                      "\" must be a string, got ", describe(text));
        metadata_[name] = text.get<std::string>();
      }
      continue;
    }
    infos_.push_back(parse_entry(path, key, value, size - data_start_));
    index_[key] = infos_.size() - 1;
  }
  check_layout(path, infos_, size - data_start_);
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
  const torch::ScalarType type = find_dtype(info.dtype)->type;
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
  Json index;
  try {
    index = Json::parse(in);
  } catch (const Json::parse_error& e) {
    throw IoError(detail::concat(where, ": checkpoint index is not valid JSON: ", e.what()));
  }
  ALTO_CHECK_AS(IoError, index.is_object(), where, ": checkpoint index must be a JSON object");
  auto weight_map = index.find("weight_map");
  ALTO_CHECK_AS(IoError, weight_map != index.end() && weight_map->is_object(), where,
                ": has no \"weight_map\" object mapping tensor names to shard files");

  std::vector<std::string> shard_files;
  std::map<std::string, size_t> shard_position;
  std::vector<std::pair<std::string, size_t>> listed;  // name -> shard, as the index says
  for (const auto& [name, shard_file] : weight_map->items()) {
    ALTO_CHECK_AS(IoError, shard_file.is_string(), where, ": weight_map \"", name,
                  "\" must name a shard file, got ", describe(shard_file));
    auto [it, added] = shard_position.emplace(shard_file.get<std::string>(), shard_files.size());
    if (added) shard_files.push_back(it->first);
    listed.emplace_back(name, it->second);
  }

  for (const auto& shard_file : shard_files) {
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
  for (const auto& [name, s] : listed) {
    auto it = shard_of_.find(name);
    ALTO_CHECK_AS(IoError, it != shard_of_.end() && it->second == s, where, ": weight_map puts '",
                  name, "' in ", shards_[s].path(), ", which does not hold it");
  }

  auto metadata = index.find("metadata");
  if (metadata != index.end()) {
    ALTO_CHECK_AS(IoError, metadata->is_object(), where, ": \"metadata\" must be an object, got ",
                  describe(*metadata));
    for (const auto& [key, value] : metadata->items())
      metadata_[key] = value.is_string() ? value.get<std::string>() : value.dump();
  }
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
                  kSupported, ")");
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
