// Residual vector quantization on random codebooks: each layout's nearest-codeword rule against
// a brute-force search, first index on ties, decode = sum of codewords, and the checkpoint names.
// The golden checks are in the codec tests (test_encodec.cpp, test_mimi.cpp, test_dac.cpp).

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <set>

#include "alto/core/error.h"
#include "alto/models/blocks/rvq.h"
#include "features/golden.h"

using namespace alto::models::blocks;

namespace {

ResidualVectorQuantizerOptions options(const std::string& kind, int64_t input_dim) {
  ResidualVectorQuantizerOptions o;
  o.codebook = kind;
  o.num_quantizers = 3;
  o.codebook_size = 16;
  o.codebook_dim = 4;
  o.input_dim = input_dim;
  return o;
}

void randomise(torch::nn::Module& module) {
  torch::manual_seed(7);
  torch::NoGradGuard no_grad;
  for (auto& p : module.parameters()) p.copy_(torch::randn_like(p));
  for (auto& b : module.buffers()) b.copy_(torch::rand_like(b) + 0.5);
}

std::set<std::string> names(torch::nn::Module& module) {
  std::set<std::string> out;
  for (const auto& p : module.named_parameters()) out.insert(p.key());
  for (const auto& b : module.named_buffers()) out.insert(b.key());
  return out;
}

}  // namespace

TEST_CASE("RVQ registers the checkpoints' names", "[codec][rvq]") {
  ResidualVectorQuantizer encodec(options("encodec", 4), torch::TensorOptions());
  CHECK(names(*encodec).count("layers.2.codebook.embed"));
  CHECK(names(*encodec).count("layers.0.codebook.embed_avg"));
  CHECK(names(*encodec).size() == 12);
  ResidualVectorQuantizer mimi(options("mimi", 6), torch::TensorOptions());
  CHECK(names(*mimi) ==
        std::set<std::string>{"input_proj.weight", "output_proj.weight",
                              "layers.0.codebook.initialized", "layers.0.codebook.cluster_usage",
                              "layers.0.codebook.embed_sum", "layers.1.codebook.initialized",
                              "layers.1.codebook.cluster_usage", "layers.1.codebook.embed_sum",
                              "layers.2.codebook.initialized", "layers.2.codebook.cluster_usage",
                              "layers.2.codebook.embed_sum"});
  ResidualVectorQuantizer dac(options("dac", 6), torch::TensorOptions());
  CHECK(names(*dac).count("quantizers.1.in_proj.weight"));
  CHECK(names(*dac).count("quantizers.1.out_proj.bias"));
  CHECK(names(*dac).count("quantizers.2.codebook.weight"));
  CHECK(names(*dac).size() == 15);
  SplitResidualVectorQuantizerOptions split;
  split.quantizer = options("mimi", 6);
  split.quantizer.num_quantizers = 4;
  SplitResidualVectorQuantizer s(split, torch::TensorOptions());
  CHECK(names(*s).count("semantic_residual_vector_quantizer.layers.0.codebook.embed_sum"));
  CHECK(names(*s).count("acoustic_residual_vector_quantizer.layers.2.codebook.embed_sum"));
  CHECK_FALSE(names(*s).count("acoustic_residual_vector_quantizer.layers.3.codebook.embed_sum"));
}

TEST_CASE("RVQ picks the nearest codeword stage by stage", "[codec][rvq]") {
  for (const std::string kind : {"encodec", "mimi", "dac"}) {
    const int64_t input_dim = kind == "encodec" ? 4 : 6;
    ResidualVectorQuantizer rvq(options(kind, input_dim), torch::TensorOptions());
    INFO(rvq->options().to_string());
    randomise(*rvq);
    CHECK_THROWS_WITH(rvq->encode(torch::randn({1, input_dim, 3})),
                      Catch::Matchers::Contains("prepare()"));
    rvq->prepare();
    torch::NoGradGuard no_grad;
    const torch::Tensor latent = torch::randn({2, input_dim, 11});
    torch::Tensor quantized, projected;
    const torch::Tensor codes = rvq->encode(latent, 0, &quantized, &projected);
    REQUIRE(codes.sizes() == torch::IntArrayRef({2, 3, 11}));
    CHECK(codes.scalar_type() == torch::kInt64);
    alto::test::require_close(rvq->decode(codes), quantized, 1e-5, 0, std::nullopt, "decode");
    CHECK(rvq->encode(latent, 2).sizes() == torch::IntArrayRef({2, 2, 11}));
    CHECK(torch::equal(rvq->encode(latent, 2), codes.narrow(1, 0, 2)));
    CHECK(projected.defined() == (kind == "dac"));

    // Brute force over the first stage.
    auto params = rvq->named_parameters();
    auto buffers = rvq->named_buffers();
    torch::Tensor x = latent, book;
    if (kind == "encodec") book = buffers["layers.0.codebook.embed"];
    if (kind == "mimi") {
      x = torch::conv1d(latent, params["input_proj.weight"]);
      book = buffers["layers.0.codebook.embed_sum"] /
             buffers["layers.0.codebook.cluster_usage"].unsqueeze(1);
    }
    if (kind == "dac") {
      x = torch::conv1d(latent, params["quantizers.0.in_proj.weight"],
                        params["quantizers.0.in_proj.bias"]);
      CHECK(torch::allclose(projected.narrow(1, 0, 4), x));
      x = x / x.norm(2, 1, true);
      book = params["quantizers.0.codebook.weight"];
      book = book / book.norm(2, 1, true);
    }
    const torch::Tensor d = torch::cdist(x.permute({0, 2, 1}), book.unsqueeze(0));
    CHECK(torch::equal(d.argmin(-1), codes.select(1, 0)));
  }
}

