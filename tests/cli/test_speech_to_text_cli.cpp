// alto transcribe with Kyutai STT, driven as a user would: offline --json (token ids, text,
// words), a codes file as alto encode writes it (the decoder then gives transformers' generate
// ids), --stream over a file, raw PCM on standard input and several concurrent files, subtitles,
// and the errors the issue names.

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "alto/audio/audio_tensor.h"
#include "alto/audio/load.h"
#include "alto/audio/save.h"
#include "alto/core/safetensors.h"
#include "alto/models/kyutai_speech_to_text/kyutai_speech_to_text.h"
#include "cli/run_cli.h"
#include "models/golden_model.h"
#include "test_util.h"

using alto::test::GoldenModel;
using alto::test::run_cli;
using alto::test::Stderr;
using nlohmann::json;

namespace {

std::vector<json> json_lines(const std::string& out) {
  std::vector<json> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(json::parse(line));
  return lines;
}

std::vector<int64_t> ids(const torch::Tensor& t) {
  const torch::Tensor flat = t.flatten().contiguous();
  return std::vector<int64_t>(flat.data_ptr<int64_t>(), flat.data_ptr<int64_t>() + flat.numel());
}

// A copy of the golden folder whose head row 0 (end of padding) is row 203's doubled: the
// random model then marks word boundaries, so words, subtitles and latencies have content.
std::string folder_with_words(const GoldenModel& golden) {
  namespace fs = std::filesystem;
  const fs::path copy = alto::test::temp_path("kyutai-with-words");
  fs::create_directories(copy);
  for (const auto& entry : fs::directory_iterator(golden.dir()))
    if (entry.path().filename() != "model.safetensors")
      fs::copy_file(entry.path(), copy / entry.path().filename(),
                    fs::copy_options::overwrite_existing);
  const alto::SafetensorsFile weights(golden.dir() + "/model.safetensors");
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& name : weights.names()) {
    torch::Tensor t = weights.tensor(name).clone();
    if (name == "lm_head.weight") t[0] = t[203] * 2;
    tensors.emplace_back(name, t);
  }
  alto::save_safetensors((copy / "model.safetensors").string(), tensors, {});
  return copy.string();
}

}  // namespace

TEST_CASE("alto transcribe with Kyutai STT: offline, codes files, streams, raw PCM",
          "[cli][kyutai_stt]") {
  const GoldenModel golden("kyutai-stt-tiny-random");
  const std::string model = "transcribe --model " + golden.dir() + " ";
  const std::string wav = golden.dir() + "/input.wav";
  const auto stt = alto::models::KyutaiSpeechToText::from_pretrained(golden.dir());
  const torch::Tensor wave = alto::audio::to_tensor(alto::audio::load_audio(wav))[0];
  const auto offline = stt->transcribe(wave);

  const json one = json::parse(run_cli(model + wav + " --json"));
  CHECK(one["token_ids"].get<std::vector<int64_t>>() == offline.token_ids);
  CHECK(one["text"] == offline.text);
  CHECK(run_cli(model + wav) == offline.text + "\n");

  // The codes generate fed the decoder, as alto encode writes them: transformers' ids.
  const std::string codes = alto::test::temp_path("stt_codes.safetensors");
  alto::save_safetensors(codes, {{"codes", golden.tensor("audio_codes")}}, {});
  const json from_codes = json::parse(run_cli(model + codes + " --json"));
  const torch::Tensor generated = golden.tensor("generated_ids")[0];
  CHECK(from_codes["token_ids"].get<std::vector<int64_t>>() ==
        ids(generated.narrow(0, 1, generated.size(0) - 1)));
  CHECK(from_codes["text"] == golden.metadata("decoded_text"));
  // The offline clip's own codes (transformers' audio_codes_offline) give the offline ids.
  const std::string offline_codes = alto::test::temp_path("stt_offline_codes.safetensors");
  alto::save_safetensors(offline_codes, {{"codes", golden.tensor("audio_codes_offline")}}, {});
  CHECK(json::parse(run_cli(model + offline_codes + " --json"))["token_ids"]
            .get<std::vector<int64_t>>() == offline.token_ids);

  // --stream over a file (unpaced) and over raw float PCM on standard input: the same ids.
  const auto streamed = json_lines(run_cli(model + wav + " --stream --no-pace --json"));
  REQUIRE(!streamed.empty());
  CHECK(streamed.back()["token_ids"].get<std::vector<int64_t>>() == offline.token_ids);
  CHECK(streamed.back()["real_time_factor"].get<double>() > 0);
  const std::string raw = alto::test::temp_path("stt.f32");
  {
    std::ofstream out(raw, std::ios::binary);
    out.write(reinterpret_cast<const char*>(wave.data_ptr<float>()), wave.numel() * 4);
  }
  const auto piped = json_lines(run_cli(model + "- --stream --no-pace --json --format f32le "
                                        "--rate 24000 --channels 1 < " + raw));
  REQUIRE(!piped.empty());
  CHECK(piped.back()["token_ids"].get<std::vector<int64_t>>() == offline.token_ids);

  // Several files: concurrent batched streams, each equal to its offline transcript.
  const std::string shorter = alto::test::temp_path("stt_short.wav");
  alto::audio::save_audio(shorter, alto::audio::audio_from_tensor(wave.narrow(0, 0, 40000).unsqueeze(0), 24000));
  const auto both = json_lines(run_cli(model + wav + " " + shorter + " --stream --no-pace --json"));
  REQUIRE(both.size() >= 2);
  CHECK(both[both.size() - 2]["token_ids"].get<std::vector<int64_t>>() == offline.token_ids);
  CHECK(both.back()["token_ids"].get<std::vector<int64_t>>() ==
        stt->transcribe(wave.narrow(0, 0, 40000)).token_ids);
}

