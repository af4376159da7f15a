// models/layers/conv: the tiled convolutions equal libtorch's on the edge cases (zero padding at
// both ends, strides, dilation, groups, batches, the last partial tile, activations applied per
// tile), with one and two threads and inside InferenceMode.

#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "alto/core/error.h"
#include "alto/core/threading.h"
#include "alto/models/internal/conv.h"
#include "alto/models/internal/few_rows.h"
#include "features/golden.h"

using namespace alto::models::kernels;  // NOLINT

namespace {

// Long enough for several tiles whatever the channel count (time_tile() <= 2048).
constexpr int64_t kLong = 9001;

const Pointwise kElu = [](const torch::Tensor& x) { return torch::elu(x); };

// Restores alto's thread count after a section changes it.
struct ThreadCount {
  int saved = alto::num_threads();
  ~ThreadCount() { alto::set_num_threads(saved); }
};

}  // namespace

TEST_CASE("conv1d: tiles equal torch::conv1d", "[conv]") {
  ThreadCount restore;
  torch::manual_seed(1);
  struct Case {
    int64_t batch, in, out, kernel, stride, padding, dilation, groups;
  };
  for (const Case& c :
       {Case{1, 8, 8, 7, 1, 3, 1, 1}, Case{2, 6, 4, 7, 1, 9, 3, 1}, Case{1, 8, 16, 8, 4, 2, 1, 1},
        Case{2, 16, 8, 3, 1, 0, 9, 1}, Case{1, 8, 8, 1, 1, 0, 1, 1}, Case{1, 12, 8, 5, 2, 2, 2, 4},
        Case{1, 1, 8, 7, 1, 3, 1, 1}, Case{1, 8, 1, 7, 3, 0, 1, 1}}) {
    const torch::Tensor x = torch::randn({c.batch, c.in, kLong});
    const torch::Tensor w = torch::randn({c.out, c.in / c.groups, c.kernel});
    const torch::Tensor b = torch::randn({c.out});
    for (int threads : {1, 2}) {
      alto::set_num_threads(threads);
      INFO("batch " << c.batch << " in " << c.in << " out " << c.out << " kernel " << c.kernel
                    << " stride " << c.stride << " padding " << c.padding << " dilation "
                    << c.dilation << " groups " << c.groups << " threads " << threads);
      const torch::Tensor expected =
          torch::conv1d(x, w, b, c.stride, c.padding, c.dilation, c.groups);
      const torch::Tensor actual = conv1d(x, w, b, c.stride, c.padding, c.dilation, c.groups);
      REQUIRE(actual.sizes() == expected.sizes());
      alto::test::require_close(actual, expected, 1e-4, 1e-5, std::nullopt, "conv1d");
      // The activation runs on each padded tile: ELU(0) = 0 keeps the zero padding exact.
      const torch::Tensor activated =
          conv1d(x, w, b, c.stride, c.padding, c.dilation, c.groups, kElu);
      alto::test::require_close(
          activated, torch::conv1d(torch::elu(x), w, b, c.stride, c.padding, c.dilation, c.groups),
          1e-4, 1e-5, std::nullopt, "conv1d after ELU");
    }
  }
}

TEST_CASE("conv1d: one output channel (a codec's last layer) by its taps", "[conv]") {
  // Every instruction-set path, outputs shorter than a block and with tails, several tiles,
  // padding, dilation, a batch, no bias and an activation first; each output sample is added in
  // one order whatever block, tile or thread computes it, so a prefix of the input (a stream's
  // chunk) gives the same bits as the whole.
  ThreadCount restore;
  torch::manual_seed(3);
  struct Case {
    int64_t batch, in, kernel, padding, dilation, length;
    bool bias;
  };
  for (const Isa isa : {Isa::kPlain, Isa::kAvx2, Isa::kAvx512}) {
    const Isa previous = limit_isa(isa);
    for (const Case& c : {Case{1, 64, 3, 0, 1, 1922, true}, Case{2, 32, 7, 3, 1, kLong, true},
                          Case{1, 3, 7, 0, 2, 100, false}, Case{1, 64, 3, 1, 1, 3, true},
                          Case{2, 5, 1, 0, 1, 70, true}}) {
      INFO("isa " << static_cast<int>(isa) << " batch " << c.batch << " in " << c.in << " kernel "
                  << c.kernel << " padding " << c.padding << " dilation " << c.dilation
                  << " length " << c.length);
      const torch::Tensor x = torch::randn({c.batch, c.in, c.length});
      const torch::Tensor w = torch::randn({1, c.in, c.kernel});
      const torch::Tensor b = c.bias ? torch::randn({1}) : torch::Tensor();
      alto::set_num_threads(1);
      const torch::Tensor one = conv1d(x, w, b, 1, c.padding, c.dilation);
      const torch::Tensor expected = torch::conv1d(x, w, b, 1, c.padding, c.dilation);
      REQUIRE(one.sizes() == expected.sizes());
      alto::test::require_close(one, expected, 1e-4, 1e-5, std::nullopt, "one-channel conv1d");
      alto::test::require_close(conv1d(x, w, b, 1, c.padding, c.dilation, 1, kElu),
                                torch::conv1d(torch::elu(x), w, b, 1, c.padding, c.dilation), 1e-4,
                                1e-5, std::nullopt, "one-channel conv1d after ELU");
      alto::set_num_threads(2);
      CHECK(torch::equal(conv1d(x, w, b, 1, c.padding, c.dilation), one));
      if (c.padding == 0 && c.length > 60) {
        const int64_t prefix = c.length - 37;  // a tail off every block size
        const torch::Tensor part = conv1d(x.narrow(2, 0, prefix), w, b, 1, 0, c.dilation);
        CHECK(torch::equal(part, one.narrow(2, 0, part.size(2))));
      }
    }
    limit_isa(previous);
  }
}

