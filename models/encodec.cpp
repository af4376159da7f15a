#include "alto/models/encodec.h"

#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <sstream>

#include "alto/core/error.h"
#include "alto/core/internal/json_config.h"
#include "alto/models/blocks/rvq.h"

namespace alto::models {

using tokenizers::AudioCodes;
using tokenizers::AudioEncodeOptions;

namespace {

c10::IntArrayRef shape_of(const torch::Tensor& t) {
  return t.defined() ? t.sizes() : c10::IntArrayRef{};
}

std::string list(const std::vector<double>& values) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < values.size(); ++i) s << (i ? ", " : "") << values[i];
  s << "]";
  return s.str();
}

}  // namespace

// ---------------------------------------------------------------------------------------------

const OptionSchema<EncodecConfig>& EncodecConfig::schema() {
  using C = EncodecConfig;
  static const auto schema =
      OptionSchema<C>("EncodecConfig")
          .field("sampling_rate", &C::sampling_rate, "Sample rate in Hz")
          .field("audio_channels", &C::audio_channels, "Channels")
          .field("normalize", &C::normalize, "Normalise each chunk by its scale")
          .field("chunk_length_s", &C::chunk_length_s, "Seconds per chunk (None: one chunk)")
          .field("overlap", &C::overlap, "Chunk overlap fraction")
          .field("hidden_size", &C::hidden_size, "SEANet latent width")
          .field("num_filters", &C::num_filters, "SEANet base channels")
          .field("num_residual_layers", &C::num_residual_layers, "Residual units per stage")
          .field("norm_type", &C::norm_type, "Convolution normalisation")
          .field("kernel_size", &C::kernel_size, "First convolution kernel")
          .field("last_kernel_size", &C::last_kernel_size, "Last convolution kernel")
          .field("residual_kernel_size", &C::residual_kernel_size, "Residual kernel")
          .field("dilation_growth_rate", &C::dilation_growth_rate, "Dilation growth")
          .field("use_causal_conv", &C::use_causal_conv, "Causal convolutions")
          .field("pad_mode", &C::pad_mode, "Padding mode")
          .field("compress", &C::compress, "Residual compression")
          .field("num_lstm_layers", &C::num_lstm_layers, "LSTM layers")
          .field("trim_right_ratio", &C::trim_right_ratio, "Transposed-conv trim")
          .field("codebook_size", &C::codebook_size, "Codewords per codebook")
          .field("codebook_dim", &C::codebook_dim, "Codeword width (None: hidden_size)")
          .field("use_conv_shortcut", &C::use_conv_shortcut, "Convolutional shortcut");
  return schema;
}

EncodecConfig EncodecConfig::from_json(const std::string& path) {
  const detail::JsonConfig json =
      detail::JsonConfig::load_model_config(path, "encodec", "an EnCodec");
  EncodecConfig c;
  if (const nlohmann::json* v = json.find("target_bandwidths")) {
    if (!v->is_array() || v->empty()) json.bad("target_bandwidths", "a non-empty list of numbers");
    c.target_bandwidths.clear();
    for (const auto& item : *v) {
      if (!item.is_number()) json.bad("target_bandwidths", "a non-empty list of numbers");
      c.target_bandwidths.push_back(item.get<double>());
    }
  }
  json.read("upsampling_ratios", c.upsampling_ratios);
  c = json.read(schema(), c);
  return json.validated(c);
}

void EncodecConfig::validate() const {
  ALTO_CHECK(!target_bandwidths.empty(), "EncodecConfig.target_bandwidths must not be empty");
  for (double bw : target_bandwidths)
    ALTO_CHECK(bw > 0, "EncodecConfig.target_bandwidths must be > 0, got ",
               list(target_bandwidths));
  ALTO_CHECK(sampling_rate > 0, "EncodecConfig.sampling_rate must be > 0, got ", sampling_rate);
  ALTO_CHECK(audio_channels == 1 || audio_channels == 2,
             "EncodecConfig.audio_channels must be 1 or 2, got ", audio_channels);
  ALTO_CHECK(!chunk_length_s || *chunk_length_s > 0,
             "EncodecConfig.chunk_length_s must be > 0, got ", chunk_length_s.value_or(0));
  ALTO_CHECK(!overlap || (*overlap >= 0 && *overlap < 1),
             "EncodecConfig.overlap must lie in [0, 1), got ", overlap.value_or(0));
  ALTO_CHECK(codebook_size > 1, "EncodecConfig.codebook_size must be > 1, got ", codebook_size);
  ALTO_CHECK(codebook_dim.value_or(hidden_size) == hidden_size,
             "EncodecConfig.codebook_dim must equal hidden_size (", hidden_size,
             ") as in transformers' EnCodec, got ", codebook_dim.value_or(0));
  ALTO_CHECK(num_quantizers() >= 1, "EncodecConfig: max(target_bandwidths) ",
             list(target_bandwidths), " gives no codebook at frame rate ", frame_rate());
  seanet().validate();
}

