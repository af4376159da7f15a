// Whisper against transformers' WhisperForConditionalGeneration on the golden tiny checkpoints
// (tests/data/models/whisper-*, copied from ../shared/golden/models; MANIFEST.md there).

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "alto/core/error.h"
#include "alto/models/whisper/whisper.h"
#include "features/golden.h"
#include "models/golden_model.h"
#include "test_util.h"

using alto::LoadOptions;
using alto::models::Intermediates;
using alto::models::Whisper;
using alto::test::GoldenModel;

namespace {

torch::Tensor find(const Intermediates& intermediates, const std::string& name) {
  for (const auto& [key, value] : intermediates.tensors)
    if (key == name) return value;
  FAIL("no intermediate named " << name);
  return {};
}

// Greedy argmax decoding with the KV cache; returns the step logits [steps, vocab].
torch::Tensor greedy_steps(const Whisper& model, const torch::Tensor& encoder_output,
                           const torch::Tensor& prompt, int64_t steps, torch::Tensor& tokens) {
  auto state = model.start(encoder_output);
  std::vector<torch::Tensor> rows;
  std::vector<int64_t> chosen;
  torch::Tensor next = prompt;
  for (int64_t t = 0; t < steps; ++t) {
    torch::Tensor last = model.decode(next, state).select(1, -1);
    rows.push_back(last[0]);
    chosen.push_back(last.argmax(-1).item<int64_t>());
    next = torch::tensor({chosen.back()}, torch::kInt64).view({1, 1});
  }
  tokens = torch::tensor(chosen, torch::kInt64);
  return torch::stack(rows);
}

}  // namespace

TEST_CASE("Whisper encoder and decoder match transformers", "[whisper][models]") {
  for (const std::string name : {"whisper-tiny-random", "whisper-tiny-random-128mel-fp16"}) {
    INFO(name);
    const GoldenModel golden(name);
    const Whisper model = *Whisper::from_pretrained(golden.dir());
    CHECK(model.config().num_mel_bins == golden.tensor("input_features").size(1));
    CHECK(model.config().vocab_size == golden.tensor("decoder.logits").size(2));

    Intermediates inter;
    const torch::Tensor hidden = model.encode(golden.tensor("input_features"), &inter);
    CHECK(hidden.scalar_type() == torch::kFloat32);  // the float16 file loads as float32
    golden.require_matches(hidden, "encoder.last_hidden_state");
    golden.require_matches(find(inter, "last_hidden_state"), "encoder.last_hidden_state");
    golden.require_matches(torch::gelu(find(inter, "model.encoder.conv1")), "encoder.conv1_gelu");
    const torch::Tensor conv2 = torch::gelu(find(inter, "model.encoder.conv2"));
    golden.require_matches(conv2, "encoder.conv2_gelu");
    golden.require_matches(
        conv2.permute({0, 2, 1}) +
            golden.checkpoint_tensor("model.encoder.embed_positions.weight").to(torch::kFloat32),
        "encoder.after_pos_embed");
    golden.require_matches(find(inter, "model.encoder.layers.0"), "encoder.layer0_output");
    golden.require_matches(find(inter, "model.encoder.layers.1"), "encoder.layer1_output");

    // The decoder on transformers' own encoder output, the whole prompt at once.
    auto state = model.start(golden.tensor("encoder.last_hidden_state"));
    Intermediates decoder_inter;
    const torch::Tensor logits =
        model.decode(golden.tensor("decoder.prompt_ids"), state, &decoder_inter);
    golden.require_matches(logits, "decoder.logits");
    golden.require_matches(find(decoder_inter, "model.decoder.embeddings"),
                           "decoder.hidden_states.0");
    golden.require_matches(find(decoder_inter, "model.decoder.layers.0"),
                           "decoder.hidden_states.1");
    golden.require_matches(find(decoder_inter, "model.decoder.layer_norm"),
                           "decoder.hidden_states.2");
    golden.require_matches(find(decoder_inter, "proj_out"), "decoder.logits");
    CHECK(state.length() == 4);

    // Greedy continuation on alto's own encoder output, token by token through the cache.
    const torch::Tensor expected_tokens = golden.tensor("greedy.tokens");
    torch::Tensor tokens;
    const torch::Tensor steps = greedy_steps(model, hidden, golden.tensor("decoder.prompt_ids"),
                                             expected_tokens.size(0), tokens);
    golden.require_matches(steps, "greedy.step_logits");
    CHECK(torch::equal(tokens, expected_tokens));
    CHECK(torch::equal(torch::cat({golden.tensor("decoder.prompt_ids")[0], tokens}).unsqueeze(0),
                       golden.tensor("greedy.sequence")));

    // Cached decoding equals recomputing the whole prefix: one call over the full sequence.
    auto full_state = model.start(hidden);
    const torch::Tensor sequence = golden.tensor("greedy.sequence").narrow(1, 0, 27);
    const torch::Tensor full = model.decode(sequence, full_state)[0].narrow(0, 3, 24);
    INFO("max |cached - recomputed| = " << (full - steps).abs().max().item<double>());
    CHECK(torch::allclose(full, steps, 0, 5e-5));
  }
}