TEST_CASE("alto transcribe with Kyutai STT: words, subtitles, latency", "[cli][kyutai_stt]") {
  const GoldenModel golden("kyutai-stt-tiny-random");
  const std::string dir = folder_with_words(golden);
  const std::string model = "transcribe --model " + dir + " ";
  const std::string wav = golden.dir() + "/input.wav";
  const json one = json::parse(run_cli(model + wav + " --json"));
  REQUIRE(one["words"].size() > 0);
  const auto stt = alto::models::KyutaiSpeechToText::from_pretrained(dir);
  const auto offline =
      stt->transcribe(alto::audio::to_tensor(alto::audio::load_audio(wav))[0]);
  REQUIRE(one["words"].size() == offline.words.size());
  for (size_t i = 0; i < offline.words.size(); ++i) {
    CHECK(one["words"][i]["word"] == offline.words[i].text);
    CHECK(one["words"][i]["start"].get<double>() == Approx(offline.words[i].start));
    CHECK(one["words"][i]["end"].get<double>() == Approx(offline.words[i].end));
  }
  const std::string srt = run_cli(model + wav + " --srt");
  CHECK(srt.rfind("1\n00:00:", 0) == 0);
  CHECK(srt.find(" --> ") != std::string::npos);
  CHECK(run_cli(model + wav + " --vtt").rfind("WEBVTT\n\n", 0) == 0);
  // --stream prints each word as decided, with its latency behind the audio, then the whole.
  const auto lines = json_lines(run_cli(model + wav + " --stream --no-pace --json"));
  REQUIRE(lines.size() == offline.words.size() + 1);
  for (size_t i = 0; i < offline.words.size(); ++i) {
    CHECK(lines[i]["word"] == offline.words[i].text);
    CHECK(lines[i].contains("latency"));
  }
  // Paced as live: the clip takes its duration; text mode reports the real-time factor.
  const std::string paced = run_cli(model + wav + " --stream", 0, Stderr::kMerge);
  CHECK(paced.find("real-time factor") != std::string::npos);
}

TEST_CASE("alto transcribe with Kyutai STT: bad input", "[cli][kyutai_stt]") {
  const GoldenModel golden("kyutai-stt-tiny-random");
  const std::string model = "transcribe --model " + golden.dir() + " ";
  const std::string at16k = alto::test::temp_path("stt_16k.wav");
  alto::audio::save_audio(at16k, alto::test::sine(440, 0.3, 16000, 16000, 1));
  const std::string err = run_cli(model + at16k, 1, Stderr::kMerge);
  CHECK(err.find("16000 Hz, the model takes 24000 Hz: pass --resample") != std::string::npos);
  CHECK(!run_cli(model + at16k + " --resample --json").empty());
  const std::string codes = alto::test::temp_path("stt_bad_codes.safetensors");
  alto::save_safetensors(codes, {{"codes", torch::zeros({1, 3, 5}, torch::kInt64)}}, {});
  CHECK(run_cli(model + codes, 1, Stderr::kMerge).find("must be int64 [1, 4, frames]") !=
        std::string::npos);
  CHECK(run_cli(model + codes + " --stream", 1, Stderr::kMerge).find("not a codes file") !=
        std::string::npos);
}