std::string EncodecConfig::to_string() const {
  std::ostringstream s;
  s << "EncodecConfig(sampling_rate=" << sampling_rate << ", audio_channels=" << audio_channels
    << ", normalize=" << (normalize ? "True" : "False")
    << ", chunk_length_s=" << (chunk_length_s ? std::to_string(*chunk_length_s) : "None")
    << ", overlap=" << (overlap ? std::to_string(*overlap) : "None")
    << ", target_bandwidths=" << list(target_bandwidths) << ", codebook_size=" << codebook_size
    << ", num_quantizers=" << num_quantizers() << ", " << seanet().to_string() << ")";
  return s.str();
}

blocks::SeanetOptions EncodecConfig::seanet() const {
  blocks::SeanetOptions o;
  o.audio_channels = audio_channels;
  o.num_filters = num_filters;
  o.hidden_size = hidden_size;
  o.upsampling_ratios = upsampling_ratios;
  o.num_residual_layers = num_residual_layers;
  o.kernel_size = kernel_size;
  o.last_kernel_size = last_kernel_size;
  o.residual_kernel_size = residual_kernel_size;
  o.dilation_growth_rate = dilation_growth_rate;
  o.compress = compress;
  o.num_lstm_layers = num_lstm_layers;
  o.use_causal_conv = use_causal_conv;
  o.pad_mode = blocks::parse_pad_mode(pad_mode, "EncodecConfig.pad_mode");
  o.norm = blocks::parse_conv_norm(norm_type, "EncodecConfig.norm_type");
  o.use_conv_shortcut = use_conv_shortcut;
  o.trim_right_ratio = trim_right_ratio;
  return o;
}

int64_t EncodecConfig::hop_length() const {
  int64_t hop = 1;
  for (int64_t r : upsampling_ratios) hop *= r;
  return hop;
}

int64_t EncodecConfig::frame_rate() const {
  return static_cast<int64_t>(
      std::ceil(static_cast<double>(sampling_rate) / static_cast<double>(hop_length())));
}

int64_t EncodecConfig::num_quantizers() const {
  // transformers: int(1000 * target_bandwidths[-1] // (frame_rate * 10)).
  return static_cast<int64_t>(
      std::floor(1000 * target_bandwidths.back() / static_cast<double>(frame_rate() * 10)));
}

int64_t EncodecConfig::num_quantizers_for_bandwidth(double bandwidth) const {
  const double per_quantizer = std::log2(static_cast<double>(codebook_size)) * frame_rate();
  return std::max<int64_t>(1, static_cast<int64_t>(std::floor(bandwidth * 1000 / per_quantizer)));
}

std::optional<int64_t> EncodecConfig::chunk_length() const {
  if (!chunk_length_s) return std::nullopt;
  return static_cast<int64_t>(*chunk_length_s * static_cast<double>(sampling_rate));
}

std::optional<int64_t> EncodecConfig::chunk_stride() const {
  if (!chunk_length_s || !overlap) return std::nullopt;
  return std::max<int64_t>(
      1, static_cast<int64_t>((1.0 - *overlap) * static_cast<double>(*chunk_length())));
}

// ---------------------------------------------------------------------------------------------

