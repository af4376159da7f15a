#include "alto/core/safetensors_header.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "alto/core/error.h"

namespace alto {
namespace {

using Json = nlohmann::ordered_json;

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the Hugging Face reader's limit

struct Dtype {
  const char* name;
  size_t bytes;
};
constexpr Dtype kDtypes[] = {{"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8},
                             {"I32", 4}, {"I16", 2}, {"I8", 1},  {"U8", 1},   {"BOOL", 1}};
constexpr const char* kSupported = "F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL";

/// A JSON value for an error message: scalars as written, containers by kind only, since a
/// hostile header can make them arbitrarily large.
std::string describe(const Json& value) {
  return value.is_number() || value.is_boolean() || value.is_null() ? value.dump()
                                                                    : value.type_name();
}

/// As libtorch prints sizes: [4, 2, 3].
std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t k = 0; k < shape.size(); ++k) text += (k ? ", " : "") + std::to_string(shape[k]);
  return text + "]";
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
  const size_t element_size = safetensors_element_size(info.dtype);
  ALTO_CHECK_AS(Unsupported, element_size != 0, where, " has dtype ", info.dtype,
                ", which alto does not support (supported: ", kSupported, ")");

  const Json& shape = field("shape");
  ALTO_CHECK_AS(IoError, shape.is_array(), where, ": shape must be an array, got ",
                describe(shape));
  // Hostile sizes must not wrap around and pass the size check below.
  uint64_t bytes = element_size;
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
  ALTO_CHECK_AS(IoError, !overflow, where, ": shape ", shape_text(info.shape), " is too large");
  ALTO_CHECK_AS(IoError, info.end - info.begin == bytes, where, ": ", info.dtype, " shape ",
                shape_text(info.shape), " needs ", bytes, " bytes but data_offsets [", info.begin,
                ", ", info.end, "] hold ", info.end - info.begin);
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

/// Parses `text`, refusing a key that appears twice in the object at `depth` under `parent`
/// (nlohmann keeps the last of two equal keys silently).
Json parse_unique_keys(const char* begin, const char* end, int depth, const std::string& parent,
                       const std::string& where, const std::string& what) {
  std::set<std::string> names;
  std::string duplicate, top;
  const Json::parser_callback_t no_duplicates = [&](int d, Json::parse_event_t event,
                                                    Json& parsed) {
    if (event != Json::parse_event_t::key) return true;
    if (d == 1) top = parsed.get<std::string>();
    if (d == depth && (depth == 1 || top == parent) &&
        !names.insert(parsed.get<std::string>()).second && duplicate.empty())
      duplicate = parsed.get<std::string>();
    return true;
  };
  Json parsed;
  try {
    parsed = Json::parse(begin, end, no_duplicates);
  } catch (const Json::exception& e) {  // parse_error, and out_of_range for a number like 1e999
    throw IoError(detail::concat(where, ": ", what, " is not valid JSON: ", e.what()));
  }
  ALTO_CHECK_AS(IoError, duplicate.empty(), where, ": the ", what, " names '", duplicate,
                "' twice");
  ALTO_CHECK_AS(IoError, parsed.is_object(), where, ": ", what, " must be a JSON object, got ",
                describe(parsed));
  return parsed;
}

}  // namespace

size_t safetensors_element_size(const std::string& dtype) {
  for (const Dtype& d : kDtypes)
    if (dtype == d.name) return d.bytes;
  return 0;
}

SafetensorsHeader parse_safetensors_header(const uint8_t* bytes, uint64_t size,
                                           const std::string& path) {
  ALTO_CHECK_AS(IoError, size > 0, path, ": file is empty, not a safetensors file");
  ALTO_CHECK_AS(IoError, size >= 8, path, ": ", size,
                " bytes is too short for a safetensors file (its header length alone takes 8)");
  uint64_t header_bytes;
  std::memcpy(&header_bytes, bytes, 8);  // little-endian: alto builds for no other order
  ALTO_CHECK_AS(IoError, header_bytes <= kMaxHeaderBytes, path, ": header length ", header_bytes,
                " is over the 100 MB limit; not a safetensors file?");
  ALTO_CHECK_AS(IoError, header_bytes <= size - 8, path, ": header length ", header_bytes,
                " runs past the end of the file (", size, " bytes); is it truncated?");
  SafetensorsHeader header;
  header.data_start = 8 + header_bytes;
  const char* text = reinterpret_cast<const char*>(bytes) + 8;
  const Json json = parse_unique_keys(text, text + header_bytes, 1, "", path, "header");
  for (const auto& [key, value] : json.items()) {
    if (key == "__metadata__") {
      ALTO_CHECK_AS(IoError, value.is_object(), path,
                    ": __metadata__ must map strings to strings, got ", describe(value));
      for (const auto& [name, entry] : value.items()) {
        ALTO_CHECK_AS(IoError, entry.is_string(), path, ": __metadata__ \"", name,
                      "\" must be a string, got ", describe(entry));
        header.metadata[name] = entry.get<std::string>();
      }
      continue;
    }
    header.tensors.push_back(parse_entry(path, key, value, size - header.data_start));
  }
  check_layout(path, header.tensors, size - header.data_start);
  return header;
}

SafetensorsIndex parse_safetensors_index(const std::string& text, const std::string& path) {
  const Json index = parse_unique_keys(text.data(), text.data() + text.size(), 2, "weight_map",
                                       path, "checkpoint index");
  auto weight_map = index.find("weight_map");
  ALTO_CHECK_AS(IoError, weight_map != index.end() && weight_map->is_object(), path,
                ": has no \"weight_map\" object mapping tensor names to shard files");
  SafetensorsIndex out;
  std::map<std::string, size_t> shard_position;
  for (const auto& [name, shard_file] : weight_map->items()) {
    ALTO_CHECK_AS(IoError, shard_file.is_string(), path, ": weight_map \"", name,
                  "\" must name a shard file, got ", describe(shard_file));
    const std::string file = shard_file.get<std::string>();
    // A shard lies beside its index: a path could reach any file on the machine.
    ALTO_CHECK_AS(IoError,
                  !file.empty() && file != "." && file != ".." &&
                      file.find('/') == std::string::npos && file.find('\0') == std::string::npos,
                  path, ": weight_map \"", name, "\" names shard '", file,
                  "', which is not a file name beside the index");
    auto [it, added] = shard_position.emplace(file, out.shard_files.size());
    if (added) out.shard_files.push_back(file);
    out.weight_map.emplace_back(name, it->second);
  }
  auto metadata = index.find("metadata");
  if (metadata != index.end()) {
    ALTO_CHECK_AS(IoError, metadata->is_object(), path, ": \"metadata\" must be an object, got ",
                  describe(*metadata));
    for (const auto& [key, value] : metadata->items())
      out.metadata[key] = value.is_string() ? value.get<std::string>() : value.dump();
  }
  return out;
}

}  // namespace alto
