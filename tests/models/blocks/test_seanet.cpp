// The streamable SEANet pieces on random weights: streaming (any chunking, then flush) equals
// the offline pass for every padding mode, strides, groups and trim ratios EnCodec and Mimi use;
// offline padding reproduces transformers' formulas. The golden checks are in test_encodec.cpp.

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <random>

#include "alto/core/error.h"
#include "alto/models/blocks/seanet.h"
#include "features/golden.h"

using namespace alto::models::blocks;

namespace {

void randomise(torch::nn::Module& module, uint64_t seed) {
  torch::manual_seed(seed);
  torch::NoGradGuard no_grad;
  for (auto& p : module.parameters()) p.copy_(torch::randn_like(p) * 0.3);
}

std::vector<std::vector<int64_t>> chunkings(int64_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> size(1, 40);
  std::vector<int64_t> random(50);
  for (auto& n : random) n = size(rng);
  return {{1}, {2}, {3}, {7}, {64}, {1000}, random};
}

template <typename Module, typename State>
torch::Tensor stream(const Module& module, State state, const torch::Tensor& x,
                     const std::vector<int64_t>& sizes) {
  std::vector<torch::Tensor> parts;
  int64_t offset = 0;
  for (size_t i = 0; offset < x.size(2); ++i) {
    const int64_t n = std::min(sizes[i % sizes.size()], x.size(2) - offset);
    parts.push_back(module->step(x.narrow(2, offset, n), state));
    offset += n;
  }
  torch::Tensor last = module->flush(state);
  if (last.defined()) parts.push_back(last);
  return torch::cat(parts, 2);
}

void require_stream_equals_offline(const StreamableConv1d& conv, int64_t length) {
  const torch::Tensor x = torch::randn({2, conv->options().in_channels, length});
  const torch::Tensor offline = conv->forward(x);
  for (const auto& sizes : chunkings(length)) {
    INFO(conv->options().to_string() << " length " << length << " chunk " << sizes[0]);
    const torch::Tensor streamed = stream(conv, Conv1dStreamState(), x, sizes);
    REQUIRE(streamed.sizes() == offline.sizes());
    alto::test::require_close(streamed, offline, 1e-5, 0, std::nullopt, "conv stream");
  }
}

}  // namespace

TEST_CASE("StreamableConv1d pads as transformers", "[codec][seanet]") {
  StreamableConv1dOptions o;
  o.in_channels = 1;
  o.out_channels = 1;
  o.kernel_size = 4;
  o.stride = 2;
  o.causal = true;
  // _get_extra_padding_for_conv1d: frames = ceil((n - k + p) / s) + 1 for the padded length.
  CHECK(o.padding_total() == 2);
  CHECK(o.extra_padding(10) == 0);
  CHECK(o.extra_padding(11) == 1);
  CHECK(o.extra_padding(1) == 1);
  o.kernel_size = 7;
  o.stride = 1;
  CHECK(o.extra_padding(5) == 0);

  // Causal reflect: left pad reflects x[1..p]; a one-tap identity kernel shows the padding.
  o.kernel_size = 3;
  o.pad_mode = PadMode::kReflect;
  StreamableConv1d conv(o, torch::TensorOptions());
  {
    torch::NoGradGuard no_grad;
    conv->conv->weight.zero_();
    conv->conv->weight[0][0][0] = 1;  // y[t] = padded[t]
    conv->conv->bias.zero_();
  }
  const torch::Tensor x = torch::arange(1, 6, torch::kFloat32).view({1, 1, 5});
  CHECK(torch::equal(conv->forward(x), torch::tensor({3.f, 2.f, 1.f, 2.f, 3.f}).view({1, 1, 5})));
  // Too short to reflect: transformers inserts zeros first.
  CHECK(torch::equal(conv->forward(x.narrow(2, 0, 2)), torch::tensor({0.f, 2.f}).view({1, 1, 2})));

  CHECK_THROWS_AS(parse_pad_mode("circular", "cfg.pad_mode"), alto::InvalidArgument);
  CHECK_THROWS_AS(parse_conv_norm("spectral_norm", "cfg.norm_type"), alto::InvalidArgument);
  StreamableConv1dOptions bad = o;
  bad.stride = 5;
  CHECK_THROWS_AS(StreamableConv1d(bad, torch::TensorOptions()), alto::InvalidArgument);
}

