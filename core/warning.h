#pragma once
// Warnings where the reference libraries warn and go on (torchaudio's and transformers' empty mel
// filters): a message on stderr by default; an application may route them elsewhere.

#include <functional>
#include <string>

namespace alto {

/// Hands `message` to the warning handler ("alto: warning: MESSAGE" on stderr by default).
void warn(const std::string& message);
/// Replaces the handler (thread-safe); an empty function restores the default.
void set_warning_handler(std::function<void(const std::string&)> handler);

}  // namespace alto
