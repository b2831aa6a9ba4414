"""Byte-level BPE for the tiny agent model, in the form engine/tokenizer reads from a GGUF:
tokenizer.ggml.tokens (GPT-2 byte alphabet strings) and tokenizer.ggml.merges ("a b" in rank
order), split by the joyai-llm pre-tokenizer, with the seven DS4 special strings matched literally.

Vocabulary layout (as in ../shared/vectors/ds4-tiny): id 0 BOS, id 1 EOS, ids 2..257 the 256 byte
symbols in byte order, then one id per merge, then <｜User｜>, <｜Assistant｜>, <think>, </think>,
｜DSML｜. Training is deterministic: most frequent pair first, ties broken by the pair's strings.

The pre-tokenizer below mirrors engine/tokenizer/joyai_pretokenizer.cpp's rules (ASCII letters,
digits in runs of at most 3, punctuation runs, whitespace rules, every non-ASCII byte a letter) so
that Python and C++ produce the same ids; tinyagent_eval checks that on the evaluation prompts.
"""
import collections
import hashlib
import json

from ds4chat import BOS, EOS, USER, ASSISTANT, THINK_OPEN, THINK_CLOSE, DSML

TAIL_SPECIALS = [USER, ASSISTANT, THINK_OPEN, THINK_CLOSE, DSML]
SPECIALS = [BOS, EOS] + TAIL_SPECIALS


def _bytes_to_unicode():
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


BYTE_SYM = _bytes_to_unicode()
SYM_BYTE = {v: k for k, v in BYTE_SYM.items()}


def _punct(c):
    return (33 <= c <= 47) or (58 <= c <= 64) or (91 <= c <= 96) or (123 <= c <= 126)


def _letter(c):
    return c >= 0x80 or (65 <= c <= 90) or (97 <= c <= 122)


def _alpha(c):
    return (65 <= c <= 90) or (97 <= c <= 122)


def _space(c):
    return c in (9, 10, 11, 12, 13, 32)


def _nl(c):
    return c in (10, 13)


def _next_char(b, i):
    c = b[i]
    if c < 0x80:
        return i + 1
    n = 2 if c >> 5 == 6 else 3 if c >> 4 == 14 else 4 if c >> 3 == 30 else 1
    j = i + 1
    while j < len(b) and j < i + n and (b[j] & 0xC0) == 0x80:
        j += 1
    return j


def _cjk(b, i):
    if b[i] < 0x80:
        return False
    try:
        ch = b[i:_next_char(b, i)].decode("utf-8")
    except UnicodeDecodeError:
        return False
    cp = ord(ch[0])
    return 0x4E00 <= cp <= 0x9FA5 or 0x3040 <= cp <= 0x30FF


def _skip_letters(b, i):
    while i < len(b) and _letter(b[i]):
        i = _next_char(b, i)
    return i


def _piece_end(b, pos):
    n = len(b)
    c = b[pos]
    has_next = pos + 1 < n
    if 48 <= c <= 57:
        e = pos
        while e < n and e - pos < 3 and 48 <= b[e] <= 57:
            e += 1
        return e
    if _cjk(b, pos):
        e = pos
        while True:
            e = _next_char(b, e)
            if not (e < n and _cjk(b, e)):
                return e
    if _punct(c) and has_next and _alpha(b[pos + 1]):
        e = pos + 1
        while e < n and _alpha(b[e]):
            e += 1
        return e
    if _letter(c):
        return _skip_letters(b, pos)
    if not _nl(c) and not _punct(c) and has_next and _letter(b[pos + 1]):
        return _skip_letters(b, pos + 1)

    def punct_nl(e):
        while e < n and _punct(b[e]):
            e += 1
        while e < n and _nl(b[e]):
            e += 1
        return e
    if c == 32 and has_next and _punct(b[pos + 1]):
        return punct_nl(pos + 1)
    if _punct(c):
        return punct_nl(pos)
    if _space(c):
        e = pos
        after_nl = 0
        while e < n and _space(b[e]):
            if _nl(b[e]):
                after_nl = e + 1
            e += 1
        if after_nl:
            return after_nl
        if e < n and e > pos + 1 and (_letter(b[e]) or _punct(b[e])):
            return e - 1
        return e
    return _next_char(b, pos)


def pieces(text):
    """joyai-llm pieces of a text without special strings, as byte strings."""
    b = text.encode("utf-8")
    out = []
    i = 0
    while i < len(b):
        e = _piece_end(b, i)
        out.append(b[i:e])
        i = e
    return out


