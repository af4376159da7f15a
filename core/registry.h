#pragma once
// Open registries: a feature extractor, codec or model adds itself with one registration line in
// its own file, and everything that lists or creates them (from_pretrained, the CLI, Python)
// asks the registry. Registration runs while libalto loads, before main.

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "alto/core/error.h"

namespace alto {

template <typename Entry>
class Registry {
 public:
  /// The process-wide registry of this entry type.
  static Registry& instance() {
    static Registry registry;
    return registry;
  }

  /// Throws alto::InvalidArgument when `key` is taken: two entries must not shadow each other.
  void add(const std::string& key, Entry entry) {
    std::lock_guard<std::mutex> lock(mutex_);
    ALTO_CHECK(entries_.emplace(key, std::move(entry)).second, Entry::kind(), " '", key,
               "' is registered twice");
  }
  /// nullptr when absent.
  const Entry* find(const std::string& key) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : &it->second;
  }
  /// Throws alto::Unsupported naming `where`, the key and the known keys.
  const Entry& at(const std::string& key, const std::string& where) const {
    if (const Entry* e = find(key)) return *e;
    std::string known;
    for (const auto& k : keys()) known += (known.empty() ? "" : ", ") + k;
    throw Unsupported(where + (where.empty() ? "" : ": ") + "unknown " + Entry::kind() + " '" +
                      key + "' (alto knows: " + known + ")");
  }
  std::vector<std::string> keys() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> out;
    for (const auto& [key, _] : entries_) out.push_back(key);
    return out;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, Entry> entries_;
};

/// `static const Registration<Entry> r("key", entry);` in a source file registers it at load.
template <typename Entry>
struct Registration {
  Registration(const std::string& key, Entry entry) {
    Registry<Entry>::instance().add(key, std::move(entry));
  }
};

}  // namespace alto