namespace {

/// transformers' EncodecModel: `encoder`, `decoder`, `quantizer`.
class EncodecModuleImpl : public torch::nn::Module {
 public:
  EncodecModuleImpl(const EncodecConfig& c, const torch::TensorOptions& options) {
    encoder = register_module("encoder", blocks::SeanetEncoder(c.seanet(), options));
    decoder = register_module("decoder", blocks::SeanetDecoder(c.seanet(), options));
    blocks::ResidualVectorQuantizerOptions q;
    q.codebook = "encodec";
    q.num_quantizers = c.num_quantizers();
    q.codebook_size = c.codebook_size;
    q.codebook_dim = c.codebook_dim.value_or(c.hidden_size);
    q.input_dim = c.hidden_size;
    quantizer = register_module("quantizer", blocks::ResidualVectorQuantizer(q, options));
  }
  blocks::SeanetEncoder encoder{nullptr};
  blocks::SeanetDecoder decoder{nullptr};
  blocks::ResidualVectorQuantizer quantizer{nullptr};
};
TORCH_MODULE(EncodecModule);

}  // namespace

struct Encodec::Impl {
  Impl(const EncodecConfig& c, const LoadOptions& o)
      : config(c), options(o), model(c, torch::TensorOptions().dtype(o.dtype).device(o.device)) {}

  EncodecConfig config;
  LoadOptions options;
  EncodecModule model;

  void check_audio(const torch::Tensor& audio, const char* what) const;
  void check_codes(const torch::Tensor& codes, int64_t max_chunks, const char* what) const;
  /// One chunk [batch, channels, n] -> its codes [batch, K, frames] and scale [batch, 1, 1].
  torch::Tensor encode_chunk(torch::Tensor chunk, const torch::Tensor& mask, int64_t codebooks,
                             torch::Tensor* scale, torch::Tensor* latent,
                             torch::Tensor* quantized) const;
};

void Encodec::Impl::check_audio(const torch::Tensor& audio, const char* what) const {
  ALTO_CHECK(audio.defined() && audio.dim() == 3 && audio.size(1) == config.audio_channels, what,
             ": expected audio [batch, ", config.audio_channels, ", samples], got ",
             shape_of(audio));
  ALTO_CHECK(audio.is_floating_point(), what, ": audio must be floating point, got ",
             audio.scalar_type());
  ALTO_CHECK(audio.numel() == 0 || torch::isfinite(audio).all().item<bool>(), what,
             ": audio contains NaN or infinite samples");
}

void Encodec::Impl::check_codes(const torch::Tensor& codes, int64_t max_chunks,
                                const char* what) const {
  const int64_t k = config.num_quantizers();
  ALTO_CHECK(
      codes.defined() && codes.dim() == 4 && codes.scalar_type() == torch::kInt64 &&
          codes.size(0) >= 1 && codes.size(0) <= max_chunks && codes.size(1) >= 1 &&
          codes.size(2) >= 1 && codes.size(2) <= k && codes.size(3) >= 1,
      what, ": expected int64 codes [chunks, batch, K, frames] with ",
      max_chunks == 1 ? "chunks = 1" : "chunks >= 1", ", 1 <= K <= ", k, " and frames >= 1, got ",
      codes.defined() ? c10::toString(codes.scalar_type()) : "undefined", " ", shape_of(codes));
  if (codes.numel() == 0) return;
  const int64_t low = codes.min().item<int64_t>(), high = codes.max().item<int64_t>();
  ALTO_CHECK(low >= 0 && high < config.codebook_size, what, ": code ids must lie in [0, ",
             config.codebook_size, "), got values in [", low, ", ", high, "]");
}

torch::Tensor Encodec::Impl::encode_chunk(torch::Tensor chunk, const torch::Tensor& mask,
                                          int64_t codebooks, torch::Tensor* scale,
                                          torch::Tensor* latent, torch::Tensor* quantized) const {
  if (config.normalize) {
    // EncodecModel._encode_frame: RMS of the mono mix of the masked chunk, plus 1e-8.
    chunk = chunk * mask.unsqueeze(1);
    torch::Tensor mono = torch::sum(chunk, 1, /*keepdim=*/true) / chunk.size(1);
    *scale = mono.pow(2).mean(-1, /*keepdim=*/true).sqrt() + 1e-8;
    chunk = chunk / *scale;
  }
  torch::Tensor embeddings = model->encoder->forward(chunk);
  if (latent) *latent = embeddings;
  return model->quantizer->encode(embeddings, codebooks, quantized);
}

