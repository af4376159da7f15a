"""transformers' LlamaForCausalLM / Qwen2ForCausalLM forward pass, eager, in plain torch: RMSNorm
in float32, q/k/v projections (with Qwen2's biases), rotate-half RoPE, grouped-query attention
with an explicit softmax in float32 (transformers' eager attention), SwiGLU, a KV cache grown by
concatenation (transformers' DynamicCache), and the head on the positions asked for (generate()
computes only the last). Weights are a dict with the checkpoint's names."""
import torch
import torch.nn.functional as F


def rms_norm(x, weight, eps):
    variance = x.float().pow(2).mean(-1, keepdim=True)
    return weight * (x.float() * torch.rsqrt(variance + eps)).to(x.dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), -1)


def rope(config, positions, dtype):
    """cos, sin [T, head_dim] for the default RoPE at `positions`."""
    head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    inv_freq = 1.0 / (config["rope_theta"] ** (torch.arange(0, head_dim, 2).float() / head_dim))
    angles = positions.float()[:, None] * inv_freq[None]
    emb = torch.cat((angles, angles), -1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def linear(w, name, x):
    return F.linear(x, w[name + ".weight"], w.get(name + ".bias"))


def forward(w, config, ids, cache, logits_last=1):
    """ids [1, T] after the cache's positions -> logits [1, logits_last, vocab] (float32).
    cache: a list of per-layer {"k", "v"} dicts, filled and grown in place."""
    heads, kv_heads = config["num_attention_heads"], config["num_key_value_heads"]
    head_dim = config.get("head_dim") or config["hidden_size"] // heads
    eps = config["rms_norm_eps"]
    x = F.embedding(ids, w["model.embed_tokens.weight"])
    b, t, _ = x.shape
    past = cache[0]["k"].shape[2] if cache and "k" in cache[0] else 0
    cos, sin = rope(config, torch.arange(past, past + t), x.dtype)
    mask = torch.full((t, past + t), float("-inf")).triu(past + 1)
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}."
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
    x = rms_norm(x[:, -logits_last:], w["model.norm.weight"], eps)
    head = w.get("lm_head.weight", w["model.embed_tokens.weight"])
    return F.linear(x, head).float()


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