TEST_CASE("Whisper batches audio windows and decoder rows", "[whisper][models]") {
  const GoldenModel golden("whisper-tiny-random");
  const Whisper model = *Whisper::from_pretrained(golden.dir());
  const torch::Tensor features = golden.tensor("input_features");
  const torch::Tensor quiet = features * 0.5 - 0.25;
  const torch::Tensor batch = model.encode(torch::cat({features, quiet}));
  CHECK(torch::allclose(batch[0], model.encode(features)[0], 0, 1e-5));
  CHECK(torch::allclose(batch[1], model.encode(quiet)[0], 0, 1e-5));

  // Two rows per audio (beam search); rows then reordered and duplicated within their audio.
  const torch::Tensor prompt = golden.tensor("decoder.prompt_ids");
  auto state = model.start(batch, 2);
  CHECK(state.rows() == 4);
  const torch::Tensor other = prompt.clone();
  other[0][3] = 50362;
  const torch::Tensor logits = model.decode(torch::cat({prompt, other, prompt, other}), state);
  for (int64_t audio = 0; audio < 2; ++audio) {
    auto single = model.start(batch.narrow(0, audio, 1));
    const torch::Tensor alone = model.decode(prompt, single)[0];
    CHECK(torch::allclose(logits[2 * audio], alone, 0, 1e-4));
  }
  state.select_rows(torch::tensor({1, 1, 2, 3}, torch::kInt64));
  CHECK(state.rows() == 4);
  const torch::Tensor next = torch::full({4, 1}, 852, torch::kInt64);
  const torch::Tensor stepped = model.decode(next, state);
  CHECK(torch::allclose(stepped[0], stepped[1], 0, 1e-5));
  auto check = model.start(batch.narrow(0, 1, 1));
  model.decode(other, check);
  CHECK(torch::allclose(stepped[3], model.decode(next.narrow(0, 0, 1), check)[0], 0, 1e-4));
  // More steps than the reordered cache holds: it grows, the duplicated rows stay equal and the
  // last row stays its audio's single decoder.
  for (int64_t token = 0; token < 12; ++token) {
    const torch::Tensor ids = torch::full({4, 1}, 400 + token, torch::kInt64);
    const torch::Tensor rows = model.decode(ids, state);
    CHECK(torch::equal(rows[0], rows[1]));
    CHECK(torch::allclose(rows[3], model.decode(ids.narrow(0, 0, 1), check)[0], 0, 1e-4));
  }
  CHECK(state.length() == 17);

  CHECK_THROWS_WITH(state.select_rows(torch::tensor({2, 1, 2, 3}, torch::kInt64)),
                    Catch::Contains("audio window 0"));
}

TEST_CASE("Whisper attention weights on request", "[whisper][models]") {
  const GoldenModel golden("whisper-tiny-random");
  const Whisper model = *Whisper::from_pretrained(golden.dir());
  Intermediates inter;
  inter.attention_weights = true;
  model.encode(golden.tensor("input_features"), &inter);
  const torch::Tensor weights = find(inter, "model.encoder.layers.1.self_attn.attn_weights");
  REQUIRE(weights.sizes() == torch::IntArrayRef({1, 4, 1500, 1500}));
  CHECK(torch::allclose(weights.sum(-1), torch::ones({1, 4, 1500}), 0, 1e-4));
  // The entropy the MANIFEST states for layer 1 (mean over heads and queries, / log 1500).
  const double entropy =
      (-(weights * weights.clamp_min(1e-30).log()).sum(-1)).mean().item<double>() /
      std::log(1500.0);
  CHECK(entropy == Approx(0.6705).margin(1e-3));
}