TEST_CASE("StreamableConv1d streams like its offline pass", "[codec][seanet][streaming]") {
  for (PadMode mode : {PadMode::kConstant, PadMode::kReflect, PadMode::kReplicate}) {
    for (const auto& [kernel, stride, dilation] :
         std::vector<std::tuple<int64_t, int64_t, int64_t>>{
             {7, 1, 1}, {3, 1, 3}, {4, 2, 1}, {16, 8, 1}, {1, 1, 1}, {10, 5, 1}}) {
      StreamableConv1dOptions o;
      o.in_channels = 4;
      o.out_channels = 3;
      o.kernel_size = kernel;
      o.stride = stride;
      o.dilation = dilation;
      o.causal = true;
      o.pad_mode = mode;
      o.bias = mode != PadMode::kReplicate;  // Mimi's downsample: replicate, no bias
      StreamableConv1d conv(o, torch::TensorOptions());
      randomise(*conv, kernel * 10 + stride);
      for (int64_t length : {1, 5, 37, 160, 163}) require_stream_equals_offline(conv, length);
    }
  }
  StreamableConv1dOptions non_causal;
  non_causal.in_channels = non_causal.out_channels = 1;
  StreamableConv1d conv(non_causal, torch::TensorOptions());
  Conv1dStreamState state;
  CHECK_THROWS_AS(conv->step(torch::zeros({1, 1, 4}), state), alto::Unsupported);
}

TEST_CASE("StreamableConvTranspose1d streams like its offline pass", "[codec][seanet][streaming]") {
  for (const auto& [stride, groups, trim] : std::vector<std::tuple<int64_t, int64_t, double>>{
           {2, 1, 1.0}, {5, 1, 1.0}, {2, 8, 1.0}, {4, 1, 0.5}, {3, 1, 0.0}}) {
    StreamableConvTranspose1dOptions o;
    o.in_channels = 8;
    o.out_channels = groups == 1 ? 4 : 8;
    o.kernel_size = 2 * stride;
    o.stride = stride;
    o.groups = groups;  // Mimi's depthwise upsample: groups = channels, no bias
    o.bias = groups == 1;
    o.causal = true;
    o.trim_right_ratio = trim;
    StreamableConvTranspose1d convtr(o, torch::TensorOptions());
    randomise(*convtr, stride * 7 + groups);
    for (int64_t frames : {1, 2, 9, 40}) {
      const torch::Tensor x = torch::randn({2, 8, frames});
      const torch::Tensor offline = convtr->forward(x);
      CHECK(offline.size(2) == frames * stride);
      for (const auto& sizes : chunkings(frames)) {
        INFO(o.to_string() << " frames " << frames << " chunk " << sizes[0]);
        const torch::Tensor streamed = stream(convtr, ConvTranspose1dStreamState(), x, sizes);
        REQUIRE(streamed.sizes() == offline.sizes());
        alto::test::require_close(streamed, offline, 1e-5, 0, std::nullopt, "convtr stream");
      }
    }
  }
}

