// models/csm against transformers 5.17's CsmForConditionalGeneration on the golden folder: the
// processor (prompt, expanded ids, the context clip's codes), the merged embeddings, the prompt
// logits, and greedy generation (codes, per-step backbone and depth-decoder logits, the
// backbone's last hidden state, the decoded audio), without and with a context clip. Then audio
// streamed frame by frame = the offline decode, the end frame and max_new_tokens, seeded
// sampling, and every bad input the issue names.

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "alto/audio/audio_tensor.h"
#include "alto/audio/load.h"
#include "alto/core/error.h"
#include "alto/core/safetensors.h"
#include "alto/models/csm/csm.h"
#include "models/golden_model.h"
#include "test_util.h"

using alto::models::ChatMessage;
using alto::models::ChatPart;
using alto::models::Csm;
using alto::models::CsmGenerateOptions;
using alto::models::CsmGenerationConfig;
using alto::test::GoldenModel;
namespace fs = std::filesystem;

namespace {

const char* kGolden = "csm-tiny-random";

std::shared_ptr<const Csm> load(const GoldenModel& golden) {
  static const auto model = Csm::from_pretrained(golden.dir());
  return model;
}

torch::Tensor clip(const GoldenModel& golden) {
  return alto::audio::to_tensor(alto::audio::load_audio(golden.dir() + "/input.wav"))[0];
}

std::vector<ChatMessage> text_only() {
  return {{"0", {ChatPart::text_part("Hello from a tiny model.")}}};
}

std::vector<ChatMessage> with_context(const torch::Tensor& wave) {
  return {{"0", {ChatPart::text_part("This is the context sentence."), ChatPart::audio_part(wave)}},
          {"0", {ChatPart::text_part("Hello from a tiny model.")}}};
}

// The golden case named by its tensors' prefix: "" text only, "ctx_" with the context clip.
alto::models::CsmInputs golden_inputs(const Csm& model, const GoldenModel& golden,
                                      const std::string& prefix) {
  return model.process(prefix.empty() ? text_only() : with_context(clip(golden)));
}

CsmGenerationConfig greedy(const Csm& model, int64_t frames) {
  CsmGenerationConfig config = model.generation_config();
  config.backbone.max_new_tokens = frames;
  return config;
}

// A copy of the golden folder to damage.
fs::path copy_of(const GoldenModel& golden, const std::string& name) {
  const fs::path copy = alto::test::temp_path(name);
  fs::create_directories(copy);
  for (const auto& entry : fs::directory_iterator(golden.dir()))
    fs::copy_file(entry.path(), copy / entry.path().filename(),
                  fs::copy_options::overwrite_existing);
  return copy;
}

}  // namespace

TEST_CASE("CSM: prompt, ids, context codes, embeddings and prompt logits equal transformers'",
          "[csm][models]") {
  const GoldenModel golden(kGolden);
  const auto model = load(golden);
  for (const std::string prefix : {"", "ctx_"}) {
    DYNAMIC_SECTION("case '" << prefix << "'") {
      const auto inputs = golden_inputs(*model, golden, prefix);
      if (prefix.empty()) {
        CHECK(inputs.prompt == "<|begin_of_text|>[0]Hello from a tiny model.<|end_of_text|>");
      } else {
        CHECK(inputs.prompt ==
              "<|begin_of_text|>[0]This is the context sentence.<|end_of_text|><|AUDIO|>"
              "<|audio_eos|><|begin_of_text|>[0]Hello from a tiny model.<|end_of_text|>");
        REQUIRE(inputs.context_codes.size() == 1);
        golden.require_matches(inputs.context_codes[0].unsqueeze(0), "ctx_context_audio_codes");
      }
      golden.require_matches(inputs.input_ids, prefix + "input_ids");
      const torch::Tensor embeds = model->embed(inputs);
      golden.require_matches(embeds, prefix + "inputs_embeds");
      auto state = model->start(embeds.size(1));
      alto::models::Intermediates layers;
      const torch::Tensor hidden = model->forward(embeds, state, &layers);
      golden.require_matches(model->logits(hidden), prefix + "prompt_logits");
      REQUIRE(layers.tensors.size() == 3);  // each layer, then the final norm
      CHECK(layers.tensors[1].first == "backbone_model.layers.1");
      CHECK(torch::equal(layers.tensors[2].second, hidden));
    }
  }
}

TEST_CASE("CSM greedy generation equals transformers' codes, logits and audio",
          "[csm][models]") {
  const GoldenModel golden(kGolden);
  const auto model = load(golden);
  for (const std::string prefix : {"", "ctx_"}) {
    DYNAMIC_SECTION("case '" << prefix << "'") {
      const auto inputs = golden_inputs(*model, golden, prefix);
      CsmGenerateOptions options;
      options.return_logits = true;
      const auto out = model->generate(inputs, greedy(*model, 6), options);
      golden.require_matches(out.audio_codes.unsqueeze(0), prefix + "audio_codes");
      golden.require_matches(out.backbone_logits, prefix + "backbone_step_logits");
      golden.require_matches(out.backbone_last_hidden_state,
                             prefix + "backbone_last_hidden_state");
      golden.require_matches(out.depth_decoder_logits, prefix + "depth_decoder_logits");
      golden.require_matches(out.audio, prefix + "audio_values");
      CHECK_FALSE(out.ended);
      CHECK(out.frame_seconds.size() == 6);
    }
  }
}

