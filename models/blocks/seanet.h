#pragma once
// The SEANet convolutional encoder / decoder of EnCodec and Mimi and its streamable pieces, with
// transformers' module names (EncodecConv1d / MimiConv1d: `conv` + optional `norm`;
// EncodecLSTM: `lstm`; resnet blocks: `block` + `shortcut`; `layers` of the encoder and decoder)
// so that CheckpointBinder fills them from the checkpoints unchanged (weight norm is folded by
// the binder, so every convolution holds a plain `weight`).
//
// Offline `forward` pads exactly as transformers does: causal convolutions pad padding_total =
// (kernel - 1) * dilation + 1 - stride on the left, non-causal ones split it (the extra sample
// on the left), and every convolution adds on the right the "extra padding" that completes its
// last output frame; both with pad_mode (reflect inserts zeros first when the input is shorter
// than the pad, as transformers' _pad1d does). Transposed convolutions trim padding_total
// (causal: ceil(padding_total * trim_right_ratio) on the right, the rest on the left).
//
// Causal modules also stream with explicit state: `step` consumes any number of new samples and
// returns every output sample now final; `flush` ends the signal, applying the same right extra
// padding as the offline pass, and returns what remains. The concatenation of all step outputs
// and the flush output equals `forward` on the whole signal (to float rounding), for any
// chunking. Padding that reads the signal (reflect, replicate) delays the first output until
// enough input has arrived.

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <string>
#include <tuple>
#include <vector>

#include "alto/models/blocks/basic.h"

namespace alto::models::blocks {

/// torch.nn.functional.pad modes as transformers' configs spell them: "constant" (zeros; also
/// "zero"), "reflect", "replicate".
enum class PadMode { kConstant, kReflect, kReplicate };
PadMode parse_pad_mode(const std::string& name, const std::string& field);
std::string pad_mode_name(PadMode mode);

/// EnCodec's norm_type: weight norm is folded into the weight on load; time_group_norm adds
/// GroupNorm(1, out_channels) after each convolution (the 48 kHz model). Mimi: kNone.
enum class ConvNorm { kNone, kWeightNorm, kTimeGroupNorm };
/// "weight_norm", "time_group_norm" (transformers' EncodecConv1d accepts only these).
ConvNorm parse_conv_norm(const std::string& name, const std::string& field);
std::string conv_norm_name(ConvNorm norm);

/// torch.nn.GroupNorm(1, channels) over [batch, channels, time]: weight and bias [channels].
class GroupNormImpl : public torch::nn::Module {
 public:
  GroupNormImpl(int64_t channels, double eps, const torch::TensorOptions& options);
  torch::Tensor forward(const torch::Tensor& x) const;

  double eps;
  torch::Tensor weight, bias;
};
TORCH_MODULE(GroupNorm);

/// Streaming state of one causal StreamableConv1d.
struct Conv1dStreamState {
  /// Input not consumed yet, led by the left context the next output frame needs
  /// [batch, in_channels, n]; undefined before the first samples.
  torch::Tensor pending;
  /// Whether the left padding has been prepended (reflect / replicate wait for samples).
  bool started = false;
  /// Samples received so far (the offline extra padding depends on the total length).
  int64_t input_length = 0;
  void reset() { *this = Conv1dStreamState(); }
};

struct StreamableConv1dOptions {
  int64_t in_channels = 0, out_channels = 0, kernel_size = 1, stride = 1, dilation = 1;
  int64_t groups = 1;
  bool bias = true;
  bool causal = false;
  PadMode pad_mode = PadMode::kReflect;
  ConvNorm norm = ConvNorm::kNone;
  /// GroupNorm epsilon (torch's default).
  double norm_eps = 1e-5;

