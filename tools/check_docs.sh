#!/usr/bin/env bash
# Checks the docs against the code, with no build (CI's "docs" stage):
#   1. Invariant names. The numbered invariants (I1 in pager/pager.h, W1 in
#      wal/wal_connection.h, ...) are found where the code defines them: a comment line
#      `//   W3. ...`, a numbered step `//   3. C1: ...`, a paragraph `// S1 (...)`, or, for a
#      family with no other definition, a parenthesis `(R2: ...)`. Every name a Markdown file or
#      a code comment cites (`W15`, `M6`) must be defined, and a range from a family's first
#      member (`I1..I10`, `C1-C6`, `M1 to M4`) must reach its last: such a range means "all of
#      them", and it went stale when the family grew. A range that starts later (`I6 to I10`)
#      is a subset on purpose. An undefined name and a stale range fail anywhere (a subset
#      from the first member is written out: `I1, I2, I3 and I4`).
#   2. README.md is at most 300 lines: the newcomer's path; reference goes in docs/.
#   3. README.md and docs/*.md hold no date (YYYY-MM-DD) and no commit hash: dated measurements
#      and findings live in bench/results-YYYY-MM-DD/NOTES.md and tests/results-YYYY-MM-DD/NOTES.md
#      (links to them are fine), history in commit messages.
#   4. Every relative Markdown link in a tracked .md file resolves to a file or folder, every
#      source path README.md, bench/README.md and docs/*.md name exists, and
#      every section a file cites as `README, "Name"` (or `docs/x.md, "Name"`) is a heading
#      there (the heading may go on: "Journal modes" finds "Journal modes and sync levels").
# Prints each finding as `check_docs: FILE:LINE: what`, and exits 1 when there is any.
set -euo pipefail
cd "$(dirname "$0")/.."

exec python3 - <<'PY'
import os, re, subprocess, sys

files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], capture_output=True, text=True,
                       check=True).stdout.split()
# This script's own comments give stale names as examples.
files = [f for f in files if not f.startswith("third_party/") and os.path.isfile(f) and
         f != "tools/check_docs.sh"]
code = [f for f in files if f.endswith((".h", ".cc", ".c"))]
scripts = [f for f in files if f.endswith((".sh", ".py", ".bzl")) or
           os.path.basename(f) in ("BUILD", "WORKSPACE", ".bazelrc") or f.startswith(".ci/")]
docs = [f for f in files if f.endswith(".md")]
problems = []

def report(path, line, what):
    problems.append(f"check_docs: {path}:{line}: {what}")

