#pragma once
// Residual vector quantization, the discrete bottleneck of EnCodec, Mimi and DAC: each stage
// picks the nearest codeword to what the previous stages left over, decoding sums the chosen
// codewords. One module serves the three checkpoint layouts, registered under the checkpoint's
// own names (STYLE.md §6), with each codec's nearest-codeword arithmetic reproduced operation by
// operation so that codes are bit-exact with transformers.

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <functional>
#include <string>

#include "alto/core/registry.h"
#include "alto/models/blocks/basic.h"

namespace alto::models::blocks {

struct ResidualVectorQuantizerOptions {
  /// The registered codebook (CodebookEntry) of the codec family: "encodec", "mimi" or "dac".
  std::string codebook = "encodec";
  /// Stages (codebooks) in the checkpoint.
  int64_t num_quantizers = 0;
  int64_t codebook_size = 0;
  int64_t codebook_dim = 0;
  /// Channels of the latent that enters (and leaves) the quantizer. EnCodec: must equal
  /// codebook_dim. Mimi: hidden_size (projections exist when it differs from codebook_dim).
  /// DAC: hidden_size (each stage projects to codebook_dim and back).
  int64_t input_dim = 0;
  /// Mimi's clamp of cluster_usage (transformers' MimiEuclideanCodebook epsilon).
  double epsilon = 1e-5;

  /// Throws alto::InvalidArgument naming the field.
  void validate() const;
  std::string to_string() const;
};

/// One stage of a residual quantizer: what its codes are looked up in and searched against.
struct CodebookStage {
  torch::Tensor codewords;     // [codebook_size, codebook_dim] as looked up
  torch::Tensor search;        // the codebook side of the distance, from prepare()
  torch::Tensor search_norms;  // |search row|^2 [1, codebook_size] where the distance uses it
  Conv1d in_proj{nullptr}, out_proj{nullptr};  // per-stage projections (DAC)
};

/// A codec family's codebook: its tensors under the checkpoint's names and its nearest-codeword
/// arithmetic, reproduced operation by operation so that codes are bit-exact with the
/// reference. Each registers under the name ResidualVectorQuantizerOptions::codebook selects;
/// EnCodec's, Mimi's and DAC's are in rvq.cpp.
struct CodebookEntry {
  static const char* kind() { return "codebook"; }
  /// The checkpoint's name of the stage list: "layers" (EnCodec, Mimi) or "quantizers" (DAC).
  std::string stages_name = "layers";
  /// One input_proj / output_proj pair wraps the whole quantizer when input_dim differs from
  /// codebook_dim (Mimi); without it and without per-stage projections the two must be equal.
  bool whole_projections = false;
  /// Registers one stage's tensors (on `stage_module` and its `codebook` child) and fills
  /// `stage` with views of them.
  std::function<void(torch::nn::Module& stage_module, torch::nn::Module& codebook,
                     CodebookStage& stage, const ResidualVectorQuantizerOptions& options,
                     const torch::TensorOptions& tensor_options)>
      declare;
  /// Derives the searched side from the bound tensors, once after loading.
  std::function<void(torch::nn::Module& codebook, CodebookStage& stage,
                     const ResidualVectorQuantizerOptions& options)>
      prepare;
  /// x [rows, codebook_dim] -> the nearest codeword's id per row, int64 [rows].
  std::function<torch::Tensor(const CodebookStage& stage, const torch::Tensor& x)> nearest;
  /// Optional: `nearest` on raw float32 rows x [rows, codebook_dim], rows <=
  /// kernels::kMaxFewRows, writing ids [rows]: a streaming step's few frames, where a stage's
  /// dozen tensor operations cost more than reading its codebook. Families that have it
  /// encode such steps without tensor operations between the stages.
  std::function<void(const CodebookStage& stage, const float* x, int64_t rows, int64_t* ids)>
      nearest_rows;
};
const Registry<CodebookEntry>& codebooks();

class ResidualVectorQuantizerImpl : public torch::nn::Module {
 public:
  ResidualVectorQuantizerImpl(const ResidualVectorQuantizerOptions& options,
                              const torch::TensorOptions& tensor_options);

  /// Derives the codewords from the bound buffers (Mimi's embed_sum / cluster_usage, DAC's
  /// normalised codebook). Call once after CheckpointBinder has filled the module; encode and
  /// decode throw alto::InvalidArgument before.
  void prepare();