TEST_CASE("conv1d: short inputs, no bias, InferenceMode and bfloat16", "[conv]") {
  torch::manual_seed(2);
  const torch::Tensor w = torch::randn({4, 3, 5});
  for (int64_t length : {5, 6, 100}) {
    const torch::Tensor x = torch::randn({1, 3, length});
    alto::test::require_close(conv1d(x, w, {}, 1, 2), torch::conv1d(x, w, {}, 1, 2), 1e-5, 0,
                              std::nullopt, "short");
  }
  const torch::Tensor x = torch::randn({2, 3, kLong});
  {
    c10::InferenceMode inference;
    alto::test::require_close(conv1d(x, w, {}, 1, 2, 1, 1, kElu),
                              torch::conv1d(torch::elu(x), w, {}, 1, 2), 1e-4, 1e-5, std::nullopt,
                              "inference mode");
  }
  const torch::Tensor expected = torch::conv1d(x, w, {}, 2, 2).to(torch::kBFloat16);
  const torch::Tensor half = conv1d(x.to(torch::kBFloat16), w.to(torch::kBFloat16), {}, 2, 2);
  REQUIRE(half.scalar_type() == torch::kBFloat16);
  alto::test::require_close(half.to(torch::kFloat32), expected.to(torch::kFloat32), 0.25, 0.02,
                            std::nullopt, "bfloat16");
}

TEST_CASE("conv1d: bfloat16 short outputs as products of the unfolded input", "[conv]") {
  // A stream's deeper layers: up to 4 output rows read the bfloat16 weight as it lies, 5-32 go
  // through float32 GEMMs on blocks of it; either way float32 sums of the bfloat16 operands
  // (after ELU in bfloat16), rounded once.
  torch::manual_seed(5);
  const torch::Tensor w = torch::randn({24, 16, 4}).to(torch::kBFloat16);
  const torch::Tensor b = torch::randn({24}).to(torch::kBFloat16);
  for (const auto& [batch, length] :
       {std::pair<int64_t, int64_t>{1, 6}, {2, 5}, {1, 40}, {2, 33}}) {
    INFO("batch " << batch << " length " << length);
    const torch::Tensor x = torch::randn({batch, 16, length}).to(torch::kBFloat16);
    const torch::Tensor actual = conv1d(x, w, b, 2, 1, 1, 1, kElu);
    REQUIRE(actual.scalar_type() == torch::kBFloat16);
    const torch::Tensor expected = torch::conv1d(
        torch::elu(x).to(torch::kFloat64), w.to(torch::kFloat64), b.to(torch::kFloat64), 2, 1);
    REQUIRE(actual.sizes() == expected.sizes());
    // One bfloat16 rounding of the sum (2^-8 relative) and float32's summation.
    alto::test::require_close(actual.to(torch::kFloat64), expected, 1e-4, 1.0 / 256, std::nullopt,
                              "bfloat16 short conv1d");
  }
}

