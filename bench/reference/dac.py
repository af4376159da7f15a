"""DAC (Descript Audio Codec) in plain PyTorch (eager), following transformers' modeling_dac.py
(v4.45): Snake activations, residual units with dilations 1/3/9, strided encoder blocks,
transposed-conv decoder blocks, factorised RVQ with L2-normalised codebook lookup. Built from a
Hugging Face folder with transformers' parameter names (weight norm folded at load if present)."""
import math

import torch
import torch.nn.functional as F

from .common import load_weights, read_config

DEFAULTS = dict(encoder_hidden_size=64, downsampling_ratios=[2, 4, 8, 8], decoder_hidden_size=1536,
                n_codebooks=9, codebook_size=1024, codebook_dim=8, upsampling_ratios=[8, 8, 4, 2],
                sampling_rate=16000, hidden_size=1024)


class Snake1d(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.alpha = torch.nn.Parameter(torch.ones(1, dim, 1))

    def forward(self, x):
        return x + (self.alpha + 1e-9).reciprocal() * torch.sin(self.alpha * x).pow(2)


class ResidualUnit(torch.nn.Module):
    def __init__(self, dim, dilation):
        super().__init__()
        self.snake1 = Snake1d(dim)
        self.conv1 = torch.nn.Conv1d(dim, dim, 7, dilation=dilation, padding=3 * dilation)
        self.snake2 = Snake1d(dim)
        self.conv2 = torch.nn.Conv1d(dim, dim, 1)

    def forward(self, x):
        y = self.conv2(self.snake2(self.conv1(self.snake1(x))))
        crop = (x.shape[-1] - y.shape[-1]) // 2
        if crop > 0:
            x = x[..., crop:-crop]
        return x + y


class EncoderBlock(torch.nn.Module):
    def __init__(self, dim, stride):
        super().__init__()
        self.res_unit1 = ResidualUnit(dim // 2, 1)
        self.res_unit2 = ResidualUnit(dim // 2, 3)
        self.res_unit3 = ResidualUnit(dim // 2, 9)
        self.snake1 = Snake1d(dim // 2)
        self.conv1 = torch.nn.Conv1d(dim // 2, dim, 2 * stride, stride, padding=math.ceil(stride / 2))

    def forward(self, x):
        x = self.res_unit3(self.res_unit2(self.res_unit1(x)))
        return self.conv1(self.snake1(x))


class DecoderBlock(torch.nn.Module):
    def __init__(self, in_dim, out_dim, stride):
        super().__init__()
        self.snake1 = Snake1d(in_dim)
        self.conv_t1 = torch.nn.ConvTranspose1d(in_dim, out_dim, 2 * stride, stride,
                                                padding=math.ceil(stride / 2))
        self.res_unit1 = ResidualUnit(out_dim, 1)
        self.res_unit2 = ResidualUnit(out_dim, 3)
        self.res_unit3 = ResidualUnit(out_dim, 9)

    def forward(self, x):
        x = self.conv_t1(self.snake1(x))
        return self.res_unit3(self.res_unit2(self.res_unit1(x)))


class VectorQuantize(torch.nn.Module):
    def __init__(self, hidden, dim, size):
        super().__init__()
        self.in_proj = torch.nn.Conv1d(hidden, dim, 1)
        self.out_proj = torch.nn.Conv1d(dim, hidden, 1)
        self.codebook = torch.nn.Embedding(size, dim)

    def lookup(self, latents):
        """Nearest codeword by cosine (both sides L2-normalised), transformers' expression."""
        b, d, t = latents.shape
        enc = F.normalize(latents.permute(0, 2, 1).reshape(b * t, d))
        book = F.normalize(self.codebook.weight)
        dist = -(enc.pow(2).sum(1, keepdim=True) - 2 * enc @ book.t()) + book.pow(2).sum(1, keepdim=True).t()
        idx = dist.max(1)[1].reshape(b, -1)
        return self.codebook(idx).transpose(1, 2), idx


class Dac(torch.nn.Module):
    def __init__(self, config):
        super().__init__()
        c = dict(DEFAULTS, **config)
        self.config = c
        h = c["encoder_hidden_size"]
        self.encoder = torch.nn.Module()
        self.encoder.conv1 = torch.nn.Conv1d(1, h, 7, padding=3)
        self.encoder.block = torch.nn.ModuleList(
            [EncoderBlock(h * 2 ** (i + 1), s) for i, s in enumerate(c["downsampling_ratios"])])
        d_model = h * 2 ** len(c["downsampling_ratios"])
        self.encoder.snake1 = Snake1d(d_model)
        self.encoder.conv2 = torch.nn.Conv1d(d_model, c["hidden_size"], 3, padding=1)

        ch = c["decoder_hidden_size"]
        self.decoder = torch.nn.Module()
        self.decoder.conv1 = torch.nn.Conv1d(c["hidden_size"], ch, 7, padding=3)
        self.decoder.block = torch.nn.ModuleList(
            [DecoderBlock(ch // 2 ** i, ch // 2 ** (i + 1), s) for i, s in enumerate(c["upsampling_ratios"])])
        out_dim = ch // 2 ** len(c["upsampling_ratios"])
        self.decoder.snake1 = Snake1d(out_dim)
        self.decoder.conv2 = torch.nn.Conv1d(out_dim, 1, 7, padding=3)

        self.quantizer = torch.nn.Module()
        self.quantizer.quantizers = torch.nn.ModuleList(
            [VectorQuantize(c["hidden_size"], c["codebook_dim"], c["codebook_size"])
             for _ in range(c["n_codebooks"])])

    @classmethod
    def from_pretrained(cls, folder):
        return load_weights(cls(read_config(folder)), folder)

    def embed(self, x):
        e = self.encoder
        x = e.conv1(x)
        for block in e.block:
            x = block(x)
        return e.conv2(e.snake1(x))

    def encode(self, x, n_quantizers=None):
        """x [B, 1, N] (N a multiple of the hop) -> codes [B, K, T]."""
        residual = self.embed(x)
        n = n_quantizers or self.config["n_codebooks"]
        codes = []
        for q in self.quantizer.quantizers[:n]:
            projected = q.in_proj(residual)
            quantized, idx = q.lookup(projected)
            # transformers' straight-through expression, kept for identical rounding
            residual = residual - q.out_proj(projected + (quantized - projected))
            codes.append(idx)
        return torch.stack(codes, 1)

    def dequantize(self, codes):
        out = 0.0
        for i in range(codes.shape[1]):
            q = self.quantizer.quantizers[i]
            out = out + q.out_proj(q.codebook(codes[:, i]).transpose(1, 2))
        return out

    def decode(self, codes):
        """codes [B, K, T] -> audio [B, N] (DacModel.decode(audio_codes=...))."""
        d = self.decoder
        x = d.conv1(self.dequantize(codes))
        for block in d.block:
            x = block(x)
        return torch.tanh(d.conv2(d.snake1(x))).squeeze(1)
