"""EnCodec in plain PyTorch (eager), following transformers' modeling_encodec.py (v4.45):
SEANet encoder/decoder with an LSTM, residual vector quantization, optional normalisation and
chunking with overlap-add. Built from a Hugging Face folder (config.json + model.safetensors)
with transformers' parameter names; weight norm is folded at load."""
import math

import torch

from .common import load_weights, read_config, seanet_layers

DEFAULTS = dict(target_bandwidths=[1.5, 3.0, 6.0, 12.0, 24.0], sampling_rate=24000,
                audio_channels=1, normalize=False, chunk_length_s=None, overlap=None,
                hidden_size=128, num_filters=32, num_residual_layers=1,
                upsampling_ratios=[8, 5, 4, 2], norm_type="weight_norm", kernel_size=7,
                last_kernel_size=7, residual_kernel_size=3, dilation_growth_rate=2,
                use_causal_conv=True, pad_mode="reflect", compress=2, num_lstm_layers=2,
                trim_right_ratio=1.0, codebook_size=1024, codebook_dim=None,
                use_conv_shortcut=True)


class Codebook(torch.nn.Module):
    def __init__(self, size, dim):
        super().__init__()
        self.register_buffer("inited", torch.ones(1))
        self.register_buffer("cluster_size", torch.zeros(size))
        self.register_buffer("embed", torch.zeros(size, dim))
        self.register_buffer("embed_avg", torch.zeros(size, dim))

    def encode(self, x):  # x: [B, D, T] -> [B, T]
        b, d, t = x.shape
        flat = x.permute(0, 2, 1).reshape(-1, d)
        embed = self.embed.t()
        dist = -(flat.pow(2).sum(1, keepdim=True) - 2 * flat @ embed
                 + embed.pow(2).sum(0, keepdim=True))
        return dist.max(dim=-1).indices.view(b, t)

    def decode(self, codes):  # [B, T] -> [B, D, T]
        return torch.nn.functional.embedding(codes, self.embed).permute(0, 2, 1)


class VectorQuantization(torch.nn.Module):
    def __init__(self, size, dim):
        super().__init__()
        self.codebook = Codebook(size, dim)


class Encodec(torch.nn.Module):
    def __init__(self, config):
        super().__init__()
        c = dict(DEFAULTS, **config)
        self.config = c
        conv = dict(causal=c["use_causal_conv"], pad_mode=c["pad_mode"],
                    group_norm=c["norm_type"] == "time_group_norm")
        tconv = dict(causal=c["use_causal_conv"], trim_right_ratio=c["trim_right_ratio"],
                     group_norm=c["norm_type"] == "time_group_norm")
        self.encoder = torch.nn.Module()
        self.encoder.layers = seanet_layers(c, conv, tconv, encoder=True)
        self.decoder = torch.nn.Module()
        self.decoder.layers = seanet_layers(c, conv, tconv, encoder=False)

        hop = math.prod(c["upsampling_ratios"])
        self.frame_rate = math.ceil(c["sampling_rate"] / hop)
        self.num_quantizers = int(1000 * c["target_bandwidths"][-1] // (self.frame_rate * 10))
        dim = c["codebook_dim"] or c["hidden_size"]
        self.quantizer = torch.nn.Module()
        self.quantizer.layers = torch.nn.ModuleList(
            [VectorQuantization(c["codebook_size"], dim) for _ in range(self.num_quantizers)])
        if c["chunk_length_s"] is None:
            self.chunk_length = self.chunk_stride = None
        else:
            self.chunk_length = int(c["chunk_length_s"] * c["sampling_rate"])
            self.chunk_stride = max(1, int((1.0 - c["overlap"]) * self.chunk_length))

    @classmethod
    def from_pretrained(cls, folder):
        return load_weights(cls(read_config(folder)), folder)

    def quantizers_for_bandwidth(self, bandwidth):
        per_q = math.log2(self.config["codebook_size"]) * self.frame_rate
        return int(max(1, math.floor(bandwidth * 1000 / per_q)))

    def _run(self, layers, x):
        for layer in layers:
            x = layer(x)
        return x

    def embed(self, x):
        """Encoder output (pre-quantisation embeddings) of one chunk."""
        return self._run(self.encoder.layers, x)

    def quantize(self, emb, n_q):
        residual, codes = emb, []
        for layer in self.quantizer.layers[:n_q]:
            idx = layer.codebook.encode(residual)
            residual = residual - layer.codebook.decode(idx)
            codes.append(idx)
        return torch.stack(codes, 1)  # [B, K, T]

    def dequantize(self, codes):  # [B, K, T] -> [B, D, T]
        out = torch.tensor(0.0)
        for k in range(codes.shape[1]):
            out = out + self.quantizer.layers[k].codebook.decode(codes[:, k])
        return out

    def encode(self, x, bandwidth=None, padding_mask=None):
        """x [B, C, N] -> (codes [chunks, B, K, T], scales: list of [B, 1, 1] or None)."""
        bandwidth = self.config["target_bandwidths"][0] if bandwidth is None else bandwidth
        n_q = self.quantizers_for_bandwidth(bandwidth)
        length = x.shape[-1]
        chunk, stride = (self.chunk_length, self.chunk_stride) if self.chunk_length else (length, length)
        if padding_mask is None:
            padding_mask = torch.ones_like(x, dtype=torch.bool)
        codes, scales = [], []
        for offset in range(0, length - (chunk - stride), stride):
            frame = x[..., offset:offset + chunk]
            scale = None
            if self.config["normalize"]:
                frame = frame * padding_mask[..., offset:offset + chunk]
                mono = frame.sum(1, keepdim=True) / frame.shape[1]
                scale = mono.pow(2).mean(dim=-1, keepdim=True).sqrt() + 1e-8
                frame = frame / scale
            codes.append(self.quantize(self.embed(frame), n_q))
            scales.append(scale)
        return torch.stack(codes), scales

    def decode(self, codes, scales=None, length=None):
        """codes [chunks, B, K, T] -> audio [B, C, N] (cut to `length` when given)."""
        frames = []
        for i in range(codes.shape[0]):
            y = self._run(self.decoder.layers, self.dequantize(codes[i]))
            if scales is not None and scales[i] is not None:
                y = y * scales[i].view(-1, 1, 1)
            frames.append(y)
        audio = frames[0] if len(frames) == 1 else overlap_add(frames, self.chunk_stride)
        return audio if length is None else audio[..., :length]


def overlap_add(frames, stride):
    """transformers' _linear_overlap_add: triangular weights, normalised by their sum."""
    total = stride * (len(frames) - 1) + frames[-1].shape[-1]
    n = frames[0].shape[-1]
    t = torch.linspace(0, 1, n + 2, dtype=frames[0].dtype)[1:-1]
    weight = 0.5 - (t - 0.5).abs()
    out = torch.zeros(*frames[0].shape[:-1], total, dtype=frames[0].dtype)
    weight_sum = torch.zeros(total, dtype=frames[0].dtype)
    offset = 0
    for frame in frames:
        m = frame.shape[-1]
        out[..., offset:offset + m] += weight[:m] * frame
        weight_sum[offset:offset + m] += weight[:m]
        offset += stride
    return out / weight_sum
