#include "alto/models/mimi.h"

#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <sstream>
#include <vector>

#include "alto/core/error.h"
#include "alto/core/internal/json_config.h"
#include "alto/models/blocks/rvq.h"
#include "alto/models/blocks/seanet.h"

namespace alto::models {

namespace {

using blocks::Conv1dStreamState;
using blocks::ConvTranspose1dStreamState;
using blocks::SeanetStreamState;
using blocks::StreamingTransformer;
using blocks::TransformerKVCache;
using tokenizers::AudioCodes;
using tokenizers::AudioEncodeOptions;

blocks::SeanetOptions seanet_options(const MimiConfig& c) {
  blocks::SeanetOptions o;
  o.audio_channels = c.audio_channels;
  o.num_filters = c.num_filters;
  o.hidden_size = c.hidden_size;
  o.upsampling_ratios = c.upsampling_ratios;
  o.num_residual_layers = c.num_residual_layers;
  o.kernel_size = c.kernel_size;
  o.last_kernel_size = c.last_kernel_size;
  o.residual_kernel_size = c.residual_kernel_size;
  o.dilation_growth_rate = c.dilation_growth_rate;
  o.compress = c.compress;
  o.num_lstm_layers = 0;  // Mimi's SEANet has no LSTM
  o.use_causal_conv = c.use_causal_conv;
  o.pad_mode = blocks::parse_pad_mode(c.pad_mode, "MimiConfig.pad_mode");
  o.norm = blocks::ConvNorm::kNone;
  o.use_conv_shortcut = c.use_conv_shortcut;
  o.trim_right_ratio = c.trim_right_ratio;
  return o;
}

// MimiModel.downsample: 25 Hz -> 12.5 Hz, kernel 2 * stride, no bias, replicate padding
// whatever config.pad_mode says.
blocks::StreamableConv1dOptions downsample_options(const MimiConfig& c) {
  blocks::StreamableConv1dOptions o;
  o.in_channels = o.out_channels = c.hidden_size;
  o.stride = c.downsample_stride();
  o.kernel_size = 2 * o.stride;
  o.bias = false;
  o.causal = c.use_causal_conv;
  o.pad_mode = blocks::PadMode::kReplicate;
  return o;
}

// MimiModel.upsample: the depthwise (groups = upsample_groups) transposed conv back to 25 Hz.
blocks::StreamableConvTranspose1dOptions upsample_options(const MimiConfig& c) {
  blocks::StreamableConvTranspose1dOptions o;
  o.in_channels = o.out_channels = c.hidden_size;
  o.stride = c.downsample_stride();
  o.kernel_size = 2 * o.stride;
  o.groups = c.upsample_groups;
  o.bias = false;
  o.causal = c.use_causal_conv;
  o.trim_right_ratio = c.trim_right_ratio;
  return o;
}

blocks::SplitResidualVectorQuantizerOptions quantizer_options(const MimiConfig& c) {
  blocks::SplitResidualVectorQuantizerOptions o;
  o.quantizer.codebook = "mimi";
  o.quantizer.num_quantizers = c.num_quantizers;
  o.quantizer.codebook_size = c.codebook_size;
  o.quantizer.codebook_dim = c.codebook_dim;
  o.quantizer.input_dim = c.hidden_size;
  o.num_semantic_quantizers = c.num_semantic_quantizers;
  return o;
}

// MimiModel with the checkpoint's module names.
class MimiModelImpl : public torch::nn::Module {
 public:
  MimiModelImpl(const MimiConfig& c, const torch::TensorOptions& o)
      : encoder(register_module("encoder", blocks::SeanetEncoder(seanet_options(c), o))),
        encoder_transformer(register_module("encoder_transformer",
                                            StreamingTransformer(c.transformer_options(), o))),
        downsample(
            register_module("downsample", blocks::StreamableConv1d(downsample_options(c), o))),
        upsample(
            register_module("upsample", blocks::StreamableConvTranspose1d(upsample_options(c), o))),
        decoder_transformer(register_module("decoder_transformer",
                                            StreamingTransformer(c.transformer_options(), o))),
        decoder(register_module("decoder", blocks::SeanetDecoder(seanet_options(c), o))),
        quantizer(register_module("quantizer",
                                  blocks::SplitResidualVectorQuantizer(quantizer_options(c), o))) {}

