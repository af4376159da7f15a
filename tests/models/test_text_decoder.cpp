// models/text_decoder and models/generation on small random checkpoints written here (Llama with
// GQA, an explicit head_dim, llama3 RoPE scaling and a sliding window; Qwen2 with q/k/v biases;
// a tied head): cached decoding equals recomputing the whole prefix, a left-padded batch equals
// each row alone, configs are read as transformers reads them, sampling follows its warpers.
// Parity with transformers on real checkpoints: tests/models/qwen2_audio and voxtral.

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "alto/core/error.h"
#include "alto/core/safetensors.h"
#include "alto/models/generation.h"
#include "alto/models/text_decoder.h"
#include "test_util.h"

using alto::models::TextDecoder;
using alto::models::TextDecoderConfig;
using nlohmann::json;

namespace {

// A *ForCausalLM folder with random weights for `config` (hidden 32, 3 layers, vocab 64).
std::string write_checkpoint(const std::string& name, json config) {
  const std::string dir = alto::test::temp_path(name);
  std::filesystem::create_directories(dir);
  json base = {{"vocab_size", 64},        {"hidden_size", 32},      {"intermediate_size", 48},
               {"num_hidden_layers", 3},  {"num_attention_heads", 4}, {"num_key_value_heads", 2},
               {"rms_norm_eps", 1e-5},    {"max_position_embeddings", 256}};
  base.update(config);
  std::ofstream(dir + "/config.json") << base.dump();
  const TextDecoderConfig c = TextDecoderConfig::from_json(dir);
  torch::manual_seed(0);
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  auto add = [&](const std::string& n, std::vector<int64_t> shape) {
    const double scale = shape.size() == 2 ? 1.0 / std::sqrt(double(shape[1])) : 0.1;
    torch::Tensor t = torch::randn(shape) * scale + (n.find("norm") != std::string::npos ? 1 : 0);
    tensors.emplace_back(n, t);
  };
  const int64_t q = c.num_attention_heads * c.head_size(), kv = c.kv_heads() * c.head_size();
  add("model.embed_tokens.weight", {c.vocab_size, c.hidden_size});
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string l = "model.layers." + std::to_string(i) + ".";
    add(l + "self_attn.q_proj.weight", {q, c.hidden_size});
    add(l + "self_attn.k_proj.weight", {kv, c.hidden_size});
    add(l + "self_attn.v_proj.weight", {kv, c.hidden_size});
    add(l + "self_attn.o_proj.weight", {c.hidden_size, q});
    if (c.qkv_bias()) {
      add(l + "self_attn.q_proj.bias", {q});
      add(l + "self_attn.k_proj.bias", {kv});
      add(l + "self_attn.v_proj.bias", {kv});
    }
    add(l + "mlp.gate_proj.weight", {c.intermediate_size, c.hidden_size});
    add(l + "mlp.up_proj.weight", {c.intermediate_size, c.hidden_size});
    add(l + "mlp.down_proj.weight", {c.hidden_size, c.intermediate_size});
    add(l + "input_layernorm.weight", {c.hidden_size});
    add(l + "post_attention_layernorm.weight", {c.hidden_size});
  }
  add("model.norm.weight", {c.hidden_size});
  if (!c.tie_word_embeddings) add("lm_head.weight", {c.vocab_size, c.hidden_size});
  alto::save_safetensors(dir + "/model.safetensors", tensors, {});
  return dir;
}

torch::Tensor full_logits(const TextDecoder& d, const torch::Tensor& ids,
                          const torch::Tensor& mask = {}) {
  auto state = d.start(ids.size(0), ids.size(1));
  return d.logits(d.forward(d.embed(ids), mask, state));
}

const std::vector<json> kConfigs = {
    {{"model_type", "llama"}, {"head_dim", 16}},  // head_dim != hidden / heads
    {{"model_type", "llama"},
     {"rope_scaling",
      {{"rope_type", "llama3"}, {"factor", 8.0}, {"original_max_position_embeddings", 16}}}},
    {{"model_type", "mistral"}, {"sliding_window", 5}},
    {{"model_type", "qwen2"}, {"tie_word_embeddings", true}, {"use_sliding_window", true},
     {"sliding_window", 4}, {"max_window_layers", 1}},
};

}  // namespace

TEST_CASE("cached decoding equals the whole prefix at once", "[models][text_decoder]") {
  for (const json& config : kConfigs) {
    INFO(config.dump());
    const auto decoder = TextDecoder::from_pretrained(write_checkpoint("decoder", config));
    const torch::Tensor ids = torch::randint(64, {2, 11}, torch::kInt64);
    const torch::Tensor expected = full_logits(*decoder, ids);
    auto state = decoder->start(2, 11);
    std::vector<torch::Tensor> steps;
    // A prefill of 4, then one token at a time, as generate() feeds them.
    steps.push_back(decoder->logits(decoder->forward(decoder->embed(ids.narrow(1, 0, 4)), {}, state)));
    for (int64_t t = 4; t < 11; ++t)
      steps.push_back(
          decoder->logits(decoder->forward(decoder->embed(ids.narrow(1, t, 1)), {}, state)));
    CHECK(torch::allclose(torch::cat(steps, 1), expected, 1e-5, 1e-5));
    CHECK(state.length() == 11);
  }
}

