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

#include <string>

#include "alto/models/blocks/basic.h"

namespace alto::models::blocks {

/// The codebook layout and distance of one codec family.
enum class CodebookKind {
  /// EnCodec: `layers.{i}.codebook.{inited,cluster_size,embed,embed_avg}` (only `embed` is
  /// used); nearest = argmax -(|x|^2 - 2 x.e + |e|^2), first index on ties.
  kEncodec,
  /// Mimi: `layers.{i}.codebook.{initialized,cluster_usage,embed_sum}`, codeword =
  /// embed_sum / clamp(cluster_usage, epsilon); nearest = argmin torch.cdist in float32.
  /// `input_proj` / `output_proj` (1x1 convs without bias) wrap the whole quantizer when
  /// input_dim != codebook_dim.
  kMimi,
  /// DAC: `quantizers.{i}.{in_proj,out_proj}` (1x1 convs with bias, weight-normed in the
  /// checkpoint) around `quantizers.{i}.codebook.weight`; nearest by cosine: both the projected
  /// latent and the codebook L2-normalised, argmax of transformers' -(|x|^2 - 2 x.e) + |e|^2.
  kDac,
};

struct ResidualVectorQuantizerOptions {
  CodebookKind kind = CodebookKind::kEncodec;
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
  struct Stage;
  torch::Tensor nearest(const Stage& stage, const torch::Tensor& latent) const;
  torch::Tensor lookup(const Stage& stage, const torch::Tensor& ids) const;

  ResidualVectorQuantizerOptions options_;
  /// Mimi's input_proj / output_proj (absent when input_dim == codebook_dim).
  models::blocks::Conv1d input_proj{nullptr}, output_proj{nullptr};
  /// "layers" (EnCodec, Mimi) or "quantizers" (DAC), as the checkpoint names them.
  torch::nn::ModuleList stage_modules_;
  struct Stage {
    torch::Tensor codewords;     // [codebook_size, codebook_dim] as looked up
    torch::Tensor search;        // the codebook side of the distance (DAC: L2-normalised;
                                 // Mimi: [codeword, 1, |codeword|^2], float32)
    torch::Tensor search_norms;  // |search row|^2 [1, codebook_size] (EnCodec, DAC)
    models::blocks::Conv1d in_proj{nullptr}, out_proj{nullptr};  // DAC
  };
  std::vector<Stage> stages_;
};
TORCH_MODULE(ResidualVectorQuantizer);

/// Mimi's split quantizer: `semantic_residual_vector_quantizer` (the first
/// num_semantic_quantizers codebooks) and `acoustic_residual_vector_quantizer` (the rest), both
/// quantizing the same latent; decode sums their outputs.
struct SplitResidualVectorQuantizerOptions {
  /// kind kMimi; num_quantizers is the total over both halves.
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

/// Checks codes int64 [batch, K, frames] with 1 <= K <= max_codebooks and ids in
/// [0, codebook_size); throws alto::InvalidArgument naming `what`, the expected shape and range.
void check_codes(const torch::Tensor& codes, int64_t max_codebooks, int64_t codebook_size,
                 const std::string& what);

}  // namespace alto::models::blocks
