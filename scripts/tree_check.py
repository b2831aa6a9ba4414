"""The skeleton the tree checkers share (check-citations.py, check-file-essays.py).

tree_files: the files a check reads, those git knows (tracked, or untracked and not ignored), or
every file outside ., build* and node_modules folders when git cannot say. self_test: the
checker on a scratch tree, where `good` files give no problem and each `bad` file, alone, exactly
one, on its line 1. main: `SCRIPT [ROOT]` checks the tree (the repository by default) and prints
one line per problem; `SCRIPT --self-test` runs the self-test. Both return the exit status.
"""
import os
import subprocess
import tempfile


def tree_files(root, suffixes):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-co", "--exclude-standard", "-z"],
                             check=True, capture_output=True).stdout.decode()
        files = [f for f in out.split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, subdirs, names in os.walk(root):
            subdirs[:] = [s for s in subdirs if not s.startswith((".", "build")) and s != "node_modules"]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return sorted(f for f in files if f.endswith(suffixes) and os.path.isfile(os.path.join(root, f)))


def self_test(check, good, bad):
    with tempfile.TemporaryDirectory() as root:
        def write(rel, text):
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
                f.write(text)
        for name, text in good.items():
            write(name, text)
        ok = not check(root)
        if not ok:
            print("self-test: a clean tree was reported:", *check(root), sep="\n  ")
        for name, text in bad.items():
            write(name, text)
            found = check(root)
            if len(found) != 1 or not found[0].startswith(name + ":1:"):
                print(f"self-test: {name} ({text.strip()[:60]!r}) gave {found}")
                ok = False
            os.remove(os.path.join(root, name))
        print("self-test:", "ok" if ok else "FAILED")
        return 0 if ok else 1


def main(argv, name, check, good, bad, counted):
    """`counted` names the problems in the summary line, e.g. "broken citation(s)"."""
    if argv[1:] == ["--self-test"]:
        return self_test(check, good, bad)
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(argv[0])), "..")
    problems = check(root)
    for p in problems:
        print(p)
    print(f"{name}: {len(problems)} {counted}" if problems else f"{name}: ok")
    return 1 if problems else 0