  blocks::SeanetEncoder encoder;
  StreamingTransformer encoder_transformer;
  blocks::StreamableConv1d downsample;
  blocks::StreamableConvTranspose1d upsample;
  StreamingTransformer decoder_transformer;
  blocks::SeanetDecoder decoder;
  blocks::SplitResidualVectorQuantizer quantizer;
};
TORCH_MODULE(MimiModel);

// [batch, channels, time] <-> the transformers' [batch, time, channels]
torch::Tensor through(const StreamingTransformer& transformer, const torch::Tensor& x) {
  return transformer->forward(x.transpose(1, 2)).transpose(1, 2);
}
torch::Tensor through(const StreamingTransformer& transformer, const torch::Tensor& x,
                      TransformerKVCache& cache) {
  return transformer->step(x.transpose(1, 2), cache).transpose(1, 2);
}

std::string shape_of(const torch::Tensor& t) {
  std::ostringstream s;
  s << t.sizes();
  return s.str();
}

}  // namespace

const OptionSchema<MimiConfig>& MimiConfig::schema() {
  using C = MimiConfig;
  static const auto schema =
      OptionSchema<C>("MimiConfig")
          .positive("sampling_rate", &C::sampling_rate, "Sample rate in Hz")
          .field("frame_rate", &C::frame_rate, "Code frames per second")
          .positive("audio_channels", &C::audio_channels, "Channels")
          .positive("hidden_size", &C::hidden_size, "SEANet latent width")
          .positive("num_filters", &C::num_filters, "SEANet base channels")
          .positive("num_residual_layers", &C::num_residual_layers, "Residual units per stage")
          .positive("kernel_size", &C::kernel_size, "First convolution kernel")
          .positive("last_kernel_size", &C::last_kernel_size, "Last convolution kernel")
          .positive("residual_kernel_size", &C::residual_kernel_size, "Residual kernel")
          .positive("dilation_growth_rate", &C::dilation_growth_rate, "Dilation growth")
          .field("use_causal_conv", &C::use_causal_conv, "Causal convolutions")
          .field("pad_mode", &C::pad_mode, "Padding mode")
          .positive("compress", &C::compress, "Residual compression")
          .field("trim_right_ratio", &C::trim_right_ratio, "Transposed-conv trim")
          .positive("codebook_size", &C::codebook_size, "Codewords per codebook")
          .positive("codebook_dim", &C::codebook_dim, "Codeword width")
          .positive("num_quantizers", &C::num_quantizers, "Codebooks")
          .field("use_conv_shortcut", &C::use_conv_shortcut, "Convolutional shortcut")
          .positive("vector_quantization_hidden_dimension",
                    &C::vector_quantization_hidden_dimension, "Quantizer width")
          .field("num_semantic_quantizers", &C::num_semantic_quantizers, "Semantic codebooks")
          .positive("upsample_groups", &C::upsample_groups, "Upsample groups")
          .positive("num_hidden_layers", &C::num_hidden_layers, "Transformer layers")
          .positive("intermediate_size", &C::intermediate_size, "Transformer MLP width")
          .positive("num_attention_heads", &C::num_attention_heads, "Attention heads")
          .positive("num_key_value_heads", &C::num_key_value_heads, "Key/value heads")
          .field("head_dim", &C::head_dim, "Head width (0: hidden / heads)")
          .field("hidden_act", &C::hidden_act, "MLP activation")
          .positive("max_position_embeddings", &C::max_position_embeddings, "Positions")
          .field("norm_eps", &C::norm_eps, "LayerNorm epsilon")
          .field("rope_theta", &C::rope_theta, "RoPE base")
          .positive("sliding_window", &C::sliding_window, "Attention window")
          .field("attention_bias", &C::attention_bias, "Attention biases");
  return schema;
}

namespace {
MimiConfig read_mimi_config(const detail::JsonConfig& json) {
  MimiConfig c = json.read(MimiConfig::schema());
  json.read("upsampling_ratios", c.upsampling_ratios);
  return json.validated(c);
}
}  // namespace

MimiConfig MimiConfig::from_json(const std::string& path) {
  return read_mimi_config(detail::JsonConfig::load_model_config(path, "mimi", "a Mimi"));
}

MimiConfig MimiConfig::from_json(const std::string& path, const std::string& sub_config) {
  const detail::JsonConfig json =
      detail::JsonConfig::load_model_config(path, "", "").sub(sub_config.c_str());
  std::string model_type = "mimi";
  json.read("model_type", model_type);
  ALTO_CHECK_AS(Unsupported, model_type == "mimi", json.where("model_type"), ": '", model_type,
                "' is not a Mimi codec (expected \"mimi\")");
  return read_mimi_config(json);
}

void MimiConfig::validate() const {
  schema().check(*this);
  ALTO_CHECK(audio_channels <= 2, "MimiConfig.audio_channels must be 1 or 2, got ", audio_channels);
  ALTO_CHECK(!upsampling_ratios.empty(), "MimiConfig.upsampling_ratios must not be empty");
  for (int64_t ratio : upsampling_ratios)
    ALTO_CHECK(ratio > 0, "MimiConfig.upsampling_ratios must be positive, got ", ratio);
  ALTO_CHECK(head_dim >= 0, "MimiConfig.head_dim must be positive or null, got ", head_dim);
  ALTO_CHECK(num_semantic_quantizers >= 1 && num_semantic_quantizers < num_quantizers,
             "MimiConfig.num_semantic_quantizers must be in [1, num_quantizers = ", num_quantizers,
             "), got ", num_semantic_quantizers);
  ALTO_CHECK((codebook_size & (codebook_size - 1)) == 0,
             "MimiConfig.codebook_size must be a power of 2 (as transformers requires), got ",
             codebook_size);
  ALTO_CHECK(hidden_size % upsample_groups == 0, "MimiConfig.hidden_size (", hidden_size,
             ") must be a multiple of upsample_groups (", upsample_groups, ")");
  ALTO_CHECK_AS(Unsupported, use_causal_conv,
                "MimiConfig.use_causal_conv = false is not supported (every Mimi release is "
                "causal)");
  ALTO_CHECK_AS(Unsupported, pad_mode == "constant" || pad_mode == "replicate",
                "MimiConfig.pad_mode must be \"constant\" or \"replicate\", got \"", pad_mode,
                "\"");
  ALTO_CHECK_AS(Unsupported, trim_right_ratio == 1.0,
                "MimiConfig.trim_right_ratio other than 1.0 is not supported, got ",
                trim_right_ratio);
  ALTO_CHECK(frame_rate > 0, "MimiConfig.frame_rate must be positive, got ", frame_rate);
  const double ratio = encodec_frame_rate() / frame_rate;
  ALTO_CHECK_AS(Unsupported, ratio == 2.0,
                "MimiConfig.frame_rate must be half the SEANet frame rate sampling_rate / "
                "prod(upsampling_ratios) = ",
                encodec_frame_rate(), " (transformers' downsample has stride 2), got ", frame_rate);
  transformer_options().validate();
}

std::string MimiConfig::to_string() const {
  std::ostringstream s;
  s << "MimiConfig(sampling_rate=" << sampling_rate << ", frame_rate=" << frame_rate
    << ", hidden_size=" << hidden_size << ", num_filters=" << num_filters
    << ", num_hidden_layers=" << num_hidden_layers
    << ", num_attention_heads=" << num_attention_heads << ", sliding_window=" << sliding_window
    << ", num_quantizers=" << num_quantizers << " (" << num_semantic_quantizers
    << " semantic), codebook_size=" << codebook_size << ", codebook_dim=" << codebook_dim << ")";
  return s.str();
}

int64_t MimiConfig::seanet_hop_length() const {
  int64_t hop = 1;
  for (int64_t ratio : upsampling_ratios) hop *= ratio;
  return hop;
}

double MimiConfig::encodec_frame_rate() const {
  return static_cast<double>(sampling_rate) / static_cast<double>(seanet_hop_length());
}

int64_t MimiConfig::downsample_stride() const {
  return static_cast<int64_t>(std::lround(encodec_frame_rate() / frame_rate));
}

int64_t MimiConfig::hop_length() const { return seanet_hop_length() * downsample_stride(); }

blocks::StreamingTransformerOptions MimiConfig::transformer_options() const {
  blocks::StreamingTransformerOptions o;
  o.hidden_size = hidden_size;
  o.num_hidden_layers = num_hidden_layers;
  o.num_attention_heads = num_attention_heads;
  o.num_key_value_heads = num_key_value_heads;
  o.head_dim = head_dim > 0 ? head_dim : hidden_size / num_attention_heads;
  o.intermediate_size = intermediate_size;
  o.norm_eps = norm_eps;
  o.rope_theta = rope_theta;
  o.sliding_window = sliding_window;
  o.attention_bias = attention_bias;
  o.hidden_act = blocks::parse_activation(hidden_act, "MimiConfig.hidden_act");
  return o;
}

std::string MimiStreamOptions::to_string() const {
  return std::string("MimiStreamOptions(window_cache=") +
         (window_cache == blocks::WindowCache::kExact ? "exact" : "moshi_ring") + ")";
}

struct Mimi::Impl {
  Impl(const MimiConfig& c, const LoadOptions& o)
      : config(c), options(o), model(c, torch::TensorOptions().dtype(o.dtype).device(o.device)) {}

