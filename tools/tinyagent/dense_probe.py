"""How well a training checkpoint answers corpus.lookup_dense's drills (every tool name invented,
each answer a lookup): teacher-forced, at the first token of each answer, the share where the
model's argmax is the right name's first token, and the share where, among the declared names'
first tokens, the right one scores highest (the choice the server's token rules leave the
model); first turns alone (no earlier answer in the drill) and all turns, with the chance level
of the declared choice.

  /usr/bin/python3 tools/tinyagent/dense_probe.py --run RUN_DIR [--n 150] [--seed 999]

RUN_DIR holds checkpoint.pt and tokenizer.json (train.py's --out).
"""
import argparse
import json
import os
import random
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bpe  # noqa: E402
import corpus  # noqa: E402
import ds4chat  # noqa: E402
import export  # noqa: E402
from train import encode_with_mask  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", required=True)
    ap.add_argument("--n", type=int, default=150, help="drills")
    ap.add_argument("--seed", type=int, default=999)
    a = ap.parse_args()
    torch.set_num_threads(1)
    model, st = export.load(a.run)
    model.eval()
    t = json.load(open(os.path.join(a.run, "tokenizer.json")))
    tok = bpe.Tokenizer(t["tokens"], t["merges"])
    rng = random.Random(a.seed)
    right = {"first": [0, 0, 0], "all": [0, 0, 0]}  # argmax right, declared choice right, answers
    chance = []
    for _ in range(a.n):
        c = corpus.lookup_dense(rng)
        text, spans = ds4chat.render(c["messages"], c["tools"], False)
        ids, mask = encode_with_mask(tok, text, spans)
        firsts = sorted({tok.encode(tl["function"]["name"])[0] for tl in c["tools"]})
        with torch.no_grad():
            logits = model(torch.tensor([ids[:-1]]))[0]
        starts = [j for j in range(1, len(ids)) if mask[j] and not mask[j - 1]]
        for k, j in enumerate(starts):
            lg = logits[j - 1]
            am = int(lg.argmax()) == ids[j]
            dec = max(firsts, key=lambda f: float(lg[f])) == ids[j]
            for key in ("first", "all") if k == 0 else ("all",):
                right[key][0] += am
                right[key][1] += dec
                right[key][2] += 1
            if k == 0:
                chance.append(1.0 / len(firsts))
    f, al = right["first"], right["all"]
    print("%s (step %d): first turns: argmax %.1f %%, declared choice %.1f %% (chance %.1f %%), n=%d; "
          "all turns: argmax %.1f %%, declared choice %.1f %%, n=%d" %
          (a.run, st["step"], 100 * f[0] / f[2], 100 * f[1] / f[2], 100 * sum(chance) / len(chance), f[2],
           100 * al[0] / al[2], 100 * al[1] / al[2], al[2]))


if __name__ == "__main__":
    main()
