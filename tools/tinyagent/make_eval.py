"""Writes the held-out evaluation cases (corpus.eval_set) as JSON lines for `ds4ctl eval-agent`,
with the Python tokenizer's ids of each rendered prompt so the evaluator can check that Python
and C++ tokenize and render identically.

  /usr/bin/python3 tools/tinyagent/make_eval.py --run RUN_DIR --out cases.jsonl [--n 200] [--seed 424242]

--schemas VARIANT writes corpus.diagnostic_set instead: n call cases whose schemas are all drawn
one way (seen, heldout, invented-names, invented-both, heldout-names, heldout-params), to see
which part of an unfamiliar schema costs the calls (n defaults to 60 there, seed to 777).
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
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--schemas", choices=corpus.SCHEMA_VARIANTS, default=None,
                    help="a diagnostic call set with every schema drawn this way (corpus.diagnostic_set)")
    a = ap.parse_args()
    n_default, seed_default = (60, 777) if a.schemas else (200, 424242)
    a.n = n_default if a.n is None else a.n
    a.seed = seed_default if a.seed is None else a.seed
    cases = corpus.diagnostic_set(a.seed, a.n, a.schemas) if a.schemas else corpus.eval_set(a.seed, a.n)
    t = json.load(open(os.path.join(a.run, "tokenizer.json")))
    tok = bpe.Tokenizer(t["tokens"], t["merges"])
    with open(a.out, "w") as f:
        for c in cases:
            r = c["request"]
            text, _ = ds4chat.render(r["messages"], r.get("tools", []), True)
            c["prompt_ids"] = tok.encode(text)
            f.write(json.dumps(c, separators=(",", ":")) + "\n")
    print("%s: %d cases" % (a.out, a.n))


if __name__ == "__main__":
    main()