std::shared_ptr<const Encodec> Encodec::from_pretrained(const std::string& dir,
                                                        const LoadOptions& options) {
  require_checkpoint_folder(dir, "Encodec::from_pretrained");
  options.require_compute_dtype_weights("EnCodec");
  const EncodecConfig config = EncodecConfig::from_json(dir);
  return std::make_shared<const Encodec>(config, SafetensorsCheckpoint(dir), options);
}

Encodec::Encodec(const EncodecConfig& config, const SafetensorsCheckpoint& checkpoint,
                 const LoadOptions& options)
    : AudioTokenizer(options) {
  config.validate();
  CheckpointBinder binder(checkpoint, options, "EnCodec (" + config.to_string() + ")");
  auto impl = std::make_shared<Impl>(config, options);
  binder.bind(*impl->model);
  binder.finish();
  impl->model->quantizer->prepare();
  for (const auto& module : impl->model->modules())
    if (auto lstm = std::dynamic_pointer_cast<blocks::SeanetLstmImpl>(module)) lstm->prepare();
  impl_ = std::move(impl);
}

const EncodecConfig& Encodec::config() const { return impl_->config; }
int64_t Encodec::sample_rate() const { return impl_->config.sampling_rate; }
int64_t Encodec::channels() const { return impl_->config.audio_channels; }
double Encodec::frame_rate() const { return static_cast<double>(impl_->config.frame_rate()); }
int64_t Encodec::hop_length() const { return impl_->config.hop_length(); }
int64_t Encodec::num_codebooks() const { return impl_->config.num_quantizers(); }
int64_t Encodec::codebook_size() const { return impl_->config.codebook_size; }

int64_t Encodec::num_codebooks(const AudioEncodeOptions& options) const {
  const EncodecConfig& c = impl_->config;
  if (options.bandwidth == 0 && options.num_quantizers != 0) {
    ALTO_CHECK(options.num_quantizers >= 1 && options.num_quantizers <= c.num_quantizers(),
               "AudioEncodeOptions.num_quantizers must lie in [1, ", c.num_quantizers(),
               "] for this EnCodec model, got ", options.num_quantizers);
    return options.num_quantizers;
  }
  ALTO_CHECK(options.num_quantizers == 0,
             "AudioEncodeOptions: give EnCodec either bandwidth or num_quantizers, not both");
  const double bandwidth = options.bandwidth == 0 ? c.target_bandwidths.front() : options.bandwidth;
  bool known = false;
  for (double bw : c.target_bandwidths) known = known || bw == bandwidth;
  ALTO_CHECK(known, "AudioEncodeOptions.bandwidth ", bandwidth,
             " kbps is not one of this model's target_bandwidths ", list(c.target_bandwidths));
  return c.num_quantizers_for_bandwidth(bandwidth);
}

torch::Tensor Encodec::pad_input(const torch::Tensor& audio, torch::Tensor* padding_mask) const {
  impl_->check_audio(audio, "Encodec::pad_input");
  const int64_t n = audio.size(2);
  int64_t padded = n;
  // EncodecFeatureExtractor: with chunking, pad to (ceil(n / stride) - 1) * stride + chunk.
  if (auto stride = impl_->config.chunk_stride()) {
    const int64_t steps = (n + *stride - 1) / *stride;
    padded = (steps - 1) * *stride + *impl_->config.chunk_length();
  }
  if (padding_mask) {
    *padding_mask = torch::zeros({audio.size(0), padded}, audio.options().dtype(torch::kInt64));
    padding_mask->narrow(1, 0, n).fill_(1);
  }
  return padded == n ? audio : torch::constant_pad_nd(audio, {0, padded - n}, 0);
}

AudioCodes Encodec::encode(const torch::Tensor& audio, const AudioEncodeOptions& options) const {
  return encode(audio, options, nullptr);
}

