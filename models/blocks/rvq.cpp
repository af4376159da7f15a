#include "alto/models/blocks/rvq.h"

#include <torch/torch.h>

#include <array>
#include <cmath>
#include <sstream>
#include <vector>

#include "alto/core/checkpoint.h"
#include "alto/core/error.h"
#include "alto/models/internal/few_rows.h"

namespace alto::models::blocks {

namespace {

torch::Tensor buffer(torch::nn::Module& module, const std::string& name, torch::IntArrayRef shape,
                     const torch::TensorOptions& options) {
  return module.register_buffer(name, declare_weight(shape, options));
}

models::blocks::Conv1d projection(int64_t in, int64_t out, bool bias,
                                  const torch::TensorOptions& options) {
  return models::blocks::Conv1d(models::blocks::Conv1dOptions{in, out, 1, 1, 0, 1, 1, bias},
                                options);
}

// x.pow(2).sum(-1) of one float32 row as libtorch's AVX2 sum kernel adds it (four 8-lane
// accumulators over 32-element blocks, then in order), so that raw-row distances equal the
// tensor path's.
float sum_of_squares(const float* x, int64_t n) {
  float lanes[32] = {};
  const int64_t blocks = n / 32 * 32;
  for (int64_t i = 0; i < blocks; i += 32)
    for (int j = 0; j < 32; ++j) lanes[j] += x[i + j] * x[i + j];
  float vector[8];
  for (int j = 0; j < 8; ++j)
    vector[j] = ((lanes[j] + lanes[8 + j]) + lanes[16 + j]) + lanes[24 + j];
  float sum = 0;
  for (float lane : vector) sum += lane;
  for (int64_t i = blocks; i < n; ++i) sum += x[i] * x[i];
  return sum;
}

// The first index of the smallest (`smallest`) or largest value, NaN first as libtorch's
// argmin / max take it.
int64_t first_extreme(const float* values, int64_t n, bool smallest) {
  int64_t best = 0;
  for (int64_t j = 0; j < n; ++j) {
    if (std::isnan(values[j])) return j;
    if (smallest ? values[j] < values[best] : values[j] > values[best]) best = j;
  }
  return best;
}

}  // namespace

void ResidualVectorQuantizerOptions::validate() const {
  ALTO_CHECK(num_quantizers > 0, "ResidualVectorQuantizerOptions.num_quantizers must be > 0, got ",
             num_quantizers);
  ALTO_CHECK(codebook_size > 0, "ResidualVectorQuantizerOptions.codebook_size must be > 0, got ",
             codebook_size);
  ALTO_CHECK(codebook_dim > 0, "ResidualVectorQuantizerOptions.codebook_dim must be > 0, got ",
             codebook_dim);
  ALTO_CHECK(input_dim > 0, "ResidualVectorQuantizerOptions.input_dim must be > 0, got ",
             input_dim);
  codebooks().at(codebook, "ResidualVectorQuantizerOptions.codebook");
  ALTO_CHECK(epsilon > 0, "ResidualVectorQuantizerOptions.epsilon must be > 0, got ", epsilon);
}

std::string ResidualVectorQuantizerOptions::to_string() const {
  std::ostringstream s;
  s << "ResidualVectorQuantizerOptions(codebook='" << codebook
    << "', num_quantizers=" << num_quantizers << ", codebook_size=" << codebook_size
    << ", codebook_dim=" << codebook_dim << ", input_dim=" << input_dim << ", epsilon=" << epsilon
    << ")";
  return s.str();
}

void check_codes(const torch::Tensor& codes, int64_t max_codebooks, int64_t codebook_size,
                 const std::string& what) {
  ALTO_CHECK(codes.defined() && codes.dim() == 3 && codes.scalar_type() == torch::kInt64 &&
                 codes.size(0) >= 1 && codes.size(1) >= 1 && codes.size(1) <= max_codebooks,
             what, ": expected int64 codes [batch >= 1, K, frames] with 1 <= K <= ", max_codebooks,
             ", got ", codes.defined() ? c10::toString(codes.scalar_type()) : "undefined", " ",
             codes.defined() ? codes.sizes() : c10::IntArrayRef{});
  if (codes.numel() == 0) return;
  const int64_t low = codes.min().item<int64_t>(), high = codes.max().item<int64_t>();
  ALTO_CHECK(low >= 0 && high < codebook_size, what, ": code ids must lie in [0, ", codebook_size,
             "), got values in [", low, ", ", high, "]");
}

ResidualVectorQuantizerImpl::ResidualVectorQuantizerImpl(const ResidualVectorQuantizerOptions& o,
                                                         const torch::TensorOptions& tensor_options)
    : options_(o) {
  o.validate();
  entry_ = &codebooks().at(o.codebook, "ResidualVectorQuantizerOptions.codebook");
  const int64_t d = o.codebook_dim;
  if (entry_->whole_projections && o.input_dim != d) {
    input_proj = register_module("input_proj", projection(o.input_dim, d, false, tensor_options));
    output_proj = register_module("output_proj", projection(d, o.input_dim, false, tensor_options));
  }
  stage_modules_ = register_module(entry_->stages_name, torch::nn::ModuleList());
  for (int64_t q = 0; q < o.num_quantizers; ++q) {
    auto stage_module = std::make_shared<torch::nn::Module>("VectorQuantization");
    auto codebook =
        stage_module->register_module("codebook", std::make_shared<torch::nn::Module>("Codebook"));
    CodebookStage stage;
    entry_->declare(*stage_module, *codebook, stage, o, tensor_options);
    stage_modules_->push_back(stage_module);
    stages_.push_back(stage);
  }
  ALTO_CHECK(input_proj || stages_.front().in_proj || o.input_dim == d,
             "ResidualVectorQuantizerOptions.input_dim must equal codebook_dim (", d, ") for the ",
             o.codebook, " codebook, got ", o.input_dim);
}

void ResidualVectorQuantizerImpl::prepare() {
  torch::NoGradGuard no_grad;
  for (size_t q = 0; q < stages_.size(); ++q)
    entry_->prepare(*stage_modules_[q]->named_children()["codebook"], stages_[q], options_);
}

torch::Tensor ResidualVectorQuantizerImpl::nearest(const CodebookStage& stage,
                                                   const torch::Tensor& latent) const {
  // latent [batch, codebook_dim, frames] -> ids [batch, frames]
  const int64_t batch = latent.size(0), frames = latent.size(2);
  const torch::Tensor x =
      latent.permute({0, 2, 1}).reshape({batch * frames, options_.codebook_dim});
  return entry_->nearest(stage, x).reshape({batch, frames});
}

torch::Tensor ResidualVectorQuantizerImpl::lookup(const CodebookStage& stage,
                                                  const torch::Tensor& ids) const {
  // ids [batch, frames] -> codewords [batch, codebook_dim, frames]
  return torch::embedding(stage.codewords, ids).permute({0, 2, 1});
}

torch::Tensor ResidualVectorQuantizerImpl::encode(const torch::Tensor& latent,
                                                  int64_t num_quantizers, torch::Tensor* quantized,
                                                  torch::Tensor* projected_latents) const {
  ALTO_CHECK(!stages_.empty() && stages_[0].search.defined(),
             "ResidualVectorQuantizer: call prepare() after loading the checkpoint");
  ALTO_CHECK(latent.defined() && latent.dim() == 3 && latent.size(1) == options_.input_dim,
             "ResidualVectorQuantizer.encode: expected latent [batch, ", options_.input_dim,
             ", frames], got ", latent.defined() ? latent.sizes() : c10::IntArrayRef{});
  const int64_t k = num_quantizers == 0 ? options_.num_quantizers : num_quantizers;
  ALTO_CHECK(k >= 1 && k <= options_.num_quantizers,
             "ResidualVectorQuantizer.encode: num_quantizers must lie in [1, ",
             options_.num_quantizers, "], got ", num_quantizers);
  std::vector<torch::Tensor> codes, projected;
  torch::Tensor sum, stacked_codes;
  if (stages_.front().in_proj) {
    // Per-stage projections, DacResidualVectorQuantize.forward: each stage projects the residual,
    // quantizes it and projects back; the straight-through sum p + (q - p) is kept as transformers
    // computes it.
    torch::Tensor residual = latent;
    for (int64_t q = 0; q < k; ++q) {
      const CodebookStage& stage = stages_[q];
      torch::Tensor p = stage.in_proj->forward(residual);
      torch::Tensor ids = nearest(stage, p);
      torch::Tensor stage_out = stage.out_proj->forward(p + (lookup(stage, ids) - p));
      sum = sum.defined() ? sum + stage_out : stage_out;
      residual = residual - stage_out;
      codes.push_back(ids);
      projected.push_back(p);
    }
  } else {
    torch::Tensor residual = input_proj ? input_proj->forward(latent) : latent;
    if (encodes_rows(residual)) {
      stacked_codes = encode_rows(residual, k);
      if (quantized) sum = sum_codewords(stacked_codes);
    } else {
      for (int64_t q = 0; q < k; ++q) {
        const CodebookStage& stage = stages_[q];
        torch::Tensor ids = nearest(stage, residual);
        torch::Tensor chosen = lookup(stage, ids);
        residual = residual - chosen;
        codes.push_back(ids);
        if (quantized) sum = sum.defined() ? sum + chosen : chosen;
      }
    }
    if (quantized && output_proj) sum = output_proj->forward(sum);
  }
  if (quantized) *quantized = sum;
  if (projected_latents)
    *projected_latents = projected.empty() ? torch::Tensor() : torch::cat(projected, 1);
  return stacked_codes.defined() ? stacked_codes : torch::stack(codes, 1);
}

bool ResidualVectorQuantizerImpl::encodes_rows(const torch::Tensor& latent) const {
  const torch::Tensor& words = stages_.front().codewords;
  const int64_t rows = latent.size(0) * latent.size(2);
  return entry_->nearest_rows && latent.is_cpu() && latent.scalar_type() == torch::kFloat32 &&
         rows >= 1 && rows <= kernels::kMaxFewRows && words.is_cpu() &&
         words.scalar_type() == torch::kFloat32;
}

torch::Tensor ResidualVectorQuantizerImpl::encode_rows(const torch::Tensor& latent,
                                                       int64_t k) const {
  const int64_t batch = latent.size(0), dim = latent.size(1), frames = latent.size(2);
  const int64_t rows = batch * frames;
  // [batch, frames, dim], a copy: the stages subtract from it.
  torch::Tensor residual = latent.permute({0, 2, 1}).clone(torch::MemoryFormat::Contiguous);
  torch::Tensor codes = torch::empty({batch, k, frames}, latent.options().dtype(torch::kInt64));
  float* r = residual.data_ptr<float>();
  int64_t* code = codes.data_ptr<int64_t>();
  std::array<int64_t, kernels::kMaxFewRows> ids{};
  for (int64_t q = 0; q < k; ++q) {
    const CodebookStage& stage = stages_[q];
    entry_->nearest_rows(stage, r, rows, ids.data());
    const torch::Tensor words = stage.codewords.contiguous();
    for (int64_t row = 0; row < rows; ++row) {
      // encode()'s `residual - chosen`, element by element.
      const float* chosen = words.data_ptr<float>() + ids[row] * dim;
      float* x = r + row * dim;
      for (int64_t i = 0; i < dim; ++i) x[i] -= chosen[i];
      code[(row / frames * k + q) * frames + row % frames] = ids[row];
    }
  }
  return codes;
}

torch::Tensor ResidualVectorQuantizerImpl::decode(const torch::Tensor& codes,
                                                  torch::Tensor* projected_latents) const {
  ALTO_CHECK(!stages_.empty() && stages_[0].search.defined(),
             "ResidualVectorQuantizer: call prepare() after loading the checkpoint");
  check_codes(codes, options_.num_quantizers, options_.codebook_size,
              "ResidualVectorQuantizer.decode");
  torch::Tensor sum;
  std::vector<torch::Tensor> projected;
  const torch::Tensor& words = stages_.front().codewords;
  if (!stages_.front().out_proj && codes.is_cpu() && words.is_cpu() &&
      words.scalar_type() == torch::kFloat32) {
    sum = sum_codewords(codes);
  } else {
    for (int64_t q = 0; q < codes.size(1); ++q) {
      const CodebookStage& stage = stages_[q];
      torch::Tensor chosen = lookup(stage, codes.select(1, q));
      if (stage.out_proj) {
        projected.push_back(chosen);
        chosen = stage.out_proj->forward(chosen);
      }
      sum = sum.defined() ? sum + chosen : chosen;
    }
  }
  if (output_proj) sum = output_proj->forward(sum);
  if (projected_latents)
    *projected_latents = projected.empty() ? torch::Tensor() : torch::cat(projected, 1);
  return sum;
}

torch::Tensor ResidualVectorQuantizerImpl::sum_codewords(const torch::Tensor& codes) const {
  const int64_t batch = codes.size(0), k = codes.size(1), frames = codes.size(2);
  const int64_t dim = options_.codebook_dim;
  std::vector<torch::Tensor> words;
  for (int64_t q = 0; q < k; ++q) words.push_back(stages_[q].codewords.contiguous());
  const torch::Tensor ids = codes.contiguous();
  const int64_t* id = ids.data_ptr<int64_t>();
  torch::Tensor sum = torch::empty({batch, frames, dim}, words.front().options());
  float* out = sum.data_ptr<float>();
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t f = 0; f < frames; ++f) {
      float* total = out + (b * frames + f) * dim;
      for (int64_t q = 0; q < k; ++q) {
        // The tensor paths' `sum + chosen` stage after stage, element by element.
        const float* chosen = words[q].data_ptr<float>() + id[(b * k + q) * frames + f] * dim;
        for (int64_t i = 0; i < dim; ++i) total[i] = q == 0 ? chosen[i] : total[i] + chosen[i];
      }
    }
  return sum.permute({0, 2, 1});
}