  void validate() const;
  std::string to_string() const;
  /// (kernel_size - 1) * dilation + 1
  int64_t effective_kernel_size() const { return (kernel_size - 1) * dilation + 1; }
  int64_t padding_total() const { return effective_kernel_size() - stride; }
  /// Right padding transformers adds so that an input of `length` ends on a whole frame.
  int64_t extra_padding(int64_t length) const;
};

/// EncodecConv1d / MimiConv1d: `conv` (torch.nn.Conv1d) and, for time_group_norm, `norm`.
class StreamableConv1dImpl : public torch::nn::Module {
 public:
  StreamableConv1dImpl(const StreamableConv1dOptions& options,
                       const torch::TensorOptions& tensor_options);
  /// x: [batch, in_channels, time] -> [batch, out_channels, ceil(time / stride)] (offline).
  /// `before`: a pointwise activation of the input that maps 0 to 0 (so it commutes with the
  /// padding), run on each input tile in cache (Conv1d's).
  torch::Tensor forward(const torch::Tensor& x, const Pointwise& before = {}) const;
  /// Causal only (alto::Unsupported otherwise): new samples [batch, in_channels, n], n >= 0 ->
  /// the output frames they complete [batch, out_channels, t], t >= 0. The state keeps the
  /// samples before `before`: pass the same one on every call.
  torch::Tensor step(const torch::Tensor& x, Conv1dStreamState& state,
                     const Pointwise& before = {}) const;
  /// Ends the signal: the frames the offline extra padding completes. The state is spent
  /// (reset it before reuse).
  torch::Tensor flush(Conv1dStreamState& state, const Pointwise& before = {}) const;

  const StreamableConv1dOptions& options() const { return options_; }

  Conv1d conv{nullptr};
  GroupNorm norm{nullptr};

 private:
  torch::Tensor pad(const torch::Tensor& x, int64_t left, int64_t right) const;
  torch::Tensor convolve(const torch::Tensor& padded, const Pointwise& before) const;
  StreamableConv1dOptions options_;
};
TORCH_MODULE(StreamableConv1d);

/// Streaming state of one causal StreamableConvTranspose1d.
struct ConvTranspose1dStreamState {
  /// Overlapping partial output (without bias) of the frames seen so far
  /// [batch, out_channels, kernel - stride]; undefined before the first frame.
  torch::Tensor tail;
  /// Output samples still to drop at the start (the left trim when trim_right_ratio < 1).
  int64_t to_trim_left = -1;
  void reset() { *this = ConvTranspose1dStreamState(); }
};

struct StreamableConvTranspose1dOptions {
  int64_t in_channels = 0, out_channels = 0, kernel_size = 1, stride = 1, groups = 1;
  bool bias = true;
  bool causal = false;
  ConvNorm norm = ConvNorm::kNone;
  double norm_eps = 1e-5;
  /// Causal: share of padding_total trimmed on the right (transformers' trim_right_ratio).
  double trim_right_ratio = 1.0;

  void validate() const;
  std::string to_string() const;
  int64_t padding_total() const { return kernel_size - stride; }
  /// Samples trimmed on the right / left of the full transposed-convolution output.
  int64_t padding_right() const;
  int64_t padding_left() const { return padding_total() - padding_right(); }
};

/// EncodecConvTranspose1d / MimiConvTranspose1d: `conv` (torch.nn.ConvTranspose1d) and, for
/// time_group_norm, `norm`.
class StreamableConvTranspose1dImpl : public torch::nn::Module {
 public:
  StreamableConvTranspose1dImpl(const StreamableConvTranspose1dOptions& options,
                                const torch::TensorOptions& tensor_options);
  /// x: [batch, in_channels, time] -> [batch, out_channels, time * stride] (offline);
  /// `before` as StreamableConv1d's.
  torch::Tensor forward(const torch::Tensor& x, const Pointwise& before = {}) const;
  /// Causal only: new frames [batch, in_channels, t] -> the output samples now final.
  torch::Tensor step(const torch::Tensor& x, ConvTranspose1dStreamState& state,
                     const Pointwise& before = {}) const;
  /// Ends the signal: the part of the tail the offline pass keeps (trim_right_ratio < 1).
  torch::Tensor flush(ConvTranspose1dStreamState& state) const;

  const StreamableConvTranspose1dOptions& options() const { return options_; }

  ConvTranspose1d conv{nullptr};
  GroupNorm norm{nullptr};

