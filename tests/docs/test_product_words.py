"""The repository speaks of the product, not of how it was made: no source file, test or reference doc names
a work period, a review exercise or the texts the work started from. The dated log (docs/log/) is history
and may. The pattern and the near misses are assembled from parts, so this file names none of them either."""

from __future__ import annotations

import re
import subprocess

from tests.docs.doc_commands import ROOT

WORDS = re.compile(
    "|".join(
        (
            r"\bstop [0-9]",
            r"\bred.?" + "team",
            r"\bround ?[0-9]",
            r"\bthe " + r"seed\b",
            r"\bthe " + r"brief\b",
            r"\bseed" + "s/",
        )
    ),
    re.I,
)


def process_words(files: dict[str, str]) -> list[str]:
    return [
        f"{name}:{n}: {m[0]!r}"
        for name, text in sorted(files.items())
        for n, line in enumerate(text.splitlines(), 1)
        for m in WORDS.finditer(line)
    ]


def tracked_texts() -> dict[str, str]:
    names = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    out = {}
    for name in names.splitlines():
        path = ROOT / name
        if name.startswith("docs/log/") or not path.is_file() or path.stat().st_size > 2_000_000:
            continue
        try:
            out[name] = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
    return out


def test_no_tracked_file_speaks_of_the_work_process():
    files = tracked_texts()
    assert len(files) > 300
    assert process_words(files) == []


def test_each_process_word_is_named_with_its_line_and_product_words_pass():
    red, stop, seed = "red " + "team", "st" + "op 31", "the " + "seed"  # assembled: this file names none
    files = {
        "x.py": f"# found by the {red} (F6)\n# a {stop} fix\n# the time-slicing round trip, round-robin\n",
        "d.md": f"Source: `{'seed' + 's/'}fleet.txt`; {seed} said so\nseed the random generator; briefly\n",
    }
    assert process_words(files) == [
        f"d.md:1: {'seed' + 's/'!r}",
        f"d.md:1: {seed!r}",
        f"x.py:1: {red!r}",
        f"x.py:2: {stop[:-1]!r}",
    ]
