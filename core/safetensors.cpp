#include "alto/core/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "alto/core/error.h"

namespace alto {

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

struct DtypeEntry {
  const char* name;
  torch::ScalarType type;
  size_t size;
};
const DtypeEntry kDtypes[] = {{"F64", torch::kFloat64, 8}, {"F32", torch::kFloat32, 4},
                              {"F16", torch::kFloat16, 2}, {"BF16", torch::kBFloat16, 2},
                              {"I64", torch::kInt64, 8},   {"I32", torch::kInt32, 4},
                              {"I16", torch::kInt16, 2},   {"I8", torch::kInt8, 1},
                              {"U8", torch::kUInt8, 1},    {"BOOL", torch::kBool, 1}};

const DtypeEntry* find_dtype(const std::string& name) {
  for (const auto& d : kDtypes)
    if (name == d.name) return &d;
  return nullptr;
}

const DtypeEntry* find_dtype(torch::ScalarType type) {
  for (const auto& d : kDtypes)
    if (type == d.type) return &d;
  return nullptr;
}

}  // namespace

struct SafetensorsFile::Mapping {
  std::string path;
  void* base = nullptr;
  size_t size = 0;
  const uint8_t* data = nullptr;  // start of the data section
  std::vector<SafetensorsTensorInfo> infos;
  std::map<std::string, size_t> index;
  std::map<std::string, std::string> metadata;

  ~Mapping() {
    if (base != nullptr) munmap(base, size);
  }
};

SafetensorsFile::SafetensorsFile(const std::string& path) : mapping_(std::make_shared<Mapping>()) {
  Mapping& m = *mapping_;
  m.path = path;
  auto fail = [&](const std::string& why) -> IoError { return IoError(path + ": " + why); };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw fail(std::string("cannot open (") + std::strerror(errno) + ")");
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw fail("not a regular file");
  }
  m.size = static_cast<size_t>(st.st_size);
  if (m.size < 8) {
    ::close(fd);
    throw fail("not a safetensors file: " + std::to_string(m.size) +
               " bytes, less than the 8-byte header length");
  }
  // MAP_PRIVATE + PROT_WRITE: writes to returned tensors go to private pages, never the file.
  m.base = mmap(nullptr, m.size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (m.base == MAP_FAILED) {
    m.base = nullptr;
    throw fail(std::string("cannot map (") + std::strerror(errno) + ")");
  }
  const auto* bytes = static_cast<const uint8_t*>(m.base);
  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | bytes[i];
  if (header_bytes > kMaxHeaderBytes || header_bytes > m.size - 8)
    throw fail("header length " + std::to_string(header_bytes) + " does not fit in the " +
               std::to_string(m.size) + "-byte file (truncated or not safetensors)");
  ordered_json header;  // header order is the tensors' order
  try {
    header = ordered_json::parse(bytes + 8, bytes + 8 + header_bytes);
  } catch (const json::exception& e) {
    throw fail(std::string("header is not valid JSON (") + e.what() + ")");
  }
  if (!header.is_object()) throw fail("header is not a JSON object");
  m.data = bytes + 8 + header_bytes;
  const uint64_t data_bytes = m.size - 8 - header_bytes;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const ordered_json& entry = it.value();
    if (name == "__metadata__") {
      if (!entry.is_object()) throw fail("__metadata__ must be an object of strings");
      for (auto mt = entry.begin(); mt != entry.end(); ++mt) {
        if (!mt.value().is_string())
          throw fail("__metadata__ value '" + mt.key() + "' is not a string");
        m.metadata[mt.key()] = mt.value().get<std::string>();
      }
      continue;
    }
    const std::string where = "tensor '" + name + "'";
    if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") ||
        !entry.contains("data_offsets"))
      throw fail(where + " needs dtype, shape and data_offsets");
    const ordered_json& dtype = entry["dtype"];
    const ordered_json& shape = entry["shape"];
    const ordered_json& offsets = entry["data_offsets"];
    if (!dtype.is_string()) throw fail(where + ": dtype is not a string");
    const DtypeEntry* d = find_dtype(dtype.get<std::string>());
    if (d == nullptr)
      throw Unsupported(path + ": " + where + " has dtype " + dtype.get<std::string>() +
                        ", which alto does not read (F64, F32, F16, BF16, I64, I32, I16, I8, U8, "
                        "BOOL)");
    SafetensorsTensorInfo info;
    info.name = name;
    info.dtype = d->name;
    if (!shape.is_array()) throw fail(where + ": shape is not an array");
    uint64_t numel = 1;
    for (const ordered_json& s : shape) {
      if (!s.is_number_integer() || s.get<int64_t>() < 0)
        throw fail(where + ": shape " + shape.dump() + " has a non-integer or negative size");
      const auto size = s.get<uint64_t>();
      if (size != 0 && numel > (UINT64_MAX / 8) / size) throw fail(where + ": shape overflows");
      numel *= size;
      info.shape.push_back(static_cast<int64_t>(size));
    }
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned())
      throw fail(where + ": data_offsets must be [begin, end]");
    info.begin = offsets[0].get<uint64_t>();
    info.end = offsets[1].get<uint64_t>();
    if (info.begin > info.end || info.end > data_bytes)
      throw fail(where + ": data_offsets [" + std::to_string(info.begin) + ", " +
                 std::to_string(info.end) + "] lie outside the " + std::to_string(data_bytes) +
                 "-byte data section (truncated file?)");
    if (info.end - info.begin != numel * d->size)
      throw fail(where + ": " + std::to_string(info.end - info.begin) + " bytes for shape " +
                 shape.dump() + " of " + d->name + ", expected " + std::to_string(numel * d->size));
    m.index[name] = m.infos.size();
    m.infos.push_back(std::move(info));
  }
  // No two tensors may share bytes.
  std::vector<const SafetensorsTensorInfo*> sorted;
  for (const auto& i : m.infos) sorted.push_back(&i);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) {
    return a->begin < b->begin || (a->begin == b->begin && a->end < b->end);
  });
  for (size_t i = 1; i < sorted.size(); ++i)
    if (sorted[i]->begin < sorted[i - 1]->end)
      throw fail("tensors '" + sorted[i - 1]->name + "' and '" + sorted[i]->name + "' overlap");
}

