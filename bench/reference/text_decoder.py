"""transformers' LlamaForCausalLM / Qwen2ForCausalLM forward pass, eager, in plain torch: RMSNorm
in float32, q/k/v projections (with Qwen2's biases), rotate-half RoPE, grouped-query attention
with an explicit softmax in float32 (transformers' eager attention), SwiGLU, a KV cache grown by
concatenation (transformers' DynamicCache), and the head on the positions asked for (generate()
computes only the last). RoPE with llama3 scaling where the config has it. Weights are a dict
with the checkpoint's names; `layers` serves any prefix (CSM's two decoders)."""
import math

import torch
import torch.nn.functional as F


def rms_norm(x, weight, eps):
    variance = x.float().pow(2).mean(-1, keepdim=True)
    return weight * (x.float() * torch.rsqrt(variance + eps)).to(x.dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), -1)


def inv_freq(config, head_dim):
    """transformers' inverse frequencies, with llama3 scaling when rope_scaling asks for it."""
    freq = 1.0 / (config["rope_theta"] ** (torch.arange(0, head_dim, 2).float() / head_dim))
    scaling = config.get("rope_scaling") or {}
    if scaling.get("rope_type") != "llama3":
        return freq
    factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    old = scaling["original_max_position_embeddings"]
    wavelen = 2 * math.pi / freq
    scaled = torch.where(wavelen > old / low, freq / factor, freq)
    smooth = (old / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < old / high) & ~(wavelen > old / low)
    return torch.where(medium, smoothed, scaled)


def rope(config, positions, dtype):
    """cos, sin [T, head_dim] at `positions`."""
    head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    angles = positions.float()[:, None] * inv_freq(config, head_dim)[None]
    emb = torch.cat((angles, angles), -1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def linear(w, name, x):
    return F.linear(x, w[name + ".weight"], w.get(name + ".bias"))


def layers(w, config, x, cache, prefix="model."):
    """inputs_embeds [1, T, d] after the cache's positions -> final-norm hidden [1, T, d].
    cache: a list of per-layer {"k", "v"} dicts, filled and grown in place."""
    heads, kv_heads = config["num_attention_heads"], config["num_key_value_heads"]
    head_dim = config.get("head_dim") or config["hidden_size"] // heads
    eps = config["rms_norm_eps"]
    b, t, _ = x.shape
    past = cache[0]["k"].shape[2] if cache and "k" in cache[0] else 0
    cos, sin = rope(config, torch.arange(past, past + t), x.dtype)
    mask = torch.full((t, past + t), float("-inf")).triu(past + 1)
    for i in range(config["num_hidden_layers"]):
        p = f"{prefix}layers.{i}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = linear(w, p + "self_attn.q_proj", h).view(b, t, heads, head_dim).transpose(1, 2)
        k = linear(w, p + "self_attn.k_proj", h).view(b, t, kv_heads, head_dim).transpose(1, 2)
        v = linear(w, p + "self_attn.v_proj", h).view(b, t, kv_heads, head_dim).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        layer = cache[i]
        if "k" in layer:
            k, v = torch.cat([layer["k"], k], 2), torch.cat([layer["v"], v], 2)
        layer["k"], layer["v"] = k, v
        groups = heads // kv_heads
        k, v = k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1)
        scores = torch.matmul(q, k.transpose(2, 3)) * head_dim ** -0.5 + mask.to(q.dtype)
        probs = torch.softmax(scores, -1, dtype=torch.float32).to(q.dtype)
        attn = torch.matmul(probs, v).transpose(1, 2).reshape(b, t, heads * head_dim)
        x = x + linear(w, p + "self_attn.o_proj", attn)
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        gated = F.silu(linear(w, p + "mlp.gate_proj", h)) * linear(w, p + "mlp.up_proj", h)
        x = x + linear(w, p + "mlp.down_proj", gated)
    return rms_norm(x, w[prefix + "norm.weight"], eps)


def forward(w, config, ids, cache, logits_last=1):
    """ids [1, T] after the cache's positions -> logits [1, logits_last, vocab] (float32)."""
    x = layers(w, config, F.embedding(ids, w["model.embed_tokens.weight"]), cache)
    head = w.get("lm_head.weight", w["model.embed_tokens.weight"])
    return F.linear(x[:, -logits_last:], head).float()


def greedy(w, config, ids, steps):
    """Prefill `ids`, then `steps` greedy tokens: (prefill logits [1, vocab], tokens [1, steps],
    step logits [steps, vocab], prefill seconds, per-step seconds)."""
    import time

    cache = [{} for _ in range(config["num_hidden_layers"])]
    t0 = time.perf_counter()
    logits = forward(w, config, ids, cache)[:, -1]
    prefill_s = time.perf_counter() - t0
    prefill_logits, tokens, step_logits, step_s = logits, [], [], []
    for _ in range(steps):
        token = logits.argmax(-1, keepdim=True)
        tokens.append(token)
        t0 = time.perf_counter()
        logits = forward(w, config, token, cache)[:, -1]
        step_s.append(time.perf_counter() - t0)
        step_logits.append(logits)
    return prefill_logits, torch.cat(tokens, 1), torch.cat(step_logits), prefill_s, step_s
