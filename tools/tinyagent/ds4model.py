"""DeepSeek V4 Flash in PyTorch, written from ../shared/reference/ds4-architecture.md (section
numbers below refer to it), independent of the C++ engine. Every dimension is a Config field, so
the same code describes the 43-layer model and the tiny agent model trained here.

Two ways to run it:
  * training: the whole sequence at once (vectorised causal semantics: raw sliding window, the
    compressor rows a token may see, indexer top-k among them), float32, differentiable;
  * reference (`sim=True`): the same math plus the engine's activation formats (Q8_0 int8
    activations before Q8_0 matmuls, Q8_K activations for routed experts with `mid` re-quantized,
    FP8-E4M3 on KV rows, Hadamard+FP4 on the indexer, f16 rounding of cached rows), used on the
    dequantized GGUF weights to produce the parity vectors.

Parameter names are the GGUF names (dots become "__" inside nn.ModuleDict keys), so export is a
rename, not a mapping table.
"""
import math
from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Config:
    n_layer: int = 4
    n_embd: int = 256
    n_vocab: int = 4096
    n_head: int = 2
    head_dim: int = 128
    n_rot: int = 64
    q_lora: int = 128
    out_lora: int = 128
    out_groups: int = 2
    n_expert: int = 8
    n_expert_used: int = 2
    n_ff: int = 256
    n_hash: int = 3
    window: int = 512
    idx_heads: int = 2
    idx_dim: int = 128
    idx_top_k: int = 32
    n_hc: int = 4
    sinkhorn: int = 20
    eps: float = 1e-6
    rope_base: float = 10000.0
    comp_rope_base: float = 160000.0
    yarn_factor: float = 16.0
    yarn_orig_ctx: int = 65536
    beta_fast: float = 32.0
    beta_slow: float = 1.0
    expert_scale: float = 1.5
    clamp: float = 10.0
    ratios: list = field(default_factory=list)

    def __post_init__(self):
        if not self.ratios:
            self.ratios = [0 if i < 2 else (4 if i % 2 == 0 else 128) for i in range(self.n_layer)]

    @property
    def n_nope(self):
        return self.head_dim - self.n_rot

    @property
    def hc_mix(self):
        return (2 + self.n_hc) * self.n_hc


# ---------------------------------------------------------------------------------------------
# Format simulations (section 5.2/5.3). All take and return float32 tensors.
def round_half_even(x):
    return torch.round(x)  # torch.round rounds half to even, like lrintf in the default mode


def sim_q8_0(x):
    """Per-32 int8 activation of Q8_0 matmuls: d = amax/127, q = rint(x * (1/d))."""
    s = x.shape
    b = x.reshape(-1, 32)
    amax = b.abs().amax(dim=1, keepdim=True)
    d = amax / 127.0
    inv = torch.where(d > 0, 1.0 / d, torch.zeros_like(d))
    q = round_half_even(b * inv).clamp(-128, 127)
    return (q * d).reshape(s)


def sim_q8_k(x):
    """Per-256 activation of K-quant/IQ matmuls: iscale = -127/max (max: signed value of the largest |x|)."""
    s = x.shape
    b = x.reshape(-1, 256)
    idx = b.abs().argmax(dim=1, keepdim=True)
    mx = torch.gather(b, 1, idx)
    iscale = torch.where(mx != 0, -127.0 / mx, torch.zeros_like(mx))
    q = round_half_even(iscale * b).clamp(-128, 127)
    d = torch.where(iscale != 0, 1.0 / iscale, torch.zeros_like(iscale))
    return (q * d).reshape(s)


def _e4m3_table():
    vals = []
    for code in range(127):
        e, m = code >> 3, code & 7
        vals.append(m * 2.0 ** -9 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7))
    return torch.tensor(vals, dtype=torch.float64)


E4M3 = _e4m3_table()
FP4 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=torch.float64)


