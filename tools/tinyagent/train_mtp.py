"""Trains the MTP drafter (mtp.py) of the shipped tiny agent model on the CPU, the base frozen, and
exports it as a float32 GGUF sidecar (`ds4ctl quantize` encodes it like the base).

  /usr/bin/python3 tools/tinyagent/train_mtp.py --out RUN --minutes 45 --seed 31
  /usr/bin/python3 tools/tinyagent/train_mtp.py --out RUN --export RUN/mtp-f32.gguf   (from RUN's checkpoint)

The base is the committed GGUF, decoded to float32 here (gguf_io.read dequantize: the engine's
decoders), so no C++ build is needed. The corpus is the one the base's last stage trained on (v5,
rendered as train.py does). Drafts are accepted when they equal the base's own choice, so the
target is the base, not the corpus: the MTP's logits at position p (inputs x_p and the base's final
state H(p-1)) are trained toward the base's distribution after x_p, by the KL divergence to the
base softmax (self-distillation; it carries the base's ranking where it is unsure, and where it is
sure, which is most of the assistant text, it is the cross entropy to its argmax). Only positions
whose next token is assistant text count: the drafter only drafts while the model writes.

Logged on held-out conversations (another seed): depth-1 agreement = argmax of the MTP at p equals
the base's argmax at p (the acceptance rate of the first draft under greedy decoding); depth-2 = the
MTP fed its own draft d_1 and output state at p+1 (attending to the true rows <= p and itself)
agrees with the base's argmax at p+1, counted where d_1 was right and the corpus token is the
base's argmax (so the teacher-forced text is what greedy decoding would have produced).
"""
import argparse
import json
import math
import os
import random
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus  # noqa: E402
import gguf_io  # noqa: E402
from ds4model import DS4, Config, apply_rope, hc_collapse, rms, rope_angles  # noqa: E402
from export import gguf_name  # noqa: E402
from mtp import MTP, gguf_tensors, load_gguf  # noqa: E402
from train import batches, build_data, collate  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def config_from(meta):
    k = "deepseek4."
    return Config(n_layer=meta[k + "block_count"], n_embd=meta[k + "embedding_length"], n_vocab=meta[k + "vocab_size"],
                  n_head=meta[k + "attention.head_count"], head_dim=meta[k + "attention.key_length"],
                  n_rot=meta[k + "rope.dimension_count"], q_lora=meta[k + "attention.q_lora_rank"],
                  out_lora=meta[k + "attention.output_lora_rank"], out_groups=meta[k + "attention.output_group_count"],
                  n_expert=meta[k + "expert_count"], n_expert_used=meta[k + "expert_used_count"],
                  n_ff=meta[k + "expert_feed_forward_length"], n_hash=meta[k + "hash_layer_count"],
                  window=meta[k + "attention.sliding_window"], idx_heads=meta[k + "attention.indexer.head_count"],
                  idx_dim=meta[k + "attention.indexer.key_length"], idx_top_k=meta[k + "attention.indexer.top_k"],
                  n_hc=meta[k + "hyper_connection.count"], sinkhorn=meta[k + "hyper_connection.sinkhorn_iterations"],
                  eps=meta[k + "attention.layer_norm_rms_epsilon"], rope_base=meta[k + "rope.freq_base"],
                  comp_rope_base=meta[k + "attention.compress_rope_freq_base"],
                  yarn_factor=meta[k + "rope.scaling.factor"],
                  yarn_orig_ctx=meta[k + "rope.scaling.original_context_length"],
                  beta_fast=meta[k + "rope.scaling.yarn_beta_fast"], beta_slow=meta[k + "rope.scaling.yarn_beta_slow"],
                  expert_scale=meta[k + "expert_weights_scale"], clamp=meta[k + "swiglu_clamp_exp"][1],
                  ratios=list(meta[k + "attention.compress_ratios"]))


def load_base(path):
    """DS4 with the GGUF's weights decoded to float32, frozen; (model, metadata)."""
    meta, t = gguf_io.read(path, dequantize=True)
    cfg = config_from(meta)
    model = DS4(cfg)
    with torch.no_grad():
        model.token_embd.copy_(torch.from_numpy(t["token_embd.weight"].copy()))
        for il, blk in enumerate(model.blocks):
            for local, p in blk.named_parameters():
                p.copy_(torch.from_numpy(t["blk.%d.%s" % (il, gguf_name(local))].copy()).reshape(p.shape))
        for n in ("output_hc_fn", "output_hc_scale", "output_hc_base", "output_norm", "output"):
            getattr(model, n).copy_(torch.from_numpy(t[n + ".weight"].copy()).reshape(getattr(model, n).shape))
        t2e = [t["blk.%d.ffn_gate_tid2eid.weight" % il] for il in range(cfg.n_hash)]
        assert all((a == t2e[0]).all() for a in t2e), "one tid2eid table for every hash layer (ds4model.DS4)"
        model.tid2eid.copy_(torch.from_numpy(t2e[0].copy()).long())
    for p in model.parameters():
        p.requires_grad_(False)
    return model, meta