const Registry<CodebookEntry>& codebooks() { return Registry<CodebookEntry>::instance(); }

namespace {

// EnCodec: layers.{i}.codebook.{inited,cluster_size,embed,embed_avg} (only `embed` is used);
// nearest = argmax -(|x|^2 - 2 x.e + |e|^2), EncodecEuclideanCodebook.quantize operation for
// operation, the first index on ties.
CodebookEntry encodec_codebook() {
  CodebookEntry e;
  e.declare = [](torch::nn::Module&, torch::nn::Module& codebook, CodebookStage& stage,
                 const ResidualVectorQuantizerOptions& o, const torch::TensorOptions& t) {
    const int64_t n = o.codebook_size, d = o.codebook_dim;
    // Training-time k-means state: bound so a checkpoint fits exactly, never read.
    buffer(codebook, "inited", {1}, t);
    buffer(codebook, "cluster_size", {n}, t);
    stage.codewords = buffer(codebook, "embed", {n, d}, t);
    buffer(codebook, "embed_avg", {n, d}, t);
  };
  e.prepare = [](torch::nn::Module&, CodebookStage& stage, const ResidualVectorQuantizerOptions&) {
    stage.search = stage.codewords;  // [codeword, d]: linear()'s weight
    stage.search_norms = stage.search.t().pow(2).sum(0, /*keepdim=*/true);
  };
  e.nearest = [](const CodebookStage& stage, const torch::Tensor& x) {
    // linear(): a streaming step's few rows read the codebook once.
    const torch::Tensor dist = -(x.pow(2).sum(1, /*keepdim=*/true) -
                                 2 * blocks::linear(x, stage.search) + stage.search_norms);
    return std::get<1>(dist.max(-1));
  };
  e.nearest_rows = [](const CodebookStage& stage, const float* x, int64_t rows, int64_t* ids) {
    const int64_t n = stage.search.size(0), dim = stage.search.size(1);
    std::vector<float> dist(rows * n);
    kernels::linear_few_rows(x, rows, dim, stage.search.data_ptr<float>(), n, nullptr, dist.data());
    const float* norms = stage.search_norms.data_ptr<float>();
    for (int64_t r = 0; r < rows; ++r) {
      const float squares = sum_of_squares(x + r * dim, dim);
      float* d = dist.data() + r * n;
      for (int64_t j = 0; j < n; ++j) d[j] = -((squares - 2 * d[j]) + norms[j]);
      ids[r] = first_extreme(d, n, /*smallest=*/false);
    }
  };
  return e;
}

// torch.cdist computes distances directly (not as a matrix product) up to this many rows on
// both sides.
constexpr int64_t kCdistDirectMax = 25;

// Mimi's nearest codeword: cdist's own operations on the prepared codebook side, bit-equal to it
// (tested).
torch::Tensor mimi_nearest(const CodebookStage& stage, const torch::Tensor& x) {
  const torch::Tensor f = x.to(torch::kFloat32);
  if (f.size(0) <= kCdistDirectMax && stage.search.size(0) <= kCdistDirectMax) {
    const torch::Tensor codebook = stage.search.narrow(1, 0, f.size(1));
    return torch::cdist(f.unsqueeze(0), codebook.unsqueeze(0), 2.0)[0].argmin(-1);
  }
  const torch::Tensor lhs = torch::cat(
      {f.mul(-2), f.pow(2).sum(-1, /*keepdim=*/true), torch::ones({f.size(0), 1}, f.options())},
      -1);
  // linear(): a streaming step's few rows read the codebook once.
  return blocks::linear(lhs, stage.search).clamp_min_(0).sqrt_().argmin(-1);
}

// Mimi: layers.{i}.codebook.{initialized,cluster_usage,embed_sum}, codeword = embed_sum /
// clamp(cluster_usage, epsilon); nearest = argmin torch.cdist in float32
// (MimiEuclideanCodebook.quantize); input_proj / output_proj (1x1 convs without bias) wrap the
// whole quantizer when input_dim != codebook_dim.
CodebookEntry mimi_codebook() {
  CodebookEntry e;
  e.whole_projections = true;
  e.declare = [](torch::nn::Module&, torch::nn::Module& codebook, CodebookStage&,
                 const ResidualVectorQuantizerOptions& o, const torch::TensorOptions& t) {
    buffer(codebook, "initialized", {1}, t);
    buffer(codebook, "cluster_usage", {o.codebook_size}, t);
    buffer(codebook, "embed_sum", {o.codebook_size, o.codebook_dim}, t);
  };
  e.prepare = [](torch::nn::Module& codebook, CodebookStage& stage,
                 const ResidualVectorQuantizerOptions& o) {
    auto buffers = codebook.named_buffers();
    stage.codewords =
        buffers["embed_sum"] / buffers["cluster_usage"].clamp_min(o.epsilon).unsqueeze(1);
    const torch::Tensor c = stage.codewords.to(torch::kFloat32);
    // torch.cdist's matrix-product form (what it computes for > 25 codewords): the codebook
    // side [codeword, 1, |codeword|^2], built once rather than on every call.
    stage.search = torch::cat(
        {c, torch::ones({c.size(0), 1}, c.options()), c.pow(2).sum(-1, /*keepdim=*/true)}, -1);
  };
  e.nearest = mimi_nearest;
  e.nearest_rows = [](const CodebookStage& stage, const float* x, int64_t rows, int64_t* ids) {
    const int64_t n = stage.search.size(0), dim = stage.search.size(1) - 2;
    if (n <= kCdistDirectMax) {
      const torch::Tensor found =
          mimi_nearest(stage, torch::from_blob(const_cast<float*>(x), {rows, dim}));
      std::copy(found.data_ptr<int64_t>(), found.data_ptr<int64_t>() + rows, ids);
      return;
    }
    // mimi_nearest's operations on raw rows: [-2 x, |x|^2, 1] against the prepared side.
    std::vector<float> lhs(rows * (dim + 2)), dist(rows * n);
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = x + r * dim;
      float* l = lhs.data() + r * (dim + 2);
      for (int64_t i = 0; i < dim; ++i) l[i] = row[i] * -2.f;
      l[dim] = sum_of_squares(row, dim);
      l[dim + 1] = 1.f;
    }
    kernels::linear_few_rows(lhs.data(), rows, dim + 2, stage.search.data_ptr<float>(), n, nullptr,
                             dist.data());
    for (int64_t r = 0; r < rows; ++r) {
      float* d = dist.data() + r * n;
      for (int64_t j = 0; j < n; ++j) d[j] = std::sqrt(d[j] < 0.f ? 0.f : d[j]);
      ids[r] = first_extreme(d, n, /*smallest=*/true);
    }
  };
  return e;
}

