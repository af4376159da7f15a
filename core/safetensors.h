#pragma once
// The safetensors format (Hugging Face): reading memory-mapped, zero-copy where alignment allows,
// with every header field validated; sharded checkpoints; and writing.

#include <torch/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace alto {

/// One tensor's entry in a safetensors header.
struct SafetensorsTensorInfo {
  std::string name;
  std::string dtype;  // "F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8", "U8", "BOOL"
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offsets into the data section
  uint64_t end = 0;
};

/// One .safetensors file, memory-mapped copy-on-write: tensors it returns may be written to
/// without touching the file.
class SafetensorsFile {
 public:
  /// Maps and validates the file; a missing, truncated or malformed file is an alto::IoError
  /// naming the path and the fault, an unsupported dtype an alto::Unsupported.
  explicit SafetensorsFile(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(SafetensorsFile&&) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept;

  const std::string& path() const;
  std::vector<std::string> names() const;  // header order
  bool contains(const std::string& name) const;
  const SafetensorsTensorInfo& info(const std::string& name) const;
  /// A CPU tensor of the file's dtype: a view of the mapping when its offset is aligned for the
  /// dtype (it keeps the mapping alive), otherwise a copy.
  torch::Tensor tensor(const std::string& name) const;
  std::map<std::string, torch::Tensor> tensors() const;
  const std::map<std::string, std::string>& metadata() const;

 private:
  struct Mapping;
  std::shared_ptr<Mapping> mapping_;
};

/// A checkpoint: a .safetensors file, a folder with model.safetensors, or a sharded one
/// (model.safetensors.index.json, or a path to such an index).
class SafetensorsCheckpoint {
 public:
  explicit SafetensorsCheckpoint(const std::string& path);
  const std::string& path() const { return path_; }
  std::vector<std::string> names() const;
  bool contains(const std::string& name) const;
  const SafetensorsTensorInfo& info(const std::string& name) const;
  torch::Tensor tensor(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  const SafetensorsFile& file_of(const std::string& name) const;
  std::string path_;
  std::vector<SafetensorsFile> shards_;
  std::vector<std::string> names_;
  std::map<std::string, size_t> shard_of_;
  std::map<std::string, std::string> metadata_;
};

/// Writes the tensors in order (moved to CPU, made contiguous) with string metadata. The file is
/// written beside its destination and renamed into place, so a failure never leaves half a file.
void save_safetensors(const std::string& path,
                      const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace alto