def split_specials(text):
    """[(is_special, str)] with the seven special strings cut out literally."""
    out = []
    start = 0
    i = 0
    while i < len(text):
        if text[i] in "<｜":
            hit = next((s for s in SPECIALS if text.startswith(s, i)), None)
            if hit:
                if i > start:
                    out.append((False, text[start:i]))
                out.append((True, hit))
                i += len(hit)
                start = i
                continue
        i += 1
    if start < len(text):
        out.append((False, text[start:]))
    return out


def train(texts, vocab_size):
    """Learns vocab_size - 2 - 256 - 5 merges from texts. Returns (tokens, merges)."""
    n_merges = vocab_size - 2 - 256 - len(TAIL_SPECIALS)
    freq = collections.Counter()
    for t in texts:
        for sp, s in split_specials(t):
            if not sp:
                freq.update(pieces(s))
    words = [[BYTE_SYM[x] for x in w] for w in freq]
    counts = [freq[w] for w in freq]
    pair_count = collections.Counter()
    where = collections.defaultdict(set)
    for wi, w in enumerate(words):
        for a, b in zip(w, w[1:]):
            pair_count[(a, b)] += counts[wi]
            where[(a, b)].add(wi)
    merges = []
    for _ in range(n_merges):
        if not pair_count:
            break
        best = max(pair_count.items(), key=lambda kv: (kv[1], kv[0]))
        (a, b), c = best
        if c < 2:
            break
        merges.append((a, b))
        ab = a + b
        for wi in list(where[(a, b)]):
            w = words[wi]
            cnt = counts[wi]
            for x, y in zip(w, w[1:]):
                pair_count[(x, y)] -= cnt
                if pair_count[(x, y)] <= 0:
                    del pair_count[(x, y)]
            nw = []
            i = 0
            while i < len(w):
                if i + 1 < len(w) and w[i] == a and w[i + 1] == b:
                    nw.append(ab)
                    i += 2
                else:
                    nw.append(w[i])
                    i += 1
            words[wi] = nw
            for x, y in zip(nw, nw[1:]):
                pair_count[(x, y)] += cnt
                where[(x, y)].add(wi)
        del where[(a, b)]
    tokens = [BOS, EOS] + [BYTE_SYM[b] for b in range(256)] + [a + b for a, b in merges] + TAIL_SPECIALS
    # pad with unused reserved strings if training ran out of pairs, so the size is exact
    k = 0
    while len(tokens) < vocab_size:
        tokens.insert(len(tokens) - len(TAIL_SPECIALS), "<｜reserved_{}｜>".format(k))
        k += 1
    return tokens, [a + " " + b for a, b in merges]


class Tokenizer:
    def __init__(self, tokens, merges):
        self.tokens = tokens
        self.id = {t: i for i, t in enumerate(tokens)}
        self.rank = {tuple(m.split(" ")): r for r, m in enumerate(merges)}
        self.cache = {}
        self.bos, self.eos = self.id[BOS], self.id[EOS]

    def _piece(self, p):
        hit = self.cache.get(p)
        if hit is not None:
            return hit
        syms = [BYTE_SYM[x] for x in p]
        while len(syms) > 1:
            best = None
            for i in range(len(syms) - 1):
                r = self.rank.get((syms[i], syms[i + 1]))
                if r is not None and (best is None or r < best[0]):
                    best = (r, i)
            if best is None:
                break
            i = best[1]
            syms[i:i + 2] = [syms[i] + syms[i + 1]]
        ids = []
        for s in syms:
            if s in self.id:
                ids.append(self.id[s])
            else:
                ids += [self.id[ch] for ch in s if ch in self.id]
        self.cache[p] = ids
        return ids

    def encode(self, text):
        out = []
        for sp, s in split_specials(text):
            if sp:
                out.append(self.id[s])
            else:
                for p in pieces(s):
                    out += self._piece(p)
        return out

    def decode(self, ids):
        out = bytearray()
        for i in ids:
            t = self.tokens[i]
            if "｜" in t or t in (THINK_OPEN, THINK_CLOSE):
                out += t.encode("utf-8")
            else:
                out += bytes(SYM_BYTE[ch] for ch in t)
        return out.decode("utf-8", errors="replace")

    def digest(self):
        h = hashlib.sha256()
        h.update(json.dumps([self.tokens, [" ".join(k) for k in sorted(self.rank, key=self.rank.get)]]).encode())
        return h.hexdigest()
