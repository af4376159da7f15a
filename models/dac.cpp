#include "alto/models/dac.h"

#include <torch/torch.h>

#include <filesystem>
#include <sstream>

#include "alto/core/activation_memory.h"
#include "alto/core/error.h"
#include "alto/core/internal/json_config.h"
#include "alto/models/blocks/basic.h"
#include "alto/models/blocks/rvq.h"
#include "alto/models/internal/conv.h"
#include "alto/models/internal/few_rows.h"

namespace alto::models {

namespace {

using blocks::Conv1d;
using blocks::Conv1dOptions;
using blocks::ConvTranspose1d;
using blocks::ConvTranspose1dOptions;

std::string join(const std::vector<int64_t>& values) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < values.size(); ++i) s << (i ? ", " : "") << values[i];
  s << "]";
  return s.str();
}

int64_t product(const std::vector<int64_t>& values) {
  int64_t p = 1;
  for (int64_t v : values) p *= v;
  return p;
}

std::string shape_of(const torch::Tensor& t) {
  std::ostringstream s;
  s << t.sizes();
  return s.str();
}

// A weight-normed convolution in DAC; the binder folds weight_g / weight_v (or the
// parametrizations spelling) into `weight`, so at run time it is a plain convolution.
Conv1d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding,
            int64_t dilation, const torch::TensorOptions& o) {
  return Conv1d(Conv1dOptions{in, out, kernel, stride, padding, dilation}, o);
}

// Snake1d: x + 1 / (alpha + 1e-9) * sin(alpha x)^2, per channel. The reciprocal is computed
// once after loading, with the reference's own float operations, so the result is bit-equal.
class Snake1dImpl : public torch::nn::Module {
 public:
  Snake1dImpl(int64_t channels, const torch::TensorOptions& o) {
    alpha = blocks::uninitialised_parameter(*this, "alpha", {1, channels, 1}, o);
  }
  void prepare() { inverse = (alpha + 1e-9).reciprocal(); }

  // Four passes over one temporary; x is left as it is.
  torch::Tensor forward(const torch::Tensor& x) const {
    torch::Tensor y = x * alpha;
    y.sin_().square_().mul_(inverse);
    return y.add_(x);
  }
  /// forward as a blocks::Pointwise, to run tile by tile before a convolution.
  blocks::Pointwise pointwise() const {
    return [this](const torch::Tensor& x) { return forward(x); };
  }
  // The same into x, for activations no one reads afterwards.
  void apply_(torch::Tensor& x) const {
    torch::Tensor y = x * alpha;
    y.sin_().square_().mul_(inverse);
    x.add_(y);
  }

  torch::Tensor alpha;
  torch::Tensor inverse;  // 1 / (alpha + 1e-9), not in the checkpoint
};
TORCH_MODULE(Snake1d);

// An int64_t, not a literal 0, which would also convert to conv1d's padding string.
constexpr int64_t kNoPadding = 0;

// DacResidualUnit: x + conv2(snake2(conv1(snake1(x)))), conv1 of kernel 7 with "same" padding
// 3 * dilation, so the output keeps the input's length and the reference's crop never applies.
class ResidualUnitImpl : public torch::nn::Module {
 public:
  ResidualUnitImpl(int64_t dim, int64_t dilation_, const torch::TensorOptions& o)
      : dilation(dilation_),
        snake1(register_module("snake1", Snake1d(dim, o))),
        conv1(register_module("conv1", conv(dim, dim, 7, 1, 3 * dilation_, dilation_, o))),
        snake2(register_module("snake2", Snake1d(dim, o))),
        conv2(register_module("conv2", conv(dim, dim, 1, 1, 0, 1, o))) {}

