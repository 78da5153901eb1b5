#!/usr/bin/env python3
"""Prose check of the user docs: every sentence of the repository's Markdown pages (docs/, the
READMEs, CONTRIBUTING.md) at most MAX_WORDS words, and no parentheses inside parentheses. Tables, code blocks, headings and inline
code are left out; a list item ends a sentence. Prints FILE:LINE and the sentence's start for
each finding and exits 1; exits 0 when there is none.
  scripts/prose_lint.py [FILE.md ...]   (default: the repository's docs and READMEs)"""
import re
import subprocess
import sys
from pathlib import Path

MAX_WORDS = 40
# Abbreviations whose full stop ends no sentence.
ABBREVIATIONS = ("e.g.", "i.e.", "et al.", "vs.", "cf.", "etc.)", "approx.", "Fig.", "No.")
LIST_ITEM = re.compile(r"^\s*([-*+]|\d+[.)])\s+")
SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]*_]*\s+(?=[A-Z0-9`\"'(\[*_])")


ROOT = Path(__file__).resolve().parent.parent


def default_files(root):
    listed = subprocess.run(["git", "-C", str(root), "ls-files", "--cached", "--others",
                             "--exclude-standard", "*.md"], capture_output=True, text=True)
    names = listed.stdout.split() if listed.returncode == 0 else []
    if not names:  # (not a git checkout: every such file under root)
        names = [str(p.relative_to(root)) for p in list((root / "docs").rglob("*.md")) +
                 list(root.rglob("README.md")) if "build" not in p.parts]
    return sorted(set(root / n for n in names))


def units(lines):
    """(line number, text) of each paragraph or list item outside code blocks and tables."""
    in_code, start, buf = False, 0, []
    def flush():
        if buf:
            yield start, " ".join(buf)
        buf.clear()
    for n, line in enumerate(lines, 1):
        s = line.strip()
        if s.startswith("```") or s.startswith("~~~"):
            yield from flush()
            in_code = not in_code
            continue
        if in_code or not s or s.startswith("|") or s.startswith("#") or s.startswith("<!--") \
                or line.startswith("    ") and not buf:
            yield from flush()
            continue
        if LIST_ITEM.match(line) or s.startswith(">"):
            yield from flush()
            s = LIST_ITEM.sub("", s).lstrip("> ")
        if not buf:
            start = n
        buf.append(s)
    yield from flush()


def plain(text):
    """The prose of a unit: inline code a word, links their text, emphasis marks gone."""
    text = re.sub(r"`[^`]*`", "CODE", text)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"<https?://[^>]*>|https?://\S+", "URL", text)
    for a in ABBREVIATIONS:
        text = text.replace(a, a.replace(".", ""))
    return text


def nested(sentence):
    depth = 0
    for ch in sentence:
        if ch == "(":
            depth += 1
            if depth > 1:
                return True
        elif ch == ")":
            depth = max(0, depth - 1)
    return False


def findings(path):
    out = []
    lines = path.read_text(encoding="utf-8").splitlines()
    if path.is_relative_to(ROOT):
        path = path.relative_to(ROOT)
    for line, unit in units(lines):
        prose = plain(unit)
        if nested(prose):
            out.append(f"{path}:{line}: parentheses inside parentheses: {unit[:90]}")
        for sentence in SENTENCE_END.split(prose):
            words = [w for w in sentence.split() if re.search(r"[A-Za-z0-9]", w)]
            if len(words) > MAX_WORDS:
                out.append(f"{path}:{line}: a sentence of {len(words)} words (at most "
                           f"{MAX_WORDS}): {' '.join(words[:12])} ...")
    return out


def main(argv):
    root = Path(__file__).resolve().parent.parent
    files = [Path(a).resolve() for a in argv] or default_files(root)
    bad = [f for p in files for f in findings(p)]
    for f in bad:
        print(f"prose: {f}")
    if bad:
        print(f"prose: {len(bad)} findings in {len(files)} files: split long sentences, "
              "and use commas or a second sentence instead of nested parentheses")
        return 1
    print(f"prose: ok ({len(files)} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
