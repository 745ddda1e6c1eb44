"""The project's documentation holds together: every relative link in README.md, docs/*.md and
tests/README.md points at a file that exists (and at a heading of it, for a `#anchor`), README.md stays
a five-minute read (at most 250 lines), every docs/*.md page is reachable from docs/README.md, and every
test file is named in tests/README.md.
Each rule is first checked against a made-up tree where it must say no (the controls below)."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README_MAX_LINES = 250

_FENCE = re.compile(r"^\s*(```|~~~)")
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
_LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


def _prose_lines(text: str):
    """(line number, line) of the lines outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, markup and punctuation left out (letters, digits,
    `_` and `-` kept), each space a hyphen."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
    text = text.replace("`", "").replace("*", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings; a repeated heading gets -1, -2, ... as on GitHub."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    for _, line in _prose_lines(path.read_text(encoding="utf-8")):
        m = _HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(path: Path) -> list[tuple[int, str]]:
    """(line, target) of every link of a Markdown file (inline links and images); a `[x](y)` in code
    (a fenced block or an inline span) is an example, not a link."""
    text = path.read_text(encoding="utf-8")
    found = []
    for number, line in _prose_lines(text):
        found += [(number, m.group(1)) for m in _LINK.finditer(_INLINE_CODE.sub("", line))]
    return found


def broken_links(path: Path) -> list[str]:
    """`file:line: target: what is wrong` for each relative link of `path` that leads nowhere."""
    problems = []
    for number, target in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # https:, mailto:, ...: not checked here
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{number}: {target}"
        if not dest.exists():
            problems.append(f"{where}: no such file {dest.name!r}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            problems.append(f"{where}: {dest.name} has no heading with the anchor #{anchor}")
    return problems


def unlisted_pages(docs: Path) -> list[str]:
    """The pages of `docs` (its *.md, the index itself aside) that its README.md does not link to."""
    index = docs / "README.md"
    linked = {(index.parent / t.partition("#")[0]).resolve() for _, t in links(index) if t.partition("#")[0]}
    return sorted(p.name for p in docs.glob("*.md") if p.name != "README.md" and p.resolve() not in linked)


def unlisted_tests(tests: Path) -> list[str]:
    """The test files under `tests` (`DIR/test_*.py`) that its README.md does not name as `` `test_x.py` ``."""
    text = (tests / "README.md").read_text(encoding="utf-8")
    return sorted(str(p.relative_to(tests)) for p in tests.glob("*/test_*.py") if f"`{p.name}`" not in text)


def documentation_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "tests" / "README.md"]


# --- the controls: each rule says no where it must -----------------------------------------------

def _tree(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text(
        "# Page A\n\n## The `add` step: one source\n\n## Repeated\n\n## Repeated\n\n"
        "```yaml\n# not a heading\n```\n", encoding="utf-8")
    (tmp_path / "docs" / "b.md").write_text("# Page B\n", encoding="utf-8")
    (tmp_path / "docs" / "README.md").write_text("[a](a.md)\n", encoding="utf-8")
    return tmp_path


def test_the_checker_passes_good_links_and_fails_each_kind_of_broken_one(tmp_path):
    root = _tree(tmp_path)
    page = root / "page.md"
    page.write_text(
        "[ok](docs/a.md) [ok anchor](docs/a.md#the-add-step-one-source) [second](docs/a.md#repeated-1)\n"
        "[web](https://example.org/x.md) [self](#title)\n\n# Title\n\n"
        "`[code](missing.md)` is an example\n\n```\n[fenced](missing.md)\n```\n", encoding="utf-8")
    assert broken_links(page) == []
    page.write_text(
        "# Title\n[gone](docs/gone.md)\n[bad anchor](docs/a.md#no-such-heading)\n"
        "[code heading](docs/a.md#not-a-heading)\n[own](#nowhere)\n", encoding="utf-8")
    problems = broken_links(page)
    assert len(problems) == 4, problems
    assert ":2: docs/gone.md: no such file 'gone.md'" in problems[0]
    assert ":3: docs/a.md#no-such-heading: a.md has no heading" in problems[1]
    assert "#not-a-heading" in problems[2]  # a `#` comment in a code block is no heading
    assert ":5: #nowhere: page.md has no heading" in problems[3]


def test_the_index_check_finds_a_page_the_index_does_not_link(tmp_path):
    docs = _tree(tmp_path) / "docs"
    assert unlisted_pages(docs) == ["b.md"]
    (docs / "README.md").write_text("[a](a.md) and [b](b.md#page-b)\n", encoding="utf-8")
    assert unlisted_pages(docs) == []


def test_the_test_index_check_finds_a_test_file_it_does_not_name(tmp_path):
    (tmp_path / "fast").mkdir()
    (tmp_path / "fast" / "test_a.py").write_text("", encoding="utf-8")
    (tmp_path / "fast" / "test_b.py").write_text("", encoding="utf-8")
    (tmp_path / "README.md").write_text("- `test_a.py`: a\n- test_b.py without its backquotes\n", encoding="utf-8")
    assert unlisted_tests(tmp_path) == ["fast/test_b.py"]


def test_slugs_are_githubs():
    assert slug("`add`: rows in partitions") == "add-rows-in-partitions"
    assert slug('"Since the previous expect"') == "since-the-previous-expect"
    assert slug("A new Spark: the checkpoint of one Spark line restarted on another") == \
        "a-new-spark-the-checkpoint-of-one-spark-line-restarted-on-another"
    assert slug("Restarted on Spark 4.3.0 from checkpoints of 3.5.3") == \
        "restarted-on-spark-430-from-checkpoints-of-353"


# --- the project's own documentation ----------------------------------------------------------------

def test_every_relative_link_resolves():
    files = documentation_files()
    assert len(files) >= 4 and all(f.exists() for f in files), files
    assert sum(len(links(f)) for f in files) > 50  # the links were found at all
    problems = [p for f in files for p in broken_links(f)]
    assert not problems, "\n".join(problems)


def test_the_readme_is_a_five_minute_read():
    lines = len((ROOT / "README.md").read_text(encoding="utf-8").splitlines())
    assert lines <= README_MAX_LINES, (
        f"README.md has {lines} lines (at most {README_MAX_LINES}): move the detail into a docs/ page")


def test_every_docs_page_is_reachable_from_the_index():
    assert (ROOT / "docs" / "README.md").exists()
    missing = unlisted_pages(ROOT / "docs")
    assert not missing, f"docs/README.md does not link to: {', '.join(missing)}"


def test_every_test_file_is_named_in_the_tests_readme():
    assert len(list((ROOT / "tests").glob("*/test_*.py"))) > 50
    missing = unlisted_tests(ROOT / "tests")
    assert not missing, f"tests/README.md does not name: {', '.join(missing)} (a line each under its folder)"
