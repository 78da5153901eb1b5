#!/usr/bin/env python3
"""scripts/prose_lint.py on planted pages: a sentence of 41 words fails and one of 40 passes,
nested parentheses fail, each list item ends a sentence, and tables, code blocks, headings and
inline code are left out. Then the repository's own docs and READMEs pass.
usage: prose_lint_test.py REPO_ROOT"""
import os
import subprocess
import sys
import tempfile

from expectations import Expectations


def words(n):
    return " ".join(f"W{i}" if i == 0 else f"w{i}" for i in range(n))


def lint(root, text):
    with tempfile.TemporaryDirectory() as d:
        page = os.path.join(d, "page.md")
        with open(page, "w") as f:
            f.write(text)
        r = subprocess.run([sys.executable, os.path.join(root, "scripts", "prose_lint.py"), page],
                           capture_output=True, text=True)
        return r.returncode, r.stdout


def main(root):
    expect = Expectations()
    rc, out = lint(root, f"# Title\n\n{words(41)}.\n")
    expect(rc == 1 and "41 words" in out, f"a planted 41-word sentence fails: {out}")
    rc, out = lint(root, f"{words(40)}. {words(40)}.\n")
    expect(rc == 0, f"two 40-word sentences pass: {out}")
    rc, out = lint(root, f"{words(20)}\n{words(21)}.\n")
    expect(rc == 1, f"a sentence wrapped over two lines is one sentence: {out}")
    rc, out = lint(root, f"- {words(30)}\n- {words(30)}\n")
    expect(rc == 0, f"each list item ends a sentence: {out}")
    rc, out = lint(root, "One (two (three) four) five.\n")
    expect(rc == 1 and "parentheses inside" in out, f"nested parentheses fail: {out}")
    rc, out = lint(root, "One (two) and (three) `f(g(x))` e.g. four. Five.\n")
    expect(rc == 0, f"sibling parentheses and inline code pass: {out}")
    rc, out = lint(root, f"```\n{words(80)}\n```\n\n| {words(60)} |\n\n## {words(45)}\n")
    expect(rc == 0, f"code blocks, tables and headings are left out: {out}")
    rc, out = lint(root, f"**Bold lead.** {words(39)}.\n")
    expect(rc == 0, f"a bold lead sentence is a sentence of its own: {out}")
    r = subprocess.run([sys.executable, os.path.join(root, "scripts", "prose_lint.py")],
                       capture_output=True, text=True, cwd=root)
    expect(r.returncode == 0, f"the repository's docs pass:\n{r.stdout[-3000:]}")
    return expect.report()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
