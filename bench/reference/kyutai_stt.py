"""transformers' KyutaiSpeechToTextForConditionalGeneration decoder step, eager, in plain torch:
the text token and the frame's codes embedded from one table (codebook k offset by vocab_size +
k * codebook_vocab_size) and summed, RMSNorm in float32 (weight included), rotate-half RoPE, attention with an
explicit float32 softmax over a KV cache cut to the sliding window (transformers'
SlidingWindowCache keeps the newest `sliding_window` positions), the gating MLP (fc1 split in two
halves, silu(first) * second, fc2), the head. Weights are a dict with the checkpoint's names."""
import torch
import torch.nn.functional as F

from .text_decoder import rope, rotate_half


def rms_norm(x, weight, eps):
    """KyutaiSpeechToTextRMSNorm: normalised and scaled in float32, then cast."""
    h = x.float()
    return (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)


def random_weights(config, seed=0):
    """Decoder weights in the checkpoint's names, scaled so that activations stay O(1)."""
    g = torch.Generator().manual_seed(seed)
    d, ffn = config["hidden_size"], config["ffn_dim"]
    heads = config["num_attention_heads"]
    kv = config.get("num_key_value_heads") or heads
    head_dim = config.get("head_dim") or d // heads
    rows = config["vocab_size"] + config["num_codebooks"] * config["codebook_vocab_size"] + 1
    w = {"model.embed_tokens.embed_tokens.weight": torch.randn(rows, d, generator=g) * 0.2}

    def linear(name, n_out, n_in):
        w[name] = torch.randn(n_out, n_in, generator=g) * n_in ** -0.5

    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}."
        linear(p + "self_attn.q_proj.linear.weight", heads * head_dim, d)
        linear(p + "self_attn.k_proj.linear.weight", kv * head_dim, d)
        linear(p + "self_attn.v_proj.linear.weight", kv * head_dim, d)
        linear(p + "self_attn.o_proj.linear.weight", d, heads * head_dim)
        linear(p + "mlp.fc1.weight", ffn, d)
        linear(p + "mlp.fc2.weight", d, ffn // 2)
        w[p + "input_layernorm.weight"] = 1 + 0.1 * torch.randn(d, generator=g)
        w[p + "post_attention_layernorm.weight"] = 1 + 0.1 * torch.randn(d, generator=g)
    w["model.norm.weight"] = 1 + 0.1 * torch.randn(d, generator=g)
    linear("lm_head.weight", config["vocab_size"], d)
    return w


def step_bytes(w, element_size):
    """What one step reads: every matrix and the head, not the embedding table (1 + K rows)."""
    return sum(t.numel() for n, t in w.items() if "embed_tokens" not in n) * element_size


def step(w, config, ids, cache, position):
    """ids [1, 1, 1 + K] (text token, codes) at `position` -> logits [vocab] (float32).
    cache: per-layer {"k", "v"} dicts, grown and cut to the window in place."""
    heads = config["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads") or heads
    head_dim = config.get("head_dim") or config["hidden_size"] // heads
    eps, window = config["rms_norm_eps"], config["sliding_window"]
    offsets = torch.cat([torch.zeros(1, dtype=torch.long),
                         config["vocab_size"] + config["codebook_vocab_size"]
                         * torch.arange(config["num_codebooks"])])
    table = w["model.embed_tokens.embed_tokens.weight"]
    x = F.embedding(ids + offsets, table).sum(2)  # [1, 1, d]
    cos, sin = rope({"head_dim": head_dim, "hidden_size": config["hidden_size"],
                     "num_attention_heads": heads, "rope_theta": config["rope_theta"]},
                    torch.tensor([position]), x.dtype)
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = F.linear(h, w[p + "self_attn.q_proj.linear.weight"]).view(1, 1, heads, head_dim).transpose(1, 2)
        k = F.linear(h, w[p + "self_attn.k_proj.linear.weight"]).view(1, 1, kv_heads, head_dim).transpose(1, 2)
        v = F.linear(h, w[p + "self_attn.v_proj.linear.weight"]).view(1, 1, kv_heads, head_dim).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        layer = cache[i]
        if "k" in layer:
            k, v = torch.cat([layer["k"], k], 2)[:, :, -window:], torch.cat([layer["v"], v], 2)[:, :, -window:]
        layer["k"], layer["v"] = k, v
        groups = heads // kv_heads
        kr, vr = k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1)
        scores = torch.matmul(q, kr.transpose(2, 3)) * head_dim ** -0.5
        probs = torch.softmax(scores, -1, dtype=torch.float32).to(q.dtype)
        attn = torch.matmul(probs, vr).transpose(1, 2).reshape(1, 1, heads * head_dim)
        x = x + F.linear(attn, w[p + "self_attn.o_proj.linear.weight"])
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        gate, up = F.linear(h, w[p + "mlp.fc1.weight"]).chunk(2, -1)
        x = x + F.linear(F.silu(gate) * up, w[p + "mlp.fc2.weight"])
    x = rms_norm(x, w["model.norm.weight"], eps)
    return F.linear(x, w["lm_head.weight"]).float().view(-1)
