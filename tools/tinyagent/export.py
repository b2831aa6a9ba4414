"""Writes a trained checkpoint as a DS4-layout GGUF with F32 tensors and the full deepseek4.*
metadata and tokenizer, ready for `ds4ctl quantize` (which applies the q2 type recipe with the
engine's quantizers).

  /usr/bin/python3 tools/tinyagent/export.py --run RUN_DIR --out model-f32.gguf
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_io  # noqa: E402
from ds4model import DS4, Config  # noqa: E402


def metadata(cfg, tok, name):
    k = "deepseek4."
    n = cfg.n_layer
    types = [3 if t.startswith("<｜") or t in ("<think>", "</think>") or "｜" in t else 1 for t in tok["tokens"]]
    types[0] = types[1] = 3
    return [
        ("general.architecture", "str", "deepseek4"),
        ("general.name", "str", name),
        ("general.alignment", "u32", 32),
        (k + "block_count", "u32", n),
        (k + "context_length", "u64", 262144),  # docs/agents.md §context-and-output-limits
        (k + "embedding_length", "u32", cfg.n_embd),
        (k + "vocab_size", "u32", cfg.n_vocab),
        (k + "attention.head_count", "u32", cfg.n_head),
        (k + "attention.head_count_kv", "u32", 1),
        (k + "attention.key_length", "u32", cfg.head_dim),
        (k + "attention.value_length", "u32", cfg.head_dim),
        (k + "rope.dimension_count", "u32", cfg.n_rot),
        (k + "attention.q_lora_rank", "u32", cfg.q_lora),
        (k + "attention.output_lora_rank", "u32", cfg.out_lora),
        (k + "attention.output_group_count", "u32", cfg.out_groups),
        (k + "expert_count", "u32", cfg.n_expert),
        (k + "expert_used_count", "u32", cfg.n_expert_used),
        (k + "expert_shared_count", "u32", 1),
        (k + "expert_feed_forward_length", "u32", cfg.n_ff),
        (k + "expert_group_count", "u32", 0),
        (k + "expert_group_used_count", "u32", 0),
        (k + "hash_layer_count", "u32", cfg.n_hash),
        (k + "attention.sliding_window", "u32", cfg.window),
        (k + "attention.indexer.head_count", "u32", cfg.idx_heads),
        (k + "attention.indexer.key_length", "u32", cfg.idx_dim),
        (k + "attention.indexer.top_k", "u32", cfg.idx_top_k),
        (k + "hyper_connection.count", "u32", cfg.n_hc),
        (k + "hyper_connection.sinkhorn_iterations", "u32", cfg.sinkhorn),
        (k + "hyper_connection.epsilon", "f32", cfg.eps),
        (k + "attention.layer_norm_rms_epsilon", "f32", cfg.eps),
        (k + "rope.freq_base", "f32", cfg.rope_base),
        (k + "attention.compress_rope_freq_base", "f32", cfg.comp_rope_base),
        (k + "rope.scaling.type", "str", "yarn"),
        (k + "rope.scaling.factor", "f32", cfg.yarn_factor),
        (k + "rope.scaling.original_context_length", "u32", cfg.yarn_orig_ctx),
        (k + "rope.scaling.yarn_beta_fast", "f32", cfg.beta_fast),
        (k + "rope.scaling.yarn_beta_slow", "f32", cfg.beta_slow),
        (k + "expert_weights_scale", "f32", cfg.expert_scale),
        (k + "expert_weights_norm", "bool", True),
        (k + "swiglu_clamp_exp", "array", ("f32", [cfg.clamp] * n)),
        (k + "attention.compress_ratios", "array", ("u32", list(cfg.ratios))),
        ("tokenizer.ggml.model", "str", "gpt2"),
        ("tokenizer.ggml.pre", "str", "joyai-llm"),
        ("tokenizer.ggml.tokens", "array", ("str", tok["tokens"])),
        ("tokenizer.ggml.merges", "array", ("str", tok["merges"])),
        ("tokenizer.ggml.token_type", "array", ("i32", types)),
        ("tokenizer.ggml.bos_token_id", "u32", 0),
        ("tokenizer.ggml.eos_token_id", "u32", 1),
        ("tokenizer.ggml.add_bos_token", "bool", True),
        ("tokenizer.ggml.add_eos_token", "bool", False),
    ]


def gguf_name(local):
    if local == "exp_probs_b":
        return "exp_probs_b.bias"
    if local.startswith("indexer_attn_q_b"):
        return "indexer.attn_q_b.weight"
    if local == "indexer_proj":
        return "indexer.proj.weight"
    return local + ".weight"


def tensors(model):
    """(name, array, dims) in file order; a PyTorch [out, in] matrix is GGUF [in, out]."""
    out = []

    def add(name, t):
        a = t.detach().to(torch.float32).numpy() if t.dtype.is_floating_point else t.detach().numpy().astype(np.int32)
        out.append((name, np.ascontiguousarray(a), list(reversed(a.shape))))
    add("token_embd.weight", model.token_embd)
    c = model.cfg
    for il, blk in enumerate(model.blocks):
        for local, p in blk.named_parameters():
            add("blk.%d.%s" % (il, gguf_name(local)), p)
        if il < c.n_hash:
            add("blk.%d.ffn_gate_tid2eid.weight" % il, model.tid2eid.to(torch.int32))
    add("output_hc_fn.weight", model.output_hc_fn)
    add("output_hc_scale.weight", model.output_hc_scale)
    add("output_hc_base.weight", model.output_hc_base)
    add("output_norm.weight", model.output_norm)
    add("output.weight", model.output)
    return out


def load(run_dir):
    st = torch.load(os.path.join(run_dir, "checkpoint.pt"))
    cfg = Config(**st["cfg"])
    model = DS4(cfg)
    model.load_state_dict(st["model"])
    return model, st


def load_dequantized(model, path):
    """Copies a dequantized GGUF's tensors into `model` (the inverse of export.tensors)."""
    _, t = gguf_io.read(path)
    with torch.no_grad():
        model.token_embd.copy_(torch.from_numpy(t["token_embd.weight"].copy()))
        for il, blk in enumerate(model.blocks):
            for local, p in blk.named_parameters():
                p.copy_(torch.from_numpy(t["blk.%d.%s" % (il, gguf_name(local))].copy()).reshape(p.shape))
        for n in ("output_hc_fn", "output_hc_scale", "output_hc_base", "output_norm", "output"):
            getattr(model, n).copy_(torch.from_numpy(t[n + ".weight"].copy()).reshape(getattr(model, n).shape))
        model.tid2eid.copy_(torch.from_numpy(t["blk.0.ffn_gate_tid2eid.weight"].copy()).long())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--name", default="ds4-tiny-agent")
    a = ap.parse_args()
    model, st = load(a.run)
    tok = json.load(open(os.path.join(a.run, "tokenizer.json")))
    gguf_io.write(a.out, metadata(model.cfg, tok, a.name), tensors(model))
    print("%s: step %d, %d tensors" % (a.out, st["step"], len(tensors(model))))


if __name__ == "__main__":
    main()
