#!/usr/bin/env python3
"""Checks that no C++ source opens with an essay.

House rule (CONTRIBUTING.md): a file opens with a short paragraph saying what it is for; the why,
formats, examples and edge cases live in docs/ and the comment cites them as
`docs/<note>.md <S>anchor`. Counted: the `//` lines a C/C++/CUDA file opens with, after blank
lines and `#pragma once`, up to the first line that is not a `//` comment. A file whose opening
comment runs over LIMIT lines is named with its count and the check exits 1.
`--self-test` checks the checker on a scratch tree.
"""
import os
import sys

import tree_check

LIMIT = 12
SUFFIXES = (".c", ".cc", ".cpp", ".h", ".hpp", ".cu", ".cuh")
# Files another change is rewriting now; each is to leave this list once its comment is short.
ALLOWED = set()


def opening_comment_lines(text):
    count = 0
    started = False
    for line in text.split("\n"):
        s = line.strip()
        if not started and (s == "" or s == "#pragma once"):
            continue
        if s.startswith("//"):
            started = True
            count += 1
            continue
        break
    return count


def check(root, limit=LIMIT):
    problems = []
    for rel in tree_check.tree_files(root, SUFFIXES):
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            n = opening_comment_lines(f.read())
        if n > limit and rel not in ALLOWED:
            problems.append(f"{rel}:1: opens with a {n}-line comment (at most {limit}); keep a "
                            "paragraph and move the rest to docs/, cited as 'docs/<note>.md "
                            "\u00a7<heading-anchor>'")
    return problems


GOOD = {
    "ok.hpp": "#pragma once\n\n" + "// line\n" * LIMIT + "\n// later comment\n" * 20,
    "ok.cpp": "#include <x>\n" + "// not opening\n" * 40,
}
BAD = {
    "long.hpp": "#pragma once\n\n" + "// line\n" * (LIMIT + 1) + "#include <x>\n",
    "long.cpp": "\n" + "   // indented\n" * (LIMIT + 5),
}

if __name__ == "__main__":
    sys.exit(tree_check.main(sys.argv, "check-file-essays", check, GOOD, BAD, "file(s) open with an essay"))
