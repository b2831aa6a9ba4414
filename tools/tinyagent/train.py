"""Trains the tiny DS4 agent model on the synthetic corpus (corpus.py), fixed seed; on the CPU, or
on a GPU with --device cuda (device_train.sh: the prepared run for a lent GPU machine).

  /usr/bin/python3 tools/tinyagent/train.py --out build/tinyagent [--steps N] [--minutes M]

Writes into --out: tokenizer.json, corpus.sha256, checkpoint.pt (every --ckpt-every steps and at
the end), train.log lines on stdout. The loss is the next-token cross entropy on the assistant's
own text only (reasoning, content, DSML, EOS): the prompt parts are context, not targets.
"""
import argparse
import hashlib
import json
import math
import os
import random
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bpe  # noqa: E402
import corpus  # noqa: E402
import ds4chat  # noqa: E402
from ds4model import DS4, Config  # noqa: E402
from export import load_dequantized  # noqa: E402


def encode_with_mask(tok, text, spans):
    ids, mask = [], []
    pos = 0
    for s, e in spans:
        a = tok.encode(text[pos:s])
        b = tok.encode(text[s:e])
        ids += a + b
        mask += [0] * len(a) + [1] * len(b)
        pos = e
    a = tok.encode(text[pos:])
    ids += a
    mask += [0] * len(a)
    return ids, mask


_ENCODER = None  # the tokenizer a --workers pool encodes with (set before the pool forks)


def _encode_one(item):
    return encode_with_mask(_ENCODER, *item)


def build_data(seed, n_conv, vocab, max_len, out_dir, tokenizer=None, gen=corpus.conversation, workers=1):
    rng = random.Random(seed)
    texts, spans = [], []
    while len(texts) < n_conv:
        c = gen(rng)
        t, s = ds4chat.render(c["messages"], c["tools"], c["thinking"])
        texts.append(t)
        spans.append(s)
    h = hashlib.sha256("\x00".join(texts).encode()).hexdigest()
    if tokenizer:
        # a later training stage keeps the first stage's tokenizer (the weights it starts from use it)
        t = json.load(open(tokenizer))
        tokens, merges = t["tokens"], t["merges"]
    else:
        tokens, merges = bpe.train(texts[: min(len(texts), 12000)], vocab)
    tok = bpe.Tokenizer(tokens, merges)
    with open(os.path.join(out_dir, "tokenizer.json"), "w") as f:
        json.dump({"tokens": tokens, "merges": merges}, f)
    # Every conversation with tools starts with the same BOS + tools-block head: train.py computes
    # it once per batch (DS4.forward's `prefix`), so it is stored apart.
    prefix = tok.encode(ds4chat.BOS + ds4chat.TOOLS_HEAD)
    data = []
    global _ENCODER
    _ENCODER = tok
    items = list(zip(texts, spans))
    if workers > 1:
        # the same encodings in the same order as one process makes them (Pool.map keeps order)
        import multiprocessing
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            encoded = pool.map(_encode_one, items, chunksize=256)
    else:
        encoded = map(_encode_one, items)
    for ids, m in encoded:
        if len(ids) > max_len:
            continue
        shared = ids[:len(prefix)] == prefix
        if shared:
            assert not any(m[:len(prefix)])
            ids, m = ids[len(prefix):], m[len(prefix):]
        data.append((torch.tensor(ids), torch.tensor(m, dtype=torch.bool), shared))
    return tok, data, h, torch.tensor(prefix)


def copy_weights(data, prefix, weight, n_common):
    """Per-token loss weights: `weight` on the target tokens that only copying can predict, 1
    elsewhere. A target is a copy target when its token already occurs earlier in the same
    sequence (the tools block included) and is not one of the `n_common` most frequent target
    tokens (format tokens, common words): a tool name taken from the tools block, an argument
    taken from the user's words, a value of the tool result quoted in the answer. These are few
    (about a tenth of the targets) but carry most of what the evaluation measures, so their share
    of the gradient is raised. Returns the list of [len] float tensors and the copy-target share."""
    count = {}
    for ids, m, _ in data:
        for t in ids[m].tolist():
            count[t] = count.get(t, 0) + 1
    common = set(sorted(count, key=lambda t: -count[t])[:n_common])
    pre = prefix.tolist()
    out, n_copy, n_tgt = [], 0, 0
    for ids, m, shared in data:
        seen = set(pre) if shared else set()
        w = [1.0] * len(ids)
        for j, (t, tg) in enumerate(zip(ids.tolist(), m.tolist())):
            if tg:
                n_tgt += 1
                if t in seen and t not in common:
                    w[j] = weight
                    n_copy += 1
            seen.add(t)
        out.append(torch.tensor(w))
    return out, n_copy / max(1, n_tgt)