// DAC: quantizers.{i}.{in_proj,out_proj} (1x1 convs with bias, weight-normed in the checkpoint)
// around quantizers.{i}.codebook.weight; nearest by cosine, both sides L2-normalised, argmax of
// DacVectorQuantize.decode_latents' -(|x|^2 - 2 x.e) + |e|^2 (its sign of the |e|^2 term).
CodebookEntry dac_codebook() {
  CodebookEntry e;
  e.stages_name = "quantizers";
  e.declare = [](torch::nn::Module& stage_module, torch::nn::Module& codebook, CodebookStage& stage,
                 const ResidualVectorQuantizerOptions& o, const torch::TensorOptions& t) {
    stage.in_proj =
        stage_module.register_module("in_proj", projection(o.input_dim, o.codebook_dim, true, t));
    stage.out_proj =
        stage_module.register_module("out_proj", projection(o.codebook_dim, o.input_dim, true, t));
    stage.codewords =
        uninitialised_parameter(codebook, "weight", {o.codebook_size, o.codebook_dim}, t);
  };
  e.prepare = [](torch::nn::Module&, CodebookStage& stage, const ResidualVectorQuantizerOptions&) {
    stage.search = torch::nn::functional::normalize(
        stage.codewords, torch::nn::functional::NormalizeFuncOptions().dim(1));
    stage.search_norms = stage.search.pow(2).sum(1, /*keepdim=*/true).t();
  };
  e.nearest = [](const CodebookStage& stage, const torch::Tensor& x) {
    const torch::Tensor n =
        torch::nn::functional::normalize(x, torch::nn::functional::NormalizeFuncOptions().dim(1));
    const torch::Tensor dist =
        -(n.pow(2).sum(1, /*keepdim=*/true) - 2 * torch::matmul(n, stage.search.t())) +
        stage.search_norms;
    return std::get<1>(dist.max(1));
  };
  return e;
}

