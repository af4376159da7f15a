#pragma once
// The parts of a safetensors file that are untrusted text, parsed without libtorch: the header
// (dtype, shape and byte range of every tensor, the metadata) and a sharded checkpoint's index.
// core/safetensors.h maps the data on top; the fuzzers call these directly.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace alto {

/// One tensor's entry in a safetensors header.
struct SafetensorsTensorInfo {
  std::string name;
  std::string dtype;  // "F32", "F16", "BF16", "F64", "I64", "I32", "I16", "I8", "U8", "BOOL"
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte offsets into the data section
};

/// A validated header: every tensor lies inside the data section, whose bytes the tensors tile
/// exactly (no overlap, gap or trailing bytes); each name appears once.
struct SafetensorsHeader {
  uint64_t data_start = 0;                      // file offset of the data section
  std::vector<SafetensorsTensorInfo> tensors;   // in header order
  std::map<std::string, std::string> metadata;  // `__metadata__`
};

/// The header of the safetensors file whose `size` bytes start at `bytes` (only the length and
/// the header are read). Throws alto::IoError naming `path` for a truncated or corrupt header,
/// alto::Unsupported for a dtype outside SafetensorsTensorInfo::dtype's list.
SafetensorsHeader parse_safetensors_header(const uint8_t* bytes, uint64_t size,
                                           const std::string& path);

/// Bytes per element of a dtype of SafetensorsTensorInfo::dtype's list; 0 for any other name.
size_t safetensors_element_size(const std::string& dtype);

/// A sharded checkpoint's model.safetensors.index.json.
struct SafetensorsIndex {
  std::vector<std::string> shard_files;                    // in order of first mention
  std::vector<std::pair<std::string, size_t>> weight_map;  // tensor name -> shard_files index
  /// "metadata", non-string values in their JSON spelling (the Hub writes {"total_size": N}).
  std::map<std::string, std::string> metadata;
};

/// Throws alto::IoError naming `path` unless `text` is an index: an object whose "weight_map"
/// maps each tensor name (once) to a shard file name.
SafetensorsIndex parse_safetensors_index(const std::string& text, const std::string& path);

}  // namespace alto
