"""Mimi in plain PyTorch (eager), following transformers' modeling_mimi.py with moshi's attention:
causal SEANet encoder/decoder (no LSTM), 25 Hz transformers with RoPE, LayerNorm, GELU MLP,
layer scale and *causal sliding-window* attention (key k visible from query q iff
0 <= q - k < sliding_window, as moshi and current transformers do; transformers v4.45's eager path
is neither causal nor windowed), a strided downsample to 12.5 Hz and a depthwise transposed-conv
upsample, and the split (semantic + acoustic) RVQ. Built from a Hugging Face folder.

Streaming (moshi-style, `stream()` context): every causal conv keeps its left context, every
transposed conv its overlap tail, every attention layer a KV cache bounded by the window and its
position offset; `encode` / `decode` called on whole 1920-sample frames then continue the signal."""
import contextlib
import math

import torch
import torch.nn.functional as F

from .common import SConv1d, SConvTranspose1d, load_weights, read_config, seanet_layers, set_streaming

DEFAULTS = dict(sampling_rate=24000, frame_rate=12.5, audio_channels=1, hidden_size=512,
                num_filters=64, num_residual_layers=1, upsampling_ratios=[8, 6, 5, 4],
                kernel_size=7, last_kernel_size=3, residual_kernel_size=3, dilation_growth_rate=2,
                use_causal_conv=True, pad_mode="constant", compress=2, trim_right_ratio=1.0,
                codebook_size=2048, codebook_dim=256, num_quantizers=32, use_conv_shortcut=False,
                vector_quantization_hidden_dimension=256, num_semantic_quantizers=1,
                upsample_groups=512, num_hidden_layers=8, intermediate_size=2048,
                num_attention_heads=8, num_key_value_heads=8, head_dim=None, hidden_act="gelu",
                max_position_embeddings=8000, rope_theta=10000.0, norm_eps=1e-5,
                sliding_window=250, layer_scale_initial_scale=0.01, attention_bias=False)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), -1)


class Attention(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        d, bias = c["hidden_size"], c["attention_bias"]
        self.heads, self.kv_heads = c["num_attention_heads"], c["num_key_value_heads"]
        self.head_dim = c["head_dim"] or d // self.heads
        self.window = c["sliding_window"]
        self.q_proj = torch.nn.Linear(d, self.heads * self.head_dim, bias=bias)
        self.k_proj = torch.nn.Linear(d, self.kv_heads * self.head_dim, bias=bias)
        self.v_proj = torch.nn.Linear(d, self.kv_heads * self.head_dim, bias=bias)
        self.o_proj = torch.nn.Linear(self.heads * self.head_dim, d, bias=bias)
        inv = 1.0 / (c["rope_theta"] ** (torch.arange(0, self.head_dim, 2, dtype=torch.int64).float()
                                        / self.head_dim))
        self.register_buffer("inv_freq", inv, persistent=False)
        self.state = None

    def forward(self, x):
        b, t, _ = x.shape
        offset = self.state.get("offset", 0) if self.state is not None else 0
        pos = torch.arange(offset, offset + t, dtype=torch.float32)
        freqs = pos[:, None] * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), -1)
        cos, sin = emb.cos(), emb.sin()
        q = self.q_proj(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        key_pos = pos
        if self.state is not None:
            if "k" in self.state:
                k = torch.cat([self.state["k"], k], 2)
                v = torch.cat([self.state["v"], v], 2)
                key_pos = torch.cat([self.state["pos"], pos])
            keep = self.window - 1  # the oldest key the next query can still see
            self.state.update(k=k[:, :, -keep:], v=v[:, :, -keep:], pos=key_pos[-keep:],
                              offset=offset + t)
        rep = self.heads // self.kv_heads
        if rep > 1:
            k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        distance = pos[:, None] - key_pos[None, :]
        mask = torch.zeros(distance.shape).masked_fill(
            (distance < 0) | (distance >= self.window), float("-inf"))
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim) + mask
        probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(probs, v).transpose(1, 2).reshape(b, t, -1)
        return self.o_proj(out)


class LayerScale(torch.nn.Module):
    def __init__(self, dim, init):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.full((dim,), init))

    def forward(self, x):
        return self.scale * x