const Registration<CodebookEntry> kEncodec("encodec", encodec_codebook());
const Registration<CodebookEntry> kMimi("mimi", mimi_codebook());
const Registration<CodebookEntry> kDac("dac", dac_codebook());

}  // namespace

// ---------------------------------------------------------------------------------------------

void SplitResidualVectorQuantizerOptions::validate() const {
  quantizer.validate();
  ALTO_CHECK(quantizer.codebook == "mimi",
             "SplitResidualVectorQuantizerOptions.quantizer.codebook must be mimi, got ",
             quantizer.codebook);
  ALTO_CHECK(num_semantic_quantizers >= 1 && num_semantic_quantizers < quantizer.num_quantizers,
             "SplitResidualVectorQuantizerOptions.num_semantic_quantizers must lie in [1, ",
             quantizer.num_quantizers, "), got ", num_semantic_quantizers);
}

std::string SplitResidualVectorQuantizerOptions::to_string() const {
  return "SplitResidualVectorQuantizerOptions(quantizer=" + quantizer.to_string() +
         ", num_semantic_quantizers=" + std::to_string(num_semantic_quantizers) + ")";
}

SplitResidualVectorQuantizerImpl::SplitResidualVectorQuantizerImpl(
    const SplitResidualVectorQuantizerOptions& o, const torch::TensorOptions& tensor_options)
    : options_(o) {
  o.validate();
  ResidualVectorQuantizerOptions semantic = o.quantizer, acoustic = o.quantizer;
  semantic.num_quantizers = o.num_semantic_quantizers;
  acoustic.num_quantizers = o.quantizer.num_quantizers - o.num_semantic_quantizers;
  semantic_residual_vector_quantizer = register_module(
      "semantic_residual_vector_quantizer", ResidualVectorQuantizer(semantic, tensor_options));
  acoustic_residual_vector_quantizer = register_module(
      "acoustic_residual_vector_quantizer", ResidualVectorQuantizer(acoustic, tensor_options));
}

