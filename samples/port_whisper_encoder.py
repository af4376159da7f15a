#!/usr/bin/env python3
"""A porting check, layer by layer: alto's Whisper encoder against a pure-PyTorch one.

Both read the same Hugging Face checkpoint (the reference through alto.load_safetensors), both
get the same log-mel input, and every intermediate alto names is compared with the reference's
activation at the same point. The first one that diverges is printed with its max abs/rel error;
the exit status is 0 when all match, 1 when one diverges. docs/porting.md walks through it.

    /usr/bin/python3 samples/port_whisper_encoder.py tests/data/models/whisper-tiny-random
    # the check catching a bug: perturb one reference weight
    /usr/bin/python3 samples/port_whisper_encoder.py DIR --perturb model.encoder.layers.1.fc1.bias
"""
import argparse
import json
import math
import pathlib
import sys

import torch
import torch.nn.functional as F
from torch import nn

import alto


class Attention(nn.Module):
    """transformers' WhisperAttention (eager): k_proj has no bias, queries are pre-scaled."""

    def __init__(self, d_model, heads):
        super().__init__()
        self.heads = heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model, bias=False)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        b, t, d = x.shape
        head_dim = d // self.heads

        def split(y):
            return y.view(b, t, self.heads, head_dim).transpose(1, 2)

        q = split(self.q_proj(x) * head_dim**-0.5)
        k, v = split(self.k_proj(x)), split(self.v_proj(x))
        weights = torch.softmax(q @ k.transpose(-1, -2), dim=-1)
        return self.out_proj((weights @ v).transpose(1, 2).reshape(b, t, d)), weights


class EncoderLayer(nn.Module):
    def __init__(self, d_model, heads, ffn_dim):
        super().__init__()
        self.self_attn = Attention(d_model, heads)
        self.self_attn_layer_norm = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, ffn_dim)
        self.fc2 = nn.Linear(ffn_dim, d_model)
        self.final_layer_norm = nn.LayerNorm(d_model)

    def forward(self, x, record, name):
        attention, weights = self.self_attn(self.self_attn_layer_norm(x))
        record(name + ".self_attn", attention)
        record(name + ".self_attn.attn_weights", weights)
        x = x + attention
        return x + self.fc2(F.gelu(self.fc1(self.final_layer_norm(x))))


class WhisperEncoder(nn.Module):
    """transformers' WhisperEncoder in plain PyTorch; parameter names are the checkpoint's."""

    def __init__(self, config):
        super().__init__()
        d = config["d_model"]
        self.conv1 = nn.Conv1d(config["num_mel_bins"], d, kernel_size=3, padding=1)
        self.conv2 = nn.Conv1d(d, d, kernel_size=3, stride=2, padding=1)
        self.embed_positions = nn.Embedding(config["max_source_positions"], d)
        self.layers = nn.ModuleList(
            EncoderLayer(d, config["encoder_attention_heads"], config["encoder_ffn_dim"])
            for _ in range(config["encoder_layers"]))
        self.layer_norm = nn.LayerNorm(d)

    def forward(self, features, record, prefix):
        # Each name holds its module's output, as register_forward_hook sees it: the
        # convolutions before their GELU.
        x = self.conv1(features)
        record(prefix + "conv1", x)
        x = self.conv2(F.gelu(x))
        record(prefix + "conv2", x)
        x = F.gelu(x).permute(0, 2, 1) + self.embed_positions.weight[: x.shape[-1]]
        for i, layer in enumerate(self.layers):
            x = layer(x, record, f"{prefix}layers.{i}")
            record(f"{prefix}layers.{i}", x)
        x = self.layer_norm(x)
        record(prefix + "layer_norm", x)
        record("last_hidden_state", x)
        return x


def load_reference(model_dir, perturb):
    """The reference encoder with the checkpoint's weights, read by alto.load_safetensors."""
    config = json.loads((model_dir / "config.json").read_text())
    index = model_dir / "model.safetensors.index.json"
    weights = alto.load_safetensors(str(index if index.exists() else model_dir / "model.safetensors"))
    prefix = "model.encoder." if "model.encoder.conv1.weight" in weights else "encoder."
    encoder = WhisperEncoder(config)
    state = {name[len(prefix):]: tensor.float()
             for name, tensor in weights.items() if name.startswith(prefix)}
    encoder.load_state_dict(state, strict=True)  # every tensor present, no extra, shapes equal
    if perturb:
        assert perturb.startswith(prefix), f"--perturb must name an encoder tensor ({prefix}...)"
        with torch.no_grad():
            encoder.get_parameter(perturb[len(prefix):]).add_(1e-2)
    return encoder.eval(), prefix


def compare(ours, reference, atol, rtol):
    """Rows (name, max_abs, max_rel, ok) in alto's order; ok: max_abs <= atol + rtol * max|ref|."""
    rows = []
    for name, value in ours.items():
        if name not in reference:
            continue
        ref = reference[name].double()
        diff = (value.double() - ref).abs().max().item()
        scale = ref.abs().max().item()
        rel = diff / scale if scale > 0 else (0.0 if diff == 0 else math.inf)
        rows.append((name, diff, rel, diff <= atol + rtol * scale))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir", type=pathlib.Path)
    parser.add_argument("--input", type=pathlib.Path,
                        help="audio file (default: the model folder's input.wav, else 5 s of noise)")
    parser.add_argument("--atol", type=float, default=1e-4)
    parser.add_argument("--rtol", type=float, default=1e-5)
    parser.add_argument("--perturb", help="add 1e-2 to this reference tensor (shows a divergence)")
    args = parser.parse_args()

    fe = alto.FeatureExtractor.from_pretrained(str(args.model_dir))
    audio = args.input or args.model_dir / "input.wav"
    if audio.exists():
        wave, _ = alto.load_audio(str(audio), sample_rate=fe.sampling_rate, mono=True)
    else:
        wave = 0.1 * torch.randn(1, 5 * fe.sampling_rate, generator=torch.Generator().manual_seed(0))
    features = fe(wave[0], sampling_rate=fe.sampling_rate)["input_features"]

    model = alto.models.Whisper.from_pretrained(str(args.model_dir))
    ours = model.encode(features, return_intermediates=True, attention_weights=True)

    encoder, prefix = load_reference(args.model_dir, args.perturb)
    reference = {}
    with torch.no_grad():
        encoder(features, lambda name, t: reference.__setitem__(name, t), prefix)

    rows = compare(ours, reference, args.atol, args.rtol)
    missing = [name for name in reference if name not in ours]
    width = max(len(name) for name, *_ in rows)
    print(f"{'intermediate':<{width}}  {'max abs':>10}  {'max rel':>10}")
    for name, diff, rel, ok in rows:
        print(f"{name:<{width}}  {diff:10.3e}  {rel:10.3e}  {'ok' if ok else 'DIVERGES'}")
    if missing:
        print(f"not produced by alto: {', '.join(missing)}")
    first = next((row for row in rows if not row[3]), None)
    if first:
        name, diff, rel, _ = first
        print(f"first divergence: {name} (max abs error {diff:.3e}, max rel error {rel:.3e}; "
              f"tolerance atol {args.atol:g} + rtol {args.rtol:g} * max|reference|)")
        return 1
    if missing or not rows:
        return 1
    print(f"all {len(rows)} intermediates match (atol {args.atol:g}, rtol {args.rtol:g})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
