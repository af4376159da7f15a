#pragma once
// EnCodec (transformers' EncodecModel + EncodecFeatureExtractor) as an AudioTokenizer, loading
// Hub checkpoints unchanged: the 24 kHz causal mono model, the 48 kHz non-causal stereo model
// with `normalize` and chunking (chunk_length_s / overlap, one scale per chunk, linear
// overlap-add on decode), weight norm in either spelling. The causal model also streams.
//
// Streaming (stream()) gives the offline codes exactly and the offline audio to float rounding
// (chunked LSTM and overlap-added transposed convolutions sum in another order), for any
// chunking. Where it must differ in timing rather than values:
// - transformers pads every causal convolution on the left by reflection (pad_mode "reflect"),
//   which reads the first kernel-1 samples ahead; so the first codes wait for 7 samples and the
//   first audio for 7 code frames (93 ms at 75 Hz), after which output is frame by frame;
// - the offline pass pads the last, partial frame on the right (again by reflection); a stream
//   cannot know a frame is the last, so that frame comes from encode_flush();
// - offline decode truncates to AudioCodes::num_samples (transformers' padding_mask length);
//   decode_step returns whole frames (frames * hop_length samples) and leaves that to the caller.

#include <torch/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "alto/core/checkpoint.h"
#include "alto/core/options.h"
#include "alto/core/safetensors.h"
#include "alto/models/blocks/intermediates.h"
#include "alto/models/blocks/seanet.h"
#include "alto/tokenizers/audio_tokenizer.h"

namespace alto::models {

/// config.json of an EnCodec checkpoint; absent keys take transformers' EncodecConfig defaults.
struct EncodecConfig {
  std::vector<double> target_bandwidths = {1.5, 3.0, 6.0, 12.0, 24.0};
  int64_t sampling_rate = 24000;
  int64_t audio_channels = 1;
  bool normalize = false;
  std::optional<double> chunk_length_s;
  std::optional<double> overlap;
  int64_t hidden_size = 128;
  int64_t num_filters = 32;
  int64_t num_residual_layers = 1;
  std::vector<int64_t> upsampling_ratios = {8, 5, 4, 2};
  std::string norm_type = "weight_norm";
  int64_t kernel_size = 7;
  int64_t last_kernel_size = 7;
  int64_t residual_kernel_size = 3;
  int64_t dilation_growth_rate = 2;
  bool use_causal_conv = true;
  std::string pad_mode = "reflect";
  int64_t compress = 2;
  int64_t num_lstm_layers = 2;
  double trim_right_ratio = 1.0;
  int64_t codebook_size = 1024;
  /// Absent: hidden_size.
  std::optional<int64_t> codebook_dim;
  bool use_conv_shortcut = true;

  /// Reads `path` (a config.json or the folder holding it). Throws alto::IoError for a missing
  /// or corrupt file, alto::InvalidArgument naming the file and field for a bad value, and
  /// alto::Unsupported for a model_type other than "encodec".
  static EncodecConfig from_json(const std::string& path);
  /// config.json's scalar keys, each declared once (core/options.h).
  static const OptionSchema<EncodecConfig>& schema();
  void validate() const;
  std::string to_string() const;

  blocks::SeanetOptions seanet() const;
  /// prod(upsampling_ratios)
  int64_t hop_length() const;
  /// ceil(sampling_rate / hop_length), as transformers (75 at 24 kHz, 150 at 48 kHz).
  int64_t frame_rate() const;
  /// Codebooks in the checkpoint: 1000 * max bandwidth // (frame_rate * 10).
  int64_t num_quantizers() const;
  /// Codebooks used at `bandwidth` kbps: max(1, floor(bandwidth * 1000 / (log2(codebook_size)
  /// * frame_rate))).
  int64_t num_quantizers_for_bandwidth(double bandwidth) const;
  /// Samples per chunk and between chunk starts; absent when the model does not chunk.
  std::optional<int64_t> chunk_length() const;
  std::optional<int64_t> chunk_stride() const;
};

class Encodec : public tokenizers::AudioTokenizer {
 public:
  /// `dir` holds config.json and model.safetensors as the Hub ships them.
  static std::shared_ptr<const Encodec> from_pretrained(const std::string& dir,
                                                        const LoadOptions& options = {});
  /// Throws alto::InvalidArgument listing every missing, unexpected and mis-shaped tensor.
  Encodec(const EncodecConfig& config, const SafetensorsCheckpoint& checkpoint,
          const LoadOptions& options = {});

  std::string model_type() const override { return "encodec"; }
  bool chunked_codes() const override { return true; }
  int64_t sample_rate() const override;
  int64_t channels() const override;
  double frame_rate() const override;
  int64_t hop_length() const override;
  int64_t num_codebooks() const override;
  int64_t codebook_size() const override;
  /// options.bandwidth (one of target_bandwidths; 0 = the first, as transformers) or, with
  /// bandwidth 0, options.num_quantizers (a prefix of 1..num_codebooks()).
  int64_t num_codebooks(const tokenizers::AudioEncodeOptions& options) const override;

  /// What EncodecFeatureExtractor hands the model: audio [batch, channels, n] zero padded on the
  /// right to whole chunks when the model chunks (unchanged otherwise), and with `padding_mask`
  /// its mask int64 [batch, padded] (1 = real sample).
  torch::Tensor pad_input(const torch::Tensor& audio, torch::Tensor* padding_mask = nullptr) const;

  /// audio: float [batch, channels, n] at sample_rate(), n >= 1, unpadded (pad_input is
  /// applied). codes [chunks, batch, K, frames], scales [chunks, batch, 1, 1] when normalizing,
  /// num_samples = the padded length (transformers' decode truncates to its padding_mask).
  tokenizers::AudioCodes encode(const torch::Tensor& audio,
                                const tokenizers::AudioEncodeOptions& options = {}) const override;
  /// With `intermediates`: "encoder" (the encoder output per chunk [chunks, batch, hidden,
  /// frames], after normalisation) and "quantizer" (the quantized latent per chunk).
  tokenizers::AudioCodes encode(const torch::Tensor& audio,
                                const tokenizers::AudioEncodeOptions& options,
                                Intermediates* intermediates) const;
  torch::Tensor decode(const tokenizers::AudioCodes& codes) const override;

  /// The causal model (use_causal_conv, no time_group_norm) streams.
  bool supports_streaming() const override;
  std::unique_ptr<tokenizers::AudioTokenizerStream> stream(
      const tokenizers::AudioEncodeOptions& options = {}, int64_t batch = 1) const override;

  const EncodecConfig& config() const;

 private:
  struct Impl;
  class Stream;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace alto::models