void SplitResidualVectorQuantizerImpl::prepare() {
  semantic_residual_vector_quantizer->prepare();
  acoustic_residual_vector_quantizer->prepare();
}

torch::Tensor SplitResidualVectorQuantizerImpl::encode(const torch::Tensor& latent,
                                                       int64_t num_quantizers) const {
  const int64_t total = options_.quantizer.num_quantizers;
  const int64_t semantic = options_.num_semantic_quantizers;
  const int64_t k = num_quantizers == 0 ? total : num_quantizers;
  ALTO_CHECK(k >= semantic && k <= total, "num_quantizers must lie in [", semantic, ", ", total,
             "] (at least the semantic codebooks), got ", num_quantizers);
  torch::Tensor codes = semantic_residual_vector_quantizer->encode(latent);
  if (k == semantic) return codes;
  return torch::cat({codes, acoustic_residual_vector_quantizer->encode(latent, k - semantic)}, 1);
}

torch::Tensor SplitResidualVectorQuantizerImpl::decode(const torch::Tensor& codes) const {
  const int64_t semantic = options_.num_semantic_quantizers;
  check_codes(codes, options_.quantizer.num_quantizers, options_.quantizer.codebook_size,
              "SplitResidualVectorQuantizer.decode");
  torch::Tensor out = semantic_residual_vector_quantizer->decode(
      codes.narrow(1, 0, std::min(semantic, codes.size(1))));
  if (codes.size(1) > semantic)
    out = out + acoustic_residual_vector_quantizer->decode(
                    codes.narrow(1, semantic, codes.size(1) - semantic));
  return out;
}

}  // namespace alto::models::blocks