TEST_CASE("SEANet encoder and decoder stream like their offline pass",
          "[codec][seanet][streaming]") {
  // EnCodec-like (reflect, LSTM, conv shortcut) and Mimi-like (constant, no LSTM, identity
  // shortcut) configurations.
  for (bool mimi : {false, true}) {
    SeanetOptions o;
    o.num_filters = 4;
    o.hidden_size = 8;
    o.upsampling_ratios = mimi ? std::vector<int64_t>{4, 3, 2} : std::vector<int64_t>{4, 2};
    o.num_lstm_layers = mimi ? 0 : 2;
    o.pad_mode = mimi ? PadMode::kConstant : PadMode::kReflect;
    o.norm = mimi ? ConvNorm::kNone : ConvNorm::kWeightNorm;
    o.use_conv_shortcut = !mimi;
    o.last_kernel_size = mimi ? 3 : 7;
    o.num_residual_layers = mimi ? 1 : 2;
    INFO(o.to_string());
    SeanetEncoder encoder(o, torch::TensorOptions());
    SeanetDecoder decoder(o, torch::TensorOptions());
    randomise(*encoder, 1);
    randomise(*decoder, 2);
    const int64_t hop = o.hop_length();
    const torch::Tensor audio = torch::randn({1, 1, 10 * hop + 5});
    const torch::Tensor latent = encoder->forward(audio);
    CHECK(latent.size(2) == 11);
    const torch::Tensor decoded = decoder->forward(latent);
    CHECK(decoded.size(2) == 11 * hop);
    for (const auto& sizes : chunkings(3)) {
      INFO("chunk " << sizes[0]);
      auto state = encoder->init_state();
      const torch::Tensor streamed = stream(encoder, state, audio, sizes);
      REQUIRE(streamed.sizes() == latent.sizes());
      alto::test::require_close(streamed, latent, 1e-4, 0, std::nullopt, "encoder stream");
      const torch::Tensor streamed_audio = stream(decoder, decoder->init_state(), latent, sizes);
      REQUIRE(streamed_audio.sizes() == decoded.sizes());
      alto::test::require_close(streamed_audio, decoded, 1e-4, 0, std::nullopt, "decoder stream");
    }

    // reset() forgets every layer's state: a reset stream reproduces a fresh one.
    auto state = encoder->init_state();
    encoder->step(torch::randn({1, 1, 3 * hop + 1}), state);
    state.reset();
    const torch::Tensor again = torch::cat({encoder->step(audio, state), encoder->flush(state)}, 2);
    alto::test::require_close(again, latent, 1e-4, 0, std::nullopt, "after reset");
  }
  SeanetOptions non_causal;
  non_causal.use_causal_conv = false;
  SeanetEncoder encoder(non_causal, torch::TensorOptions());
  CHECK_THROWS_AS(encoder->init_state(), alto::Unsupported);
  SeanetOptions bad;
  bad.compress = 0;
  CHECK_THROWS_WITH(SeanetEncoder(bad, torch::TensorOptions()),
                    Catch::Matchers::Contains("SeanetOptions.compress"));
}

TEST_CASE("A bfloat16 SeanetLstm computes in float32 on the weights prepare() widened",
          "[codec][seanet]") {
  SeanetLstm float32(16, 2, torch::TensorOptions());
  randomise(*float32, 4);
  SeanetLstm bfloat16(16, 2, torch::TensorOptions().dtype(torch::kBFloat16));
  {
    torch::NoGradGuard no_grad;
    const auto source = float32->named_parameters();
    for (auto& p : bfloat16->named_parameters()) {
      p.value().copy_(source[p.key()]);                      // rounded to bfloat16
      source[p.key()].copy_(p.value().to(torch::kFloat32));  // the float32 LSTM on those values
    }
  }
  const torch::Tensor x = torch::randn({2, 16, 9}).to(torch::kBFloat16);
  CHECK_THROWS_WITH(bfloat16->forward(x), Catch::Contains("call prepare()"));
  bfloat16->prepare();
  const torch::Tensor y = bfloat16->forward(x);
  REQUIRE(y.scalar_type() == torch::kBFloat16);
  // The float32 LSTM on the same values. The bfloat16 one rounds the LSTM's output before the
  // skip connection's add and the sum after it, each by at most 2^-9 of its magnitude.
  const torch::Tensor skip = x.to(torch::kFloat32);
  const torch::Tensor expected = float32->forward(skip);
  const torch::Tensor bound = ((expected - skip).abs() + expected.abs()) / 256 + 1e-6;
  CHECK(((y.to(torch::kFloat32) - expected).abs() <= bound).all().item<bool>());
}