TEST_CASE("CSM streams audio frame by frame, equal to decoding all codes at the end",
          "[csm][models]") {
  const GoldenModel golden(kGolden);
  const auto model = load(golden);
  const auto inputs = model->process(text_only());
  std::vector<torch::Tensor> pieces;
  int64_t frames_seen = 0;
  CsmGenerateOptions options;
  options.on_frame = [&](const alto::models::CsmFrame& frame) {
    CHECK(frame.index == frames_seen++);
    REQUIRE(frame.audio.defined());
    // Each frame's 80 ms exist as soon as the frame does.
    CHECK(frame.audio.numel() == model->codec().hop_length());
    pieces.push_back(frame.audio);
    return true;
  };
  const auto started = std::chrono::steady_clock::now();
  const auto out = model->generate(inputs, greedy(*model, 6), options);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  REQUIRE(frames_seen == 6);
  const torch::Tensor streamed = torch::cat(pieces);
  CHECK(torch::equal(streamed, out.audio));
  const torch::Tensor offline = model->decode(out.audio_codes);
  REQUIRE(offline.sizes() == streamed.sizes());
  CHECK((offline - streamed).abs().max().item<double>() < 1e-5);
  // The first audio comes after the prefill and one frame, well before the last frame.
  CHECK(out.first_audio_seconds > out.prefill_seconds);
  double after_first = 0;
  for (size_t f = 1; f < out.frame_seconds.size(); ++f) after_first += out.frame_seconds[f];
  CHECK(out.first_audio_seconds <= wall - after_first);

  // The callback's false stops after that frame.
  options.on_frame = [](const alto::models::CsmFrame& frame) { return frame.index < 2; };
  CHECK(model->generate(inputs, greedy(*model, 6), options).audio_codes.size(0) == 3);
}

TEST_CASE("CSM generation stops on the end frame and on max_new_tokens", "[csm][models]") {
  const GoldenModel golden(kGolden);
  const auto model = load(golden);
  const auto inputs = model->process(text_only());
  const auto three = model->generate(inputs, greedy(*model, 3));
  CHECK(three.audio_codes.size(0) == 3);
  CHECK_FALSE(three.ended);
  CHECK(torch::equal(three.audio_codes, golden.tensor("audio_codes")[0].narrow(0, 0, 3)));

  // Zero final norms make every logit 0, so greedy picks id 0 (codebook_eos) everywhere: the
  // first frame is the end frame, kept in the codes, with no audio.
  const fs::path copy = copy_of(golden, "csm-ends-at-once");
  alto::SafetensorsFile file((copy / "model.safetensors").string());
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const std::string& name : file.names()) {
    torch::Tensor t = file.tensor(name).clone();
    if (name == "backbone_model.norm.weight" || name == "depth_decoder.model.norm.weight")
      t.zero_();
    tensors.emplace_back(name, t);
  }
  alto::save_safetensors((copy / "model.safetensors").string(), tensors, {{"format", "pt"}});
  const auto silent = Csm::from_pretrained(copy.string());
  const auto ended = silent->generate(silent->process(text_only()), greedy(*silent, 6));
  CHECK(ended.ended);
  CHECK(ended.audio_codes.sizes() == torch::IntArrayRef({1, 4}));
  CHECK(ended.audio_codes.eq(0).all().item<bool>());
  CHECK(ended.audio.numel() == 0);
  CHECK(silent->decode(ended.audio_codes).numel() == 0);
}

