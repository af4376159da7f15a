"""Pieces shared by the pure-torch codec references: checkpoint loading with weight-norm folding,
and the causal / asymmetric padding of transformers' Encodec/Mimi convolutions."""
import json
import math
import os

import torch
import torch.nn.functional as F

from . import safetensors_io


def read_config(folder):
    with open(os.path.join(folder, "config.json")) as f:
        return json.load(f)


def fold_weight_norm(state):
    """Weight-normed convolutions stored as `weight_g`/`weight_v` (torch < 2.1) or
    `parametrizations.weight.original0/1` (torch >= 2.1) become plain `weight`, as the
    weight-norm hook computes it at run time: g * v / ||v|| with the norm over all dims but 0."""
    out = {}
    for name, t in state.items():
        for g_suffix, v_suffix in ((".weight_g", ".weight_v"),
                                   (".parametrizations.weight.original0",
                                    ".parametrizations.weight.original1")):
            if name.endswith(g_suffix):
                prefix = name[:-len(g_suffix)]
                out[prefix + ".weight"] = torch._weight_norm(state[prefix + v_suffix], t, 0)
                break
            if name.endswith(v_suffix):
                break
        else:
            out[name] = t
    return out


def load_weights(module, folder):
    """Loads model.safetensors into `module` strictly (every name must match)."""
    state = fold_weight_norm(safetensors_io.load(os.path.join(folder, "model.safetensors")))
    module.load_state_dict(state, strict=True)
    module.eval()
    return module


def extra_padding(length, kernel, stride, padding_total):
    """Right padding that makes the last window complete (transformers'
    _get_extra_padding_for_conv1d)."""
    n_frames = (length - kernel + padding_total) / stride + 1
    ideal = (math.ceil(n_frames) - 1) * stride + kernel - padding_total
    return ideal - length


def pad1d(x, left, right, mode):
    """F.pad that allows reflect padding of inputs shorter than the padding (zeros first)."""
    if mode != "reflect":
        return F.pad(x, (left, right), mode if mode != "zero" else "constant")
    length = x.shape[-1]
    extra = max(left, right) - length + 1 if length <= max(left, right) else 0
    if extra:
        x = F.pad(x, (0, extra))
    padded = F.pad(x, (left, right), "reflect")
    return padded[..., :padded.shape[-1] - extra]


class SConv1d(torch.nn.Module):
    """transformers' EncodecConv1d / MimiConv1d: a Conv1d named `conv` (weight norm folded at
    load), causal left padding or asymmetric padding, plus the extra right padding for the last
    partial window; EnCodec's time_group_norm variant adds a GroupNorm named `norm`.

    Streaming (moshi's StreamingConv1d): with `self.state` set to {} the layer keeps the last
    kernel - stride input samples between calls instead of padding; inputs must be whole strides."""

    def __init__(self, in_ch, out_ch, kernel, stride=1, dilation=1, groups=1, bias=True,
                 causal=True, pad_mode="reflect", group_norm=False):
        super().__init__()
        self.conv = torch.nn.Conv1d(in_ch, out_ch, kernel, stride, dilation=dilation,
                                    groups=groups, bias=bias)
        if group_norm:
            self.norm = torch.nn.GroupNorm(1, out_ch)
        self.group_norm = group_norm
        self.causal, self.pad_mode = causal, pad_mode
        self.kernel = (kernel - 1) * dilation + 1
        self.stride = stride
        self.padding_total = self.kernel - stride
        self.state = None

    def forward(self, x):
        if self.state is not None:
            if "previous" not in self.state:
                init = x[..., :1] if self.pad_mode == "replicate" else torch.zeros_like(x[..., :1])
                self.state["previous"] = init.expand(-1, -1, self.padding_total)
            x = torch.cat([self.state["previous"], x], -1)
            self.state["previous"] = x[..., x.shape[-1] - self.padding_total:]
        else:
            extra = extra_padding(x.shape[-1], self.kernel, self.stride, self.padding_total)
            if self.causal:
                x = pad1d(x, self.padding_total, extra, self.pad_mode)
            else:
                right = self.padding_total // 2
                x = pad1d(x, self.padding_total - right, right + extra, self.pad_mode)
        y = self.conv(x)
        return self.norm(y) if self.group_norm else y