AudioCodes Encodec::encode(const torch::Tensor& audio, const AudioEncodeOptions& options,
                           Intermediates* intermediates) const {
  const EncodecConfig& c = impl_->config;
  impl_->check_audio(audio, "Encodec::encode");
  ALTO_CHECK(audio.size(2) >= 1, "Encodec::encode: audio has no samples");
  const int64_t codebooks = num_codebooks(options);
  torch::NoGradGuard no_grad;
  torch::Tensor mask;
  const torch::Tensor input =
      pad_input(audio.to(impl_->options.device, impl_->options.dtype), &mask);
  const int64_t length = input.size(2);
  const int64_t chunk = c.chunk_length().value_or(length);
  const int64_t stride = c.chunk_stride().value_or(length);
  std::vector<torch::Tensor> codes, scales, latents, quantized;
  // EncodecModel.encode: chunks start every `stride` samples while they end within the input.
  for (int64_t offset = 0; offset < length - (chunk - stride); offset += stride) {
    torch::Tensor scale, latent, q;
    codes.push_back(impl_->encode_chunk(
        input.narrow(2, offset, chunk), mask.narrow(1, offset, chunk).to(input.dtype()), codebooks,
        &scale, intermediates ? &latent : nullptr, intermediates ? &q : nullptr));
    if (scale.defined()) scales.push_back(scale);
    if (intermediates) {
      latents.push_back(latent);
      quantized.push_back(q);
    }
  }
  AudioCodes out;
  out.codes = torch::stack(codes);
  if (!scales.empty()) out.scales = torch::stack(scales).to(torch::kFloat32);
  out.num_samples = length;
  if (intermediates) {
    intermediates->add("encoder", torch::stack(latents));
    intermediates->add("quantizer", torch::stack(quantized));
  }
  return out;
}

torch::Tensor Encodec::decode(const AudioCodes& codes) const {
  const EncodecConfig& c = impl_->config;
  const auto stride = c.chunk_stride();
  impl_->check_codes(codes.codes, stride ? std::numeric_limits<int64_t>::max() : 1,
                     "Encodec::decode");
  const int64_t chunks = codes.codes.size(0), batch = codes.codes.size(1);
  if (c.normalize) {
    ALTO_CHECK(codes.scales.defined() && codes.scales.numel() == chunks * batch &&
                   codes.scales.dim() == 4 && codes.scales.size(0) == chunks &&
                   codes.scales.size(1) == batch,
               "Encodec::decode: this model normalizes; expected scales [", chunks, ", ", batch,
               ", 1, 1], got ", shape_of(codes.scales));
    ALTO_CHECK(torch::isfinite(codes.scales).all().item<bool>(),
               "Encodec::decode: scales contain NaN or infinite values");
  } else {
    ALTO_CHECK(!codes.scales.defined(),
               "Encodec::decode: this model does not normalize, but scales were given");
  }
  ALTO_CHECK(codes.num_samples >= 0, "Encodec::decode: num_samples must be >= 0, got ",
             codes.num_samples);
  torch::NoGradGuard no_grad;
  const auto& model = impl_->model;
  std::vector<torch::Tensor> frames;
  for (int64_t i = 0; i < chunks; ++i) {
    torch::Tensor emb = model->quantizer->decode(codes.codes[i].to(impl_->options.device));
    torch::Tensor out = model->decoder->forward(emb);
    if (c.normalize) out = out * codes.scales[i].to(out.device(), out.dtype()).view({-1, 1, 1});
    // The overlap-add runs in float32 whatever the weights: bfloat16's linspace rounds the
    // triangular weights at the chunk ends to 0, which leaves gaps (transformers then raises).
    frames.push_back(out.to(torch::kFloat32));
  }
  torch::Tensor audio;
  if (!stride) {
    audio = frames[0];
  } else {
    // EncodecModel._linear_overlap_add: triangular weights peaking mid-chunk, normalised by
    // their sum, in transformers' order of accumulation.
    const int64_t frame_length = frames[0].size(-1);
    const int64_t total = *stride * (chunks - 1) + frames.back().size(-1);
    const auto opts = frames[0].options();
    torch::Tensor t = torch::linspace(0, 1, frame_length + 2, opts).narrow(0, 1, frame_length);
    torch::Tensor weight = 0.5 - (t - 0.5).abs();
    torch::Tensor sum_weight = torch::zeros({total}, opts);
    audio = torch::zeros({batch, c.audio_channels, total}, opts);
    int64_t offset = 0;
    for (const auto& frame : frames) {
      const int64_t n = frame.size(-1);
      audio.narrow(-1, offset, n).add_(weight.narrow(0, 0, n) * frame);
      sum_weight.narrow(0, offset, n).add_(weight.narrow(0, 0, n));
      offset += *stride;
    }
    ALTO_CHECK(sum_weight.min().item<double>() > 0,
               "Encodec::decode: chunks leave gaps in the overlap-add");
    audio = audio / sum_weight;
  }
  if (codes.num_samples > 0 && codes.num_samples < audio.size(-1))
    audio = audio.narrow(-1, 0, codes.num_samples);
  return audio.to(torch::kFloat32);
}