def lines(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read().split("\n")

# 1. Invariants: definitions from the code.
defined = {}  # letter -> set of numbers
paren = {}    # letter -> set of numbers defined only as "(X9: ...)"
block_def = re.compile(r"^\s*//\s+([A-Z])(\d+)\.\s")
step_def = re.compile(r"^\s*//\s+\d+\.\s+([A-Z])(\d+):\s")
para_def = re.compile(r"^// ([A-Z])(\d+) \(")
paren_def = re.compile(r"\(([A-Z])(\d+): ")
for path in code:
    for text in lines(path):
        for pattern in (block_def, step_def, para_def):
            m = pattern.match(text)
            if m:
                defined.setdefault(m.group(1), set()).add(int(m.group(2)))
        if "//" in text:
            for m in paren_def.finditer(text.split("//", 1)[1]):
                paren.setdefault(m.group(1), set()).add(int(m.group(2)))
for letter, numbers in paren.items():
    if letter not in defined:
        defined[letter] = numbers
if not defined.get("W") or not defined.get("I"):
    sys.exit("check_docs: found no definition of the W or I invariants: has their form changed?")

letters = "".join(sorted(defined))
name = rf"\b([{letters}])(\d+)\b"
rng = re.compile(rf"\b([{letters}])(\d+)\s*(?:\.\.|-|–|\bto\b)\s*([{letters}]?)(\d+)\b")
single = re.compile(name)

def family(letter):
    numbers = sorted(defined[letter])
    if len(numbers) == 1:
        return f"{letter}{numbers[0]}"
    return f"{letter}{numbers[0]}-{letter}{numbers[-1]}"

warnings = []

def check_text(path, lineno, text, stale_fails=True):
    spans = []
    for m in rng.finditer(text):
        a, lo, b, hi = m.group(1), int(m.group(2)), m.group(3), int(m.group(4))
        if b and b != a:
            continue
        spans.append(m.span())
        if hi not in defined[a]:
            report(path, lineno, f"{m.group(0)}: {a}{hi} is not defined (defined: {family(a)})")
        elif lo == min(defined[a]) and hi < max(defined[a]):
            what = f"{m.group(0)}: stale range, {a} goes to {a}{max(defined[a])}"
            if stale_fails:
                report(path, lineno, what)
            else:
                warnings.append(f"check_docs: warning: {path}:{lineno}: {what}")
    for m in single.finditer(text):
        if any(s <= m.start() < e for s, e in spans):
            continue
        a, n = m.group(1), int(m.group(2))
        if n not in defined[a]:
            report(path, lineno, f"{m.group(0)} is not defined (defined: {family(a)})")

def strip_code_spans(text):
    # Inline code is a literal (a flag, a value), not a citation.
    return re.sub(r"`[^`]*`", "``", text)

for path in docs:
    fence = False
    for i, text in enumerate(lines(path), 1):
        if text.lstrip().startswith("```"):
            fence = not fence
            continue
        if not fence:
            check_text(path, i, strip_code_spans(text))
for path in code:
    for i, text in enumerate(lines(path), 1):
        if "//" in text:
            check_text(path, i, text.split("//", 1)[1])
for path in scripts:
    for i, text in enumerate(lines(path), 1):
        if text.lstrip().startswith("#"):
            check_text(path, i, text)

# 2. README's length.
readme = lines("README.md")
count = len(readme) - (1 if readme and readme[-1] == "" else 0)
if count > 300:
    report("README.md", count, f"README.md has {count} lines, more than 300: move reference to docs/")

# 3. Dates and commit hashes in README.md and docs/.
date = re.compile(r"(?<![\w-])\d{4}-\d{2}-\d{2}(?![\w-])")
hexword = re.compile(r"(?<![\w./-])(?<!0x)([0-9a-f]{7,40})(?![\w-])")
for path in ["README.md"] + sorted(f for f in docs if f.startswith("docs/")):
    for i, text in enumerate(lines(path), 1):
        for m in date.finditer(text):
            report(path, i, f"a date ({m.group(0)}): dated records go in bench/ or tests/results-YYYY-MM-DD/NOTES.md")
        for m in hexword.finditer(text):
            h = m.group(1)
            if re.search(r"\d", h) and re.search(r"[a-f]", h):
                report(path, i, f"a commit hash ({h}): history goes in commit messages")

# 4. Relative links and cited sections.
link = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
def headings(path):
    out = []
    fence = False
    for text in lines(path):
        if text.lstrip().startswith("```"):
            fence = not fence
        elif not fence and text.startswith("#"):
            out.append(re.sub(r"^#+\s*", "", text).strip())
    return out
for path in docs:
    for i, text in enumerate(lines(path), 1):
        for m in link.finditer(text):
            target = m.group(1)
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue
            target = target.split("#", 1)[0]
            resolved = os.path.normpath(os.path.join(os.path.dirname(path), target))
            if not os.path.exists(resolved):
                report(path, i, f"link to {m.group(1)}: {resolved} does not exist")
            elif resolved.startswith("..") or resolved.startswith("/"):
                report(path, i, f"link to {m.group(1)}: outside the project")

# Files the reference names (`pager/pager.h`, tests/wal_test.cc) exist.
top = sorted({f.split("/", 1)[0] for f in files if "/" in f})
named = re.compile(r"(?<![\w./-])((?:%s)/[\w./-]+\.(?:h|cc|c|sh|py|md|bzl))\b" % "|".join(map(re.escape, top)))
for path in ["README.md", "bench/README.md"] + sorted(f for f in docs if f.startswith("docs/")):
    for i, text in enumerate(lines(path), 1):
        for m in named.finditer(text):
            if not os.path.exists(m.group(1)):
                report(path, i, f"names {m.group(1)}, which does not exist")

cite = re.compile(r"((?:[\w./-]+/)?(?:README|[\w-]+)\.md|README)\)?,?\s*\(?\s*\"([^\"]+)\"")
heading_cache = {}
for path in docs + code + scripts:
    whole = "\n".join(lines(path))
    # Comments wrap: join a citation's lines, dropping the comment markers.
    flat = re.sub(r"\n\s*(?://|#)?\s*", " ", whole)
    for m in cite.finditer(flat):
        target, section = m.group(1), m.group(2).strip()
        if target == "README":
            target = "README.md"
        candidates = [target, os.path.normpath(os.path.join(os.path.dirname(path), target))]
        resolved = next((c for c in candidates if os.path.isfile(c)), None)
        if resolved is None or not resolved.endswith(".md"):
            continue
        if not section[:1].isupper():
            continue
        if resolved not in heading_cache:
            heading_cache[resolved] = headings(resolved)
        ok = any(h == section or h.startswith(section + " ") or h.startswith(section + ":") or h.startswith(section + ",")
                 for h in heading_cache[resolved])
        if not ok:
            lineno = whole[: max(0, whole.find('"' + section.split(" ")[0]))].count("\n") + 1
            report(path, lineno, f'cites {target}, "{section}": no such heading in {resolved}')

for w in warnings:
    print(w)
for p in problems:
    print(p)
if problems:
    print(f"check_docs: {len(problems)} problem(s)")
    sys.exit(1)
print("check_docs: ok (invariants " +
      ", ".join(family(l) for l in sorted(defined)) + ")")
PY