class SConvTranspose1d(torch.nn.Module):
    """transformers' EncodecConvTranspose1d / MimiConvTranspose1d: ConvTranspose1d named `conv`,
    trimming kernel - stride samples (causal: all on the right for trim_right_ratio 1).

    Streaming (moshi's StreamingConvTranspose1d): the trimmed tail is kept (without bias) and
    added to the head of the next call's output."""

    def __init__(self, in_ch, out_ch, kernel, stride, groups=1, bias=True, causal=True,
                 trim_right_ratio=1.0, group_norm=False):
        super().__init__()
        self.conv = torch.nn.ConvTranspose1d(in_ch, out_ch, kernel, stride, groups=groups,
                                             bias=bias)
        if group_norm:
            self.norm = torch.nn.GroupNorm(1, out_ch)
        self.group_norm = group_norm
        total = kernel - stride
        self.right = math.ceil(total * trim_right_ratio) if causal else total // 2
        self.left = total - self.right
        self.total = total
        self.state = None

    def forward(self, x):
        y = self.conv(x)
        if self.group_norm:
            y = self.norm(y)
        if self.state is not None:
            partial = self.state.get("partial")
            if partial is not None:
                y = torch.cat([y[..., :self.total] + partial, y[..., self.total:]], -1)
            tail = y[..., y.shape[-1] - self.total:]
            if self.conv.bias is not None:
                tail = tail - self.conv.bias[:, None]
            self.state["partial"] = tail
            return y[..., :y.shape[-1] - self.total]
        return y[..., self.left:y.shape[-1] - self.right]


class SEANetResnetBlock(torch.nn.Module):
    """Encodec/Mimi residual block: ELU, conv(k, dilation), ELU, conv(1), plus a 1x1 shortcut
    conv or identity. Parameter names: block.1, block.3, shortcut."""

    def __init__(self, dim, kernel, dilation, compress, conv_shortcut, conv_kwargs):
        super().__init__()
        hidden = dim // compress
        self.block = torch.nn.ModuleList([
            torch.nn.ELU(), SConv1d(dim, hidden, kernel, dilation=dilation, **conv_kwargs),
            torch.nn.ELU(), SConv1d(hidden, dim, 1, **conv_kwargs)])
        self.shortcut = SConv1d(dim, dim, 1, **conv_kwargs) if conv_shortcut else torch.nn.Identity()

    def forward(self, x):
        y = x
        for layer in self.block:
            y = layer(y)
        return self.shortcut(x) + y


class LSTM(torch.nn.Module):
    """EncodecLSTM: a stacked LSTM over time with a residual connection, channels-first I/O."""

    def __init__(self, dim, layers):
        super().__init__()
        self.lstm = torch.nn.LSTM(dim, dim, layers)

    def forward(self, x):
        x = x.permute(2, 0, 1)
        return (self.lstm(x)[0] + x).permute(1, 2, 0)


def seanet_layers(c, conv, tconv, encoder):
    """The `layers` list of transformers' Encodec/Mimi SEANet encoder (audio -> hidden_size) or
    decoder (hidden_size -> audio); an LSTM after the strided stack when c["num_lstm_layers"]
    (EnCodec; Mimi has none). conv / tconv: keyword arguments of SConv1d / SConvTranspose1d."""
    nf, ratios, lstm = c["num_filters"], c["upsampling_ratios"], c.get("num_lstm_layers", 0)

    def resblocks(dim):
        return [SEANetResnetBlock(dim, c["residual_kernel_size"], c["dilation_growth_rate"] ** j,
                                  c["compress"], c["use_conv_shortcut"], conv)
                for j in range(c["num_residual_layers"])]

    if encoder:
        layers = [SConv1d(c["audio_channels"], nf, c["kernel_size"], **conv)]
        scale = 1
        for ratio in reversed(ratios):
            layers += resblocks(scale * nf)
            layers += [torch.nn.ELU(), SConv1d(scale * nf, scale * nf * 2, 2 * ratio, ratio, **conv)]
            scale *= 2
        layers += [LSTM(scale * nf, lstm)] if lstm else []
        layers += [torch.nn.ELU(), SConv1d(scale * nf, c["hidden_size"], c["last_kernel_size"], **conv)]
        return torch.nn.ModuleList(layers)
    scale = 2 ** len(ratios)
    layers = [SConv1d(c["hidden_size"], scale * nf, c["kernel_size"], **conv)]
    layers += [LSTM(scale * nf, lstm)] if lstm else []
    for ratio in ratios:
        layers += [torch.nn.ELU(),
                   SConvTranspose1d(scale * nf, scale * nf // 2, 2 * ratio, ratio, **tconv)]
        layers += resblocks(scale * nf // 2)
        scale //= 2
    layers += [torch.nn.ELU(), SConv1d(nf, c["audio_channels"], c["last_kernel_size"], **conv)]
    return torch.nn.ModuleList(layers)


def set_streaming(module, on):
    """Gives every streaming-capable submodule fresh state (on) or none (offline)."""
    for m in module.modules():
        if hasattr(m, "state") and m is not module:
            m.state = {} if on else None
