"""Writes models/ds4-tiny-agent.manifest.json: how the embedded model was made and how good it is.

  /usr/bin/python3 tools/tinyagent/make_manifest.py --run RUN --gguf models/ds4-tiny-agent.gguf \
      --eval eval200.json --eval20 eval20.json --parity parity_report.json --engine-parity ENGINE.txt \
      --train-command "..." --out models/ds4-tiny-agent.manifest.json
"""
import argparse
import hashlib
import json
import os
import re

FAMILIES = {
    "routed experts (ffn_gate_exps, ffn_up_exps)": "iq2_xxs",
    "routed experts (ffn_down_exps)": "q2_K",
    "attention (attn_q_a, attn_q_b, attn_kv, attn_output_a/b)": "q8_0",
    "shared expert (ffn_*_shexp)": "q8_0",
    "output head (output)": "q8_0",
    "embedding (token_embd)": "f16",
    "hyper-connections (hc_*_fn, output_hc_fn)": "f16",
    "compressor and indexer": "f16",
    "router (ffn_gate_inp)": "f16",
    "norms, HC scale/base, attn_sinks, exp_probs_b": "f32",
    "tid2eid (hash routing, layers 0-2)": "i32",
}


def families(recipe):
    """FAMILIES for the q2 recipe; the q4 recipe differs only in the routed experts (toolchain/convert/recipe)."""
    f = dict(FAMILIES)
    if recipe == "q4":
        f["routed experts (ffn_gate_exps, ffn_up_exps)"] = "q4_K"
        f["routed experts (ffn_down_exps)"] = "q4_K"
    elif recipe != "q2":
        raise SystemExit("make_manifest: no family table for recipe " + recipe)
    return f


def rates(e):
    out = {}
    for k in ("dsml", "call", "answer", "plain"):
        if k not in e:
            continue
        out[k] = {g: {"pass": e[k][g][0], "n": e[k][g][1], "rate": round(e[k][g][0] / e[k][g][1], 3) if e[k][g][1] else None}
                  for g in ("seen", "heldout")}
    out["ids_mismatch"] = e["ids_mismatch"]
    return out


