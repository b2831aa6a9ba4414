"""Parity vectors for the embedded agent model: logits of the PyTorch reference (ds4model.py) on
the dequantized GGUF weights with the engine's activation formats simulated (sim=True), for a few
prompts, written in the ds4-tiny cases.bin format (see ../shared/vectors/ds4-tiny/README.md) so the
engine's test reads them without torch. Also writes the same cases computed in float32 without any
simulation on the trained (unquantized) weights, which shows how far the q2 recipe and activation
quantization move this model.

  /usr/bin/python3 tools/tinyagent/parity.py --run RUN --dequantized deq.gguf --cases eval.jsonl \
      --out models/ds4-tiny-agent.parity.bin --out-f32 models/ds4-tiny-agent.parity-f32.bin
"""
import argparse
import json
import os
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ds4model import DS4, Config  # noqa: E402
from export import load, load_dequantized  # noqa: E402


def last_logits(model, ids, sim):
    x = torch.tensor(ids)[None]
    tg = torch.zeros_like(x, dtype=torch.bool)
    tg[0, -1] = True
    with torch.no_grad():
        return model(x, sim=sim, targets=tg)[0].double()


def run_case(model, ids, n_gen, sim):
    """(prompt logits, greedy gen, logits after each gen token), teacher forcing = own greedy."""
    logits = last_logits(model, ids, sim)
    gen, gen_logits = [], []
    cur = logits
    seq = list(ids)
    for _ in range(n_gen):
        t = int(torch.argmax(cur))
        gen.append(t)
        seq.append(t)
        cur = last_logits(model, seq, sim)
        gen_logits.append(cur)
    return logits, gen, gen_logits


def write_cases(path, n_vocab, cases):
    with open(path, "wb") as f:
        f.write(struct.pack("<IIII", 0x54345344, 1, n_vocab, len(cases)))
        for name, ids, logits, gen, gl in cases:
            f.write(name.encode()[:16].ljust(16, b"\0"))
            f.write(struct.pack("<I", len(ids)) + np.array(ids, dtype=np.int32).tobytes())
            f.write(logits.float().numpy().astype(np.float32).tobytes())
            f.write(struct.pack("<I", len(gen)) + np.array(gen, dtype=np.int32).tobytes())
            for g in gl:
                f.write(g.float().numpy().astype(np.float32).tobytes())
            f.write(struct.pack("<I", 0))


def stats(ref, other):
    r, o = ref.numpy(), other.numpy()
    d = o - r
    return dict(pearson=float(np.corrcoef(r, o)[0, 1]), rms_over_std=float(np.sqrt((d ** 2).mean()) / r.std()),
                max_over_maxabs=float(np.abs(d).max() / np.abs(r).max()), argmax_same=bool(r.argmax() == o.argmax()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", required=True)
    ap.add_argument("--dequantized", required=True)
    ap.add_argument("--cases", required=True, help="eval cases (make_eval.py); the prompts come from here")
    ap.add_argument("--pick", default="0,3,10,13,19", help="case indices to use (call, held-out call, answer, held-out answer, held-out plain)")
    ap.add_argument("--n-gen", type=int, default=16)
    ap.add_argument("--out", required=True)
    ap.add_argument("--out-f32", required=True)
    ap.add_argument("--report", default="")
    a = ap.parse_args()
    torch.set_num_threads(1)
    trained, _ = load(a.run)
    ref = DS4(trained.cfg)
    load_dequantized(ref, a.dequantized)
    lines = open(a.cases).read().splitlines()
    cases, cases32, report = [], [], []
    for k in [int(x) for x in a.pick.split(",")]:
        c = json.loads(lines[k])
        ids = c["prompt_ids"]
        name = "%s%d" % (c["kind"], k)
        lg, gen, gl = run_case(ref, ids, a.n_gen, True)
        cases.append((name, ids, lg, gen, gl))
        # float32, no simulation, trained weights: teacher-forced on the reference's tokens
        l32 = last_logits(trained, ids, False)
        g32 = [last_logits(trained, ids + gen[:i + 1], False) for i in range(len(gen))]
        cases32.append((name, ids, l32, gen, g32))
        s = [stats(lg, l32)] + [stats(x, y) for x, y in zip(gl, g32)]
        margins = []
        for v in [lg] + gl:
            top = torch.topk(v, 2).values
            margins.append(float(top[0] - top[1]))
        report.append(dict(name=name, n_prompt=len(ids), gen=gen, margins=margins,
                           f32_vs_ref_min_pearson=min(x["pearson"] for x in s),
                           f32_vs_ref_max_rms_over_std=max(x["rms_over_std"] for x in s),
                           f32_vs_ref_max_over_maxabs=max(x["max_over_maxabs"] for x in s),
                           f32_vs_ref_argmax_agree=sum(x["argmax_same"] for x in s) / len(s)))
        print(json.dumps(report[-1]), flush=True)
    write_cases(a.out, trained.cfg.n_vocab, cases)
    write_cases(a.out_f32, trained.cfg.n_vocab, cases32)
    if a.report:
        json.dump(report, open(a.report, "w"), indent=1)


if __name__ == "__main__":
    main()