  MimiConfig config;
  LoadOptions options;
  MimiModel model;

  // The checks every encode path makes; `samples_min` is 1 offline, 0 for a stream step.
  void check_audio(const torch::Tensor& audio, const char* what, int64_t batch,
                   int64_t samples_min) const;
  int64_t codebooks(const AudioEncodeOptions& options) const;
  torch::Tensor encode(const torch::Tensor& audio, int64_t codebooks, Intermediates* out) const;
  torch::Tensor decode(const torch::Tensor& codes, Intermediates* out) const;
};

void Mimi::Impl::check_audio(const torch::Tensor& audio, const char* what, int64_t batch,
                             int64_t samples_min) const {
  const std::string expected_batch = batch > 0 ? std::to_string(batch) : "batch >= 1";
  ALTO_CHECK(audio.defined() && audio.dim() == 3 && audio.size(1) == config.audio_channels &&
                 (batch <= 0 ? audio.size(0) >= 1 : audio.size(0) == batch) &&
                 audio.size(2) >= samples_min,
             what, ": audio must be [", expected_batch, ", ", config.audio_channels,
             " channels, samples", samples_min > 0 ? " >= 1" : "", "] at ", config.sampling_rate,
             " Hz, got ", audio.defined() ? shape_of(audio) : "undefined");
  ALTO_CHECK(audio.is_floating_point(), what, ": audio must be floating point, got ",
             audio.scalar_type());
  ALTO_CHECK(audio.numel() == 0 || torch::isfinite(audio).all().item<bool>(), what,
             ": audio contains NaN or infinite samples");
}

int64_t Mimi::Impl::codebooks(const AudioEncodeOptions& o) const {
  ALTO_CHECK(o.bandwidth == 0,
             "AudioEncodeOptions.bandwidth applies to EnCodec only; Mimi "
             "takes num_quantizers, got bandwidth ",
             o.bandwidth);
  const int64_t k = o.num_quantizers == 0 ? config.num_quantizers : o.num_quantizers;
  ALTO_CHECK(k >= config.num_semantic_quantizers && k <= config.num_quantizers,
             "AudioEncodeOptions.num_quantizers must be 0 (all) or in [",
             config.num_semantic_quantizers, " (the semantic codebooks), ", config.num_quantizers,
             "], got ", o.num_quantizers);
  return k;
}

torch::Tensor Mimi::Impl::encode(const torch::Tensor& audio, int64_t k, Intermediates* out) const {
  const torch::Tensor x = audio.to(options.device, options.dtype);
  torch::Tensor h = model->encoder->forward(x);
  if (out) out->add("encoder", h);
  h = through(model->encoder_transformer, h);
  if (out) out->add("encoder_transformer", h);
  h = model->downsample->forward(h);
  if (out) out->add("downsample", h);
  torch::Tensor codes = model->quantizer->encode(h, k);
  if (out) out->add("quantizer", model->quantizer->decode(codes));
  return codes;
}

torch::Tensor Mimi::Impl::decode(const torch::Tensor& codes, Intermediates* out) const {
  torch::Tensor h = model->quantizer->decode(codes.to(options.device));
  if (out) out->add("quantizer", h);
  h = model->upsample->forward(h);
  if (out) out->add("upsample", h);
  h = through(model->decoder_transformer, h);
  if (out) out->add("decoder_transformer", h);
  return model->decoder->forward(h).to(torch::kFloat32);
}

std::shared_ptr<const Mimi> Mimi::from_pretrained(const std::string& dir,
                                                  const LoadOptions& options) {
  require_checkpoint_folder(dir, "Mimi::from_pretrained");
  options.require_compute_dtype_weights("Mimi");
  const MimiConfig config = MimiConfig::from_json(dir);  // its errors come first
  return std::make_shared<const Mimi>(config, SafetensorsCheckpoint(dir), options);
}

Mimi::Mimi(const MimiConfig& config, const SafetensorsCheckpoint& checkpoint,
           const LoadOptions& options)
    : AudioTokenizer(options) {
  CheckpointBinder binder(checkpoint, options, "Mimi (" + config.to_string() + ")");
  bind(config, binder, "", options);
  binder.finish();
}

Mimi::Mimi(const MimiConfig& config, CheckpointBinder& binder, const std::string& prefix,
           const LoadOptions& options)
    : AudioTokenizer(options) {
  bind(config, binder, prefix, options);
}

void Mimi::bind(const MimiConfig& config, CheckpointBinder& binder, const std::string& prefix,
                const LoadOptions& options) {
  options.validate();
  config.validate();
  auto impl = std::make_shared<Impl>(config, options);
  binder.bind(*impl->model, prefix);
  binder.then([model = impl->model]() mutable {
    torch::NoGradGuard no_grad;
    model->quantizer->prepare();
    model->encoder_transformer->prepare();
    model->decoder_transformer->prepare();
  });
  impl_ = std::move(impl);
}

Mimi::~Mimi() = default;

const MimiConfig& Mimi::config() const { return impl_->config; }
int64_t Mimi::sample_rate() const { return impl_->config.sampling_rate; }
int64_t Mimi::channels() const { return impl_->config.audio_channels; }
double Mimi::frame_rate() const { return impl_->config.frame_rate; }
int64_t Mimi::hop_length() const { return impl_->config.hop_length(); }
int64_t Mimi::num_codebooks() const { return impl_->config.num_quantizers; }
int64_t Mimi::codebook_size() const { return impl_->config.codebook_size; }
int64_t Mimi::num_codebooks(const AudioEncodeOptions& options) const {
  return impl_->codebooks(options);
}

AudioCodes Mimi::encode(const torch::Tensor& audio, const AudioEncodeOptions& options) const {
  return encode(audio, options, nullptr);
}

namespace {
// Past this many code frames (10 s) offline calls run as an exact stream in pieces of that
// size: the same codes and audio (a WindowCache::kExact stream equals offline for any chunking;
// tested), with the activations of one piece alive at a time instead of the whole input's
// (600 s of audio took 2.3 GB in one piece; an hour would have taken ~13 GB).
constexpr int64_t kOfflinePieceFrames = 125;
}  // namespace

AudioCodes Mimi::encode(const torch::Tensor& audio, const AudioEncodeOptions& options,
                        Intermediates* intermediates) const {
  impl_->check_audio(audio, "Mimi::encode", 0, 1);
  const int64_t k = impl_->codebooks(options);
  torch::NoGradGuard no_grad;
  const int64_t piece = kOfflinePieceFrames * hop_length();
  AudioCodes codes;
  if (intermediates || audio.size(2) <= piece) {
    codes.codes = impl_->encode(audio, k, intermediates);
  } else {
    const auto pieces = stream(options, audio.size(0));
    std::vector<torch::Tensor> parts;
    for (int64_t offset = 0; offset < audio.size(2); offset += piece)
      parts.push_back(
          pieces->encode_step(audio.narrow(2, offset, std::min(piece, audio.size(2) - offset))));
    parts.push_back(pieces->encode_flush());
    codes.codes = torch::cat(parts, 2);
  }
  codes.num_samples = audio.size(2);
  return codes;
}

torch::Tensor Mimi::decode(const AudioCodes& codes) const { return decode(codes, nullptr); }

torch::Tensor Mimi::decode(const AudioCodes& codes, Intermediates* intermediates) const {
  blocks::check_codes(codes.codes, impl_->config.num_quantizers, impl_->config.codebook_size,
                      "Mimi::decode: codes");
  ALTO_CHECK(codes.codes.size(2) > 0, "Mimi::decode: codes must hold at least one frame, got ",
             shape_of(codes.codes));
  ALTO_CHECK(codes.num_samples >= 0, "Mimi::decode: num_samples must be >= 0, got ",
             codes.num_samples);
  torch::NoGradGuard no_grad;
  torch::Tensor audio;
  if (intermediates || codes.codes.size(2) <= kOfflinePieceFrames) {
    audio = impl_->decode(codes.codes, intermediates);
  } else {
    const auto pieces = stream({}, codes.codes.size(0));
    std::vector<torch::Tensor> parts;
    for (int64_t offset = 0; offset < codes.codes.size(2); offset += kOfflinePieceFrames)
      parts.push_back(pieces->decode_step(codes.codes.narrow(
          2, offset, std::min(kOfflinePieceFrames, codes.codes.size(2) - offset))));
    audio = torch::cat(parts, 2);
  }
  // transformers' forward() cuts the decoded frames to the input length (its padding_mask).
  if (codes.num_samples > 0 && codes.num_samples < audio.size(2))
    audio = audio.narrow(2, 0, codes.num_samples);
  return audio;
}

namespace {

// Mimi's streaming state, every child by name: the encoder's SEANet convolutions, transformer
// KV cache and downsample conv; the decoder's upsample overlap, transformer KV cache and SEANet
// convolutions.
struct MimiEncoderState {
  SeanetStreamState seanet;
  TransformerKVCache transformer;
  Conv1dStreamState downsample;
  void reset() {
    seanet.reset();
    transformer.reset();
    downsample.reset();
  }
};
struct MimiDecoderState {
  ConvTranspose1dStreamState upsample;
  TransformerKVCache transformer;
  SeanetStreamState seanet;
  void reset() {
    upsample.reset();
    transformer.reset();
    seanet.reset();
  }
};

class MimiStream final : public tokenizers::AudioTokenizerStream {
 public:
  MimiStream(std::shared_ptr<const Mimi::Impl> impl, int64_t codebooks, int64_t batch,
             const MimiStreamOptions& options)
      : impl_(std::move(impl)), codebooks_(codebooks), batch_(batch) {
    const MimiModelImpl& m = *impl_->model;
    torch::NoGradGuard no_grad;
    encoder_.seanet = m.encoder->init_state();
    encoder_.transformer = m.encoder_transformer->init_cache(batch, options.window_cache);
    decoder_.transformer = m.decoder_transformer->init_cache(batch, options.window_cache);
    decoder_.seanet = m.decoder->init_state();
  }