def _snap(a, table):
    """Nearest entry of an ascending table for |a| (float64), ties to the even index."""
    table = table.to(a.device)
    i = torch.searchsorted(table, a).clamp(1, len(table) - 1)
    lo, hi = table[i - 1], table[i]
    dlo, dhi = a - lo, hi - a
    pick_hi = (dhi < dlo) | ((dhi == dlo) & (i % 2 == 0))
    out = torch.where(pick_hi, hi, lo)
    return torch.where(a >= table[-1], table[-1], out)


def sim_fp8_blocks(x, n):
    """FP8 E4M3 round trip on dims [0, n) in 64-wide blocks with power-of-two scales."""
    head = x[..., :n].to(torch.float64)
    s = head.shape
    b = head.reshape(-1, 64)
    amax = b.abs().amax(dim=1, keepdim=True).clamp_min(1e-4).to(torch.float32).to(torch.float64)
    scale = torch.pow(2.0, torch.ceil(torch.log2((amax / 448.0).to(torch.float32)).to(torch.float64)))
    v = (b / scale).clamp(-448, 448)
    q = torch.sign(v) * _snap(v.abs(), E4M3)
    out = (q * scale).to(torch.float32).reshape(s)
    return torch.cat([out, x[..., n:]], dim=-1)


def hadamard128(x):
    s = x.shape
    v = x.reshape(-1, 128).clone()
    h = 1
    while h < 128:
        v = v.reshape(-1, 128 // (2 * h), 2, h)
        a, b = v[:, :, 0, :], v[:, :, 1, :]
        v = torch.stack([a + b, a - b], dim=2)
        h *= 2
    return (v.reshape(s) * 0.08838834764831845)


def sim_fp4_blocks(x):
    s = x.shape
    b = x.reshape(-1, 32).to(torch.float64)
    amax = b.abs().amax(dim=1, keepdim=True).clamp_min(7.052966e-38)
    scale = torch.pow(2.0, torch.ceil(torch.log2((amax / 6.0).to(torch.float32)).to(torch.float64)))
    v = b / scale
    q = torch.sign(v) * _snap(v.abs(), FP4)
    return (q * scale).to(torch.float32).reshape(s)


def f16_round(x):
    return x.to(torch.float16).to(torch.float32)


# ---------------------------------------------------------------------------------------------
def rms(x, eps):
    # The engine sums squares in double; float64 here keeps the reference on the same side.
    ms = x.double().pow(2).mean(dim=-1, keepdim=True)
    return (x.double() * torch.rsqrt(ms + eps)).to(x.dtype) if not x.requires_grad else \
        x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)


def rope_angles(cfg, pos, compressed):
    """theta [len(pos), n_rot/2] for positions `pos` (section 3.3 RoPE / YaRN)."""
    half = cfg.n_rot // 2
    k = torch.arange(half, dtype=torch.float64, device=pos.device)
    base = cfg.comp_rope_base if compressed else cfg.rope_base
    inv = base ** (-2.0 * k / cfg.n_rot)
    th_ext = pos.double()[:, None] * inv[None, :]
    if not compressed:
        return th_ext
    def corr(beta):
        return cfg.n_rot * math.log(cfg.yarn_orig_ctx / (2 * math.pi * beta)) / (2 * math.log(base))
    lo = max(0, math.floor(corr(cfg.beta_fast)))
    hi = min(cfg.n_rot - 1, math.ceil(corr(cfg.beta_slow)))
    ramp = 1.0 - ((k - lo) / max(0.001, hi - lo)).clamp(0, 1)
    th_int = th_ext / cfg.yarn_factor
    return th_int * (1 - ramp) + th_ext * ramp