  // On CPU the whole unit runs tile by tile over time (see layers/conv.h): a tile's
  // activations stay in cache through both Snakes and both convolutions. Snake(0) = 0, so
  // the zeros read beyond the signal are what conv1's own padding would give.
  torch::Tensor forward(const torch::Tensor& x) const {
    if (!x.device().is_cpu()) {
      torch::Tensor h = conv1->forward(snake1->forward(x));
      snake2->apply_(h);
      return conv2->forward(h).add_(x);
    }
    // bfloat16 computes in float32 where libtorch's bfloat16 convolution is a scalar loop (no
    // AVX-512 BF16): the weights widened once per call, each tile's window in cache.
    const bool widen = x.scalar_type() == torch::kBFloat16 && kernels::widen_bfloat16_products();
    const torch::Tensor w1 = kernels::widened_if(widen, conv1->weight);
    const torch::Tensor b1 = kernels::widened_if(widen, conv1->bias);
    const torch::Tensor w2 = kernels::widened_if(widen, conv2->weight);
    const torch::Tensor b2 = kernels::widened_if(widen, conv2->bias);
    const int64_t length = x.size(2), reach = 3 * dilation;
    torch::Tensor y = empty_activation(x.sizes(), x.options());
    kernels::for_each_time_tile(length, kernels::time_tile(x.size(1)), [&](int64_t t0, int64_t t1) {
      const torch::Tensor window =
          kernels::widened_if(widen, kernels::zero_padded_window(x, t0 - reach, t1 + reach));
      torch::Tensor h =
          torch::conv1d(snake1->forward(window), w1, b1, /*stride=*/1, kNoPadding, dilation);
      snake2->apply_(h);
      kernels::copy_to_time_slice(
          y, t0,
          torch::conv1d(h, w2, b2).add_(kernels::widened_if(widen, x.narrow(2, t0, t1 - t0))));
    });
    return y;
  }

  int64_t dilation;
  Snake1d snake1;
  Conv1d conv1;
  Snake1d snake2;
  Conv1d conv2;
};
TORCH_MODULE(ResidualUnit);

// Kernel 2s, stride s, padding ceil(s/2), as DacEncoderBlock / DacDecoderBlock.
int64_t stride_padding(int64_t stride) { return (stride + 1) / 2; }

class EncoderBlockImpl : public torch::nn::Module {
 public:
  EncoderBlockImpl(int64_t dim, int64_t stride, const torch::TensorOptions& o)
      : res_unit1(register_module("res_unit1", ResidualUnit(dim / 2, 1, o))),
        res_unit2(register_module("res_unit2", ResidualUnit(dim / 2, 3, o))),
        res_unit3(register_module("res_unit3", ResidualUnit(dim / 2, 9, o))),
        snake1(register_module("snake1", Snake1d(dim / 2, o))),
        conv1(register_module(
            "conv1", conv(dim / 2, dim, 2 * stride, stride, stride_padding(stride), 1, o))) {}

  torch::Tensor forward(const torch::Tensor& x) const {
    const torch::Tensor h = res_unit3->forward(res_unit2->forward(res_unit1->forward(x)));
    return conv1->forward(h, snake1->pointwise());
  }

  ResidualUnit res_unit1, res_unit2, res_unit3;
  Snake1d snake1;
  Conv1d conv1;
};
TORCH_MODULE(EncoderBlock);

class DecoderBlockImpl : public torch::nn::Module {
 public:
  DecoderBlockImpl(int64_t in, int64_t out, int64_t stride, const torch::TensorOptions& o)
      : snake1(register_module("snake1", Snake1d(in, o))),
        conv_t1(register_module(
            "conv_t1",
            ConvTranspose1d(
                ConvTranspose1dOptions{in, out, 2 * stride, stride, stride_padding(stride)}, o))),
        res_unit1(register_module("res_unit1", ResidualUnit(out, 1, o))),
        res_unit2(register_module("res_unit2", ResidualUnit(out, 3, o))),
        res_unit3(register_module("res_unit3", ResidualUnit(out, 9, o))) {}

  torch::Tensor forward(const torch::Tensor& x) const {
    torch::Tensor h = conv_t1->forward(x, snake1->pointwise());
    return res_unit3->forward(res_unit2->forward(res_unit1->forward(h)));
  }

  Snake1d snake1;
  ConvTranspose1d conv_t1;
  ResidualUnit res_unit1, res_unit2, res_unit3;
};
TORCH_MODULE(DecoderBlock);

// DacEncoder: channels double at every block as the time axis is strided down.
class EncoderImpl : public torch::nn::Module {
 public:
  EncoderImpl(const DacConfig& c, const torch::TensorOptions& o)
      : conv1(register_module("conv1", conv(1, c.encoder_hidden_size, 7, 1, 3, 1, o))),
        block(register_module("block", torch::nn::ModuleList())) {
    int64_t dim = c.encoder_hidden_size;
    for (int64_t stride : c.downsampling_ratios) {
      dim *= 2;
      block->push_back(EncoderBlock(dim, stride, o));
    }
    snake1 = register_module("snake1", Snake1d(dim, o));
    conv2 = register_module("conv2", conv(dim, c.hidden_size, 3, 1, 1, 1, o));
  }