def base_head(base, H):
    """The base's logits for final states H [n, n_hc, D]."""
    y = hc_collapse(H[None], base.output_hc_fn, base.output_hc_scale, base.output_hc_base, base.output_norm,
                    base.cfg.eps)[0]
    return y @ base.output.t()


def mtp_rows(x, m, shared, Hs, prefix):
    """The MTP's rows for a batch: (tokens [B, T], states [B, T, n, D], prefix rows or None, the base
    states whose head is each row's target [B, T, n, D], loss mask [B, T]). Row p has (x_p, H(p-1))
    and its target is the base after x_p, i.e. head(H(p)); it counts when x_{p+1} is assistant text."""
    Hp, H = Hs
    B = x.shape[0]
    if shared:
        toks, P = x, torch.cat([Hp[:, -1:].expand(B, -1, -1, -1), H[:, :-1]], dim=1)
        pre = (prefix[None, 1:], Hp[:, :-1])
        tgt, mask = H, F.pad(m[:, 1:], (0, 1))
    else:
        toks, P, pre = x[:, 1:], H[:, :-1], None
        tgt, mask = H[:, 1:], F.pad(m[:, 2:], (0, 1))
    return toks, P, pre, tgt, mask


def depth2(mtp, toks, P, Hout1, d1, embd):
    """Second draft for every row at once: row j (position p) proposed d1[j]; the step at p+1 reads
    (d1[j], Hout1[j]) and attends to the true rows 0..j (from (x, P), as the engine's ring holds
    them) and to itself. Returns its Hout [B, T, n, D]. No prefix form (evaluation only)."""
    blk, c = mtp.block, mtp.cfg
    B, T = toks.shape
    Hh, hd = c.n_head, c.head_dim

    def project(H, pos):
        x, post, C = blk.hc_pre(H, "attn")
        xn = rms(x, c.eps) * blk.attn_norm
        qrn = rms(xn @ blk.attn_q_a.t(), c.eps) * blk.attn_q_a_norm
        q = (qrn @ blk.attn_q_b.t()).reshape(B, T, Hh, hd).transpose(1, 2)
        th = rope_angles(c, pos, False)
        q = apply_rope(rms(q, c.eps), th)
        kv = apply_rope(rms(xn @ blk.attn_kv.t(), c.eps) * blk.attn_kv_a_norm, th)
        return q, kv, post, C

    pos = torch.arange(T)
    _, kv1, _, _ = project(mtp.inputs(toks, P, embd), pos)
    H2 = mtp.inputs(d1, Hout1, embd)
    q2, kv2, post, C = project(H2, pos + 1)
    i = (pos + 1)[:, None]
    j = pos[None, :]
    allow = (j <= i - 1) & (j > i - c.window)
    sc = (q2 @ kv1[:, None].transpose(-1, -2)) / math.sqrt(hd)  # [B, H, T, T]
    sc = sc.masked_fill(~allow, float("-inf"))
    self_sc = (q2 * kv2[:, None]).sum(-1, keepdim=True) / math.sqrt(hd)  # [B, H, T, 1]
    sink = blk.attn_sinks[None, :, None, None].expand(B, Hh, T, 1)
    pr = torch.softmax(torch.cat([sc, self_sc, sink], dim=-1), dim=-1)
    out = pr[..., :T] @ kv1[:, None] + pr[..., T:T + 1] * kv2[:, None]
    out = apply_rope(out, rope_angles(c, pos + 1, False), inverse=True)
    out = out.transpose(1, 2).reshape(B, T, c.out_groups, (Hh // c.out_groups) * hd)
    R = c.out_lora
    low = torch.cat([out[:, :, g] @ blk.attn_output_a[g * R:(g + 1) * R].t() for g in range(c.out_groups)], dim=-1)
    H2 = blk.hc_post(H2, low @ blk.attn_output_b.t(), post, C)
    x, post, C = blk.hc_pre(H2, "ffn")
    return blk.hc_post(H2, blk.moe(x, d1, None, False), post, C)


@torch.no_grad()
def evaluate(base, mtp, held, eos, with_depth2=True):
    """Held-out agreement with the base's argmax: (depth-1 rate, n, depth-2 rate given d_1 right, n,
    KL mean). Sequences one at a time, unshared (the prefix form is only a speed-up)."""
    a1 = n1 = a2 = n2 = 0
    kl = 0.0
    for ids, m, _ in held:
        x, mk = ids[None], m[None]
        Hs = base(x, return_hidden=True)
        toks, P, _, tgt, mask = mtp_rows(x, mk, False, Hs, None)
        Hout = mtp(toks, P, base.token_embd)[1]
        bl = base_head(base, tgt[0])  # [T, V]
        ml = mtp.logits(Hout[0], base.output)
        b, d = bl.argmax(-1), ml.argmax(-1)
        sel = mask[0]
        a1 += int((b == d)[sel].sum())
        n1 += int(sel.sum())
        kl += float(F.kl_div(F.log_softmax(ml[sel], -1), F.log_softmax(bl[sel], -1), log_target=True,
                             reduction="sum"))
        if with_depth2:
            H2 = depth2(mtp, toks, P, Hout, d[None], base.token_embd)
            d2 = mtp.logits(H2[0], base.output).argmax(-1)
            # row j's second draft is for x_{p+2}: the base's argmax at row j+1; x_{p+1} and x_{p+2}
            # assistant text, d_1 right and the corpus token = the base's choice
            T = d.shape[0]
            xn = toks[0]
            ok = sel[:T - 1] & sel[1:] & (d[:T - 1] == b[:T - 1]) & (xn[1:] == b[:T - 1])
            a2 += int((d2[:T - 1] == b[1:])[ok].sum())
            n2 += int(ok.sum())
    return a1 / max(1, n1), n1, a2 / max(1, n2), n2, kl / max(1, n1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", default=os.path.join(ROOT, "models", "ds4-tiny-agent.gguf"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=31)
    ap.add_argument("--conversations", type=int, default=20000)
    ap.add_argument("--max-len", type=int, default=760)
    ap.add_argument("--batch-tokens", type=int, default=3072)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--minutes", type=float, default=0, help="cosine schedule over this wall time (else --steps)")
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--heldout", type=int, default=40, help="held-out conversations (seed + 1000)")
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--e-gain", type=float, default=1.0, help="e_proj starts as this * identity")
    ap.add_argument("--h-gain", type=float, default=0.5, help="h_proj starts as this * identity")
    ap.add_argument("--export", default="", help="write the F32 sidecar GGUF from --out's checkpoint and stop")
    ap.add_argument("--eval", default="", help="only evaluate on the --heldout conversations: 'ckpt' (--out's "
                                               "checkpoint) or a sidecar GGUF (F32 or quantized: decoded here)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    base, meta = load_base(a.base)
    cfg = base.cfg
    mtp = MTP(cfg)
    ck = os.path.join(a.out, "mtp.pt")
    if a.export:
        mtp.load_state_dict(torch.load(ck)["mtp"])
        md = [(k, typ, v) for k, typ, v in gguf_io.read_metadata(a.base) if k.startswith("deepseek4.") or
              k in ("general.architecture", "general.alignment")]
        md.append(("general.name", "str", meta.get("general.name", "ds4") + "-mtp"))
        md.append(("ds4d.convert.role", "str", "mtp"))
        gguf_io.write(a.export, md, gguf_tensors(mtp))
        print("%s: %d tensors" % (a.export, len(gguf_tensors(mtp))))
        return

    t0 = time.time()
    tok_path = os.path.join(a.out, "base-tokenizer.json")
    with open(tok_path, "w") as f:
        json.dump({"tokens": meta["tokenizer.ggml.tokens"], "merges": meta["tokenizer.ggml.merges"]}, f)
    tok, held, _, prefix = build_data(a.seed + 1000, a.heldout, cfg.n_vocab, a.max_len, a.out, tok_path,
                                      corpus.conversation_v5)
    # held-out sequences whole (prefix put back), evaluated unshared
    held = [(torch.cat([prefix, ids]) if sh else ids, torch.cat([torch.zeros(len(prefix), dtype=torch.bool), m])
             if sh else m, False) for ids, m, sh in held]
    if a.eval:
        if a.eval == "ckpt":
            mtp.load_state_dict(torch.load(ck)["mtp"])
        else:
            load_gguf(mtp, gguf_io.read(a.eval, dequantize=True)[1])
        t1 = time.time()
        r = evaluate(base, mtp, held, tok.eos)
        print("eval %s on %d held-out conversations (seed %d): depth1 %.4f (n %d) depth2|d1 %.4f (n %d) kl %.4f "
              "(%.0fs)" % (a.eval, len(held), a.seed + 1000, *r, time.time() - t1), flush=True)
        return
    tok, data, h, _ = build_data(a.seed, a.conversations, cfg.n_vocab, a.max_len, a.out, tok_path,
                                 corpus.conversation_v5)
    print("data: %d conversations (%d tokens), corpus sha256 %s, tokenizer %s; held-out %d (%d tokens); %.0fs" %
          (len(data), sum(len(d[0]) for d in data), h, tok.digest(), len(held), sum(len(d[0]) for d in held),
           time.time() - t0), flush=True)

    mtp.init_from_base(base, a.e_gain, a.h_gain)
    params = [p for p in mtp.parameters() if p.requires_grad]
    print("mtp: %d trainable parameters" % sum(p.numel() for p in params), flush=True)
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95))
    r = evaluate(base, mtp, held, tok.eos)
    print("eval step 0: depth1 %.4f (n %d) depth2|d1 %.4f (n %d) kl %.4f" % r, flush=True)

    rng = random.Random(a.seed + 7)
    warm = 20
    t_start = time.time()

    def lr_at(s, train_s):
        if s < warm:
            return a.lr * (s + 1) / warm
        q = train_s / (a.minutes * 60) if a.minutes else (s - warm) / max(1, a.steps - warm)
        return a.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, q))))

    queue, step, seen = [], 0, 0
    ema = agree_ema = None
    eval_s = 0.0
    while True:
        if a.minutes and time.time() - t_start - eval_s > a.minutes * 60:
            break
        if not a.minutes and step >= a.steps:
            break
        if not queue:
            queue = batches(rng, data, a.batch_tokens)
        idx = queue.pop()
        shared = data[idx[0]][2]
        x, m, _ = collate(data, idx, tok.eos)
        lr = lr_at(step, time.time() - t_start - eval_s)  # the budget is training time, evaluations apart
        for g in opt.param_groups:
            g["lr"] = lr
        with torch.no_grad():
            Hs = base(x, prefix=prefix if shared else None, return_hidden=True)
            toks, P, pre, tgt, mask = mtp_rows(x, m, shared, Hs, prefix)
            bl = F.log_softmax(base_head(base, tgt[mask]), -1)
        Hout = mtp(toks, P, base.token_embd, prefix=pre)[1]
        ml = F.log_softmax(mtp.logits(Hout[mask], base.output), -1)
        loss = F.kl_div(ml, bl, log_target=True, reduction="batchmean")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        step += 1
        seen += x.numel() + (len(prefix) * x.shape[0] if shared else 0)
        agree = float((ml.argmax(-1) == bl.argmax(-1)).float().mean())
        ema = loss.item() if ema is None else 0.95 * ema + 0.05 * loss.item()
        agree_ema = agree if agree_ema is None else 0.95 * agree_ema + 0.05 * agree
        if step % 10 == 0 or step == 1:
            el = time.time() - t_start - eval_s
            print("step %d kl %.4f ema %.4f agree_ema %.4f lr %.2e tokens %d tok/s %.0f train %.0fs" %
                  (step, loss.item(), ema, agree_ema, lr, seen, seen / el, el), flush=True)
        if step % a.eval_every == 0:
            te = time.time()
            r = evaluate(base, mtp, held, tok.eos)
            eval_s += time.time() - te
            print("eval step %d: depth1 %.4f (n %d) depth2|d1 %.4f (n %d) kl %.4f (%.0fs)" %
                  (step, *r, time.time() - te), flush=True)
            torch.save({"mtp": mtp.state_dict(), "step": step, "cfg": cfg.__dict__}, ck)
    train_s = time.time() - t_start - eval_s
    torch.save({"mtp": mtp.state_dict(), "step": step, "cfg": cfg.__dict__}, ck)
    r = evaluate(base, mtp, held, tok.eos)
    print("final eval step %d: depth1 %.4f (n %d) depth2|d1 %.4f (n %d) kl %.4f" % (step, *r), flush=True)
    print("done: %d steps, %d tokens, %.0fs training (+%.0fs evaluation), loss ema %.4f" %
          (step, seen, train_s, eval_s, ema), flush=True)


if __name__ == "__main__":
    main()
