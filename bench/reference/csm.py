"""transformers' CsmForConditionalGeneration generation step, eager, in plain torch: the backbone
(a Llama with llama3 RoPE, text_decoder.layers under "backbone_model.") predicts codebook 0 with
lm_head; the depth decoder (a Llama under "depth_decoder.model.", its inputs projected from the
backbone's width) starts from the backbone's last hidden state and codebook 0 and predicts
codebooks 1 .. K-1, codebook k with codebooks_head[k - 1]; the frame's summed codebook
embeddings are the backbone's next input. Greedy, as generate(do_sample=False,
depth_decoder_do_sample=False). Weights are a dict with the checkpoint's names."""
import torch
import torch.nn.functional as F

from . import text_decoder


def random_weights(config, codebook_size, seed=0):
    """Backbone, depth decoder, tables and heads in the checkpoint's names, scaled so that
    activations stay O(1) and greedy choices have margins; the heads' rows for ids that are not
    codec codes (>= codebook_size: eos, pad) are shrunk, as the golden checkpoint's are, so that
    generation keeps to codes the codec can decode."""
    g = torch.Generator().manual_seed(seed)
    d, dd = config["hidden_size"], config["depth_decoder_config"]["hidden_size"]
    K, V = config["num_codebooks"], config["vocab_size"]
    w = {"embed_text_tokens.weight": torch.randn(config["text_vocab_size"], d, generator=g) * 0.5,
         "backbone_model.embed_tokens.embed_audio_tokens.weight":
             torch.randn(K * V, d, generator=g) * K ** -0.5}
    w["depth_decoder.model.embed_tokens.weight"] = w[
        "backbone_model.embed_tokens.embed_audio_tokens.weight"]

    def linear(name, n_out, n_in):
        w[name] = torch.randn(n_out, n_in, generator=g) * n_in ** -0.5

    def llama(prefix, c):
        h, ffn = c["hidden_size"], c["intermediate_size"]
        heads, kv, head_dim = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        for i in range(c["num_hidden_layers"]):
            p = f"{prefix}layers.{i}."
            linear(p + "self_attn.q_proj.weight", heads * head_dim, h)
            linear(p + "self_attn.k_proj.weight", kv * head_dim, h)
            linear(p + "self_attn.v_proj.weight", kv * head_dim, h)
            linear(p + "self_attn.o_proj.weight", h, heads * head_dim)
            linear(p + "mlp.gate_proj.weight", ffn, h)
            linear(p + "mlp.up_proj.weight", ffn, h)
            linear(p + "mlp.down_proj.weight", h, ffn)
            w[p + "input_layernorm.weight"] = 1 + 0.1 * torch.randn(h, generator=g)
            w[p + "post_attention_layernorm.weight"] = 1 + 0.1 * torch.randn(h, generator=g)
        w[prefix + "norm.weight"] = 1 + 0.1 * torch.randn(h, generator=g)

    llama("backbone_model.", config)
    llama("depth_decoder.model.", config["depth_decoder_config"])
    linear("lm_head.weight", V, d)
    linear("depth_decoder.model.inputs_embeds_projector.weight", dd, d)
    w["depth_decoder.codebooks_head.weight"] = torch.randn(K - 1, dd, V, generator=g) * dd ** -0.5
    w["lm_head.weight"][codebook_size:] *= 0.01
    w["depth_decoder.codebooks_head.weight"][..., codebook_size:] *= 0.01
    return w


def frame_bytes(w, element_size):
    """What one frame reads: the backbone's matrices and head, then each of the K - 1 depth
    decoder steps its matrices, the projector and one codebook head (tables: a few rows)."""
    K = w["depth_decoder.codebooks_head.weight"].shape[0] + 1
    backbone = sum(t.numel() for n, t in w.items() if n.startswith("backbone_model.layers")
                   or n in ("backbone_model.norm.weight", "lm_head.weight"))
    depth = sum(t.numel() for n, t in w.items() if n.startswith("depth_decoder.model.layers")
                or n in ("depth_decoder.model.norm.weight",
                         "depth_decoder.model.inputs_embeds_projector.weight"))
    head = w["depth_decoder.codebooks_head.weight"][0].numel()
    return (backbone + (K - 1) * (depth + head)) * element_size


def backbone(w, config, inputs_embeds, cache):
    """inputs_embeds [1, T, d] after the cache -> the last position's hidden state [1, d]."""
    return text_decoder.layers(w, config, inputs_embeds, cache, "backbone_model.")[:, -1]


def frame(w, config, last):
    """The backbone's last hidden state [1, d] -> the frame's codes [K] (greedy)."""
    dc = config["depth_decoder_config"]
    K, V = config["num_codebooks"], config["vocab_size"]
    table = w["depth_decoder.model.embed_tokens.weight"]
    projector = w["depth_decoder.model.inputs_embeds_projector.weight"]
    heads = w["depth_decoder.codebooks_head.weight"]
    code = F.linear(last, w["lm_head.weight"]).float().argmax(-1)  # [1]
    codes = [code]
    cache = [{} for _ in range(dc["num_hidden_layers"])]
    x = torch.stack([last, table[code]], 1)  # position 0: the hidden state; 1: codebook 0
    for k in range(1, K):
        h = text_decoder.layers(w, dc, F.linear(x, projector), cache, "depth_decoder.model.")[:, -1]
        code = (h @ heads[k - 1]).float().argmax(-1)
        codes.append(code)
        x = table[code + k * V].unsqueeze(1)
    return torch.cat(codes)


def frame_embedding(w, config, codes):
    """codes [K] -> the backbone's next input [1, 1, d]: the sum over codebooks."""
    offsets = torch.arange(config["num_codebooks"]) * config["vocab_size"]
    table = w["backbone_model.embed_tokens.embed_audio_tokens.weight"]
    return table[codes + offsets].sum(0).view(1, 1, -1)