  torch::Tensor forward(const torch::Tensor& x) const {
    torch::Tensor h = conv1->forward(x);
    for (const auto& b : *block) h = b->as<EncoderBlockImpl>()->forward(h);
    return conv2->forward(h, snake1->pointwise());
  }

  Conv1d conv1;
  torch::nn::ModuleList block;
  Snake1d snake1{nullptr};
  Conv1d conv2{nullptr};
};
TORCH_MODULE(Encoder);

// DacDecoder: channels halve at every block as transposed convolutions stride the time axis up.
class DecoderImpl : public torch::nn::Module {
 public:
  DecoderImpl(const DacConfig& c, const torch::TensorOptions& o)
      : conv1(register_module("conv1", conv(c.hidden_size, c.decoder_hidden_size, 7, 1, 3, 1, o))),
        block(register_module("block", torch::nn::ModuleList())) {
    int64_t dim = c.decoder_hidden_size;
    for (int64_t stride : c.upsampling_ratios) {
      block->push_back(DecoderBlock(dim, dim / 2, stride, o));
      dim /= 2;
    }
    snake1 = register_module("snake1", Snake1d(dim, o));
    conv2 = register_module("conv2", conv(dim, 1, 7, 1, 3, 1, o));
  }

  torch::Tensor forward(const torch::Tensor& x) const {
    torch::Tensor h = conv1->forward(x);
    for (const auto& b : *block) h = b->as<DecoderBlockImpl>()->forward(h);
    return conv2->forward(h, snake1->pointwise()).tanh_();
  }

  Conv1d conv1;
  torch::nn::ModuleList block;
  Snake1d snake1{nullptr};
  Conv1d conv2{nullptr};
};
TORCH_MODULE(Decoder);

// DacResidualVectorQuantizer: per stage a 1x1 in_proj to codebook_dim, the cosine lookup, a
// 1x1 out_proj back to hidden_size.
blocks::ResidualVectorQuantizerOptions quantizer_options(const DacConfig& c) {
  blocks::ResidualVectorQuantizerOptions q;
  q.codebook = "dac";
  q.num_quantizers = c.n_codebooks;
  q.codebook_size = c.codebook_size;
  q.codebook_dim = c.codebook_dim;
  q.input_dim = c.hidden_size;
  return q;
}

class DacModelImpl : public torch::nn::Module {
 public:
  DacModelImpl(const DacConfig& c, const torch::TensorOptions& o)
      : encoder(register_module("encoder", Encoder(c, o))),
        decoder(register_module("decoder", Decoder(c, o))),
        quantizer(register_module("quantizer",
                                  blocks::ResidualVectorQuantizer(quantizer_options(c), o))) {}

  Encoder encoder;
  Decoder decoder;
  blocks::ResidualVectorQuantizer quantizer;
};
TORCH_MODULE(DacModel);

}  // namespace

// ---------------------------------------------------------------------------------------------
// Configs

const OptionSchema<DacConfig>& DacConfig::schema() {
  using C = DacConfig;
  static const auto schema =
      OptionSchema<C>("DacConfig")
          .positive("encoder_hidden_size", &C::encoder_hidden_size, "Encoder base channels")
          .positive("hidden_size", &C::hidden_size, "Latent width")
          .positive("decoder_hidden_size", &C::decoder_hidden_size, "Decoder base channels")
          .positive("n_codebooks", &C::n_codebooks, "Codebooks")
          .positive("codebook_size", &C::codebook_size, "Codewords per codebook")
          .positive("codebook_dim", &C::codebook_dim, "Codeword width")
          .positive("sampling_rate", &C::sampling_rate, "Sample rate in Hz");
  return schema;
}

DacConfig DacConfig::from_json(const std::string& path) {
  const detail::JsonConfig json = detail::JsonConfig::load_model_config(path, "dac", "a DAC");
  DacConfig c;
  json.read("downsampling_ratios", c.downsampling_ratios);
  // Absent keys derive from the strides, as transformers' DacConfig does.
  c.upsampling_ratios.assign(c.downsampling_ratios.rbegin(), c.downsampling_ratios.rend());
  json.read("upsampling_ratios", c.upsampling_ratios);
  c = json.read(schema(), c);
  if (!json.has("hidden_size"))
    c.hidden_size = c.encoder_hidden_size << c.downsampling_ratios.size();
  return json.validated(c);
}

