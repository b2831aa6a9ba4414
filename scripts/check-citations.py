#!/usr/bin/env python3
"""Checks that every document the tree cites is in the tree.

A citation names a Markdown file by its path from the repository root, optionally followed by
sections, each a section sign (U+00A7) and an anchor: `docs/memory.md <S>earlyoom-thresholds,
<S>swap` (<S> standing for the sign). A section is the anchor of a heading in that file, as
GitHub makes it: lower case, punctuation but - and _ dropped, spaces turned into hyphens
("## earlyoom thresholds" is earlyoom-thresholds). Checked, in every text file git knows
(tracked or untracked but not ignored):
  * each `<path>.md` followed by a section names an existing file (from the root, or from the
    citing file's folder) and each of its sections is a heading there;
  * no section sign stands without a document in front of it ("see <S>5.3" points nowhere);
  * in Markdown files, each relative link `[text](path#anchor)` names an existing file, and its
    anchor a heading of it.
Prints one line per broken citation (file:line: what is wrong) and exits 1 if there is any.
`--self-test` checks the checker on a scratch tree.
"""
import os
import re
import sys

import tree_check

SECTION = "\u00a7" + r"[\w.-]*[\w]"
CITATION = re.compile(r"([\w./-]+\.md)((?:[ \t]*,?[ \t]*(?:and[ \t]+)?" + SECTION + r")+)")
SECTION_RE = re.compile(SECTION)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
FENCE = re.compile(r"^[ \t]*(```|~~~)")
TEXT_SUFFIXES = (".c", ".cc", ".cpp", ".h", ".hpp", ".cu", ".cuh", ".md", ".txt", ".cmake", ".sh",
                 ".py", ".toml", ".in", ".mjs", ".js", ".json", ".service", ".conf")


def slug(heading):
    text = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading)
    text = text.strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        found = set()
        in_fence = False
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if FENCE.match(line):
                    in_fence = not in_fence
                    continue
                m = None if in_fence else HEADING.match(line)
                if m:
                    found.add(slug(m.group(2)))
        cache[path] = found
    return cache[path]


def resolve(root, citing, target):
    for base in (root, os.path.join(root, os.path.dirname(citing))):
        p = os.path.normpath(os.path.join(base, target))
        if os.path.exists(p):
            return p
    return None


def check(root):
    problems = []
    for rel in tree_check.tree_files(root, TEXT_SUFFIXES):
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            lines = f.read().split("\n")
        is_md = rel.endswith(".md")
        in_fence = False
        for n, line in enumerate(lines, 1):
            where = f"{rel}:{n}"
            covered = []
            for m in CITATION.finditer(line):
                covered.append((m.start(2), m.end(2)))
                doc = resolve(root, rel, m.group(1))
                if doc is None:
                    problems.append(f"{where}: cites {m.group(1)}, which is not in the repository")
                    continue
                for s in SECTION_RE.findall(m.group(2)):
                    if s[1:] not in anchors(doc):
                        problems.append(f"{where}: {m.group(1)} has no section {s} (sections are "
                                        f"heading anchors: {', '.join(sorted(anchors(doc))) or 'none'})")
            for m in re.finditer("\u00a7", line):
                if not any(a <= m.start() < b for a, b in covered):
                    problems.append(f"{where}: a section sign without a document in front of it; "
                                    "cite 'docs/<file>.md \u00a7<heading-anchor>'")
            if not is_md:
                continue
            if FENCE.match(line):
                in_fence = not in_fence
            if in_fence:
                continue
            for m in LINK.finditer(line):
                target = m.group(1)
                if re.match(r"[a-z][a-z0-9+.-]*:", target):
                    continue  # http:, mailto:, ...
                path, _, anchor = target.partition("#")
                doc = os.path.join(root, rel) if not path else resolve(root, rel, path)
                if doc is None:
                    problems.append(f"{where}: link to {path}, which is not in the repository")
                elif anchor and doc.endswith(".md") and anchor not in anchors(doc):
                    problems.append(f"{where}: link to {path or rel}#{anchor}: no such heading")
    return problems


GOOD = {
    "docs/memory.md": "# Memory\n\n## earlyoom thresholds\n\n```\n## not a heading\n```\n",
    "good.cpp": "// docs/memory.md \u00a7earlyoom-thresholds, \u00a7memory; docs/memory.md\n",
    "good.md": "[a](docs/memory.md#earlyoom-thresholds) [b](#x)\n\n## x\n",
}
BAD = {
    "missing_file.cpp": "// ops.md \u00a70.4\n",
    "missing_section.cpp": "// docs/memory.md \u00a7swap\n",
    "fenced_heading.cpp": "// docs/memory.md \u00a7not-a-heading\n",
    "orphan.hpp": "// as in \u00a75.3 of the architecture notes\n",
    "bad_link.md": "[a](docs/nothing.md)\n",
    "bad_anchor.md": "[a](docs/memory.md#swap)\n",
}

if __name__ == "__main__":
    sys.exit(tree_check.main(sys.argv, "check-citations", check, GOOD, BAD, "broken citation(s)"))