TEST_CASE("conv_transpose1d: equals torch::conv_transpose1d", "[conv]") {
  ThreadCount restore;
  torch::manual_seed(3);
  struct Case {
    int64_t batch, in, out, kernel, stride, padding, groups;
  };
  // kernel = 2 * stride (every codec), 3 * stride, not a multiple (libtorch's kernel), depthwise
  // (Mimi's upsample) and grouped (libtorch's kernel); frames from 1 to several tiles.
  for (const Case& c :
       {Case{1, 16, 8, 16, 8, 0, 1}, Case{2, 8, 4, 10, 5, 3, 1}, Case{1, 8, 6, 12, 4, 2, 1},
        Case{1, 6, 4, 5, 2, 1, 1}, Case{2, 8, 8, 4, 2, 0, 8}, Case{1, 8, 4, 4, 2, 1, 2},
        Case{1, 4, 2, 2, 1, 0, 1}}) {
    const torch::Tensor w = torch::randn({c.in, c.out / c.groups, c.kernel});
    const torch::Tensor b = torch::randn({c.out});
    for (int64_t frames : {1, 3, 700}) {
      const torch::Tensor x = torch::randn({c.batch, c.in, frames});
      for (int threads : {1, 2}) {
        alto::set_num_threads(threads);
        INFO("in " << c.in << " out " << c.out << " kernel " << c.kernel << " stride " << c.stride
                   << " padding " << c.padding << " groups " << c.groups << " frames " << frames
                   << " threads " << threads);
        const torch::Tensor expected =
            torch::conv_transpose1d(x, w, b, c.stride, c.padding, 0, c.groups);
        const torch::Tensor actual = conv_transpose1d(x, w, b, c.stride, c.padding, c.groups);
        REQUIRE(actual.sizes() == expected.sizes());
        alto::test::require_close(actual, expected, 1e-4, 1e-5, std::nullopt, "conv_transpose1d");
        alto::test::require_close(
            conv_transpose1d(x, w, {}, c.stride, c.padding, c.groups, kElu),
            torch::conv_transpose1d(torch::elu(x), w, {}, c.stride, c.padding, 0, c.groups), 1e-4,
            1e-5, std::nullopt, "conv_transpose1d after ELU, no bias");
      }
    }
  }
}

TEST_CASE("conv_transpose1d: bfloat16 computes in float32; bad shapes are errors", "[conv]") {
  torch::manual_seed(4);
  const torch::Tensor w = torch::randn({8, 4, 8}).to(torch::kBFloat16);
  const torch::Tensor b = torch::randn({4}).to(torch::kBFloat16);
  // 1 and 3 frames keep the weight bfloat16, widened block by block; 50 widen it whole.
  for (int64_t frames : {1, 3, 50}) {
    INFO("frames " << frames);
    const torch::Tensor x = torch::randn({1, 8, frames}).to(torch::kBFloat16);
    const torch::Tensor half = conv_transpose1d(x, w, b, 4, 2, 1, kElu);
    REQUIRE(half.scalar_type() == torch::kBFloat16);
    const torch::Tensor expected = torch::conv_transpose1d(
        torch::elu(x.to(torch::kFloat64)), w.to(torch::kFloat64), b.to(torch::kFloat64), 4, 2);
    REQUIRE(half.sizes() == expected.sizes());
    alto::test::require_close(half.to(torch::kFloat64), expected, 1e-4, 1.0 / 256, std::nullopt,
                              "bfloat16");
  }
  const torch::Tensor x = torch::randn({1, 8, 50});
  REQUIRE_THROWS_AS(conv_transpose1d(torch::randn({1, 7, 5}), w, {}, 4), alto::Error);
  REQUIRE_THROWS_WITH(conv_transpose1d(torch::randn({1, 8, 1}), torch::randn({8, 4, 2}), {}, 1, 1),
                      Catch::Contains("no output"));
}

TEST_CASE("time tiles: windows, copies, errors", "[conv]") {
  ThreadCount restore;
  const torch::Tensor x = torch::arange(1, 6, torch::kFloat32).view({1, 1, 5});
  REQUIRE(torch::equal(zero_padded_window(x, -2, 3),
                       torch::tensor({0.f, 0.f, 1.f, 2.f, 3.f}).view({1, 1, 5})));
  REQUIRE(torch::equal(zero_padded_window(x, 3, 8),
                       torch::tensor({4.f, 5.f, 0.f, 0.f, 0.f}).view({1, 1, 5})));
  REQUIRE(torch::equal(zero_padded_window(x, 6, 8), torch::zeros({1, 1, 2})));
  REQUIRE(zero_padded_window(x, 1, 4).data_ptr() == x.data_ptr<float>() + 1);  // a view

  torch::Tensor out = torch::zeros({2, 3, 10});
  copy_to_time_slice(out, 4, torch::ones({2, 3, 3}));
  REQUIRE(out.sum().item<float>() == 18);
  REQUIRE(out.narrow(2, 4, 3).min().item<float>() == 1);

  for (int threads : {1, 2}) {
    alto::set_num_threads(threads);
    std::vector<int> seen(10, 0);
    for_each_time_tile(10, 3, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) ++seen[t];
    });
    REQUIRE(seen == std::vector<int>(10, 1));
    REQUIRE_THROWS_WITH(for_each_time_tile(10, 3,
                                           [](int64_t begin, int64_t) {
                                             if (begin == 6) throw alto::InvalidArgument("tile 6");
                                           }),
                        Catch::Contains("tile 6"));
  }
  REQUIRE_THROWS_AS(for_each_time_tile(10, 0, [](int64_t, int64_t) {}), alto::InvalidArgument);
  REQUIRE(time_tile(1) == 2048);
  REQUIRE(time_tile(100000) == 512);
}