 private:
  StreamableConvTranspose1dOptions options_;
};
TORCH_MODULE(StreamableConvTranspose1d);

/// Hidden and cell state of a multi-layer LSTM, [num_layers, batch, dim] each; undefined =
/// zeros (the offline start).
struct LstmStreamState {
  torch::Tensor h, c;
  void reset() { *this = LstmStreamState(); }
};

/// EncodecLSTM: `lstm` (torch.nn.LSTM, weight_ih_l{k} / weight_hh_l{k} / bias_ih_l{k} /
/// bias_hh_l{k}) over [batch, dim, time] with a skip connection: y = lstm(x) + x.
class SeanetLstmImpl : public torch::nn::Module {
 public:
  SeanetLstmImpl(int64_t dim, int64_t num_layers, const torch::TensorOptions& options);
  torch::Tensor forward(const torch::Tensor& x) const;
  /// Causal by construction: any chunking of `x` through step equals forward.
  torch::Tensor step(const torch::Tensor& x, LstmStreamState& state) const;
  /// After loading: bfloat16 CPU weights widened to float32 once, for the CPU path that computes
  /// in float32 (libtorch's CPU bfloat16 LSTM runs scalar GEMMs); nothing for other weights.
  void prepare();

 private:
  torch::Tensor run(const torch::Tensor& x, LstmStreamState* state) const;
  /// float32 CPU: seq [time, batch, dim] contiguous, h0/c0 [layers, batch, dim], weights as
  /// flat_weights_ -> (output, h, c) as torch::lstm returns them.
  std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> run_cpu(
      const torch::Tensor& seq, const torch::Tensor& h0, const torch::Tensor& c0,
      const std::vector<torch::Tensor>& weights) const;
  int64_t dim_, num_layers_;
  std::vector<torch::Tensor> flat_weights_;  // torch.nn.LSTM's order, for at::lstm
  std::vector<torch::Tensor> widened_weights_;  // flat_weights_ in float32, from prepare()
};
TORCH_MODULE(SeanetLstm);

/// A parameterless torch.nn.ELU(alpha=1) slot in a ModuleList (keeps transformers' indices).
class EluImpl : public torch::nn::Module {
 public:
  torch::Tensor forward(const torch::Tensor& x) const;
};
TORCH_MODULE(Elu);

/// The options every SEANet convolution shares, with the configs' key names (EnCodec's and
/// Mimi's config.json spell these the same; Mimi has no LSTM and no norm).
struct SeanetOptions {
  int64_t audio_channels = 1;
  int64_t num_filters = 32;
  /// Channels of the latent (the encoder's output, the decoder's input).
  int64_t hidden_size = 128;
  /// Decoder order; the encoder downsamples by them in reverse.
  std::vector<int64_t> upsampling_ratios = {8, 5, 4, 2};
  int64_t num_residual_layers = 1;
  int64_t kernel_size = 7;
  int64_t last_kernel_size = 7;
  int64_t residual_kernel_size = 3;
  int64_t dilation_growth_rate = 2;
  int64_t compress = 2;
  /// 0: no LSTM (Mimi).
  int64_t num_lstm_layers = 2;
  bool use_causal_conv = true;
  PadMode pad_mode = PadMode::kReflect;
  ConvNorm norm = ConvNorm::kWeightNorm;
  bool use_conv_shortcut = true;
  double trim_right_ratio = 1.0;

  /// Throws alto::InvalidArgument naming the field.
  void validate() const;
  std::string to_string() const;
  /// Samples per latent frame: prod(upsampling_ratios).
  int64_t hop_length() const;
  /// Options of one convolution with these defaults.
  StreamableConv1dOptions conv(int64_t in, int64_t out, int64_t kernel, int64_t stride = 1,
                               int64_t dilation = 1) const;
};

/// Streaming state of a resnet block: its convolutions in order (block convs, then the
/// shortcut conv where present) and the input still awaiting the block path's output.
struct SeanetResnetBlockStreamState {
  std::vector<Conv1dStreamState> convs;
  Conv1dStreamState shortcut;
  torch::Tensor residual;
  void reset();
};

/// EncodecResnetBlock / MimiResnetBlock: `block` = [ELU, conv(dim -> dim / compress,
/// residual_kernel_size, dilation), ELU, conv(-> dim, 1)], `shortcut` a 1x1 conv when
/// use_conv_shortcut (else identity); y = shortcut(x) + block(x).
class SeanetResnetBlockImpl : public torch::nn::Module {
 public:
  SeanetResnetBlockImpl(const SeanetOptions& options, int64_t dim,
                        const std::vector<int64_t>& dilations,
                        const torch::TensorOptions& tensor_options);
  torch::Tensor forward(const torch::Tensor& x) const;
  SeanetResnetBlockStreamState init_state() const;
  torch::Tensor step(const torch::Tensor& x, SeanetResnetBlockStreamState& state) const;
  torch::Tensor flush(SeanetResnetBlockStreamState& state) const;

