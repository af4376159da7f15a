// The commands' inputs and outputs as scripts use them: batches that go on past a bad file,
// --output-dir, --inputs-from, standard input (containers and raw PCM), standard output, and
// one-line errors.

#include <torch/torch.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "alto/audio/audio_tensor.h"
#include "alto/audio/load.h"
#include "alto/core/safetensors.h"
#include "cli/run_cli.h"
#include "features/golden.h"
#include "models/golden_model.h"
#include "test_util.h"

namespace {

namespace fs = std::filesystem;
using alto::test::run_cli;
using alto::test::Stderr;

const std::string kAlto = ALTO_CLI_PATH;

// A file that no decoder reads.
std::string corrupt_file() {
  const std::string path = alto::test::temp_path("corrupt.wav");
  std::ofstream(path) << "RIFF this is not audio at all";
  return path;
}

size_t count_lines(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace

TEST_CASE("a batch goes on past a bad input, names it and exits 1", "[cli][inputs]") {
  const alto::test::GoldenModel mimi("mimi-tiny-random");
  const std::string good = mimi.dir() + "/input.wav", bad = corrupt_file();
  const std::string good2 = alto::test::data_path("stereo44k.mp3");

  const std::string info = run_cli("info " + good + " " + bad + " " + good2, 1, Stderr::kMerge);
  CHECK(info.find(good + ": wav") != std::string::npos);
  CHECK(info.find(good2 + ": mp3") != std::string::npos);
  CHECK(info.find("alto: error: " + bad + ": ") != std::string::npos);
  CHECK(info.find("alto: 1 of 3 inputs failed") != std::string::npos);

  // encode: one output per input under --output-dir; the bad one has none.
  const std::string dir = alto::test::temp_path("batch-encode");
  fs::remove_all(dir);
  const std::string list = alto::test::temp_path("batch.list");
  std::ofstream(list) << "# more inputs\n" << good2 << "\n\n";
  const std::string log = run_cli("--threads 1 encode --model " + mimi.dir() + " " + good + " " +
                                      bad + " --inputs-from " + list + " --output-dir " + dir,
                                  1, Stderr::kMerge);
  CHECK(count_lines(log) == 2);  // the failure and the summary, one line each
  CHECK(log.find(bad) != std::string::npos);
  CHECK(fs::exists(dir + "/input.safetensors"));
  CHECK(fs::exists(dir + "/stereo44k.safetensors"));
  CHECK_FALSE(fs::exists(dir + "/corrupt.safetensors"));
  // The batch's codes equal a single input's.
  const std::string one = alto::test::temp_path("batch-one.safetensors");
  run_cli("--threads 1 encode --model " + mimi.dir() + " " + good + " -o " + one);
  CHECK(torch::equal(alto::SafetensorsFile(one).tensor("codes"),
                     alto::SafetensorsFile(dir + "/input.safetensors").tensor("codes")));

  // -o names one output: several inputs are refused before any is read.
  const std::string refused = run_cli(
      "encode --model " + mimi.dir() + " " + good + " " + good2 + " -o " + one, 1, Stderr::kMerge);
  CHECK(count_lines(refused) == 1);
  CHECK(refused.find("--output-dir") != std::string::npos);

  // transcribe writes a transcript per input and goes on too.
  const alto::test::GoldenModel whisper("whisper-tiny-random");
  const std::string tokenizer = alto::test::data_path("tokenizers/whisper-multilingual");
  const std::string srt_dir = alto::test::temp_path("batch-srt");
  fs::remove_all(srt_dir);
  run_cli("--threads 1 transcribe --model " + whisper.dir() + " --tokenizer " + tokenizer +
              " --language en --beam 0 --temperature 0 --srt " + whisper.dir() + "/input.wav " +
              bad + " --output-dir " + srt_dir,
          1);
  std::ifstream srt(srt_dir + "/input.srt");
  std::string first;
  std::getline(srt, first);
  CHECK(first == "1");
}

TEST_CASE("standard input and output: containers, raw PCM, pipes", "[cli][inputs]") {
  const alto::test::GoldenModel whisper("whisper-tiny-random");
  const std::string wav = whisper.dir() + "/input.wav";  // 16 kHz mono float32
  // A WAV on standard input, and convert writing WAV to standard output for another command.
  CHECK(run_cli("info - < " + wav).find("-: wav, pcm_f32le, 16000 Hz, 1 channel, 5.000 s") == 0);
  CHECK(alto::test::run_program(kAlto, "convert " + wav + " - --bits 24 | " + kAlto + " info -")
            .find("-: wav, pcm_s24le, 16000 Hz, 1 channel, 5.000 s (80000 frames)") == 0);

  // Raw PCM out and back in: the same samples, the same embeddings.
  const std::string raw = alto::test::temp_path("input.f32");
  run_cli("convert " + wav + " - --format raw --bits 32f > " + raw);
  CHECK(fs::file_size(raw) == 80000 * 4);
  const std::string from_wav = alto::test::temp_path("embed-wav.safetensors");
  const std::string from_raw = alto::test::temp_path("embed-raw.safetensors");
  run_cli("--threads 1 embed --model " + whisper.dir() + " " + wav + " -o " + from_wav);
  run_cli("--threads 1 embed --model " + whisper.dir() +
          " --format f32le --rate 16000 --channels 1 - -o " + from_raw + " < " + raw);
  CHECK(torch::equal(alto::SafetensorsFile(from_wav).tensor("last_hidden_state"),
                     alto::SafetensorsFile(from_raw).tensor("last_hidden_state")));
  // Half the rate as raw 16-bit stereo: resampled and downmixed like any file.
  const std::string info = run_cli("info --format s16le --rate 8000 --channels 2 - < " + raw);
  CHECK(info.find("-: s16le, pcm_s16le, 8000 Hz, 2 channels, 10.000 s (80000 frames)") == 0);
  run_cli("info --format s16le - < " + raw, 1);  // no rate or channels

  // Codes to standard output, audio to standard output.
  const alto::test::GoldenModel mimi("mimi-tiny-random");
  const std::string codes = alto::test::temp_path("stdout-codes.safetensors");
  run_cli("--threads 1 encode --model " + mimi.dir() + " " + mimi.dir() + "/input.wav -o - > " +
          codes);
  CHECK(alto::SafetensorsFile(codes).tensor("codes").size(-1) > 0);
  CHECK(alto::test::run_program(kAlto, "--threads 1 decode --model " + mimi.dir() + " " + codes +
                                           " -o - | " + kAlto + " info -")
            .find("-: wav, pcm_f32le, 24000 Hz, 1 channel") == 0);
  const std::string flac = alto::test::temp_path("decoded.flac");
  run_cli("--threads 1 decode --model " + mimi.dir() + " " + codes + " -o " + flac);
  CHECK(alto::audio::probe_audio(flac).codec == "flac");

  // Text on standard input.
  const std::string tokenizer = alto::test::data_path("tokenizers/whisper-multilingual");
  CHECK(alto::test::run_program("echo 'Hello world' |", kAlto + " tokenize --tokenizer " +
                                                            tokenizer + " -") == "15947 1002\n");
  CHECK(alto::test::run_program("echo '15947 1002' |",
                                kAlto + " tokenize --tokenizer " + tokenizer + " --decode -") ==
        "Hello world\n");
}

TEST_CASE("every failure is one line on stderr", "[cli][inputs]") {
  const alto::test::GoldenModel mimi("mimi-tiny-random");
  const std::string wav = mimi.dir() + "/input.wav";
  for (const std::string args : {"features --extractor mel --n-fft 100000000 " + wav + " -o " +
                                     alto::test::temp_path("x.safetensors"),
                                 "encode --model " + mimi.dir() + " --device cuda " + wav + " -o " +
                                     alto::test::temp_path("x.safetensors"),
                                 "encode --model " + mimi.dir() + " --device nowhere " + wav +
                                     " -o " + alto::test::temp_path("x.safetensors"),
                                 "info --rate 16000 " + wav, "convert " + wav}) {
    INFO(args);
    const std::string out = run_cli(args, 1, Stderr::kMerge);
    CHECK(count_lines(out) == 1);
    CHECK(out.rfind("alto: ", 0) == 0);
  }
}

TEST_CASE("alto features --extractor mel runs with torchaudio's defaults", "[cli][features]") {
  // n_mels=128 over n_fft=400 leaves filters empty: torchaudio warns and runs, so does alto.
  const alto::SafetensorsFile reference(
      alto::test::data_path("features/extra/melspec_defaults.safetensors"));
  const std::string wav = alto::test::data_path("features/melspec_htk_nonorm__chirp_1s.wav");
  const std::string out = alto::test::temp_path("mel-defaults.safetensors");
  const std::string log =
      run_cli("features --extractor mel " + wav + " -o " + out, 0, Stderr::kMerge);
  CHECK(log.find("alto: warning: mel filterbank:") == 0);
  const torch::Tensor expected = reference.tensor("expected");
  alto::test::require_close(alto::SafetensorsFile(out).tensor("features"), expected,
                            1e-5 * expected.abs().max().item<double>(), 2e-3, std::nullopt,
                            "melspec_defaults");
}

TEST_CASE("audio whose header claims an absurd rate is refused, not blown up or emptied",
          "[cli][reliability]") {
  // 1500 frames of 16-bit PCM (3 KB) said to be at 1 Hz and at 2 GHz.
  const std::vector<uint8_t> data(3000, 1);
  const std::string slow = alto::test::temp_path("rate-1hz.wav");
  const std::string fast = alto::test::temp_path("rate-2ghz.wav");
  alto::test::write_bytes(slow, alto::test::make_wav(1, 16, 1, 1, data));
  alto::test::write_bytes(fast, alto::test::make_wav(1, 16, 1, 2000000000, data));
  const alto::test::GoldenModel mimi("mimi-tiny-random");
  const std::string codes = alto::test::temp_path("absurd-rate.safetensors");
  const std::string wav = alto::test::temp_path("absurd-rate.wav");
  const std::string encoded =
      run_cli("encode --model " + mimi.dir() + " " + slow + " -o " + codes, 1, Stderr::kMerge);
  CHECK_THAT(encoded, Catch::Contains("resampling 1 Hz audio to 24000 Hz changes its length "
                                      "24000 times"));
  const std::string converted =
      run_cli("convert --sample-rate 16000 " + fast + " " + wav, 1, Stderr::kMerge);
  CHECK_THAT(converted, Catch::Contains("a rate of 2000000000 Hz is unlikely"));
  CHECK_FALSE(fs::exists(codes));
  CHECK_FALSE(fs::exists(wav));
  // Without conversion the file is copied as it is.
  run_cli("convert " + fast + " " + wav);
  CHECK(alto::audio::probe_audio(wav).sample_rate == 2000000000);
}
