#pragma once
// Mimi, Kyutai's neural audio codec (transformers' MimiModel; the tokenizer of Moshi and Sesame
// CSM): causal SEANet encoder at 25 Hz, a sliding-window transformer, a strided conv to 12.5 Hz,
// split residual vector quantization (semantic + acoustic codebooks), and the mirror image on
// the way back. Loads Hub checkpoints (config.json + model.safetensors) unchanged.
//
// Attention follows moshi and current transformers: causal with a sliding window of
// `sliding_window` positions. transformers v4.45 applied no window and, on its eager path, no
// causal mask; its output equals this one for inputs up to sliding_window 25 Hz positions (10 s).

#include <torch/types.h>

#include <memory>
#include <string>
#include <vector>

#include "alto/core/checkpoint.h"
#include "alto/core/options.h"
#include "alto/core/safetensors.h"
#include "alto/models/blocks/intermediates.h"
#include "alto/models/blocks/streaming_transformer.h"
#include "alto/tokenizers/audio_tokenizer.h"

namespace alto::models {

/// config.json of a Mimi checkpoint; absent keys take transformers' MimiConfig defaults (the
/// kyutai/mimi release).
struct MimiConfig {
  int64_t sampling_rate = 24000;
  double frame_rate = 12.5;
  int64_t audio_channels = 1;
  int64_t hidden_size = 512;
  int64_t num_filters = 64;
  int64_t num_residual_layers = 1;
  std::vector<int64_t> upsampling_ratios = {8, 6, 5, 4};
  int64_t kernel_size = 7;
  int64_t last_kernel_size = 3;
  int64_t residual_kernel_size = 3;
  int64_t dilation_growth_rate = 2;
  bool use_causal_conv = true;
  std::string pad_mode = "constant";
  int64_t compress = 2;
  double trim_right_ratio = 1.0;
  int64_t codebook_size = 2048;
  int64_t codebook_dim = 256;
  int64_t num_quantizers = 32;
  bool use_conv_shortcut = false;
  int64_t vector_quantization_hidden_dimension = 256;
  int64_t num_semantic_quantizers = 1;
  int64_t upsample_groups = 512;
  int64_t num_hidden_layers = 8;
  int64_t intermediate_size = 2048;
  int64_t num_attention_heads = 8;
  int64_t num_key_value_heads = 8;
  /// 0 (config.json's null) = hidden_size / num_attention_heads, as transformers resolves it.
  int64_t head_dim = 0;
  std::string hidden_act = "gelu";
  int64_t max_position_embeddings = 8000;
  double norm_eps = 1e-5;
  double rope_theta = 10000.0;
  int64_t sliding_window = 250;
  bool attention_bias = false;

  /// Reads `path` (a config.json or the folder holding it). Throws alto::IoError for a missing
  /// or corrupt file, alto::InvalidArgument naming the file and field for a bad value, and
  /// alto::Unsupported for a model_type other than "mimi".
  static MimiConfig from_json(const std::string& path);
  /// The codec config nested in a model's config.json under `sub_config` ("codec_config" of
  /// Kyutai STT), read and reported the same way.
  static MimiConfig from_json(const std::string& path, const std::string& sub_config);
  /// config.json's scalar keys, each declared once (core/options.h).
  static const OptionSchema<MimiConfig>& schema();
  void validate() const;
  std::string to_string() const;

