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
import subprocess
import sys
import tempfile

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


def tree_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-co", "--exclude-standard", "-z"],
                             check=True, capture_output=True).stdout.decode()
        files = [f for f in out.split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, subdirs, names in os.walk(root):
            subdirs[:] = [s for s in subdirs if not s.startswith((".", "build"))]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return sorted(f for f in files if f.endswith(SUFFIXES) and os.path.isfile(os.path.join(root, f)))


def check(root, limit=LIMIT):
    problems = []
    for rel in tree_files(root):
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            n = opening_comment_lines(f.read())
        if n > limit and rel not in ALLOWED:
            problems.append(f"{rel}:1: opens with a {n}-line comment (at most {limit}); keep a "
                            "paragraph and move the rest to docs/, cited as 'docs/<note>.md "
                            "\u00a7<heading-anchor>'")
    return problems


def self_test():
    with tempfile.TemporaryDirectory() as root:
        def write(rel, text):
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
                f.write(text)
        write("ok.hpp", "#pragma once\n\n" + "// line\n" * LIMIT + "\n// later comment\n" * 20)
        write("ok.cpp", "#include <x>\n" + "// not opening\n" * 40)
        ok = not check(root)
        if not ok:
            print("self-test: a clean tree was reported:", *check(root), sep="\n  ")
        bad = {
            "long.hpp": "#pragma once\n\n" + "// line\n" * (LIMIT + 1) + "#include <x>\n",
            "long.cpp": "\n" + "   // indented\n" * (LIMIT + 5),
        }
        for name, text in bad.items():
            write(name, text)
            found = check(root)
            if len(found) != 1 or not found[0].startswith(name + ":1:"):
                print(f"self-test: {name} gave {found}")
                ok = False
            os.remove(os.path.join(root, name))
        print("self-test:", "ok" if ok else "FAILED")
        return 0 if ok else 1


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    problems = check(root)
    for p in problems:
        print(p)
    print(f"check-file-essays: {len(problems)} file(s) open with an essay" if problems
          else "check-file-essays: ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