def apply_rope(x, theta, inverse=False):
    """Rotate adjacent pairs of the last n_rot dims of x [..., T, dim]; theta [T, n_rot/2]."""
    n_rot = theta.shape[-1] * 2
    head, tail = x[..., :-n_rot], x[..., -n_rot:]
    cos = torch.cos(theta).to(x.dtype)
    sin = torch.sin(theta).to(x.dtype)
    if inverse:
        sin = -sin
    t = tail.reshape(*tail.shape[:-1], n_rot // 2, 2)
    x0, x1 = t[..., 0], t[..., 1]
    shape = [1] * (x0.dim() - 2) + list(cos.shape)
    cos, sin = cos.reshape(shape), sin.reshape(shape)
    r = torch.stack([x0 * cos - x1 * sin, x0 * sin + x1 * cos], dim=-1).reshape(tail.shape)
    return torch.cat([head, r], dim=-1)


class Block(nn.Module):
    def __init__(self, cfg, il, hash=None):
        """hash: None = hash-routed when il < n_hash (the base layers); False = top-k routing with
        exp_probs_b whatever il is (the MTP block: a ratio-0 layer with layer 1's dimensions)."""
        super().__init__()
        self.cfg, self.il = cfg, il
        c = cfg
        D, hd = c.n_embd, c.head_dim
        self.ratio = c.ratios[il]
        P = nn.Parameter
        def w(o, i, gain=1.0):
            return P(torch.randn(o, i) * gain / math.sqrt(i))
        hcd = c.n_hc * D
        for which in ("attn", "ffn"):
            setattr(self, "hc_%s_fn" % which, P(torch.randn(c.hc_mix, hcd) * 0.1 / math.sqrt(hcd)))
            setattr(self, "hc_%s_scale" % which, P(torch.ones(3)))
            base = torch.zeros(c.hc_mix)
            base[8:] = torch.eye(c.n_hc).reshape(-1) * 2.0  # start near the identity stream mix
            setattr(self, "hc_%s_base" % which, P(base))
        self.attn_norm = P(torch.ones(D))
        self.attn_q_a = w(c.q_lora, D)
        self.attn_q_a_norm = P(torch.ones(c.q_lora))
        self.attn_q_b = w(c.n_head * hd, c.q_lora)
        self.attn_kv = w(hd, D)
        self.attn_kv_a_norm = P(torch.ones(hd))
        self.attn_sinks = P(torch.zeros(c.n_head))
        gd = (c.n_head // c.out_groups) * hd
        self.attn_output_a = w(c.out_groups * c.out_lora, gd)
        self.attn_output_b = w(D, c.out_groups * c.out_lora, 0.5)
        if self.ratio:
            W = (2 if self.ratio == 4 else 1) * hd
            self.attn_compressor_ape = P(torch.zeros(self.ratio, W))
            self.attn_compressor_kv = w(W, D)
            self.attn_compressor_gate = w(W, D, 0.1)
            self.attn_compressor_norm = P(torch.ones(hd))
        if self.ratio == 4:
            Wi = 2 * c.idx_dim
            self.indexer_attn_q_b = w(c.idx_heads * c.idx_dim, c.q_lora)
            self.indexer_proj = w(c.idx_heads, D)
            self.indexer_compressor_ape = P(torch.zeros(4, Wi))
            self.indexer_compressor_kv = w(Wi, D)
            self.indexer_compressor_gate = w(Wi, D, 0.1)
            self.indexer_compressor_norm = P(torch.ones(c.idx_dim))
        self.ffn_norm = P(torch.ones(D))
        self.ffn_gate_inp = w(c.n_expert, D)
        self.exp_probs_b = P(torch.zeros(c.n_expert), requires_grad=False)
        E, ff = c.n_expert, c.n_ff
        self.ffn_gate_exps = P(torch.randn(E, ff, D) / math.sqrt(D))
        self.ffn_up_exps = P(torch.randn(E, ff, D) / math.sqrt(D))
        self.ffn_down_exps = P(torch.randn(E, D, ff) * 0.5 / math.sqrt(ff))
        self.ffn_gate_shexp = w(ff, D)
        self.ffn_up_shexp = w(ff, D)
        self.ffn_down_shexp = w(D, ff, 0.5)
        self.hash = il < c.n_hash if hash is None else bool(hash)

    # --- section 3.2 -------------------------------------------------------------------------
    def hc_pre(self, H, which):
        c = self.cfg
        fn, scale, base = (getattr(self, "hc_%s_%s" % (which, k)) for k in ("fn", "scale", "base"))
        B, T, n, D = H.shape
        flat = H.reshape(B, T, n * D)
        flat = flat * torch.rsqrt(flat.pow(2).mean(-1, keepdim=True) + c.eps)
        mix = flat @ fn.t()
        pre = torch.sigmoid(mix[..., :n] * scale[0] + base[:n]) + c.eps
        post = 2 * torch.sigmoid(mix[..., n:2 * n] * scale[1] + base[n:2 * n])
        C = (mix[..., 2 * n:] * scale[2] + base[2 * n:]).reshape(B, T, n, n)  # [r = src][c = dst]
        C = torch.softmax(C, dim=-1) + c.eps
        C = C / (c.eps + C.sum(dim=-2, keepdim=True))
        for _ in range(c.sinkhorn - 1):
            C = C / (c.eps + C.sum(dim=-1, keepdim=True))
            C = C / (c.eps + C.sum(dim=-2, keepdim=True))
        x = (pre[..., None] * H).sum(dim=2)
        return x, post, C

    @staticmethod
    def hc_post(H, y, post, C):
        return post[..., None] * y[:, :, None, :] + torch.einsum("btrc,btrd->btcd", C, H)

    # --- helpers -----------------------------------------------------------------------------
    def lin(self, x, w, sim, q8=True):
        if sim and q8:
            x = sim_q8_0(x)
        return x @ w.t()

    def compress(self, xn, kvw, gatew, ape, normw, d, sim, indexer):
        """Compressed rows of a whole sequence: [B, n_rows, d] (RoPE'd, format-simulated)."""
        c, r = self.cfg, self.ratio
        B, T, _ = xn.shape
        n = T // r
        if n == 0:
            return xn.new_zeros(B, 0, d)
        kvp = xn[:, :n * r] @ kvw.t()
        sc = xn[:, :n * r] @ gatew.t()
        kvp = kvp.reshape(B, n, r, -1)
        sc = sc.reshape(B, n, r, -1) + ape[None, None]
        if r == 4:
            # candidates: previous window's tokens on the first d channels, this window's on the last d
            prev_kv = F.pad(kvp[:, :-1, :, :d], (0, 0, 0, 0, 1, 0))
            prev_sc = F.pad(sc[:, :-1, :, :d], (0, 0, 0, 0, 1, 0), value=-1e30)
            kv_c = torch.cat([prev_kv, kvp[..., d:]], dim=2)
            sc_c = torch.cat([prev_sc, sc[..., d:]], dim=2)
        else:
            kv_c, sc_c = kvp, sc
        wts = torch.softmax(sc_c, dim=2)
        pooled = (wts * kv_c).sum(dim=2)
        pooled = rms(pooled, c.eps) * normw
        pos = torch.arange(n, device=pooled.device) * r
        pooled = apply_rope(pooled, rope_angles(c, pos, True))
        if sim:
            if indexer:
                pooled = sim_fp4_blocks(hadamard128(pooled))
            else:
                pooled = sim_fp8_blocks(pooled, c.n_nope)
            pooled = f16_round(pooled)
        return pooled

    # --- section 3.3 -------------------------------------------------------------------------
    def attention(self, xs, sim):
        """xs: [x_prefix [1, P, D] or None, x [B, S, D]]. The prefix (the same tokens at positions
        0..P-1 of every sequence) is computed once and broadcast: exact, since every sequence's
        state over the prefix is the same. Returns the attention outputs in the same form."""
        c = self.cfg
        xp, x = xs
        B, S, D = x.shape
        P = 0 if xp is None else xp.shape[1]
        T = P + S
        H, hd = c.n_head, c.head_dim
        compressed = self.ratio != 0
        pos = torch.arange(T, device=x.device)
        theta = rope_angles(c, pos, compressed)
        parts = [] if xp is None else [(xp, 0)]
        parts.append((x, P))
        proj = []
        for xx, off in parts:
            L = xx.shape[1]
            th = theta[off:off + L]
            xn = rms(xx, c.eps) * self.attn_norm
            qr = self.lin(xn, self.attn_q_a, sim)
            qrn = rms(qr, c.eps) * self.attn_q_a_norm
            q = self.lin(qrn, self.attn_q_b, sim).reshape(xx.shape[0], L, H, hd).transpose(1, 2)
            q = apply_rope(rms(q, c.eps), th)
            kv = rms(self.lin(xn, self.attn_kv, sim), c.eps) * self.attn_kv_a_norm
            kv = apply_rope(kv, th)
            if sim:
                kv = f16_round(sim_fp8_blocks(kv, c.n_nope))
            proj.append((xn, qrn, q, kv))
        cat = lambda k: torch.cat([proj[0][k].expand(B, -1, -1), proj[1][k]], dim=1) if P else proj[0][k]
        kv_all = cat(3)
        xn_all = cat(0)
        comp = None
        if self.ratio:
            comp = self.compress(xn_all, self.attn_compressor_kv, self.attn_compressor_gate, self.attn_compressor_ape,
                                 self.attn_compressor_norm, hd, sim, False)
            if comp.shape[1] == 0:
                comp = None
        outs = []
        for k, (xx, off) in enumerate(parts):
            nb, L = xx.shape[0], xx.shape[1]
            xn, qrn, q, _ = proj[k]
            i = torch.arange(off, off + L, device=x.device)[:, None]
            kend = off + L  # keys beyond the last query are never visible
            keys = kv_all[:nb, :kend]
            j = torch.arange(kend, device=x.device)[None, :]
            allow = ((j <= i) & (j > i - c.window))[None].expand(nb, L, kend)
            if comp is not None:
                cm = comp[:nb]
                nc = cm.shape[1]
                vis = (((torch.arange(nc, device=x.device)[None, :] + 1) * self.ratio - 1) <= i)[None].expand(nb, L, nc)
                if self.ratio == 4 and nc > c.idx_top_k:
                    vis = vis & self.indexer_select(xn_all[:nb], xn, qrn, theta[off:off + L], vis, sim)
                keys = torch.cat([keys, cm], dim=1)
                allow = torch.cat([allow, vis], dim=2)
            sc = (q @ keys[:, None].transpose(-1, -2)) / math.sqrt(hd)  # [nb, H, L, K]
            sc = sc.masked_fill(~allow[:, None], float("-inf"))
            sink = self.attn_sinks[None, :, None, None].expand(nb, H, L, 1)
            pr = torch.softmax(torch.cat([sc, sink], dim=-1), dim=-1)[..., :-1]
            out = pr @ keys[:, None]  # [nb, H, L, hd]
            out = apply_rope(out, theta[off:off + L], inverse=True)
            out = out.transpose(1, 2).reshape(nb, L, c.out_groups, (H // c.out_groups) * hd)
            R = c.out_lora
            low = torch.cat([self.lin(out[:, :, g], self.attn_output_a[g * R:(g + 1) * R], sim)
                             for g in range(c.out_groups)], dim=-1)
            outs.append(self.lin(low, self.attn_output_b, sim))
        return [None] + outs if xp is None else outs

    def indexer_select(self, xn_all, xn, qrn, theta, vis, sim):
        """Top-k compressed rows per query token (ratio-4 layers); a [B, T, nc] bool mask.
        xn_all: the whole sequence (compressor input), xn/qrn/theta: the queries' rows."""
        c = self.cfg
        B, T, _ = xn.shape
        with torch.no_grad():
            icomp = self.compress(xn_all, self.indexer_compressor_kv, self.indexer_compressor_gate,
                                  self.indexer_compressor_ape, self.indexer_compressor_norm, c.idx_dim, sim, True)
            qi = (qrn @ self.indexer_attn_q_b.t()).reshape(B, T, c.idx_heads, c.idx_dim).transpose(1, 2)
            qi = apply_rope(qi, theta)
            if sim:
                qi = sim_fp4_blocks(hadamard128(qi))
            wgt = (xn @ self.indexer_proj.t()) / math.sqrt(c.idx_dim * c.idx_heads)  # [B, T, heads]
            dots = torch.relu(qi @ icomp[:, None].transpose(-1, -2))  # [B, h, T, nc]
            score = (wgt.transpose(1, 2)[..., None] * dots).sum(dim=1)  # [B, T, nc]
            score = score.masked_fill(~vis, float("-inf"))
            # ties go to the lower index: a stable sort of -score keeps index order among equals
            order = torch.sort(-score, dim=-1, stable=True).indices[..., :c.idx_top_k]
            sel = torch.zeros_like(vis)
            sel.scatter_(-1, order, True)
        return sel

    # --- section 3.4 -------------------------------------------------------------------------
    def moe(self, x, tokens, tid2eid, sim):
        c = self.cfg
        B, T, D = x.shape
        xn = rms(x, c.eps) * self.ffn_norm
        logit = xn @ self.ffn_gate_inp.t()
        p = torch.sqrt(F.softplus(logit))
        if self.hash:
            sel = tid2eid[tokens]  # [B, T, k]
        else:
            sel = torch.topk(p.detach() + self.exp_probs_b, c.n_expert_used, dim=-1).indices
        wk = torch.gather(p, -1, sel)
        wk = wk / wk.sum(-1, keepdim=True).clamp_min(6.103515625e-5) * c.expert_scale
        flat = xn.reshape(-1, D)
        xe = sim_q8_k(flat) if sim else flat
        out = torch.zeros_like(flat)
        sel_f = sel.reshape(-1, c.n_expert_used)
        w_f = wk.reshape(-1, c.n_expert_used)
        for e in range(c.n_expert):
            rows, slot = (sel_f == e).nonzero(as_tuple=True)
            if rows.numel() == 0:
                continue
            xi = xe[rows]
            g = (xi @ self.ffn_gate_exps[e].t()).clamp(max=c.clamp)
            u = (xi @ self.ffn_up_exps[e].t()).clamp(-c.clamp, c.clamp)
            mid = F.silu(g) * u * w_f[rows, slot][:, None]
            if sim:
                mid = sim_q8_k(mid)
            out = out.index_add(0, rows, mid @ self.ffn_down_exps[e].t())
        g = self.lin(flat, self.ffn_gate_shexp, sim).clamp(max=c.clamp)
        u = self.lin(flat, self.ffn_up_shexp, sim).clamp(-c.clamp, c.clamp)
        out = out + self.lin(F.silu(g) * u, self.ffn_down_shexp, sim)
        return out.reshape(B, T, D)

    def forward(self, Hs, toks, tid2eid, sim):
        """Hs/toks: [prefix or None, batch] (see attention())."""
        pre = [None if h is None else self.hc_pre(h, "attn") for h in Hs]
        ys = self.attention([None if p is None else p[0] for p in pre], sim)
        Hs = [None if h is None else self.hc_post(h, y, p[1], p[2]) for h, y, p in zip(Hs, ys, pre)]
        out = []
        for h, t in zip(Hs, toks):
            if h is None:
                out.append(None)
                continue
            x, post, C = self.hc_pre(h, "ffn")
            out.append(self.hc_post(h, self.moe(x, t, tid2eid, sim), post, C))
        return out


def hc_collapse(H, fn, scale, base, normw, eps):
    """The head's collapse of the n_hc streams H [B, T, n, D] to one normed row [B, T, D]; the
    output matrix comes after. The base model and the MTP block (its own hc_head and norm) share it."""
    B, T, n, D = H.shape
    flat = H.reshape(B, T, n * D)
    flat = flat * torch.rsqrt(flat.pow(2).mean(-1, keepdim=True) + eps)
    pre = flat @ fn.t()
    w = torch.sigmoid(pre * scale[0] + base) + eps
    y = (w[..., None] * H).sum(dim=2)
    return rms(y, eps) * normw


class DS4(nn.Module):
    def __init__(self, cfg, seed=0):
        super().__init__()
        self.cfg = cfg
        g = torch.Generator().manual_seed(seed)
        c = cfg
        self.token_embd = nn.Parameter(torch.randn(c.n_vocab, c.n_embd) * 0.5)
        self.blocks = nn.ModuleList([Block(c, il) for il in range(c.n_layer)])
        hcd = c.n_hc * c.n_embd
        self.output_hc_fn = nn.Parameter(torch.randn(c.n_hc, hcd) * 0.1 / math.sqrt(hcd))
        self.output_hc_scale = nn.Parameter(torch.ones(1))
        self.output_hc_base = nn.Parameter(torch.zeros(c.n_hc))
        self.output_norm = nn.Parameter(torch.ones(c.n_embd))
        self.output = nn.Parameter(torch.randn(c.n_vocab, c.n_embd) / math.sqrt(c.n_embd))
        # tid2eid: n_expert_used distinct experts per token, fixed (not trained)
        t2e = torch.stack([torch.randperm(c.n_expert, generator=g)[:c.n_expert_used] for _ in range(c.n_vocab)])
        self.register_buffer("tid2eid", t2e)

    def forward(self, tokens, sim=False, targets=None, prefix=None, return_hidden=False):
        """Logits [B, T, vocab] for tokens [B, T]; with `targets` (a [B, T] bool mask) only the
        rows where it is set, [n, vocab] (training computes the LM head only where the loss needs
        it). `prefix` [P]: tokens that precede every row of `tokens` (computed once; logits are
        returned for `tokens` only). `return_hidden`: instead of logits, the final hyper-connection
        states before the head's collapse, [H_prefix [1, P, n_hc, D] or None, H [B, T, n_hc, D]]
        (what an MTP drafter reads, mtp.py)."""
        c = self.cfg
        toks = [None if prefix is None else prefix[None], tokens]
        Hs = []
        for t in toks:
            if t is None:
                Hs.append(None)
                continue
            e = self.token_embd[t]
            Hs.append(e[:, :, None, :].expand(-1, -1, c.n_hc, -1).contiguous())
        for blk in self.blocks:
            Hs = blk(Hs, toks, self.tid2eid, sim)
        if return_hidden:
            return Hs
        y = hc_collapse(Hs[1], self.output_hc_fn, self.output_hc_scale, self.output_hc_base, self.output_norm, c.eps)
        if targets is not None:
            y = y[targets]
        if sim:
            y = sim_q8_0(y)
        return y @ self.head_weight().t()

    tie_scale = None  # training only: the head is output + tie_scale * token_embd (see head_weight)

    def head_weight(self):
        """The output head. Training may add the embedding to it (output + tie_scale * token_embd,
        `output` still free): a token's embedding then already scores that token, so copying a
        token from the context (a tool name from the tools block, an argument from the user's
        words) becomes one attention read instead of a map learned per token, and the embedding
        gets the head's gradient too. The GGUF stores the sum as the head tensor (tied_state)."""
        return self.output if self.tie_scale is None else self.output + self.token_embd * self.tie_scale

    def tied_state(self):
        """state_dict with `output` holding the whole head (what export and parity read)."""
        st = self.state_dict()
        if self.tie_scale is not None:
            st = dict(st)
            st["output"] = self.head_weight().detach().clone()
        return st