  /// Frame rate of the SEANet encoder: sampling_rate / prod(upsampling_ratios) (25 Hz).
  double encodec_frame_rate() const;
  /// Samples per SEANet frame: prod(upsampling_ratios) (960).
  int64_t seanet_hop_length() const;
  /// Samples per code frame: the SEANet hop times the downsample stride (1920).
  int64_t hop_length() const;
  /// Stride of the 25 Hz -> 12.5 Hz conv: encodec_frame_rate / frame_rate (2).
  int64_t downsample_stride() const;
  /// The options of the encoder and decoder transformers.
  blocks::StreamingTransformerOptions transformer_options() const;
};

/// Choices of a Mimi stream beyond the per-call encode options.
struct MimiStreamOptions {
  /// kExact: streaming equals offline for any chunking. kMoshiRing: moshi's ring KV cache, whose
  /// output differs from offline once more than sliding_window 25 Hz positions (10 s) have passed
  /// (see WindowCache); for parity with moshi's streaming API.
  blocks::WindowCache window_cache = blocks::WindowCache::kExact;
  std::string to_string() const;
};

class Mimi final : public tokenizers::AudioTokenizer {
 public:
  /// `dir` holds config.json and model.safetensors as the Hub ships them.
  static std::shared_ptr<const Mimi> from_pretrained(const std::string& dir,
                                                     const LoadOptions& options = {});
  /// Throws alto::InvalidArgument listing every missing, unexpected and mis-shaped tensor.
  Mimi(const MimiConfig& config, const SafetensorsCheckpoint& checkpoint,
       const LoadOptions& options = {});
  /// The codec inside a larger checkpoint: its modules at `prefix` ("codec_model."); the caller
  /// finishes the binder.
  Mimi(const MimiConfig& config, CheckpointBinder& binder, const std::string& prefix,
       const LoadOptions& options);
  ~Mimi() override;

  std::string model_type() const override { return "mimi"; }
  int64_t sample_rate() const override;
  int64_t channels() const override;
  double frame_rate() const override;
  int64_t hop_length() const override;
  int64_t num_codebooks() const override;
  int64_t codebook_size() const override;
  /// options.num_quantizers: 0 = all, else from num_semantic_quantizers to num_quantizers.
  int64_t num_codebooks(const tokenizers::AudioEncodeOptions& options) const override;

  /// audio: float [batch, audio_channels, samples], samples >= 1 -> codes int64 [batch, K,
  /// ceil(samples / hop_length())] on the model's device: the last partial frame is padded as
  /// transformers pads it; num_samples = samples.
  tokenizers::AudioCodes encode(const torch::Tensor& audio,
                                const tokenizers::AudioEncodeOptions& options = {}) const override;
  /// With `intermediates`: "encoder" (SEANet output), "encoder_transformer", "downsample" (the
  /// latent before quantization), "quantizer" (the quantized latent), all channels-first.
  tokenizers::AudioCodes encode(const torch::Tensor& audio,
                                const tokenizers::AudioEncodeOptions& options,
                                Intermediates* intermediates) const;
  /// codes.codes: int64 [batch, K, frames], 1 <= K <= num_codebooks(), ids in
  /// [0, codebook_size) -> float32 [batch, audio_channels, frames * hop_length()], cut to
  /// codes.num_samples when that is set (as transformers' forward cuts to the input length).
  torch::Tensor decode(const tokenizers::AudioCodes& codes) const override;
  /// With `intermediates`: "quantizer", "upsample", "decoder_transformer", channels-first.
  torch::Tensor decode(const tokenizers::AudioCodes& codes, Intermediates* intermediates) const;

  bool supports_streaming() const override { return true; }
  /// A stream with explicit state for every convolution, both transformers' KV caches (bounded
  /// by sliding_window), the downsample and the upsample. encode_step returns the codes of every
  /// whole 1920-sample frame received; encode_flush pads the last partial frame as encode does.
  /// decode_step returns hop_length() samples per frame and holds nothing back (decode_flush has
  /// nothing to add). With WindowCache::kExact the codes and audio equal encode / decode for
  /// any chunking.
  std::unique_ptr<tokenizers::AudioTokenizerStream> stream(
      const tokenizers::AudioEncodeOptions& options = {}, int64_t batch = 1) const override;
  std::unique_ptr<tokenizers::AudioTokenizerStream> stream(
      const tokenizers::AudioEncodeOptions& options, int64_t batch,
      const MimiStreamOptions& stream_options) const;

  const MimiConfig& config() const;

  struct Impl;

 private:
  void bind(const MimiConfig& config, CheckpointBinder& binder, const std::string& prefix,
            const LoadOptions& options);
  std::shared_ptr<const Impl> impl_;
};

}  // namespace alto::models