TEST_CASE("Whisper load options", "[whisper][models]") {
  const GoldenModel golden("whisper-tiny-random");
  LoadOptions half;
  half.dtype = torch::kFloat16;
  CHECK_THROWS_AS(Whisper::from_pretrained(golden.dir(), half), alto::Unsupported);

  LoadOptions bf16;
  bf16.dtype = torch::kBFloat16;
  const Whisper model = *Whisper::from_pretrained(golden.dir(), bf16);
  const torch::Tensor hidden = model.encode(golden.tensor("input_features"));
  CHECK(hidden.scalar_type() == torch::kBFloat16);
  const torch::Tensor expected = golden.tensor("encoder.last_hidden_state");
  const double relative =
      ((hidden.to(torch::kFloat32) - expected).norm() / expected.norm()).item<double>();
  // libtorch's CPU bfloat16 convolution rounds its accumulator on CPUs without AVX512-BF16
  // (4% error per conv measured on an AVX2 EPYC, 0.3% on AVX512 Xeons), so the bound leaves room
  // for that; a wrong layer would be off by ~100%.
  CHECK(relative < 0.3);
  auto state = model.start(hidden);
  CHECK(model.decode(golden.tensor("decoder.prompt_ids"), state).scalar_type() == torch::kFloat32);
}

TEST_CASE("Whisper with int8 linear weights in its decoder", "[whisper][models]") {
  const GoldenModel golden("whisper-tiny-random");
  const Whisper model = *Whisper::from_pretrained(golden.dir(), LoadOptions::parse("cpu", "int8"));
  CHECK(model.load_options().precision() == "int8");
  // The encoder keeps its float32 weights: the golden output as the float32 model computes it.
  const torch::Tensor hidden = model.encode(golden.tensor("input_features"));
  golden.require_matches(hidden, "encoder.last_hidden_state");

  // The bounds int8 keeps on this checkpoint, measured with margin: the prompt's logits within
  // 5 % of their range (2.6 % measured) with every argmax kept, and transformers' float32 greedy
  // continuation kept for at least 20 of its 24 tokens (all 24 measured).
  auto state = model.start(golden.tensor("encoder.last_hidden_state"));
  const torch::Tensor logits = model.decode(golden.tensor("decoder.prompt_ids"), state);
  const torch::Tensor expected = golden.tensor("decoder.logits");
  const double scale = expected.abs().max().item<double>();
  const double prompt_diff = (logits - expected).abs().max().item<double>() / scale;
  INFO("prompt logits: max |int8 - float32| / max |float32| = " << prompt_diff);
  CHECK(prompt_diff < 0.05);
  CHECK(torch::equal(logits.argmax(-1), expected.argmax(-1)));

  const torch::Tensor expected_tokens = golden.tensor("greedy.tokens");
  torch::Tensor tokens;
  const torch::Tensor steps = greedy_steps(model, hidden, golden.tensor("decoder.prompt_ids"),
                                           expected_tokens.size(0), tokens);
  const int64_t kept =
      (tokens == expected_tokens).to(torch::kInt64).cumprod(0).sum().item<int64_t>();
  INFO("greedy tokens kept: " << kept << " of " << expected_tokens.size(0));
  CHECK(kept >= 20);
  // Cached int8 decoding equals recomputing the prefix with the same int8 weights.
  auto full_state = model.start(hidden);
  const torch::Tensor sequence =
      torch::cat({golden.tensor("decoder.prompt_ids")[0], tokens}).unsqueeze(0).narrow(1, 0, 27);
  const torch::Tensor full = model.decode(sequence, full_state)[0].narrow(0, 3, 24);
  CHECK(torch::allclose(full, steps, 0, 5e-5));
}

TEST_CASE("Whisper rejects bad inputs with the expected shape", "[whisper][models]") {
  const GoldenModel golden("whisper-tiny-random");
  const Whisper model = *Whisper::from_pretrained(golden.dir());
  CHECK_THROWS_WITH(model.encode(torch::zeros({1, 80, 2999})),
                    Catch::Contains("[batch >= 1, 80, 3000]") && Catch::Contains("[1, 80, 2999]"));
  CHECK_THROWS_WITH(model.encode(torch::zeros({80, 3000})),
                    Catch::Contains("[batch >= 1, 80, 3000]"));
  CHECK_THROWS_WITH(model.encode(torch::zeros({0, 80, 3000})),
                    Catch::Contains("[batch >= 1, 80, 3000]"));
  CHECK_THROWS_AS(model.encode(torch::zeros({1, 80, 3000}, torch::kInt64)), alto::Error);
  CHECK_THROWS_WITH(model.start(torch::zeros({1, 1500, 32})),
                    Catch::Contains("[audios, frames, 64]"));

  auto state = model.start(golden.tensor("encoder.last_hidden_state"));
  CHECK_THROWS_WITH(model.decode(torch::tensor({{51865}}, torch::kInt64), state),
                    Catch::Contains("[0, 51865)"));
  CHECK_THROWS_WITH(model.decode(torch::tensor({{1, 2}}, torch::kInt32), state),
                    Catch::Contains("int64"));
  CHECK_THROWS_WITH(model.decode(torch::zeros({1, 449}, torch::kInt64), state),
                    Catch::Contains("448 positions"));
  CHECK(state.length() == 0);  // rejected calls leave the cache alone
}