SafetensorsFile::~SafetensorsFile() = default;
SafetensorsFile::SafetensorsFile(SafetensorsFile&&) noexcept = default;
SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&&) noexcept = default;

const std::string& SafetensorsFile::path() const { return mapping_->path; }

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  for (const auto& i : mapping_->infos) out.push_back(i.name);
  return out;
}

bool SafetensorsFile::contains(const std::string& name) const {
  return mapping_->index.count(name) != 0;
}

const SafetensorsTensorInfo& SafetensorsFile::info(const std::string& name) const {
  auto it = mapping_->index.find(name);
  ALTO_CHECK(it != mapping_->index.end(), mapping_->path, ": no tensor named '", name, "'");
  return mapping_->infos[it->second];
}

torch::Tensor SafetensorsFile::tensor(const std::string& name) const {
  const SafetensorsTensorInfo& i = info(name);
  const DtypeEntry* d = find_dtype(i.dtype);
  const auto options = torch::TensorOptions().dtype(d->type);
  uint8_t* p = const_cast<uint8_t*>(mapping_->data) + i.begin;
  if (reinterpret_cast<uintptr_t>(p) % d->size != 0) {
    torch::Tensor copy = torch::empty(i.shape, options);
    std::memcpy(copy.data_ptr(), p, i.end - i.begin);
    return copy;
  }
  auto keep = mapping_;
  return torch::from_blob(
      p, i.shape, [keep](void*) {}, options);
}

std::map<std::string, torch::Tensor> SafetensorsFile::tensors() const {
  std::map<std::string, torch::Tensor> out;
  for (const auto& i : mapping_->infos) out[i.name] = tensor(i.name);
  return out;
}

const std::map<std::string, std::string>& SafetensorsFile::metadata() const {
  return mapping_->metadata;
}

