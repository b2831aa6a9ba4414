"""How well a model looks a tool's name up from its description, without the rest of a call:
on one-turn prompts with 3-5 declared tools whose reasoning is cut where the tool is named
(--form call: a request and "The user wants <intent>. The", as call conversations reason;
--form lookup: corpus v9's "Which tool fits this request: ..." and "... The tool for that is"), the
share whose greedy continuation is the right tool's name, by how the schemas were drawn
(corpus.SCHEMA_VARIANTS).

  /usr/bin/python3 tools/tinyagent/lookup_probe.py --run RUN_DIR --dequantized MODEL-F32.gguf [--n 30] [--form call]

RUN_DIR gives the tokenizer and the dimensions; the weights come from the dequantized GGUF
(`ds4ctl dequantize` of the q2 model), so the probe reads the model the engine serves.
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
from ds4model import DS4, Config  # noqa: E402
from export import load_dequantized  # noqa: E402
from parity import last_logits  # noqa: E402
from train import encode_with_mask  # noqa: E402


# Where the name is asked for: after the lookup drill's question and reasoning (corpus v9), or in a
# call conversation's reasoning as corpus.reasoning_call's first template writes it.
FORMS = {
    "lookup": (lambda t: corpus.LOOKUP_ASKS[0].format(u=t["user"]), corpus.LOOKUP_REASON[0]),
    "call": (lambda t: t["user"], "The user wants {i}. The {n} tool fits."),
    # the quoted-name forms (corpus.lookup_drill_q, corpus.reasoning_call_q): cut before the name,
    # after its opening quote
    "lookup-q": (lambda t: corpus.LOOKUP_ASKS[0].format(u=t["user"]), corpus.LOOKUP_REASON_Q[0]),
    "call-q": (lambda t: t["user"], "The user wants {i}. The tool \"{n}\" fits."),
}


def probe_prompt(rng, variant, form):
    """(text up to the name, the assistant span's start, the continuation that names the tool:
    " NAME", or NAME in a `-q` form) for one single-turn prompt with 3-5 declared tools whose
    reasoning is cut right before it (a `-q` form: right after the name's opening quote)."""
    tools = [corpus._variant_schema(rng, d, variant)
             for d in rng.sample(sorted(corpus.DOMAINS), rng.choice([3, 4, 4, 5]))]
    tool = rng.choice(tools)
    t = corpus.task(rng, tool["domain"])
    ask, reason = FORMS[form]
    msgs = [{"role": "user", "content": ask(t)},
            {"role": "assistant", "content": tool["name"], "reasoning_content": reason.format(i=t["intent"], n=tool["name"])}]
    text, spans = ds4chat.render(msgs, [x["schema"] for x in tools], True)
    quoted = form.endswith("-q")
    want = tool["name"] if quoted else " " + tool["name"]
    cut = text.index(("\"" if quoted else "") + want, text.rindex("<think>")) + quoted
    return text[:cut], spans[-1][0], want


def greedy(model, ids, n):
    """n greedy tokens after ids (no cache: a full forward per token)."""
    out = []
    for _ in range(n):
        out.append(int(torch.argmax(last_logits(model, ids + out, True))))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", required=True)
    ap.add_argument("--dequantized", required=True)
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--seed", type=int, default=555)
    ap.add_argument("--form", choices=sorted(FORMS), default="call")
    ap.add_argument("--variants", default=",".join(corpus.SCHEMA_VARIANTS),
                    help="comma-separated schema variants to probe (corpus.SCHEMA_VARIANTS)")
    ap.add_argument("--show", action="store_true", help="print each prompt's name and continuation")
    a = ap.parse_args()
    torch.set_num_threads(1)
    st = torch.load(os.path.join(a.run, "checkpoint.pt"))
    model = DS4(Config(**st["cfg"]))
    load_dequantized(model, a.dequantized)
    model.eval()
    t = json.load(open(os.path.join(a.run, "tokenizer.json")))
    tok = bpe.Tokenizer(t["tokens"], t["merges"])
    scores = {}
    for variant in a.variants.split(","):
        rng = random.Random(a.seed)
        right = 0
        for _ in range(a.n):
            prompt, start, want = probe_prompt(rng, variant, a.form)
            ids, _ = encode_with_mask(tok, prompt, [(start, len(prompt))])  # as training encodes it
            got = tok.decode(greedy(model, ids, len(tok.encode(want)) + 1))
            right += got.startswith(want)
            if a.show:
                print("  %-5s want %-22r got %r" % (got.startswith(want), want, got), flush=True)
        scores[variant] = right / a.n
        print("%-15s %3d / %d = %5.1f %%" % (variant, right, a.n, 100.0 * right / a.n), flush=True)
    print(json.dumps(scores))


if __name__ == "__main__":
    main()