TEST_CASE("RVQ encodes a stream's few frames as it encodes many", "[codec][rvq]") {
  // A few float32 frames take the raw-row path (nearest_rows), more frames the tensor operations:
  // the same codes and quantized latent, bit for bit. 64 codewords put Mimi's search in cdist's
  // matrix-product form; a width of 40 leaves a tail after the 32-element blocks.
  for (const std::string kind : {"encodec", "mimi"})
    for (const int64_t dim : {32, 40}) {
      ResidualVectorQuantizerOptions o = options(kind, dim);
      o.codebook_size = 64;
      o.codebook_dim = dim;
      o.num_quantizers = 4;
      ResidualVectorQuantizer rvq(o, torch::TensorOptions());
      INFO(o.to_string());
      randomise(*rvq);
      rvq->prepare();
      torch::NoGradGuard no_grad;
      const torch::Tensor latent = torch::randn({2, dim, 6});
      const torch::Tensor before = latent.clone();
      torch::Tensor quantized;
      const torch::Tensor codes = rvq->encode(latent, 0, &quantized);
      CHECK(torch::equal(latent, before));
      for (int64_t f = 0; f < 6; ++f) {
        torch::Tensor step_quantized;
        const torch::Tensor step = rvq->encode(latent.narrow(2, f, 1), 0, &step_quantized);
        CHECK(torch::equal(step, codes.narrow(2, f, 1)));
        CHECK(torch::equal(step_quantized, quantized.narrow(2, f, 1)));
      }
      CHECK(torch::equal(rvq->encode(latent.narrow(0, 1, 1).narrow(2, 2, 4), 3),
                         codes.narrow(0, 1, 1).narrow(2, 2, 4).narrow(1, 0, 3)));
      CHECK(torch::equal(latent, before));
      CHECK(torch::equal(rvq->decode(codes), quantized));
      CHECK(torch::equal(rvq->decode(codes.narrow(2, 3, 1)), quantized.narrow(2, 3, 1)));
    }
}

TEST_CASE("RVQ takes the first codeword on a tie and checks codes", "[codec][rvq]") {
  ResidualVectorQuantizer rvq(options("encodec", 4), torch::TensorOptions());
  randomise(*rvq);
  {
    torch::NoGradGuard no_grad;
    auto embed = rvq->named_buffers()["layers.0.codebook.embed"];
    embed[9].copy_(embed[3]);
  }
  rvq->prepare();
  torch::NoGradGuard no_grad;
  auto embed = rvq->named_buffers()["layers.0.codebook.embed"];
  const torch::Tensor at_codeword = embed[9].view({1, 4, 1});
  CHECK(rvq->encode(at_codeword, 1).item<int64_t>() == 3);

  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(rvq->decode(torch::full({1, 2, 3}, 16, torch::kInt64)), Contains("[0, 16)"));
  CHECK_THROWS_WITH(rvq->decode(torch::zeros({1, 4, 3}, torch::kInt64)), Contains("1 <= K <= 3"));
  CHECK_THROWS_WITH(rvq->encode(torch::zeros({1, 5, 3})), Contains("[batch, 4, frames]"));
  CHECK_THROWS_WITH(rvq->encode(torch::zeros({1, 4, 3}), 4), Contains("num_quantizers"));
  auto bad = options("encodec", 5);
  CHECK_THROWS_WITH(ResidualVectorQuantizer(bad, torch::TensorOptions()),
                    Contains("input_dim must equal codebook_dim"));
}

TEST_CASE("Mimi's split RVQ concatenates semantic and acoustic codes", "[codec][rvq]") {
  SplitResidualVectorQuantizerOptions o;
  o.quantizer = options("mimi", 6);
  o.quantizer.num_quantizers = 4;
  SplitResidualVectorQuantizer split(o, torch::TensorOptions());
  randomise(*split);
  split->prepare();
  torch::NoGradGuard no_grad;
  const torch::Tensor latent = torch::randn({1, 6, 5});
  const torch::Tensor codes = split->encode(latent);
  REQUIRE(codes.sizes() == torch::IntArrayRef({1, 4, 5}));
  CHECK(torch::equal(codes.narrow(1, 0, 1),
                     split->semantic_residual_vector_quantizer->encode(latent)));
  CHECK(torch::equal(codes.narrow(1, 1, 3),
                     split->acoustic_residual_vector_quantizer->encode(latent)));
  CHECK(torch::equal(split->encode(latent, 2), codes.narrow(1, 0, 2)));
  alto::test::require_close(
      split->decode(codes),
      split->semantic_residual_vector_quantizer->decode(codes.narrow(1, 0, 1)) +
          split->acoustic_residual_vector_quantizer->decode(codes.narrow(1, 1, 3)),
      1e-6, 0, std::nullopt, "split decode");
  CHECK_THROWS_AS(split->encode(latent, 5), alto::InvalidArgument);
}