SafetensorsCheckpoint::SafetensorsCheckpoint(const std::string& path) : path_(path) {
  namespace fs = std::filesystem;
  fs::path index;
  if (fs::is_directory(path)) {
    if (fs::exists(fs::path(path) / "model.safetensors")) {
      shards_.emplace_back((fs::path(path) / "model.safetensors").string());
    } else {
      index = fs::path(path) / "model.safetensors.index.json";
      ALTO_CHECK_AS(IoError, fs::exists(index), path,
                    ": no model.safetensors or model.safetensors.index.json in this folder");
    }
  } else if (path.size() > 5 && path.substr(path.size() - 5) == ".json") {
    index = path;
  } else {
    shards_.emplace_back(path);
  }
  if (!index.empty()) {
    std::ifstream in(index);
    ALTO_CHECK_AS(IoError, in.good(), "cannot open ", index.string());
    json j;
    try {
      j = json::parse(in);
    } catch (const json::exception& e) {
      throw IoError(index.string() + ": not valid JSON (" + e.what() + ")");
    }
    ALTO_CHECK_AS(IoError, j.is_object() && j.contains("weight_map") && j["weight_map"].is_object(),
                  index.string(), ": expected an object with a \"weight_map\"");
    if (j.contains("metadata") && j["metadata"].is_object())
      for (auto it = j["metadata"].begin(); it != j["metadata"].end(); ++it)
        metadata_[it.key()] =
            it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
    std::map<std::string, size_t> shard_index;
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      ALTO_CHECK_AS(IoError, it.value().is_string(), index.string(), ": weight_map entry '",
                    it.key(), "' is not a file name");
      const std::string file = it.value().get<std::string>();
      if (!shard_index.count(file)) {
        shard_index[file] = shards_.size();
        shards_.emplace_back((index.parent_path() / file).string());
      }
      const SafetensorsFile& shard = shards_[shard_index[file]];
      ALTO_CHECK_AS(IoError, shard.contains(it.key()), index.string(), ": tensor '", it.key(),
                    "' is mapped to ", file, ", which does not contain it");
      shard_of_[it.key()] = shard_index[file];
      names_.push_back(it.key());
    }
    return;
  }
  metadata_ = shards_[0].metadata();
  names_ = shards_[0].names();
  for (const auto& n : names_) shard_of_[n] = 0;
}

std::vector<std::string> SafetensorsCheckpoint::names() const { return names_; }

bool SafetensorsCheckpoint::contains(const std::string& name) const {
  return shard_of_.count(name) != 0;
}

const SafetensorsFile& SafetensorsCheckpoint::file_of(const std::string& name) const {
  auto it = shard_of_.find(name);
  ALTO_CHECK(it != shard_of_.end(), path_, ": no tensor named '", name, "'");
  return shards_[it->second];
}

const SafetensorsTensorInfo& SafetensorsCheckpoint::info(const std::string& name) const {
  return file_of(name).info(name);
}

torch::Tensor SafetensorsCheckpoint::tensor(const std::string& name) const {
  return file_of(name).tensor(name);
}

void save_safetensors(const std::string& path,
                      const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  ordered_json header = ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<torch::Tensor> data;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    ALTO_CHECK(t.defined(), "save_safetensors(", path, "): tensor '", name, "' is undefined");
    ALTO_CHECK(name != "__metadata__" && !header.contains(name), "save_safetensors(", path,
               "): duplicate or reserved tensor name '", name, "'");
    const DtypeEntry* d = find_dtype(t.scalar_type());
    ALTO_CHECK_AS(Unsupported, d != nullptr, "save_safetensors(", path, "): tensor '", name,
                  "' has dtype ", t.dtype(), ", which safetensors output does not take");
    torch::Tensor c = t.detach().to(torch::kCPU).contiguous();
    const uint64_t bytes = static_cast<uint64_t>(c.numel()) * d->size;
    header[name] = {
        {"dtype", d->name}, {"shape", c.sizes().vec()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    data.push_back(c);
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // data starts 8-aligned, as the reference pads
  const std::string temp = path + ".partial";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    ALTO_CHECK_AS(IoError, out.good(), "cannot write ", path);
    uint8_t length[8];
    for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(text.size() >> (8 * i));
    out.write(reinterpret_cast<const char*>(length), 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const auto& c : data)
      out.write(static_cast<const char*>(c.data_ptr()),
                static_cast<std::streamsize>(c.numel() * c.element_size()));
    out.flush();
    if (!out.good()) {
      out.close();
      std::remove(temp.c_str());
      throw IoError("cannot write " + path + " (disk full?)");
    }
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    std::remove(temp.c_str());
    throw IoError("cannot write " + path + " (" + std::strerror(errno) + ")");
  }
}

}  // namespace alto