  void reset() override {
    encoder_.reset();
    decoder_.reset();
  }

 protected:
  torch::Tensor do_encode_step(const torch::Tensor& samples) override {
    impl_->check_audio(samples, "MimiStream::encode_step", batch_, 0);
    const MimiModelImpl& m = *impl_->model;
    torch::Tensor h =
        m.encoder->step(samples.to(impl_->options.device, impl_->options.dtype), encoder_.seanet);
    if (h.size(2) > 0) h = through(m.encoder_transformer, h, encoder_.transformer);
    if (h.size(2) > 0) h = m.downsample->step(h, encoder_.downsample);
    if (h.size(2) == 0)
      return torch::empty({batch_, codebooks_, 0},
                          torch::TensorOptions().dtype(torch::kInt64).device(h.device()));
    return m.quantizer->encode(h, codebooks_);
  }

  // The offline encode pads the last partial frame: every convolution's flush applies the same
  // right padding, and what it completes runs through the rest of the encoder.
  torch::Tensor do_encode_flush() override {
    const MimiModelImpl& m = *impl_->model;
    std::vector<torch::Tensor> latent;
    torch::Tensor h = m.encoder->flush(encoder_.seanet);
    if (h.defined() && h.size(2) > 0) {
      h = through(m.encoder_transformer, h, encoder_.transformer);
      latent.push_back(m.downsample->step(h, encoder_.downsample));
    }
    torch::Tensor last = m.downsample->flush(encoder_.downsample);
    if (last.defined()) latent.push_back(last);
    const torch::Tensor frames = latent.empty() ? torch::Tensor() : torch::cat(latent, 2);
    if (!frames.defined() || frames.size(2) == 0)
      return torch::empty(
          {batch_, codebooks_, 0},
          torch::TensorOptions().dtype(torch::kInt64).device(impl_->options.device));
    return m.quantizer->encode(frames, codebooks_);
  }