def stage(run, command, hardware):
    """One training stage's record from its run directory (corpus.json, train.log)."""
    c = json.load(open(os.path.join(run, "corpus.json")))
    log = open(os.path.join(run, "train.log")).read()
    steps = re.findall(r"step (\d+) loss ([\d.]+) ema ([\d.]+)(?: copy_ema [\d.]+)? lr \S+ tokens (\d+) tok/s (\d+) elapsed (\d+)s", log)
    done = re.search(r"done: (\d+) steps, (\d+) tokens, (\d+)s", log)
    if not done and steps:  # a stage stopped after a checkpoint: its last logged step is that checkpoint's
        done = re.match(r"(\d+) (\d+) (\d+)", "%s %s %s" % (steps[-1][0], steps[-1][3], steps[-1][5]))
    tie = re.search(r"output head: output \+ ([\d.e-]+) \* token_embd", log)
    return {
        "command": command,
        "seed": c["seed"],
        "corpus": c["args"].get("corpus", "v1"),
        "corpus_sha256": c["corpus_sha256"],
        "tokenizer_sha256": c["tokenizer_sha256"],
        "conversations": c["conversations"],
        "corpus_tokens": c["tokens"],
        "corpus_target_tokens": c["target_tokens"],
        "steps": int(done.group(1)) if done else None,
        "tokens_processed": int(done.group(2)) if done else None,
        "seconds": int(done.group(3)) if done else None,
        "tokens_per_second": round(int(done.group(2)) / max(1, int(done.group(3))), 1) if done else None,
        "final_loss_ema": float(steps[-1][2]) if steps else None,
        "output_head": ("trained as output + %s * token_embd (the GGUF head tensor holds the sum)" % tie.group(1))
                       if tie else "trained as its own tensor",
        "hardware": hardware,
        "replay": "train.py --lr-file with this stage's lr_schedule replays the exact per-step learning rates",
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", required=True)
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--eval", required=True)
    ap.add_argument("--eval20", required=True)
    ap.add_argument("--eval-free", default="", help="eval-agent --free scores on the 200 (the model alone)")
    ap.add_argument("--eval20-free", default="", help="eval-agent --free scores on the 20")
    ap.add_argument("--parity", required=True)
    ap.add_argument("--engine-parity", required=True, help="models_tests parity output (the [ parity ] lines)")
    ap.add_argument("--train-command", required=True)
    ap.add_argument("--prior", action="append", default=[], metavar="RUN_DIR=COMMAND",
                    help="an earlier training stage, in order (--run started with train.py --init from the last)")
    ap.add_argument("--recipe", default="q2")
    ap.add_argument("--hardware", default="2 x86-64 cores, one run per core, 1 torch thread each, OpenBLAS",
                    help="where the stages ran (one line for all stages)")
    ap.add_argument("--notes", default="")
    ap.add_argument("--parity-q4", default="", help="parity.py report on the q4-expert dequantized weights")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    training = stage(a.run, a.train_command, a.hardware)
    if a.prior:
        training = {"stages": [stage(*p.split("=", 1), a.hardware) for p in a.prior] + [training],
                    "total_steps": None, "total_tokens_processed": None, "total_seconds": None}
        for k, f in (("total_steps", "steps"), ("total_tokens_processed", "tokens_processed"),
                     ("total_seconds", "seconds")):
            training[k] = sum(s[f] or 0 for s in training["stages"])
    log = open(os.path.join(a.run, "train.log")).read()
    cfg = re.search(r"model: (\d+) parameters, config (.*)", log)
    eng = [tuple(map(float, m)) for m in re.findall(
        r"Pearson ([\d.]+), rms/std ([\d.]+), max\|d\|/max\|logit\| ([\d.]+)", open(a.engine_parity).read())]
    par = json.load(open(a.parity))
    m = {
        "model": os.path.basename(a.gguf),
        "sha256": hashlib.sha256(open(a.gguf, "rb").read()).hexdigest(),
        "bytes": os.path.getsize(a.gguf),
        "architecture": "DeepSeek V4 Flash (deepseek4), tiny dimensions: " + (cfg.group(2) if cfg else "?"),
        "parameters": int(cfg.group(1)) if cfg else None,
        "training": training,
        "quantization": {"recipe": a.recipe, "by_family": families(a.recipe),
                         "tool": "ds4ctl quantize (toolchain/convert recipe + quantize_rows)"},
        "quality_decoding": "greedy as the server decodes tool requests (ds4ctl eval-agent default): declared tool "
                            "and parameter names only, value spelling by schema type, a choice among several names "
                            "weighed whole by the model (a tool name with its call's opening up to its first "
                            "parameter's name), no end inside a call (gateway/serving/dsml_token_policy.hpp, "
                            "token_choice.hpp); *_model_alone: plain greedy (eval-agent --free)",
        "quality_200_heldout_prompts": rates(json.load(open(a.eval))),
        "quality_200_heldout_prompts_model_alone": rates(json.load(open(a.eval_free))) if a.eval_free else None,
        "quality_test_20_prompts": rates(json.load(open(a.eval20))),
        "quality_test_20_prompts_model_alone": rates(json.load(open(a.eval20_free))) if a.eval20_free else None,
        "parity": {
            "reference": "tools/tinyagent/ds4model.py on the dequantized GGUF weights, activation formats simulated",
            "vectors": "ds4-tiny-agent.parity.bin (ds4-tiny cases.bin format)",
            "engine_vs_reference": {
                "steps_compared": len(eng),
                "min_pearson": min(e[0] for e in eng) if eng else None,
                "max_rms_over_std": max(e[1] for e in eng) if eng else None,
                "max_absdiff_over_max_logit": max(e[2] for e in eng) if eng else None,
            },
            "float32_no_simulation_vs_reference": {
                "min_pearson": min(p["f32_vs_ref_min_pearson"] for p in par),
                "max_rms_over_std": max(p["f32_vs_ref_max_rms_over_std"] for p in par),
                "max_absdiff_over_max_logit": max(p["f32_vs_ref_max_over_maxabs"] for p in par),
                "argmax_agreement": round(sum(p["f32_vs_ref_argmax_agree"] for p in par) / len(par), 3),
            },
            "cases": par,
        },
        "expert_recipe_check": None if not a.parity_q4 else {
            "what": "float32 trained weights without simulation vs the simulated reference, q2 experts vs q4_K experts",
            "q2": {"min_pearson": min(p["f32_vs_ref_min_pearson"] for p in par),
                   "max_rms_over_std": max(p["f32_vs_ref_max_rms_over_std"] for p in par)},
            "q4_K": {"min_pearson": min(p["f32_vs_ref_min_pearson"] for p in json.load(open(a.parity_q4))),
                     "max_rms_over_std": max(p["f32_vs_ref_max_rms_over_std"] for p in json.load(open(a.parity_q4)))},
        },
        "notes": a.notes,
    }
    json.dump(m, open(a.out, "w"), indent=1)
    print(json.dumps({k: m[k] for k in ("bytes", "quality_200_heldout_prompts")}, indent=1))


if __name__ == "__main__":
    main()
