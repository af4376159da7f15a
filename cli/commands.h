#pragma once
// Each subcommand registers its options and its callback on the top-level app.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "inputs.h"

namespace alto::cli {

/// Whether `s` ends with `tail` (an output's extension: ".wav", ".safetensors").
inline bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

void add_info_command(CLI::App& app);
void add_convert_command(CLI::App& app);
void add_features_command(CLI::App& app);
void add_tokenize_command(CLI::App& app);
void add_embed_command(CLI::App& app);
void add_transcribe_command(CLI::App& app);
void add_encode_command(CLI::App& app);
void add_decode_command(CLI::App& app);
void add_chat_command(CLI::App& app);
void add_speak_command(CLI::App& app);

/// Whether `dir` is an audio LM (alto transcribe hands those to transcribe_with_audio_lm).
bool is_audio_lm(const std::string& dir);
/// Each input through the audio LM's transcription prompt, greedy; text or --json per input;
/// a failing input is reported and the others still run.
void transcribe_with_audio_lm(const std::string& dir, const std::string& device,
                              const std::string& dtype, const std::vector<std::string>& inputs,
                              const std::string& language, bool json,
                              std::optional<int64_t> max_new_tokens);

/// What `alto transcribe` hands a streaming speech-to-text model (Kyutai STT).
struct SpeechToTextCliOptions {
  std::string model, device = "cpu", dtype = "float32";
  std::vector<std::string> inputs;
  bool json = false, srt = false, vtt = false, timestamps = false;
  bool stream = false, no_pace = false, resample = false;
  RawAudioInput raw;  // headerless PCM input
};
/// Whether `dir` holds a Kyutai speech-to-text checkpoint.
bool is_speech_to_text(const std::string& dir);
/// Offline or --stream transcription of each input (audio, "-" or a codes .safetensors).
void transcribe_with_speech_to_text(const SpeechToTextCliOptions& options);

}  // namespace alto::cli
