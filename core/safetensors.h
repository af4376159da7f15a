#pragma once
// Hugging Face safetensors files: an 8-byte little-endian header length, a JSON header, then
// the raw little-endian C-order tensor data. Reading maps the file and hands out zero-copy views.

#include <torch/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "alto/core/safetensors_header.h"

namespace alto {

/// One .safetensors file, memory-mapped. The constructor validates the whole header, so every
/// later call is in bounds; const methods are thread-safe. Copies share the mapping.
class SafetensorsFile {
 public:
  /// Throws alto::IoError naming the path for a missing, unreadable, truncated or corrupt
  /// file, alto::Unsupported for a dtype outside SafetensorsTensorInfo::dtype's list.
  explicit SafetensorsFile(const std::string& path);

  const std::string& path() const { return path_; }
  /// In header order.
  std::vector<std::string> names() const;
  bool contains(const std::string& name) const { return index_.count(name) > 0; }
  /// Throws alto::InvalidArgument naming the tensor and the file when it is absent.
  const SafetensorsTensorInfo& info(const std::string& name) const;
  /// A CPU tensor of the file's dtype and shape: a view of the mapping (which it keeps alive)
  /// when the data is aligned for the dtype, otherwise a copy. The mapping is private, so
  /// writing into a view never reaches the file, though other views of this name see it.
  torch::Tensor tensor(const std::string& name) const;
  std::map<std::string, torch::Tensor> tensors() const;
  /// The header's `__metadata__`; empty when it has none.
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  struct Mapping;

  std::string path_;
  std::shared_ptr<Mapping> mapping_;
  uint64_t data_start_ = 0;  // file offset of the data section
  std::vector<SafetensorsTensorInfo> infos_;
  std::map<std::string, size_t> index_;  // name -> position in infos_
  std::map<std::string, std::string> metadata_;
};

/// A checkpoint as the Hub stores one: a .safetensors file, a sharded checkpoint's
/// model.safetensors.index.json (whose "weight_map" maps tensor names to shard files beside
/// it), or a folder holding either (the index wins). All shards are opened and validated in the
/// constructor; a tensor name may live in only one shard.
class SafetensorsCheckpoint {
 public:
  explicit SafetensorsCheckpoint(const std::string& path);

  const std::string& path() const { return path_; }
  /// Shard by shard (in the index's order of first mention), each in header order.
  std::vector<std::string> names() const { return names_; }
  bool contains(const std::string& name) const { return shard_of_.count(name) > 0; }
  /// Throws alto::InvalidArgument naming the tensor and the checkpoint when it is absent.
  const SafetensorsTensorInfo& info(const std::string& name) const;
  torch::Tensor tensor(const std::string& name) const;
  /// A single file's `__metadata__`, or the index's "metadata" with non-string values in
  /// their JSON spelling (the Hub writes {"total_size": 1234}).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::vector<SafetensorsFile>& shards() const { return shards_; }

 private:
  const SafetensorsFile& shard(const std::string& name) const;

  std::string path_;
  std::vector<SafetensorsFile> shards_;
  std::vector<std::string> names_;
  std::map<std::string, size_t> shard_of_;  // name -> position in shards_
  std::map<std::string, std::string> metadata_;
};

/// Writes `tensors` (dense, on any device, dtypes as in SafetensorsTensorInfo::dtype) with
/// `metadata` as `__metadata__`. The header lists the tensors in the given order; the data
/// section places larger item sizes first, as the Hugging Face writer does, so every tensor is
/// aligned for zero-copy reading. The file is written beside `path` under a temporary name and
/// renamed into place, so a failure never leaves a partial file at `path`; "-" writes to
/// standard output. Errors name the path and the tensor.
void save_safetensors(const std::string& path,
                      const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace alto