  /// latent: float [batch, input_dim, frames] -> codes int64 [batch, K, frames] with K =
  /// num_quantizers (0 = all; 1 <= K <= options().num_quantizers). With `quantized`, also the
  /// quantized latent [batch, input_dim, frames] as the codec's forward pass computes it. With
  /// `projected_latents` (DAC), each stage's in_proj(residual) concatenated on dim 1:
  /// [batch, K * codebook_dim, frames] (transformers' DacResidualVectorQuantize output).
  torch::Tensor encode(const torch::Tensor& latent, int64_t num_quantizers = 0,
                       torch::Tensor* quantized = nullptr,
                       torch::Tensor* projected_latents = nullptr) const;

  /// codes: int64 [batch, K, frames], 1 <= K <= num_quantizers, ids in [0, codebook_size) ->
  /// the sum of the looked-up codewords (through the output projections where present)
  /// [batch, input_dim, frames]. With `projected_latents` (DAC), the looked-up codewords
  /// concatenated on dim 1 [batch, K * codebook_dim, frames] (transformers' from_codes).
  /// Throws alto::InvalidArgument naming the expected shape or id range.
  torch::Tensor decode(const torch::Tensor& codes,
                       torch::Tensor* projected_latents = nullptr) const;

  const ResidualVectorQuantizerOptions& options() const { return options_; }

 private:
  torch::Tensor nearest(const CodebookStage& stage, const torch::Tensor& latent) const;
  /// encode()'s codes from the stages after input_proj on raw rows
  /// (CodebookEntry::nearest_rows), when `latent` is a few float32 CPU frames and the codewords
  /// float32.
  bool encodes_rows(const torch::Tensor& latent) const;
  torch::Tensor encode_rows(const torch::Tensor& latent, int64_t k) const;
  /// The sum of float32 codewords without stage projections, stage after stage as decode()'s and
  /// encode()'s `sum + chosen`, in one pass over the codes rather than tensor operations per
  /// stage: [batch, codebook_dim, frames].
  torch::Tensor sum_codewords(const torch::Tensor& codes) const;
  torch::Tensor lookup(const CodebookStage& stage, const torch::Tensor& ids) const;

  ResidualVectorQuantizerOptions options_;
  /// Mimi's input_proj / output_proj (absent when input_dim == codebook_dim).
  models::blocks::Conv1d input_proj{nullptr}, output_proj{nullptr};
  /// "layers" (EnCodec, Mimi) or "quantizers" (DAC), as the checkpoint names them.
  torch::nn::ModuleList stage_modules_;
  const CodebookEntry* entry_ = nullptr;
  std::vector<CodebookStage> stages_;
};
TORCH_MODULE(ResidualVectorQuantizer);

/// Mimi's split quantizer: `semantic_residual_vector_quantizer` (the first
/// num_semantic_quantizers codebooks) and `acoustic_residual_vector_quantizer` (the rest), both
/// quantizing the same latent; decode sums their outputs.
struct SplitResidualVectorQuantizerOptions {
  /// codebook "mimi"; num_quantizers is the total over both halves.
  ResidualVectorQuantizerOptions quantizer;
  int64_t num_semantic_quantizers = 1;

  void validate() const;
  std::string to_string() const;
};

class SplitResidualVectorQuantizerImpl : public torch::nn::Module {
 public:
  SplitResidualVectorQuantizerImpl(const SplitResidualVectorQuantizerOptions& options,
                                   const torch::TensorOptions& tensor_options);
  /// See ResidualVectorQuantizerImpl::prepare.
  void prepare();
  /// latent [batch, input_dim, frames] -> codes int64 [batch, K, frames]; K = num_quantizers
  /// (0 = all) must lie in [num_semantic_quantizers, total].
  torch::Tensor encode(const torch::Tensor& latent, int64_t num_quantizers = 0) const;
  /// codes int64 [batch, K, frames], 1 <= K <= total -> [batch, input_dim, frames].
  torch::Tensor decode(const torch::Tensor& codes) const;

  const SplitResidualVectorQuantizerOptions& options() const { return options_; }

  ResidualVectorQuantizer semantic_residual_vector_quantizer{nullptr};
  ResidualVectorQuantizer acoustic_residual_vector_quantizer{nullptr};

 private:
  SplitResidualVectorQuantizerOptions options_;
};
TORCH_MODULE(SplitResidualVectorQuantizer);

/// Checks codes int64 [batch >= 1, K, frames] with 1 <= K <= max_codebooks and ids in
/// [0, codebook_size); throws alto::InvalidArgument naming `what`, the expected shape and range.
void check_codes(const torch::Tensor& codes, int64_t max_codebooks, int64_t codebook_size,
                 const std::string& what);

}  // namespace alto::models::blocks