TEST_CASE("CSM seeded sampling: reproducible, per-decoder settings", "[csm][models]") {
  const GoldenModel golden(kGolden);
  const auto model = load(golden);
  const auto inputs = model->process(text_only());
  CsmGenerationConfig config = greedy(*model, 6);
  config.set_temperature(1.5);
  config.backbone.top_k = 0;
  config.depth_decoder.top_k = 0;
  config.backbone.seed = 7;
  // Sampled freely, the random model also draws its non-code ids (eos, pad): codes only.
  CsmGenerateOptions codes_only;
  codes_only.decode_audio = false;
  const auto a = model->generate(inputs, config, codes_only);
  const auto b = model->generate(inputs, config, codes_only);
  CHECK(torch::equal(a.audio_codes, b.audio_codes));
  bool differs = false;
  for (uint64_t seed = 8; seed < 12 && !differs; ++seed) {
    config.backbone.seed = seed;
    differs = !torch::equal(model->generate(inputs, config, codes_only).audio_codes,
                            a.audio_codes);
  }
  CHECK(differs);
  // top_k 1 leaves one candidate: sampling then gives the greedy codes, decoder by decoder.
  config.backbone.top_k = 1;
  config.depth_decoder.top_k = 1;
  CHECK(torch::equal(model->generate(inputs, config).audio_codes, golden.tensor("audio_codes")[0]));
  // Greedy depth decoder under a sampling backbone: codebooks 1.. follow from codebook 0.
  config.backbone.top_k = 0;
  config.depth_decoder.do_sample = false;
  const auto mixed = model->generate(inputs, config, codes_only);
  CsmGenerationConfig all_greedy = greedy(*model, 1);
  at::Generator unused = at::detail::createCPUGenerator(0);
  CsmGenerateOptions logits;
  logits.return_logits = true;
  const auto first = model->generate(inputs, all_greedy, logits);
  const torch::Tensor depth = model->decode_depth(first.backbone_last_hidden_state.narrow(0, 0, 1),
                                                  mixed.audio_codes.select(1, 0).narrow(0, 0, 1),
                                                  config.depth_decoder, unused);
  CHECK(torch::equal(depth[0], mixed.audio_codes[0]));
}

TEST_CASE("CSM: bad input is an error naming the cause", "[csm][models]") {
  const GoldenModel golden(kGolden);
  const auto model = load(golden);
  CHECK_THROWS_WITH(model->process({{"0", {ChatPart::text_part("  ")}}}),
                    Catch::Contains("turn 0 (speaker '0'): the text is empty"));
  CHECK_THROWS_WITH(model->process({{"x", {ChatPart::text_part("hi")}}}),
                    Catch::Contains("speaker id must be a non-negative decimal integer"));
  CHECK_THROWS_WITH(model->process({{"0", {ChatPart::text_part("a <|AUDIO|> b")}}}),
                    Catch::Contains("holds '<|AUDIO|>'"));
  const auto codes_turn = [](torch::Tensor codes) {
    return std::vector<ChatMessage>{
        {"0", {ChatPart::text_part("context"), ChatPart::codes_part(std::move(codes))}},
        {"0", {ChatPart::text_part("next")}}};
  };
  torch::Tensor codes = torch::zeros({4, 3}, torch::kInt64);
  codes[2][1] = 64;
  CHECK_THROWS_WITH(model->process(codes_turn(codes)),
                    Catch::Contains("turn 0 (speaker '0'): code 64 is outside the codec's "
                                    "codebooks [0, 64)"));
  CHECK_THROWS_WITH(model->process(codes_turn(torch::zeros({3, 5}, torch::kInt64))),
                    Catch::Contains("[num_codebooks = 4, frames > 0]"));
  CHECK_THROWS_WITH(
      model->process({{"0", {ChatPart::text_part("c"), ChatPart::audio_part(torch::zeros({2, 9}))}}}),
      Catch::Contains("mono float samples at 24000 Hz"));
  torch::Tensor nan = torch::zeros({4000});
  nan[7] = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_WITH(model->process({{"0", {ChatPart::text_part("c"), ChatPart::audio_part(nan)}}}),
                    Catch::Contains("NaN"));
  // Codes given directly are the codes the audio would give.
  const auto from_audio = model->process(with_context(clip(golden)));
  const auto from_codes = model->process(codes_turn(from_audio.context_codes[0]));
  CHECK(from_codes.input_ids.size(1) > 25);
  CHECK(torch::equal(from_codes.context_codes[0], from_audio.context_codes[0]));

  // Configs: a depth decoder fed another width, and a codec with fewer codebooks.
  const fs::path copy = copy_of(golden, "csm-bad-config");
  nlohmann::json config = nlohmann::json::parse(std::ifstream(copy / "config.json"));
  config["depth_decoder_config"]["backbone_hidden_size"] = 64;
  std::ofstream(copy / "config.json") << config.dump();
  CHECK_THROWS_WITH(Csm::from_pretrained(copy.string()),
                    Catch::Contains("backbone_hidden_size (64) differs from the backbone's "
                                    "hidden_size (48)") &&
                        Catch::Contains("config.json"));
  config["depth_decoder_config"]["backbone_hidden_size"] = 48;
  config["codec_config"]["num_quantizers"] = 2;
  std::ofstream(copy / "config.json") << config.dump();
  CHECK_THROWS_WITH(Csm::from_pretrained(copy.string()),
                    Catch::Contains("num_codebooks (4) exceeds its codec's"));
  std::ofstream(copy / "generation_config.json") << R"({"depth_decoder_top_k": "many"})";
  CHECK_THROWS_WITH(alto::models::CsmGenerationConfig::from_json(copy.string()),
                    Catch::Contains("depth_decoder_top_k"));
  CHECK_FALSE(Csm::recognizes(alto::test::data_path("models/kyutai-stt-tiny-random")));
  CHECK(Csm::recognizes(golden.dir()));
}
