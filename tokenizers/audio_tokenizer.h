#pragma once
// One interface for the neural audio codecs (EnCodec, Mimi, DAC): audio -> discrete codes ->
// audio, loaded from a Hugging Face checkpoint folder unchanged. from_pretrained picks the
// architecture from config.json's model_type. Models are immutable after loading and safe to
// share between threads; streaming state lives in an AudioTokenizerStream.

#include <torch/types.h>

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "alto/core/checkpoint.h"
#include "alto/core/registry.h"

namespace alto::tokenizers {

/// Codes in the layout transformers' `encode` returns as `audio_codes`.
struct AudioCodes {
  /// int64. EnCodec: [chunks, batch, K, T] (one chunk unless the model chunks its input);
  /// Mimi and DAC: [batch, K, T].
  torch::Tensor codes;
  /// EnCodec with `normalize`: float32 [chunks, batch, 1, 1], one scale per chunk (transformers'
  /// `audio_scales`); undefined otherwise.
  torch::Tensor scales;
  /// Samples of the (feature-extractor-padded) input these codes came from; decode truncates
  /// its output to it, as transformers' decode does with the padding_mask. 0 = no truncation.
  int64_t num_samples = 0;
};

/// Per-call choices; a value of 0 means "the model's own default".
struct AudioEncodeOptions {
  /// EnCodec target bandwidth in kbps (one of config.json's target_bandwidths); 0 = the smallest,
  /// as transformers does.
  double bandwidth = 0;
  /// Mimi / DAC: the number of codebooks to keep (a prefix of the codebooks); 0 = all.
  int64_t num_quantizers = 0;
  std::string to_string() const;
};

class AudioTokenizerStream;

class AudioTokenizer {
 public:
  virtual ~AudioTokenizer() = default;

  /// `dir` holds config.json and model.safetensors (a preprocessor_config.json is optional).
  /// The codec registered for config.json's model_type loads it; alto::Unsupported naming the
  /// model_type and the known ones for an architecture alto lacks.
  static std::shared_ptr<const AudioTokenizer> from_pretrained(const std::string& dir,
                                                               const LoadOptions& options = {});

  /// config.json's model_type: "encodec", "mimi", "dac".
  virtual std::string model_type() const = 0;
  virtual int64_t sample_rate() const = 0;
  virtual int64_t channels() const = 0;
  /// Code frames per second (EnCodec 24 kHz: 75, Mimi: 12.5, DAC 44.1 kHz: ~86.13).
  virtual double frame_rate() const = 0;
  /// Samples per code frame (the encoder's total stride).
  virtual int64_t hop_length() const = 0;
  /// Codebooks of the full model (K at the highest bandwidth / all quantizers).
  virtual int64_t num_codebooks() const = 0;
  virtual int64_t codebook_size() const = 0;
  /// Codebooks `encode` keeps with these options; throws alto::InvalidArgument naming the field.
  virtual int64_t num_codebooks(const AudioEncodeOptions& options) const = 0;

  /// audio: float [batch, channels, samples] at sample_rate(), as the model's feature extractor
  /// would hand it over (the model pads the last partial frame as transformers does).
  virtual AudioCodes encode(const torch::Tensor& audio,
                            const AudioEncodeOptions& options = {}) const = 0;
  /// codes in encode's layout (any K from 1 to num_codebooks() where the codec allows a prefix)
  /// -> float32 [batch, channels, samples], the length transformers' decode returns. Throws
  /// alto::InvalidArgument naming the expected shape or id range for codes that do not fit.
  virtual torch::Tensor decode(const AudioCodes& codes) const = 0;

  /// Whether codes carry a leading chunk axis ([chunks, batch, K, T], EnCodec's layout) rather
  /// than [batch, K, T].
  virtual bool chunked_codes() const { return false; }
  /// Whether frame-by-frame streaming is available (causal codecs: Mimi, causal EnCodec).
  virtual bool supports_streaming() const { return false; }
  /// A fresh stream over this model; throws alto::Unsupported when !supports_streaming().
  virtual std::unique_ptr<AudioTokenizerStream> stream(const AudioEncodeOptions& options = {},
                                                       int64_t batch = 1) const;

  const LoadOptions& load_options() const { return load_options_; }

 protected:
  explicit AudioTokenizer(const LoadOptions& options) : load_options_(options) {}
  LoadOptions load_options_;
};

/// A registered codec architecture, keyed by config.json's model_type. Each codec registers
/// itself in its own source file:
///   static const Registration<AudioTokenizerEntry> r("mimi", {"Mimi ...", Mimi::from_pretrained});
struct AudioTokenizerEntry {
  static const char* kind() { return "audio codec model_type"; }
  std::string description;
  std::function<std::shared_ptr<const AudioTokenizer>(const std::string& dir,
                                                      const LoadOptions& options)>
      from_pretrained;
};
/// Every registered codec, keyed by model_type.
const Registry<AudioTokenizerEntry>& audio_tokenizers();

/// Writes the codes file `alto encode` writes (.safetensors; "-" for standard output): tensors
/// `codes` (int64, encode's layout) and `scales` (float32, when defined); metadata model_type,
/// sample_rate, frame_rate, channels, num_codebooks and num_samples from `codec` and `codes`,
/// then `metadata` (who wrote it, from what).
void save_codes(const std::string& path, const AudioCodes& codes, const AudioTokenizer& codec,
                const std::map<std::string, std::string>& metadata = {});
/// Reads a codes file for `codec`: alto::Error naming the file when it holds no int64 `codes`,
/// codes written by another model_type or at another sample rate, `scales` that are not
/// floating point, or a num_samples that is not a count. The codes' shape and id range are for
/// the codec's decode to check.
AudioCodes load_codes(const std::string& path, const AudioTokenizer& codec);

/// Frame-by-frame encode and decode with explicit state. Feeding any chunking of a signal gives
/// the codes (and audio) of one offline call over the whole signal. A step runs on the calling
/// thread alone: its operators are too small to share between threads, so use more cores by
/// running several streams (or a batch of them) rather than one stream on several threads.
class AudioTokenizerStream {
 public:
  virtual ~AudioTokenizerStream() = default;
  /// Forgets all encoder and decoder state.
  virtual void reset() = 0;
  /// samples: float [batch, channels, n], any n >= 0. Returns the codes (int64 [batch, K, t]) of
  /// every frame completed by these samples; t may be 0.
  torch::Tensor encode_step(const torch::Tensor& samples);
  /// codes: int64 [batch, K, t], any t >= 0 -> the audio samples float32 [batch, channels, n]
  /// those frames complete.
  torch::Tensor decode_step(const torch::Tensor& codes);
  /// Ends the input: the codes (int64 [batch, K, t]) of the last, partial frame the offline
  /// encode pads to a whole frame, and of any frame the start-up padding still held back; then
  /// the encoder side must be reset() before reuse. Undefined when nothing was held.
  torch::Tensor encode_flush();
  /// Ends the codes: audio (float32 [batch, channels, n]) still held back (a stream shorter
  /// than the decoder's start-up padding). Undefined when nothing was held.
  torch::Tensor decode_flush();

 protected:
  // What each codec implements; the public calls above run them without autograd and on the
  // calling thread alone.
  virtual torch::Tensor do_encode_step(const torch::Tensor& samples) = 0;
  virtual torch::Tensor do_decode_step(const torch::Tensor& codes) = 0;
  virtual torch::Tensor do_encode_flush() { return {}; }
  virtual torch::Tensor do_decode_flush() { return {}; }
};

}  // namespace alto::tokenizers