TEST_CASE("int8 linear weights: near the float32 logits, steps equal the whole prefix",
          "[models][text_decoder]") {
  for (const json& config : kConfigs) {
    INFO(config.dump());
    const std::string dir = write_checkpoint("decoder-int8", config);
    const auto float32 = TextDecoder::from_pretrained(dir);
    const auto int8 = TextDecoder::from_pretrained(dir, alto::LoadOptions::parse("cpu", "int8"));
    CHECK(int8->load_options().precision() == "int8");
    const torch::Tensor ids = torch::randint(64, {2, 11}, torch::kInt64);
    const torch::Tensor expected = full_logits(*float32, ids);
    const torch::Tensor logits = full_logits(*int8, ids);
    // Per-channel int8 rounds each weight by at most half of 1/127 of its row's largest: on
    // these 32-wide random decoders the logits moved by up to 3.3 % of their range (measured),
    // checked against 5 %, and nearly every argmax is kept.
    const double scale = expected.abs().max().item<double>();
    CHECK((logits - expected).abs().max().item<double>() < 0.05 * scale);
    CHECK((logits.argmax(-1) == expected.argmax(-1)).to(torch::kFloat64).mean().item<double>() >
          0.9);
    // A prefill (the dequantized GEMM) then single tokens (the int8 few-row kernels).
    auto state = int8->start(2, 11);
    std::vector<torch::Tensor> steps;
    steps.push_back(int8->logits(int8->forward(int8->embed(ids.narrow(1, 0, 4)), {}, state)));
    for (int64_t t = 4; t < 11; ++t)
      steps.push_back(int8->logits(int8->forward(int8->embed(ids.narrow(1, t, 1)), {}, state)));
    CHECK(torch::allclose(torch::cat(steps, 1), logits, 1e-5, 1e-5));
  }
}

TEST_CASE("a left-padded batch equals each row alone", "[models][text_decoder]") {
  for (const json& config : kConfigs) {
    INFO(config.dump());
    const auto decoder = TextDecoder::from_pretrained(write_checkpoint("decoder", config));
    const torch::Tensor long_row = torch::randint(64, {1, 9}, torch::kInt64);
    const torch::Tensor short_row = torch::randint(64, {1, 6}, torch::kInt64);
    const torch::Tensor batch =
        torch::cat({long_row, torch::cat({torch::zeros({1, 3}, torch::kInt64), short_row}, 1)});
    const torch::Tensor mask =
        torch::cat({torch::ones({1, 9}, torch::kInt64),
                    torch::cat({torch::zeros({1, 3}, torch::kInt64), torch::ones({1, 6}, torch::kInt64)}, 1)});
    const torch::Tensor logits = full_logits(*decoder, batch, mask);
    CHECK(torch::allclose(logits[0], full_logits(*decoder, long_row)[0], 1e-5, 1e-5));
    CHECK(torch::allclose(logits[1].narrow(0, 3, 6), full_logits(*decoder, short_row)[0], 1e-5,
                          1e-5));
    // Greedy generation: each row of the batch as it generates alone.
    alto::models::GenerationConfig g;
    g.max_new_tokens = 5;
    const auto together =
        alto::models::generate(*decoder, decoder->embed(batch), mask, batch, g).generated_ids;
    CHECK(torch::equal(together[0],
                       alto::models::generate(*decoder, decoder->embed(long_row), {}, long_row, g)
                           .generated_ids[0]));
    CHECK(torch::equal(together[1],
                       alto::models::generate(*decoder, decoder->embed(short_row), {}, short_row, g)
                           .generated_ids[0]));
  }
}