TEST_CASE("Whisper checkpoint folder errors", "[whisper][models]") {
  namespace fs = std::filesystem;
  const GoldenModel golden("whisper-tiny-random");
  CHECK_THROWS_AS(Whisper::from_pretrained(alto::test::temp_path("no-such-model")), alto::IoError);

  // A config.json of another architecture names its model_type.
  const std::string other = alto::test::temp_path("encodec-config");
  fs::create_directories(other);
  alto::test::write_bytes(other + "/config.json",
                          std::vector<uint8_t>{'{', '"', 'm', 'o', 'd', 'e', 'l', '_', 't', 'y',
                                               'p', 'e', '"', ':', '"', 'x', '"', '}'});
  CHECK_THROWS_WITH(Whisper::from_pretrained(other), Catch::Contains("model_type 'x'"));

  // A bad field names the file and the field.
  nlohmann::json config;
  std::ifstream(golden.dir() + "/config.json") >> config;
  config["d_model"] = 63;
  const std::string bad = alto::test::temp_path("bad-heads");
  fs::create_directories(bad);
  std::ofstream(bad + "/config.json") << config.dump();
  CHECK_THROWS_WITH(Whisper::from_pretrained(bad),
                    Catch::Contains("config.json") && Catch::Contains("encoder_attention_heads"));

  // A checkpoint with a missing, an unexpected and a mis-shaped tensor: one error names all.
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  const alto::SafetensorsFile original(golden.dir() + "/model.safetensors");
  for (const auto& tensor_name : original.names()) {
    if (tensor_name == "model.encoder.layer_norm.bias") continue;
    torch::Tensor t = original.tensor(tensor_name);
    if (tensor_name == "model.decoder.layers.1.fc1.weight") t = t.narrow(0, 0, 100);
    tensors.emplace_back(tensor_name, t);
  }
  tensors.emplace_back("model.encoder.extra_scale", torch::ones({3}));
  const std::string damaged = alto::test::temp_path("damaged-whisper");
  fs::create_directories(damaged);
  fs::copy_file(golden.dir() + "/config.json", damaged + "/config.json");
  alto::save_safetensors(damaged + "/model.safetensors", tensors);
  CHECK_THROWS_WITH(
      Whisper::from_pretrained(damaged),
      Catch::Contains("1 missing, 1 unexpected, 1 mis-shaped") &&
          Catch::Contains("missing: model.encoder.layer_norm.bias (expected [64])") &&
          Catch::Contains("unexpected: model.encoder.extra_scale [3]") &&
          Catch::Contains("mis-shaped: model.decoder.layers.1.fc1.weight: expected [128, 64], "
                          "found [100, 64]"));

  // Without "model." (a bare WhisperModel) and without tying: proj_out is then required.
  std::vector<std::pair<std::string, torch::Tensor>> bare;
  for (const auto& tensor_name : original.names())
    bare.emplace_back(tensor_name.substr(6), original.tensor(tensor_name));
  const std::string bare_dir = alto::test::temp_path("bare-whisper");
  fs::create_directories(bare_dir);
  alto::save_safetensors(bare_dir + "/model.safetensors", bare);
  config["d_model"] = 64;
  std::ofstream(bare_dir + "/config.json") << config.dump();
  Intermediates inter;
  const Whisper loaded = *Whisper::from_pretrained(bare_dir);
  golden.require_matches(loaded.encode(golden.tensor("input_features"), &inter),
                         "encoder.last_hidden_state");
  CHECK_NOTHROW(find(inter, "encoder.layers.0"));
  config["tie_word_embeddings"] = false;
  std::ofstream(bare_dir + "/config.json") << config.dump();
  CHECK_THROWS_WITH(Whisper::from_pretrained(bare_dir),
                    Catch::Contains("missing: proj_out.weight (expected [51865, 64])"));
}