def batches(rng, data, tokens_per_batch):
    """Length-bucketed batches: shuffle, sort chunks by length, pad to the longest."""
    order = list(range(len(data)))
    rng.shuffle(order)
    chunk = 256
    out = []
    for i in range(0, len(order), chunk):
        part = sorted(order[i:i + chunk], key=lambda k: (data[k][2], len(data[k][0])))
        cur = []
        for k in part:
            L = len(data[k][0])
            if cur and ((len(cur) + 1) * max(L, len(data[cur[-1]][0])) > tokens_per_batch or
                        data[k][2] != data[cur[-1]][2]):
                out.append(cur)
                cur = []
            cur.append(k)
        if cur:
            out.append(cur)
    rng.shuffle(out)
    return out


def collate(data, idx, eos, weights=None):
    L = max(len(data[k][0]) for k in idx)
    x = torch.full((len(idx), L), eos, dtype=torch.long)
    m = torch.zeros((len(idx), L), dtype=torch.bool)
    w = torch.ones((len(idx), L))
    for r, k in enumerate(idx):
        ids, mk, _ = data[k]
        x[r, :len(ids)] = ids
        m[r, :len(ids)] = mk
        if weights is not None:
            w[r, :len(ids)] = weights[k]
    return x, m, w


def to_cpu(obj):
    """The same nesting of dicts and lists with every tensor on the CPU (checkpoints written on a
    GPU load anywhere)."""
    if torch.is_tensor(obj):
        return obj.detach().cpu()
    if isinstance(obj, dict):
        return {k: to_cpu(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_cpu(v) for v in obj)
    return obj


def save(model, opt, step, cfg, lrs, ck):
    # `model` holds the whole head (export and parity read it); `head_free` the free part of a
    # head trained as output + tie_scale * token_embd, which --resume restores
    torch.save(to_cpu({"model": model.tied_state(), "opt": opt.state_dict(), "step": step, "cfg": cfg.__dict__,
                       "lrs": lrs, "tie_scale": model.tie_scale,
                       "head_free": None if model.tie_scale is None else model.output.detach().clone()}),
               ck + ".tmp")
    os.replace(ck + ".tmp", ck)


# --corpus: the generator of each corpus (corpus.py; what each is for in --corpus's help)
CORPORA = {"v1": corpus.conversation, "v2": corpus.conversation_v2, "v3": corpus.conversation_v3,
           "v4": corpus.conversation_v4, "v5": corpus.conversation_v5, "v6": corpus.conversation_v6,
           "v7": corpus.conversation_v7, "v8": corpus.conversation_v8, "v8d": corpus.conversation_v8d,
           "v9": corpus.conversation_v9,
           "lookup": corpus.lookup_drill, "drills": corpus.conversation_drills,
           "drills-lookup": corpus.conversation_drills_lookup,
           "drills-lookup-q": corpus.conversation_drills_lookup_q, "v10q": corpus.conversation_v10q,
           "v5q": corpus.conversation_v5q, "lookup-dense": corpus.conversation_lookup_dense}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--conversations", type=int, default=30000)
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--max-len", type=int, default=1024)
    ap.add_argument("--batch-tokens", type=int, default=8192)
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--ckpt-every", type=int, default=100)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu",
                    help="cpu, or cuda (a GPU: the batch stream, schedule and checkpoints are the same; the sums "
                         "are not bit-identical to a CPU run's)")
    ap.add_argument("--workers", type=int, default=1,
                    help="processes that tokenize the corpus (same data in the same order as one)")
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--minutes", type=float, default=0,
                    help="train for this wall time instead of --steps: the cosine schedule runs over the time "
                         "budget and every step's lr is saved to lr_schedule.json, which --lr-file replays exactly")
    ap.add_argument("--lr-file", default="", help="replay a saved lr_schedule.json (one lr per step)")
    ap.add_argument("--corpus", default="v1", choices=list(CORPORA),
                    help="v1: corpus.conversation (first stage); v2: corpus.conversation_v2 (second stage); "
                         "v3: corpus.conversation_v3 (v2 with invented values half of the time: the copy stage); "
                         "v4: corpus.conversation_v4 (v3 with a quarter copy drills); v5: corpus.conversation_v5 (v3 with "
                         "40 %% short copy drills without a tools block); v6: corpus.conversation_v6 (v3 with mostly "
                         "invented tool and parameter names, 20 %% drills); v7: corpus.conversation_v7 (v5 with 2-5 declared "
                         "tools per tool conversation); v8 / v8d: corpus.conversation_v8 / _v8d (2-5 tools, mostly "
                         "invented names; v8d's reasoning quotes the tool's description before its name); v9: "
                         "corpus.conversation_v9 (v8 with 40 %% tool-name lookup drills); lookup: corpus.lookup_drill (the lookup "
                         "drills alone: a probe of whether the binding can be learned); drills: "
                         "corpus.conversation_drills (the drills alone: a first stage from scratch); drills-lookup: "
                         "corpus.conversation_drills_lookup (half drills, half lookup drills with invented names: "
                         "a first stage from scratch that trains the name lookup before any name can be remembered); "
                         "drills-lookup-q: the same with the tool's name quoted in the reasoning (an exact token copy "
                         "of the tools block); v10q: the tool stage after it (drills, quoted lookups, v3 conversations "
                         "with quoted names in the call reasoning); v5q: v5 with quoted names in the call reasoning; "
                         "lookup-dense: corpus.conversation_lookup_dense (a quarter drills, three quarters lookup "
                         "drills without reasoning, each answer a lookup of an invented name: a first stage from scratch)")
    ap.add_argument("--copy-weight", type=float, default=1.0,
                    help="loss weight of copy targets (see copy_weights); 1 = plain cross entropy")
    ap.add_argument("--copy-common", type=int, default=200,
                    help="the most frequent target tokens that never count as copy targets")
    ap.add_argument("--layers", type=int, default=4,
                    help="transformer blocks (compressor ratios 0, 0, then 4 and 128 alternating; the first 3 "
                         "hash-routed); with --init / --init-gguf it must match those weights")
    ap.add_argument("--heads", type=int, default=2,
                    help="attention query heads per block (one shared KV row, as in DS4); a multiple of the 2 "
                         "output groups; with --init / --init-gguf it must match those weights")
    ap.add_argument("--tokenizer", default="", help="use this tokenizer.json instead of training one")
    ap.add_argument("--tie-output", type=float, default=0.0,
                    help="train the output head as output + SCALE * token_embd (output free, starting as the "
                         "initial head); checkpoints hold the whole head in `output`")
    ap.add_argument("--init", default="", help="start from this checkpoint's weights and optimizer state "
                                              "(a new stage: step, schedule and batch stream start afresh)")
    ap.add_argument("--init-gguf", default="",
                    help="start from the weights of a GGUF with F32 tensors (`ds4ctl dequantize` of a shipped "
                         "model: the weights the engine computes with) and a fresh optimizer state; a new stage "
                         "like --init. With --tie-output the free head is the GGUF head minus the embedding term")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    t0 = time.time()
    gen = CORPORA[a.corpus]
    tok, data, corpus_hash, prefix = build_data(a.seed, a.conversations, a.vocab, a.max_len, a.out,
                                                a.tokenizer or None, gen, a.workers)
    dev = torch.device(a.device)
    prefix_dev = prefix.to(dev)  # the shared prompt head, moved once rather than every step
    n_tok = sum(len(d[0]) for d in data)
    n_tgt = sum(int(d[1].sum()) for d in data)
    print("data: %d conversations, %d tokens (%d targets), corpus sha256 %s, tokenizer %s, %.0fs" %
          (len(data), n_tok, n_tgt, corpus_hash, tok.digest(), time.time() - t0), flush=True)
    weights = None
    if a.copy_weight != 1.0:
        weights, share = copy_weights(data, prefix, a.copy_weight, a.copy_common)
        print("copy targets: %.1f%% of the targets, weight %g" % (100 * share, a.copy_weight), flush=True)
    with open(os.path.join(a.out, "corpus.json"), "w") as f:
        json.dump({"corpus_sha256": corpus_hash, "tokenizer_sha256": tok.digest(), "conversations": len(data),
                   "tokens": n_tok, "target_tokens": n_tgt, "seed": a.seed, "args": vars(a)}, f, indent=1)

    cfg = Config(n_vocab=len(tok.tokens), n_layer=a.layers, n_head=a.heads)
    model = DS4(cfg, seed=a.seed).to(dev)
    n_params = sum(p.numel() for p in model.parameters())
    print("model: %d parameters, config %s" % (n_params, cfg), flush=True)
    decay = [p for n, p in model.named_parameters() if p.requires_grad and p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.requires_grad and p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95))
    step = 0
    st, st0 = {}, {}
    ck = os.path.join(a.out, "checkpoint.pt")
    if a.init:
        st0 = torch.load(a.init, map_location=dev)
        model.load_state_dict(st0["model"])
        opt.load_state_dict(st0["opt"])
        print("initialised from %s (its step %d)" % (a.init, st0["step"]), flush=True)
    if a.init_gguf:
        load_dequantized(model, a.init_gguf)
        if a.tie_output:
            # the GGUF head is the whole head (output + tie * token_embd, see tied_state)
            with torch.no_grad():
                model.output.sub_(model.token_embd * a.tie_output)
        print("initialised from the weights of %s" % a.init_gguf, flush=True)
    if a.resume and os.path.exists(ck):
        st = torch.load(ck, map_location=dev)
        model.load_state_dict(st["model"])
        opt.load_state_dict(st["opt"])
        step = st["step"]
        print("resumed at step %d" % step, flush=True)
    if a.tie_output:
        model.tie_scale = a.tie_output
        if step and st.get("head_free") is not None:
            with torch.no_grad():
                model.output.copy_(st["head_free"])
        elif a.init and st0.get("head_free") is not None and st0.get("tie_scale") == a.tie_output:
            # continuing a head trained the same way: its free part, so the embedding is added once
            with torch.no_grad():
                model.output.copy_(st0["head_free"])
        # otherwise `output` keeps the head it had: the embedding term is added on top (a copy prior)
        print("output head: output + %g * token_embd" % a.tie_output, flush=True)
    rng = random.Random(a.seed + 7)
    warm = 10
    replay = json.load(open(a.lr_file)) if a.lr_file else None
    if replay:
        a.steps = len(replay)
    lrs = list(st.get("lrs", [])) if step else []

    def lr_at(s):
        if replay:
            return replay[min(s, len(replay) - 1)]
        if s < warm:
            return a.lr * (s + 1) / warm
        if a.minutes:
            q = (time.time() - t_start) / (a.minutes * 60)
        else:
            q = (s - warm) / max(1, a.steps - warm)
        return a.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, q))))

    queue = []
    # A resumed run continues the batch stream of an uninterrupted one: draw and drop the batches
    # the first `step` steps used.
    for _ in range(step):
        if not queue:
            queue = batches(rng, data, a.batch_tokens)
        queue.pop()
    t_start = time.time()
    seen = 0
    ema = copy_ema = None
    if a.minutes and not replay:
        a.steps = 10 ** 9
    while step < a.steps:
        if a.minutes and not replay and time.time() - t_start > a.minutes * 60:
            break
        if not queue:
            queue = batches(rng, data, a.batch_tokens)
        idx = queue.pop()
        x, m, wt = (v.to(dev, non_blocking=True) for v in collate(data, idx, tok.eos, weights))
        lr = lr_at(step)
        lrs.append(lr)
        for g in opt.param_groups:
            g["lr"] = lr
        tgt = m[:, 1:]
        logits = model(x[:, :-1], targets=tgt, prefix=prefix_dev if data[idx[0]][2] else None)
        ce = F.cross_entropy(logits, x[:, 1:][tgt], reduction="none")
        if weights is None:
            loss = ce.mean()
        else:
            w = wt[:, 1:][tgt]
            loss = (ce * w).sum() / w.sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        seen += x.numel() + (len(prefix) * x.shape[0] if data[idx[0]][2] else 0)
        # the logged loss is the plain cross entropy, comparable across stages and weightings
        ce_mean = ce.mean().item()
        ema = ce_mean if ema is None else 0.95 * ema + 0.05 * ce_mean
        if weights is not None and bool((w > 1).any()):
            # cross entropy on the copy targets alone: falls when copying is being learned
            cc = ce[w > 1].mean().item()
            copy_ema = cc if copy_ema is None else 0.95 * copy_ema + 0.05 * cc
        if step % 10 == 0 or step == 1:
            el = time.time() - t_start
            print("step %d loss %.4f ema %.4f%s lr %.2e tokens %d tok/s %.0f elapsed %.0fs" %
                  (step, ce_mean, ema, "" if copy_ema is None else " copy_ema %.4f" % copy_ema, lr, seen,
                   seen / el, el), flush=True)
        if step % a.ckpt_every == 0 or step == a.steps:
            save(model, opt, step, cfg, lrs, ck)
    save(model, opt, step, cfg, lrs, ck)
    with open(os.path.join(a.out, "lr_schedule.json"), "w") as f:
        json.dump(lrs, f)
    print("done: %d steps, %d tokens, %.0fs" % (step, seen, time.time() - t_start), flush=True)


if __name__ == "__main__":
    main()