class MLP(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.fc1 = torch.nn.Linear(c["hidden_size"], c["intermediate_size"], bias=False)
        self.fc2 = torch.nn.Linear(c["intermediate_size"], c["hidden_size"], bias=False)
        assert c["hidden_act"] == "gelu", c["hidden_act"]

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class TransformerLayer(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["hidden_size"]
        self.self_attn = Attention(c)
        self.mlp = MLP(c)
        self.input_layernorm = torch.nn.LayerNorm(d, eps=c["norm_eps"])
        self.post_attention_layernorm = torch.nn.LayerNorm(d, eps=c["norm_eps"])
        self.self_attn_layer_scale = LayerScale(d, c["layer_scale_initial_scale"])
        self.mlp_layer_scale = LayerScale(d, c["layer_scale_initial_scale"])

    def forward(self, x):
        x = x + self.self_attn_layer_scale(self.self_attn(self.input_layernorm(x)))
        return x + self.mlp_layer_scale(self.mlp(self.post_attention_layernorm(x)))


class Transformer(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layers = torch.nn.ModuleList([TransformerLayer(c) for _ in range(c["num_hidden_layers"])])

    def forward(self, x):  # channels-first [B, C, T] in and out
        x = x.transpose(1, 2)
        for layer in self.layers:
            x = layer(x)
        return x.transpose(1, 2)


class Codebook(torch.nn.Module):
    def __init__(self, size, dim):
        super().__init__()
        self.register_buffer("initialized", torch.ones(1))
        self.register_buffer("cluster_usage", torch.ones(size))
        self.register_buffer("embed_sum", torch.zeros(size, dim))

    @property
    def embed(self):
        return self.embed_sum / self.cluster_usage.clamp(min=1e-5)[:, None]

    def encode(self, x, embed):  # [B, D, T] -> [B, T]
        b, d, t = x.shape
        flat = x.permute(0, 2, 1).reshape(-1, d)
        return torch.cdist(flat[None].float(), embed[None].float(), p=2)[0].argmin(-1).view(b, t)


class VectorQuantization(torch.nn.Module):
    def __init__(self, size, dim):
        super().__init__()
        self.codebook = Codebook(size, dim)


class RVQ(torch.nn.Module):
    def __init__(self, c, n):
        super().__init__()
        self.layers = torch.nn.ModuleList(
            [VectorQuantization(c["codebook_size"], c["codebook_dim"]) for _ in range(n)])
        self.has_proj = c["vector_quantization_hidden_dimension"] != c["hidden_size"]
        if self.has_proj:
            self.input_proj = torch.nn.Conv1d(c["hidden_size"], c["vector_quantization_hidden_dimension"], 1, bias=False)
            self.output_proj = torch.nn.Conv1d(c["vector_quantization_hidden_dimension"], c["hidden_size"], 1, bias=False)
        self._embeds = None

    def embeds(self):
        if self._embeds is None:  # transformers caches the centroids once
            self._embeds = [layer.codebook.embed for layer in self.layers]
        return self._embeds

    def encode(self, x, n):
        if self.has_proj:
            x = self.input_proj(x)
        codes, residual = [], x
        for embed in self.embeds()[:n]:
            idx = self.layers[0].codebook.encode(residual, embed)
            residual = residual - F.embedding(idx, embed).permute(0, 2, 1)
            codes.append(idx)
        return torch.stack(codes, 1)

    def decode(self, codes):
        out = torch.tensor(0.0)
        for k, embed in enumerate(self.embeds()[:codes.shape[1]]):
            out = out + F.embedding(codes[:, k], embed).permute(0, 2, 1)
        return self.output_proj(out) if self.has_proj else out


class Mimi(torch.nn.Module):
    def __init__(self, config):
        super().__init__()
        c = dict(DEFAULTS, **config)
        self.config = c
        conv = dict(causal=c["use_causal_conv"], pad_mode=c["pad_mode"])
        tconv = dict(causal=c["use_causal_conv"], trim_right_ratio=c["trim_right_ratio"])
        ratios = c["upsampling_ratios"]
        self.encoder = torch.nn.Module()
        self.encoder.layers = seanet_layers(c, conv, tconv, encoder=True)
        self.encoder_transformer = Transformer(c)

        self.hop = math.prod(ratios) * 2  # 1920 at 24 kHz: the 25 Hz encoder rate halved
        encoder_rate = c["sampling_rate"] / math.prod(ratios)
        k = 2 * int(encoder_rate / c["frame_rate"])
        d = c["hidden_size"]
        self.downsample = SConv1d(d, d, k, 2, bias=False, causal=c["use_causal_conv"],
                                  pad_mode="replicate")
        self.upsample = SConvTranspose1d(d, d, k, 2, groups=c["upsample_groups"], bias=False,
                                         causal=c["use_causal_conv"],
                                         trim_right_ratio=c["trim_right_ratio"])
        self.decoder_transformer = Transformer(c)

        self.decoder = torch.nn.Module()
        self.decoder.layers = seanet_layers(c, conv, tconv, encoder=False)

        self.quantizer = torch.nn.Module()
        n_sem = c["num_semantic_quantizers"]
        self.quantizer.semantic_residual_vector_quantizer = RVQ(c, n_sem)
        self.quantizer.acoustic_residual_vector_quantizer = RVQ(c, c["num_quantizers"] - n_sem)

    @classmethod
    def from_pretrained(cls, folder):
        return load_weights(cls(read_config(folder)), folder)

    @staticmethod
    def _run(layers, x):
        for layer in layers:
            x = layer(x)
        return x

    def encoder_stages(self, x):
        """The intermediate tensors of the golden data: SEANet output, transformer output,
        12.5 Hz latent."""
        seanet = self._run(self.encoder.layers, x)
        hidden = self.encoder_transformer(seanet)
        return seanet, hidden, self.downsample(hidden)

    def encode(self, x, num_quantizers=None):
        """x [B, C, N] -> codes [B, K, T]."""
        n = num_quantizers or self.config["num_quantizers"]
        n_sem = self.config["num_semantic_quantizers"]
        latent = self.encoder_stages(x)[2]
        q = self.quantizer
        codes = q.semantic_residual_vector_quantizer.encode(latent, n_sem)
        if n > n_sem:
            codes = torch.cat([codes, q.acoustic_residual_vector_quantizer.encode(latent, n - n_sem)], 1)
        return codes

    def dequantize(self, codes):
        q, n_sem = self.quantizer, self.config["num_semantic_quantizers"]
        out = q.semantic_residual_vector_quantizer.decode(codes[:, :n_sem])
        if codes.shape[1] > n_sem:
            out = out + q.acoustic_residual_vector_quantizer.decode(codes[:, n_sem:])
        return out

    def decode(self, codes, length=None):
        """codes [B, K, T] -> audio [B, C, T * 1920] (cut to `length` when given)."""
        hidden = self.decoder_transformer(self.upsample(self.dequantize(codes)))
        audio = self._run(self.decoder.layers, hidden)
        return audio if length is None else audio[..., :length]

    @contextlib.contextmanager
    def stream(self):
        """Within this context encode() takes and decode() returns whole frames, continuing the
        signal of the previous calls (fresh state on entry)."""
        set_streaming(self, True)
        try:
            yield self
        finally:
            set_streaming(self, False)