  torch::nn::ModuleList block;
  StreamableConv1d shortcut{nullptr};

 private:
  torch::Tensor add_residual(const torch::Tensor& x, const torch::Tensor& y,
                             SeanetResnetBlockStreamState& state) const;
  std::vector<StreamableConv1d> convs_;
};
TORCH_MODULE(SeanetResnetBlock);

/// Streaming state of a SEANet encoder or decoder: one entry per entry of `layers` (only the
/// field of that layer's kind is used).
struct SeanetLayerStreamState {
  Conv1dStreamState conv;
  ConvTranspose1dStreamState conv_transpose;
  LstmStreamState lstm;
  SeanetResnetBlockStreamState block;
  void reset();
};
struct SeanetStreamState {
  std::vector<SeanetLayerStreamState> layers;
  /// Resets every layer (a test checks none is forgotten).
  void reset();
};

/// The layers of a SEANet stack, of any kind, in transformers' order.
class SeanetStackImpl : public torch::nn::Module {
 public:
  /// x: [batch, channels, time] offline.
  torch::Tensor forward(const torch::Tensor& x) const;
  /// Causal stacks only (alto::Unsupported otherwise).
  SeanetStreamState init_state() const;
  torch::Tensor step(const torch::Tensor& x, SeanetStreamState& state) const;
  /// Ends the signal: flushes every layer in order, feeding each one's output to the next.
  torch::Tensor flush(SeanetStreamState& state) const;

  const SeanetOptions& options() const { return options_; }

  torch::nn::ModuleList layers;

 protected:
  explicit SeanetStackImpl(const SeanetOptions& options);
  void add(const std::shared_ptr<torch::nn::Module>& layer);
  SeanetOptions options_;

 private:
  enum class Kind { kConv, kConvTranspose, kLstm, kResnetBlock, kElu };
  struct Layer {
    Kind kind;
    /// An ELU folded into the convolution after it (a new whole activation per ELU costs page
    /// faults): set on both, the ELU passes its input on, the convolution applies the ELU to
    /// its input tile by tile.
    bool folded_elu = false;
    StreamableConv1d conv{nullptr};
    StreamableConvTranspose1d conv_transpose{nullptr};
    SeanetLstm lstm{nullptr};
    SeanetResnetBlock block{nullptr};
  };
  torch::Tensor step_layer(const Layer& layer, const torch::Tensor& x,
                           SeanetLayerStreamState& state) const;
  static Pointwise before(const Layer& layer);
  std::vector<Layer> stack_;
};

/// EncodecEncoder / MimiEncoder: audio [batch, audio_channels, samples] -> latent
/// [batch, hidden_size, ceil(samples / hop_length)].
class SeanetEncoderImpl : public SeanetStackImpl {
 public:
  SeanetEncoderImpl(const SeanetOptions& options, const torch::TensorOptions& tensor_options);
};
TORCH_MODULE(SeanetEncoder);

/// EncodecDecoder / MimiDecoder: latent [batch, hidden_size, frames] -> audio
/// [batch, audio_channels, frames * hop_length].
class SeanetDecoderImpl : public SeanetStackImpl {
 public:
  SeanetDecoderImpl(const SeanetOptions& options, const torch::TensorOptions& tensor_options);
};
TORCH_MODULE(SeanetDecoder);

}  // namespace alto::models::blocks