void DacConfig::validate() const {
  schema().check(*this);
  ALTO_CHECK(!downsampling_ratios.empty() && downsampling_ratios.size() < 16,
             "DacConfig.downsampling_ratios must list 1 to 15 strides, got ",
             join(downsampling_ratios));
  ALTO_CHECK(!upsampling_ratios.empty() && upsampling_ratios.size() < 16,
             "DacConfig.upsampling_ratios must list 1 to 15 strides, got ",
             join(upsampling_ratios));
  for (int64_t s : downsampling_ratios)
    ALTO_CHECK(s > 0, "DacConfig.downsampling_ratios must be positive, got ",
               join(downsampling_ratios));
  for (int64_t s : upsampling_ratios)
    ALTO_CHECK(s > 0, "DacConfig.upsampling_ratios must be positive, got ",
               join(upsampling_ratios));
  ALTO_CHECK(decoder_hidden_size % (int64_t{1} << upsampling_ratios.size()) == 0,
             "DacConfig.decoder_hidden_size (", decoder_hidden_size,
             ") must be divisible by 2^len(upsampling_ratios) = ",
             int64_t{1} << upsampling_ratios.size(), ": every decoder block halves the channels");
  // DacModel's own check: codes are packed into bits_per_codebook bits.
  ALTO_CHECK((codebook_size & (codebook_size - 1)) == 0,
             "DacConfig.codebook_size must be a power of 2, got ", codebook_size);
}

std::string DacConfig::to_string() const {
  std::ostringstream s;
  s << "DacConfig(sampling_rate=" << sampling_rate
    << ", encoder_hidden_size=" << encoder_hidden_size
    << ", downsampling_ratios=" << join(downsampling_ratios) << ", hidden_size=" << hidden_size
    << ", decoder_hidden_size=" << decoder_hidden_size
    << ", upsampling_ratios=" << join(upsampling_ratios) << ", n_codebooks=" << n_codebooks
    << ", codebook_size=" << codebook_size << ", codebook_dim=" << codebook_dim << ")";
  return s.str();
}

int64_t DacConfig::hop_length() const { return product(downsampling_ratios); }

DacFeatureExtractorOptions DacFeatureExtractorOptions::from_json(const std::string& path) {
  const detail::JsonConfig json = detail::JsonConfig::load(path);
  std::string kind = "DacFeatureExtractor";
  json.read("feature_extractor_type", kind);
  ALTO_CHECK_AS(Unsupported, kind == "DacFeatureExtractor", path, ": feature_extractor_type '",
                kind, "' is not DacFeatureExtractor");
  DacFeatureExtractorOptions o;
  json.read("hop_length", o.hop_length);
  json.read("padding_value", o.padding_value);
  json.read("padding_side", o.padding_side);
  json.read("feature_size", o.feature_size);
  try {
    o.validate();
  } catch (const Unsupported& e) {
    throw Unsupported(path + ": " + e.what());
  } catch (const Error& e) {
    throw InvalidArgument(path + ": " + e.what());
  }
  return o;
}

void DacFeatureExtractorOptions::validate() const {
  ALTO_CHECK(hop_length > 0, "DacFeatureExtractorOptions.hop_length must be positive, got ",
             hop_length);
  ALTO_CHECK(padding_side == "right" || padding_side == "left",
             "DacFeatureExtractorOptions.padding_side must be \"right\" or \"left\", got \"",
             padding_side, "\"");
  // transformers' DacFeatureExtractor refuses stereo too.
  ALTO_CHECK_AS(Unsupported, feature_size == 1,
                "DacFeatureExtractorOptions.feature_size must be 1 (mono), got ", feature_size);
}

std::string DacFeatureExtractorOptions::to_string() const {
  std::ostringstream s;
  s << "DacFeatureExtractorOptions(hop_length=" << hop_length << ", padding_value=" << padding_value
    << ", padding_side=" << padding_side << ", feature_size=" << feature_size << ")";
  return s.str();
}

// ---------------------------------------------------------------------------------------------
// The model