  torch::Tensor do_decode_step(const torch::Tensor& codes) override {
    const MimiConfig& c = impl_->config;
    blocks::check_codes(codes, c.num_quantizers, c.codebook_size, "MimiStream::decode_step: codes");
    ALTO_CHECK(codes.size(0) == batch_, "MimiStream::decode_step: codes must be [", batch_,
               ", K, frames] (the stream's batch), got ", shape_of(codes));
    const MimiModelImpl& m = *impl_->model;
    if (codes.size(2) == 0)
      return torch::empty(
          {batch_, c.audio_channels, 0},
          torch::TensorOptions().dtype(torch::kFloat32).device(impl_->options.device));
    torch::Tensor h = m.quantizer->decode(codes.to(impl_->options.device));
    h = m.upsample->step(h, decoder_.upsample);
    h = through(m.decoder_transformer, h, decoder_.transformer);
    return m.decoder->step(h, decoder_.seanet).to(torch::kFloat32);
  }

 private:
  std::shared_ptr<const Mimi::Impl> impl_;
  int64_t codebooks_, batch_;
  MimiEncoderState encoder_;
  MimiDecoderState decoder_;
};

}  // namespace

std::unique_ptr<tokenizers::AudioTokenizerStream> Mimi::stream(const AudioEncodeOptions& options,
                                                               int64_t batch) const {
  return stream(options, batch, MimiStreamOptions{});
}

std::unique_ptr<tokenizers::AudioTokenizerStream> Mimi::stream(
    const AudioEncodeOptions& options, int64_t batch,
    const MimiStreamOptions& stream_options) const {
  ALTO_CHECK(batch > 0, "Mimi::stream: batch must be positive, got ", batch);
  return std::make_unique<MimiStream>(impl_, impl_->codebooks(options), batch, stream_options);
}

namespace {
const Registration<tokenizers::AudioTokenizerEntry> kRegistration(
    "mimi", {"Mimi, Moshi's and CSM's codec (transformers' MimiModel)",
             [](const std::string& dir, const LoadOptions& options) {
               return Mimi::from_pretrained(dir, options);
             }});
}  // namespace

}  // namespace alto::models
