"""The MTP (multi-token-prediction) drafter of a DS4 model in PyTorch, with the semantics the
engine's `mtp:FILE` drafter follows (docs/speculation.md): one extra block that reads the base
model's final hyper-connection state of position p-1 and the embedding of token p (DeepSeek-V3's
pairing) and predicts token p+1 with the base's own output matrix. Its drafts are accepted when
they equal the base model's choice, so it is trained by self-distillation on the frozen base
(train_mtp.py).

One step at position p, input token t = x_p, previous state P [n_hc, D]:
  e = RMSNorm(token_embd[t]) * enorm;  E = e_proj . e
  Hin[h] = E + h_proj . (RMSNorm(P[h]) * hnorm)        for each stream h
  Hout = Block(Hin)   a ratio-0 layer: raw sliding-window attention over the MTP block's own rows,
                      plain RoPE, sinks; MoE with top-k routing + exp_probs_b (never hash routing)
  logits = output . collapse(Hout; hc_head_fn/scale/base, norm)
Hout is the P of the next recursive step (depth 2, 3, ...).

Parameter names are the sidecar's tensor names after "mtp.0." (the block's are blk.N.*'s), so the
export (train_mtp.py --export) is a rename.
"""
import math

import torch
import torch.nn as nn

from ds4model import Block, hc_collapse, rms


class MTP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        c = cfg
        D = c.n_embd
        hcd = c.n_hc * D
        P = nn.Parameter
        self.e_proj = P(torch.randn(D, D) / math.sqrt(D))
        self.h_proj = P(torch.randn(D, D) / math.sqrt(D))
        self.enorm = P(torch.ones(D))
        self.hnorm = P(torch.ones(D))
        # il = 1: a ratio-0 layer with layer 1's SwiGLU clamp; hash=False: top-k routing
        self.block = Block(c, 1, hash=False)
        assert self.block.ratio == 0
        self.hc_head_fn = P(torch.randn(c.n_hc, hcd) * 0.1 / math.sqrt(hcd))
        self.hc_head_scale = P(torch.ones(1))
        self.hc_head_base = P(torch.zeros(c.n_hc))
        self.norm = P(torch.ones(D))

    def init_from_base(self, base, e_gain, h_gain):
        """Block from the base's layer 1 (attention, FFN, its hyper-connections; exp_probs_b zero),
        head collapse from output_hc_* / output_norm, e_proj / h_proj = gain * identity: the block
        starts as a trained layer reading a state on the scale the base's layers see."""
        D = self.cfg.n_embd
        with torch.no_grad():
            src = dict(base.blocks[1].named_parameters())
            for n, p in self.block.named_parameters():
                p.copy_(src[n])
            self.block.exp_probs_b.zero_()
            self.hc_head_fn.copy_(base.output_hc_fn)
            self.hc_head_scale.copy_(base.output_hc_scale)
            self.hc_head_base.copy_(base.output_hc_base)
            self.norm.copy_(base.output_norm)
            self.e_proj.copy_(torch.eye(D) * e_gain)
            self.h_proj.copy_(torch.eye(D) * h_gain)
            self.enorm.fill_(1.0)
            self.hnorm.fill_(1.0)

    def inputs(self, tokens, P, embd):
        """Hin [B, T, n_hc, D] for tokens [B, T] and previous states P [B, T, n_hc, D]."""
        c = self.cfg
        e = rms(embd[tokens], c.eps) * self.enorm
        E = e @ self.e_proj.t()
        h = (rms(P, c.eps) * self.hnorm) @ self.h_proj.t()
        return E[:, :, None, :] + h

    def forward(self, tokens, P, embd, prefix=None):
        """Hout for a whole sequence of MTP rows: tokens [B, T] with their previous states P
        [B, T, n_hc, D] (row j attends to rows <= j within the window, so row j must be position
        p0 + j: RoPE and the window are relative, the absolute offset p0 does not matter).
        prefix: (tokens [1, Pn], P [1, Pn, n_hc, D]) rows shared by every sequence, before them
        (Block's prefix form). Returns [Hout_prefix or None, Hout]."""
        Hs = [None if prefix is None else self.inputs(prefix[0], prefix[1], embd), self.inputs(tokens, P, embd)]
        toks = [None if prefix is None else prefix[0], tokens]
        # the block is not hash-routed, so it never reads tid2eid
        return self.block(Hs, toks, None, False)

    def collapse(self, Hout):
        """The head's normed row [..., D] from Hout [..., n_hc, D] (mtp.0.hc_head_* and mtp.0.norm)."""
        c = self.cfg
        shp = Hout.shape
        y = hc_collapse(Hout.reshape(1, -1, c.n_hc, c.n_embd), self.hc_head_fn, self.hc_head_scale,
                        self.hc_head_base, self.norm, c.eps)
        return y.reshape(*shp[:-2], c.n_embd)

    def logits(self, Hout, output):
        """Draft logits [..., vocab] with the base's output matrix (argmax = the draft)."""
        return self.collapse(Hout) @ output.t()


def sidecar_params(mtp):
    """(sidecar tensor name, parameter) in the catalogue's order (toolchain/convert/mtp_sidecar.cpp
    mtp_catalogue): the MTP's own tensors, then the block's under blk.N.*'s names."""
    from export import gguf_name
    out = [("mtp.0.%s.weight" % n, getattr(mtp, n)) for n in
           ("hc_head_base", "hc_head_fn", "hc_head_scale", "e_proj", "h_proj", "enorm", "hnorm", "norm")]
    return out + [("mtp.0." + gguf_name(n), p) for n, p in mtp.block.named_parameters()]


def gguf_tensors(mtp):
    """(name, float32 array, GGUF dims) of the sidecar: a PyTorch [out, in] matrix is GGUF [in, out],
    experts [E, out, in] are [in, out, E] (engine/gguf/ds4_layout.cpp's dims)."""
    out = []
    for name, p in sidecar_params(mtp):
        a = p.detach().to(torch.float32).contiguous().numpy()
        out.append((name, a, list(reversed(a.shape))))
    return out


def load_gguf(mtp, tensors):
    """Copies a sidecar's tensors (gguf_io.read's dict: F32, or decoded with dequantize=True) into `mtp`."""
    with torch.no_grad():
        for name, p in sidecar_params(mtp):
            p.copy_(torch.from_numpy(tensors[name].copy()).reshape(p.shape))