TEST_CASE("config.json is read as transformers reads it", "[models][text_decoder]") {
  const std::string dir = write_checkpoint("decoder", kConfigs[3]);
  const TextDecoderConfig qwen = TextDecoderConfig::from_json(dir);
  CHECK(qwen.qkv_bias());
  CHECK_FALSE(qwen.output_bias());
  CHECK(qwen.window_of(0) == 0);  // below max_window_layers
  CHECK(qwen.window_of(1) == 4);
  // A tied head: the logits are the hidden states times the embedding.
  const auto decoder = TextDecoder::from_pretrained(dir);
  const torch::Tensor hidden = torch::randn({3, 32});
  CHECK(torch::allclose(decoder->logits(hidden),
                        torch::matmul(hidden, decoder->embed(torch::arange(64).unsqueeze(0))[0].t()),
                        1e-5, 1e-5));
  // A sliding window changes attention once the prefix is longer than it.
  const auto windowed = TextDecoder::from_pretrained(write_checkpoint("w", kConfigs[2]));
  const auto full = TextDecoder::from_pretrained(
      write_checkpoint("w", {{"model_type", "mistral"}, {"sliding_window", nullptr}}));
  const torch::Tensor ids = torch::randint(64, {1, 8}, torch::kInt64);
  const torch::Tensor a = full_logits(*windowed, ids), b = full_logits(*full, ids);
  CHECK(torch::allclose(a.narrow(1, 0, 5), b.narrow(1, 0, 5), 1e-5, 1e-5));
  CHECK_FALSE(torch::allclose(a.narrow(1, 5, 3), b.narrow(1, 5, 3), 1e-3, 1e-3));
  // transformers 5's rope_parameters and the Hub's rope_theta + rope_scaling.
  const TextDecoderConfig five = TextDecoderConfig::from_json(write_checkpoint(
      "r", {{"model_type", "llama"},
            {"rope_parameters", {{"rope_theta", 1e6}, {"rope_type", "linear"}, {"factor", 2.0}}}}));
  CHECK(five.rope_theta == 1e6);
  CHECK(five.rope_scaling.rope_type == "linear");
  const TextDecoderConfig hub = TextDecoderConfig::from_json(
      write_checkpoint("r", {{"model_type", "llama"}, {"rope_theta", 5e5}, {"rope_scaling", {{"type", "linear"}, {"factor", 4.0}}}}));
  CHECK(hub.rope_theta == 5e5);
  CHECK(hub.rope_scaling.factor == 4.0);
  // Errors name the file and key.
  const std::string bad = alto::test::temp_path("bad-decoder");
  std::filesystem::create_directories(bad);
  std::ofstream(bad + "/config.json") << json{{"model_type", "gpt2"}}.dump();
  CHECK_THROWS_AS(TextDecoderConfig::from_json(bad), alto::Unsupported);
  std::ofstream(bad + "/config.json")
      << json{{"model_type", "llama"}, {"num_attention_heads", 4}, {"num_key_value_heads", 3}}.dump();
  CHECK_THROWS_WITH(TextDecoderConfig::from_json(bad),
                    Catch::Contains("config.json") && Catch::Contains("num_key_value_heads"));
  // The context is checked.
  CHECK_THROWS_WITH(decoder->start(1, 257), Catch::Contains("max_position_embeddings = 256"));
  alto::models::GenerationConfig g;
  CHECK_THROWS_WITH(alto::models::generate(*decoder, torch::zeros({1, 256, 32}), {}, {}, g),
                    Catch::Contains("prompt of 256 tokens"));
}

TEST_CASE("sampling follows transformers' warpers", "[models][generation]") {
  alto::models::GenerationConfig c;
  c.do_sample = true;
  auto generator = at::detail::createCPUGenerator(0);
  const torch::Tensor logits = torch::tensor({{0.0, 1.0, 2.0, 3.0, 4.0}});
  // top-k 1 and min-p 1 leave only the best token; a tiny top-p too.
  c.top_k = 1;
  for (int i = 0; i < 20; ++i)
    CHECK(alto::models::next_tokens(logits, {}, c, generator).item<int64_t>() == 4);
  c.top_k = 0;
  c.top_p = 0.01;
  CHECK(alto::models::next_tokens(logits, {}, c, generator).item<int64_t>() == 4);
  c.top_p = 1.0;
  c.min_p = 1.0;
  CHECK(alto::models::next_tokens(logits, {}, c, generator).item<int64_t>() == 4);
  // top-k 2: only the two best ever come out.
  c.min_p.reset();
  c.top_k = 2;
  for (int i = 0; i < 50; ++i)
    CHECK(alto::models::next_tokens(logits, {}, c, generator).item<int64_t>() >= 3);
  // The repetition penalty divides positive logits of seen tokens, multiplies negative ones.
  alto::models::GenerationConfig greedy;
  greedy.repetition_penalty = 10.0;
  CHECK(alto::models::next_tokens(logits, torch::tensor({{4}}), greedy, generator).item<int64_t>() == 3);
  CHECK(alto::models::next_tokens(torch::tensor({{-1.0, -2.0}}), torch::tensor({{0}}), greedy,
                                  generator)
            .item<int64_t>() == 1);
  // The same seed, the same draws.
  c.top_k = 0;
  c.seed = 5;
  auto g1 = at::detail::createCPUGenerator(5), g2 = at::detail::createCPUGenerator(5);
  for (int i = 0; i < 10; ++i)
    CHECK(alto::models::next_tokens(logits, {}, c, g1).item<int64_t>() ==
          alto::models::next_tokens(logits, {}, c, g2).item<int64_t>());
  CHECK_THROWS_WITH([] {
    alto::models::GenerationConfig bad;
    bad.top_p = 1.5;
    bad.validate();
  }(), Catch::Contains("top_p"));
}
