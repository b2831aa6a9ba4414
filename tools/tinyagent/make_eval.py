"""Writes the held-out evaluation cases (corpus.eval_set) as JSON lines for `ds4ctl eval-agent`,
with the Python tokenizer's ids of each rendered prompt so the evaluator can check that Python
and C++ tokenize and render identically.

  /usr/bin/python3 tools/tinyagent/make_eval.py --run RUN_DIR --out cases.jsonl [--n 200] [--seed 424242]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bpe  # noqa: E402
import corpus  # noqa: E402
import ds4chat  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--seed", type=int, default=424242)
    a = ap.parse_args()
    t = json.load(open(os.path.join(a.run, "tokenizer.json")))
    tok = bpe.Tokenizer(t["tokens"], t["merges"])
    with open(a.out, "w") as f:
        for c in corpus.eval_set(a.seed, a.n):
            r = c["request"]
            text, _ = ds4chat.render(r["messages"], r.get("tools", []), True)
            c["prompt_ids"] = tok.encode(text)
            f.write(json.dumps(c, separators=(",", ":")) + "\n")
    print("%s: %d cases" % (a.out, a.n))


if __name__ == "__main__":
    main()