// ---------------------------------------------------------------------------------------------

bool Encodec::supports_streaming() const {
  return impl_->config.use_causal_conv && impl_->config.norm_type != "time_group_norm";
}

/// The causal model frame by frame: the SEANet streaming state of encoder and decoder (conv
/// left context, transposed-conv overlap, LSTM state); quantization is per frame already.
class Encodec::Stream : public tokenizers::AudioTokenizerStream {
 public:
  Stream(std::shared_ptr<const Impl> impl, int64_t codebooks, int64_t batch)
      : impl_(std::move(impl)), codebooks_(codebooks), batch_(batch) {
    reset();
  }

  void reset() override {
    encoder_ = impl_->model->encoder->init_state();
    decoder_ = impl_->model->decoder->init_state();
  }

 protected:
  torch::Tensor do_encode_step(const torch::Tensor& samples) override {
    impl_->check_audio(samples, "Encodec stream encode_step");
    ALTO_CHECK(samples.size(0) == batch_, "Encodec stream encode_step: expected batch ", batch_,
               ", got ", samples.size(0));
    torch::Tensor x = samples.to(impl_->options.device, impl_->options.dtype);
    return quantize(impl_->model->encoder->step(x, encoder_));
  }

  torch::Tensor do_encode_flush() override {
    torch::Tensor latent = impl_->model->encoder->flush(encoder_);
    encoder_ = impl_->model->encoder->init_state();
    return latent.defined() ? quantize(latent) : empty_codes();
  }

  torch::Tensor do_decode_step(const torch::Tensor& codes) override {
    const int64_t k = impl_->config.num_quantizers();
    ALTO_CHECK(codes.defined() && codes.dim() == 3 && codes.size(0) == batch_,
               "Encodec stream decode_step: expected int64 codes [", batch_,
               ", K, frames] with 1 <= K <= ", k, ", got ", shape_of(codes));
    torch::Tensor x = codes.to(impl_->options.device);
    if (codes.size(2) == 0)
      return torch::zeros({batch_, impl_->config.audio_channels, 0}, torch::kFloat32);
    torch::Tensor latent = impl_->model->quantizer->decode(x);
    return impl_->model->decoder->step(latent, decoder_).to(torch::kFloat32);
  }

  torch::Tensor do_decode_flush() override {
    torch::Tensor audio = impl_->model->decoder->flush(decoder_);
    decoder_ = impl_->model->decoder->init_state();
    return audio.defined()
               ? audio.to(torch::kFloat32)
               : torch::zeros({batch_, impl_->config.audio_channels, 0}, torch::kFloat32);
  }

 private:
  torch::Tensor quantize(const torch::Tensor& latent) const {
    if (latent.size(-1) == 0) return empty_codes();
    return impl_->model->quantizer->encode(latent, codebooks_);
  }
  torch::Tensor empty_codes() const { return torch::zeros({batch_, codebooks_, 0}, torch::kInt64); }

  std::shared_ptr<const Impl> impl_;
  int64_t codebooks_, batch_;
  blocks::SeanetStreamState encoder_, decoder_;
};

std::unique_ptr<tokenizers::AudioTokenizerStream> Encodec::stream(const AudioEncodeOptions& options,
                                                                  int64_t batch) const {
  ALTO_CHECK_AS(Unsupported, supports_streaming(),
                "Encodec::stream: only the causal EnCodec model streams (use_causal_conv true, no "
                "time_group_norm); this one has use_causal_conv=",
                impl_->config.use_causal_conv ? "true" : "false", ", norm_type ",
                impl_->config.norm_type);
  ALTO_CHECK(batch >= 1, "Encodec::stream: batch must be >= 1, got ", batch);
  return std::make_unique<Stream>(impl_, num_codebooks(options), batch);
}

namespace {
const Registration<tokenizers::AudioTokenizerEntry> kRegistration(
    "encodec", {"EnCodec (transformers' EncodecModel)",
                [](const std::string& dir, const LoadOptions& options) {
                  return Encodec::from_pretrained(dir, options);
                }});
}  // namespace

}  // namespace alto::models