struct Dac::Impl {
  Impl(const DacConfig& c, const LoadOptions& o, const DacFeatureExtractorOptions& f)
      : config(c),
        options(o),
        features(f),
        model(c, torch::TensorOptions().dtype(o.dtype).device(o.device)) {}

  // Constants derived from the loaded weights.
  void prepare() {
    for (auto& module : model->modules(/*include_self=*/false))
      if (auto* snake = module->as<Snake1dImpl>()) snake->prepare();
    model->quantizer->prepare();
  }

  DacConfig config;
  LoadOptions options;
  DacFeatureExtractorOptions features;
  DacModel model;
};

std::shared_ptr<const Dac> Dac::from_pretrained(const std::string& dir,
                                                const LoadOptions& options) {
  namespace fs = std::filesystem;
  require_checkpoint_folder(dir, "Dac::from_pretrained");
  options.require_compute_dtype_weights("DAC");
  const DacConfig config = DacConfig::from_json(dir);  // its errors come first
  const fs::path preprocessor = fs::path(dir) / "preprocessor_config.json";
  DacFeatureExtractorOptions features;
  if (fs::exists(preprocessor))
    features = DacFeatureExtractorOptions::from_json(preprocessor.string());
  else
    features.hop_length = config.hop_length();
  return std::make_shared<const Dac>(config, SafetensorsCheckpoint(dir), options, features);
}

Dac::Dac(const DacConfig& config, const SafetensorsCheckpoint& checkpoint,
         const LoadOptions& options, const DacFeatureExtractorOptions& features)
    : AudioTokenizer(options) {
  config.validate();
  features.validate();
  CheckpointBinder binder(checkpoint, options, "DAC (" + config.to_string() + ")");
  auto impl = std::make_shared<Impl>(config, options, features);
  binder.bind(*impl->model);
  binder.finish();
  torch::NoGradGuard no_grad;
  impl->prepare();
  impl_ = std::move(impl);
}

const DacConfig& Dac::config() const { return impl_->config; }
const DacFeatureExtractorOptions& Dac::feature_extractor() const { return impl_->features; }
int64_t Dac::sample_rate() const { return impl_->config.sampling_rate; }
double Dac::frame_rate() const {
  return static_cast<double>(impl_->config.sampling_rate) / impl_->config.hop_length();
}
int64_t Dac::hop_length() const { return impl_->config.hop_length(); }
int64_t Dac::num_codebooks() const { return impl_->config.n_codebooks; }
int64_t Dac::codebook_size() const { return impl_->config.codebook_size; }

int64_t Dac::num_codebooks(const tokenizers::AudioEncodeOptions& options) const {
  const int64_t n = impl_->config.n_codebooks;
  ALTO_CHECK(options.bandwidth == 0,
             "AudioEncodeOptions.bandwidth is an EnCodec option; DAC chooses its bitrate by "
             "num_quantizers (got bandwidth ",
             options.bandwidth, ")");
  ALTO_CHECK(options.num_quantizers >= 0 && options.num_quantizers <= n,
             "AudioEncodeOptions.num_quantizers must be in [0, ", n, "] (0 = all ", n,
             " codebooks), got ", options.num_quantizers);
  return options.num_quantizers == 0 ? n : options.num_quantizers;
}

torch::Tensor Dac::pad_input(const torch::Tensor& audio) const {
  ALTO_CHECK(audio.dim() == 3 && audio.size(1) == 1 && audio.size(2) > 0,
             "Dac: audio must be [batch, 1, samples] with samples > 0 (DAC is mono), got ",
             shape_of(audio));
  ALTO_CHECK(audio.is_floating_point(), "Dac: audio must be floating point, got ",
             audio.scalar_type());
  ALTO_CHECK(torch::isfinite(audio).all().item<bool>(),
             "Dac: audio contains NaN or infinite samples");
  const DacFeatureExtractorOptions& f = impl_->features;
  const int64_t n = audio.size(2);
  const int64_t missing = (f.hop_length - n % f.hop_length) % f.hop_length;
  torch::Tensor x = audio.to(impl_->options.device, impl_->options.dtype);
  if (missing == 0) return x;
  const bool left = f.padding_side == "left";
  return torch::constant_pad_nd(x, {left ? missing : 0, left ? 0 : missing}, f.padding_value);
}

