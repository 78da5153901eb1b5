# SPDX-License-Identifier: MIT
"""docs/python.md's walkthrough runs as it stands: its python block, in a fresh directory."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def walkthrough():
    with open(os.path.join(ROOT, "docs", "python.md"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("## Walkthrough", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1, "the walkthrough is one python block"
    return blocks[0]


def test_the_walkthrough_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    exec(compile(walkthrough(), "docs/python.md#walkthrough", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert "False" in out
    assert "0 backward conv2d" in out
    assert any(line.startswith("churn ") for line in out)
