#pragma once
// DAC, the Descript Audio Codec (transformers' DacModel; descript-audio-codec): a convolutional
// encoder with Snake activations, a factorised residual vector quantizer with cosine codebook
// lookup, and a transposed-convolution decoder. Loads the Hub's descript/dac_{16,24,44}khz
// folders unchanged, with weight norm folded or stored in either of PyTorch's spellings. Not
// causal: no streaming. The model is immutable after loading and safe to share between threads.

#include <torch/types.h>

#include <memory>
#include <string>
#include <vector>

#include "alto/core/checkpoint.h"
#include "alto/core/options.h"
#include "alto/core/safetensors.h"
#include "alto/tokenizers/audio_tokenizer.h"

namespace alto::models {

/// config.json of a DAC checkpoint; absent keys take transformers' DacConfig defaults
/// (descript/dac_16khz's architecture).
struct DacConfig {
  int64_t encoder_hidden_size = 64;
  std::vector<int64_t> downsampling_ratios = {2, 4, 8, 8};
  /// transformers derives these two from the keys above but a config.json that stores them
  /// wins, as PretrainedConfig's extra keys do.
  std::vector<int64_t> upsampling_ratios = {8, 8, 4, 2};  // downsampling_ratios reversed
  int64_t hidden_size = 1024;  // encoder_hidden_size * 2^len(downsampling_ratios)
  int64_t decoder_hidden_size = 1536;
  int64_t n_codebooks = 9;
  int64_t codebook_size = 1024;
  int64_t codebook_dim = 8;
  int64_t sampling_rate = 16000;

  /// Reads `path` (a config.json or the folder holding it). Throws alto::IoError for a missing
  /// or corrupt file, alto::InvalidArgument naming the file and field for a bad value, and
  /// alto::Unsupported for a model_type other than "dac".
  static DacConfig from_json(const std::string& path);
  /// config.json's scalar keys, each declared once (core/options.h).
  static const OptionSchema<DacConfig>& schema();
  void validate() const;
  std::string to_string() const;

  /// Samples per code frame: the encoder's total stride.
  int64_t hop_length() const;
};

/// The part of preprocessor_config.json (DacFeatureExtractor) that shapes the model's input:
/// right- (or left-) padding with `padding_value` to a multiple of `hop_length`. Note that the
/// Hub's conversion left hop_length at the extractor's default 512 even for the 16 kHz model
/// (hop 320); transformers pads to 512 there and so does alto.
struct DacFeatureExtractorOptions {
  int64_t hop_length = 512;
  double padding_value = 0.0;
  std::string padding_side = "right";
  int64_t feature_size = 1;

  /// Reads a preprocessor_config.json; errors as DacConfig::from_json.
  static DacFeatureExtractorOptions from_json(const std::string& path);
  void validate() const;
  std::string to_string() const;
};

/// transformers' DacResidualVectorQuantizer.forward outputs (its losses aside).
struct DacQuantizerOutput {
  torch::Tensor audio_codes;               // int64 [batch, K, frames]
  torch::Tensor quantized_representation;  // [batch, hidden_size, frames]
  torch::Tensor projected_latents;         // [batch, K * codebook_dim, frames]
};

class Dac final : public tokenizers::AudioTokenizer {
 public:
  /// `dir` holds config.json and model.safetensors; preprocessor_config.json, when present,
  /// sets the input padding (without it: the model's hop length).
  static std::shared_ptr<const Dac> from_pretrained(const std::string& dir,
                                                    const LoadOptions& options = {});
  Dac(const DacConfig& config, const SafetensorsCheckpoint& checkpoint,
      const LoadOptions& options = {}, const DacFeatureExtractorOptions& features = {});

  std::string model_type() const override { return "dac"; }
  int64_t sample_rate() const override;
  int64_t channels() const override { return 1; }
  double frame_rate() const override;
  int64_t hop_length() const override;
  int64_t num_codebooks() const override;
  int64_t codebook_size() const override;
  int64_t num_codebooks(const tokenizers::AudioEncodeOptions& options) const override;

  /// audio: float [batch, 1, samples] -> codes int64 [batch, K, frames]: pads as the feature
  /// extractor does, then DacModel.encode(n_quantizers = options.num_quantizers);
  /// num_samples = samples.
  tokenizers::AudioCodes encode(const torch::Tensor& audio,
                                const tokenizers::AudioEncodeOptions& options = {}) const override;
  /// codes int64 [batch, K, frames], 1 <= K <= n_codebooks -> float32 [batch, 1, samples]:
  /// DacModel.decode(audio_codes=codes), whose length (transformers never cuts it) is the
  /// decoder's, a few samples short of frames * hop; num_samples > 0 (encode's) makes it
  /// exactly that long, cutting the padding or filling the decoder's shortfall with zeros.
  torch::Tensor decode(const tokenizers::AudioCodes& codes) const override;

  // The stages of DacModel, for parity checks and for callers that want the continuous
  // representations. Tensors come back on the model's device in its dtype (codes int64).

  /// DacFeatureExtractor's padding: audio [batch, 1, samples] -> input_values [batch, 1, N].
  torch::Tensor pad_input(const torch::Tensor& audio) const;
  /// model.encoder: input_values [batch, 1, N] -> latents [batch, hidden_size, frames].
  torch::Tensor encode_latents(const torch::Tensor& input_values) const;
  /// model.quantizer(latents, num_quantizers); 0 = all codebooks.
  DacQuantizerOutput quantize(const torch::Tensor& latents, int64_t num_quantizers = 0) const;
  /// model.quantizer.from_codes(codes)[0]: codes int64 [batch, K, frames] -> [batch,
  /// hidden_size, frames].
  torch::Tensor dequantize(const torch::Tensor& codes) const;
  /// model.decoder: [batch, hidden_size, frames] -> audio [batch, 1, samples].
  torch::Tensor decode_latents(const torch::Tensor& quantized_representation) const;

  const DacConfig& config() const;
  const DacFeatureExtractorOptions& feature_extractor() const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace alto::models