torch::Tensor Dac::encode_latents(const torch::Tensor& input_values) const {
  ALTO_CHECK(
      input_values.dim() == 3 && input_values.size(1) == 1 && input_values.size(2) >= hop_length(),
      "Dac::encode_latents: input_values must be [batch, 1, samples] with at least one "
      "hop (",
      hop_length(), " samples), got ", shape_of(input_values));
  ALTO_CHECK(input_values.is_floating_point(),
             "Dac::encode_latents: input_values must be floating point, got ",
             input_values.scalar_type());
  torch::NoGradGuard no_grad;
  return impl_->model->encoder->forward(
      input_values.to(impl_->options.device, impl_->options.dtype).contiguous());
}

DacQuantizerOutput Dac::quantize(const torch::Tensor& latents, int64_t num_quantizers) const {
  const DacConfig& c = impl_->config;
  ALTO_CHECK(latents.dim() == 3 && latents.size(1) == c.hidden_size && latents.size(2) > 0,
             "Dac::quantize: latents must be [batch, ", c.hidden_size, ", frames], got ",
             shape_of(latents));
  tokenizers::AudioEncodeOptions choice;
  choice.num_quantizers = num_quantizers;
  const int64_t k = num_codebooks(choice);
  torch::NoGradGuard no_grad;
  DacQuantizerOutput out;
  out.audio_codes =
      impl_->model->quantizer->encode(latents.to(impl_->options.device, impl_->options.dtype), k,
                                      &out.quantized_representation, &out.projected_latents);
  return out;
}

torch::Tensor Dac::dequantize(const torch::Tensor& codes) const {
  const DacConfig& c = impl_->config;
  blocks::check_codes(codes, c.n_codebooks, c.codebook_size, "Dac: codes");
  ALTO_CHECK(codes.size(2) > 0, "Dac: codes must hold at least one frame, got ", shape_of(codes));
  torch::NoGradGuard no_grad;
  return impl_->model->quantizer->decode(codes.to(impl_->options.device));
}

torch::Tensor Dac::decode_latents(const torch::Tensor& quantized_representation) const {
  const DacConfig& c = impl_->config;
  ALTO_CHECK(quantized_representation.dim() == 3 &&
                 quantized_representation.size(1) == c.hidden_size &&
                 quantized_representation.size(2) > 0,
             "Dac::decode_latents: quantized_representation must be [batch, ", c.hidden_size,
             ", frames], got ", shape_of(quantized_representation));
  torch::NoGradGuard no_grad;
  return impl_->model->decoder->forward(
      quantized_representation.to(impl_->options.device, impl_->options.dtype).contiguous());
}

tokenizers::AudioCodes Dac::encode(const torch::Tensor& audio,
                                   const tokenizers::AudioEncodeOptions& options) const {
  const int64_t k = num_codebooks(options);
  tokenizers::AudioCodes codes;
  codes.codes = quantize(encode_latents(pad_input(audio)), k).audio_codes;
  codes.num_samples = audio.size(-1);
  return codes;
}

torch::Tensor Dac::decode(const tokenizers::AudioCodes& codes) const {
  ALTO_CHECK(!codes.scales.defined(), "Dac::decode: DAC codes carry no scales (got scales ",
             shape_of(codes.scales), ")");
  ALTO_CHECK(codes.num_samples >= 0, "Dac::decode: AudioCodes.num_samples must be >= 0, got ",
             codes.num_samples);
  torch::Tensor audio = decode_latents(dequantize(codes.codes)).to(torch::kFloat32);
  // The encoder padded the input to whole frames: no longer input fits these codes.
  const int64_t padded = codes.codes.size(-1) * hop_length();
  ALTO_CHECK(codes.num_samples <= padded, "Dac::decode: AudioCodes.num_samples ", codes.num_samples,
             " is more than the ", codes.codes.size(-1), " frames encode (", padded, " samples)");
  if (codes.num_samples > 0 && codes.num_samples < audio.size(2))
    audio = audio.narrow(2, 0, codes.num_samples).contiguous();
  else if (codes.num_samples > audio.size(2))
    audio = torch::constant_pad_nd(audio, {0, codes.num_samples - audio.size(2)});
  return audio;
}

namespace {
const Registration<tokenizers::AudioTokenizerEntry> kRegistration(
    "dac", {"Descript Audio Codec (transformers' DacModel)",
            [](const std::string& dir, const LoadOptions& options) {
              return Dac::from_pretrained(dir, options);
            }});
}  // namespace

}  // namespace alto::models
