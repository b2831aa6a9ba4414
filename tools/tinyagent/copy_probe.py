"""Probes whether a checkpoint can copy: renders tool-less copy drills (corpus.copy_drill) and
prints, per attention layer, the weight on the previous token per head (an induction circuit needs
a previous-token head near 1), the mean largest weight, the raw score range, and the cross entropy
on the reply, which repeats a string the model wrote itself a few tokens earlier.

  /usr/bin/python3 tools/tinyagent/copy_probe.py --ckpt RUN/checkpoint.pt --tokenizer RUN/tokenizer.json

The attention probabilities are read by wrapping torch.softmax while the probe runs (ds4model
computes them inline): a probe-only hook, never used in training or export.
"""
import argparse
import json
import os
import random
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bpe  # noqa: E402
import corpus  # noqa: E402
import ds4chat  # noqa: E402
import train  # noqa: E402
from ds4model import DS4, Config  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--seed", type=int, default=99)
    ap.add_argument("--n", type=int, default=4)
    a = ap.parse_args()
    torch.set_num_threads(1)
    t = json.load(open(a.tokenizer))
    tok = bpe.Tokenizer(t["tokens"], t["merges"])
    st = torch.load(a.ckpt)
    cfg = Config(**{k: v for k, v in st["cfg"].items()}) if "cfg" in st else Config(n_vocab=len(tok.tokens))
    model = DS4(cfg)
    model.load_state_dict(st["model"])
    model.eval()
    probs, raw = [], []
    softmax = torch.softmax

    def recording_softmax(x, dim=-1, **kw):
        y = softmax(x, dim=dim, **kw)
        if x.dim() == 4 and x.shape[1] == cfg.n_head and x.shape[-1] > cfg.n_hc:  # [B, H, T, K + sink]
            probs.append(y[0])
            raw.append(x[0, :, :, :-1])
        return y

    rng = random.Random(a.seed)
    think = tok.encode("</think>")[0]
    stats = [[0.0] * 4 for _ in range(cfg.n_layer)]
    reply_ce, n_reply = 0.0, 0
    torch.softmax = recording_softmax
    try:
        for _ in range(a.n):
            c = corpus.copy_drill(rng)
            c["tools"], c["messages"] = [], c["messages"][:2]
            text, spans = ds4chat.render(c["messages"], c["tools"], c["thinking"])
            ids, mask = train.encode_with_mask(tok, text, spans)
            probs.clear()
            raw.clear()
            with torch.no_grad():
                logits = model(torch.tensor(ids)[None, :-1])[0]
            lp = F.log_softmax(logits, -1)
            after = False
            for j in range(1, len(ids)):
                after = after or ids[j - 1] == think
                if mask[j] and after:  # the reply: a repeat of the reasoning's string
                    reply_ce -= lp[j - 1, ids[j]].item()
                    n_reply += 1
            T = len(ids) - 1
            for il, (p, r) in enumerate(zip(probs, raw)):
                prev = torch.stack([p[:, i, i - 1] for i in range(1, T)], -1).mean(-1)
                s = r[:, 8:][torch.isfinite(r[:, 8:])]
                for k, v in enumerate((prev.max().item(), p[..., :-1].amax(-1).mean().item(), s.max().item(),
                                       s.std().item())):
                    stats[il][k] += v / a.n
    finally:
        torch.softmax = softmax
    for il, (prev, mx, smax, sstd) in enumerate(stats):
        print("layer %d: previous-token weight (best head) %.3f, mean largest weight %.3f, raw score max %.2f std %.2f"
              % (il, prev, mx, smax, sstd))
    print("reply (a repeat of the model's own reasoning): %.2f nats per token over %d tokens" %
          (reply_ce / max(1, n_reply), n_reply))


if __name__ == "__main__":
    main()
