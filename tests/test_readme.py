"""The README stays a page a newcomer reads, and what it claims holds.

Its examples (and those of ``docs/``) run in ``tests/test_docs.py``.
"""

from __future__ import annotations

import re

from tests.data import ROOT

README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]


def test_the_readme_is_short() -> None:
    """Reference material lives in ``docs/``; the README is what a newcomer reads first."""
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250


def test_the_two_commands_exist() -> None:
    """`make demo` (set up, replay the bundled runs) and `make test` (set up, run the suite)
    are the README's first block, and the Makefile has both targets."""
    text = README.read_text(encoding="utf-8")
    first = re.search(r"```sh\n(.*?)```", text, re.S)
    assert first is not None
    assert [line.split("#")[0].strip() for line in first[1].splitlines()] == [
        "make demo",
        "make test",
    ]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipes = dict(re.findall(r"^(\w+):[^\n]*\n((?:\t[^\n]*\n)+)", makefile, re.M))
    assert "tokenlean replay" in recipes["demo"]
    assert "pytest" in recipes["test"]


def test_every_install_line_installs_what_exists() -> None:
    """tokenlean is not on PyPI: a shell line that installs it names a clone or a built wheel
    (`.`, `./`, `dist/`), never the bare name (`pip install 'tokenlean[proxy]'` failed)."""
    installs = []
    for page in PAGES:
        blocks = re.findall(r"```(?:sh|bash|shell)\n(.*?)```", page.read_text("utf-8"), re.S)
        lines = [line for block in blocks for line in block.splitlines()]
        installs += [(page.name, ln.split("#")[0].strip()) for ln in lines if "pip install" in ln]
    assert installs
    local = re.compile(r"""pip install (-e )?['"]?(\.|\$\(echo dist/)""")
    for page, line in installs:
        assert local.search(line), f"{page}: {line}"


# --- the results table is the benchmark's -------------------------------------------------------


def _table(text: str, header: str) -> dict[str, list[str]]:
    """The rows of the Markdown table whose header starts with ``header``, by first cell
    (bold and code marks dropped)."""
    start = text.index(header)
    rows: dict[str, list[str]] = {}
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip().replace("*", "").replace("`", "") for c in line.strip("|").split("|")]
        rows[cells[0]] = cells[1:]
    return rows


def test_the_results_table_is_the_benchmarks() -> None:
    """Every figure of the README's table is the one `make bench` wrote to
    benchmarks/results.md: rerunning the benchmark without updating the README fails here."""
    shown = _table(README.read_text(encoding="utf-8"), "| strategy | billed, pooled")
    results = (ROOT / "benchmarks" / "results.md").read_text(encoding="utf-8")
    pooled = _table(results, "| strategy | calls | tokens sent")
    worst = {
        m["strategy"]: m
        for m in re.finditer(
            r"^- worst source for (?P<strategy>\S+): billed (?P<billed>[\d.]+) on "
            r"(?P<billed_on>\S+); recall (?P<recall>[\d.]+) on (?P<recall_on>\S+)",
            results,
            re.M,
        )
    }
    assert "recommended-anthropic" in shown
    for strategy, cells in shown.items():
        _, _, billed_a, billed_o, whole_a, _, breaks, recall, _ = pooled[strategy]
        w = worst[strategy]
        assert cells == [
            f"{billed_a} / {billed_o}",
            f"{w['billed']} ({w['billed_on']})",
            whole_a,
            recall,
            f"{w['recall']} ({w['recall_on']})",
            breaks,
        ], strategy


def test_the_proxy_load_table_is_the_benchmarks() -> None:
    """The README's load table is benchmarks/proxy_load.md's run: added p50 / p99 at 1 and 50
    conversations, requests per second at 50, and the cold large body's seconds."""
    shown = _table(README.read_text(encoding="utf-8"), "| target | 1 conversation")
    load = (ROOT / "benchmarks" / "proxy_load.md").read_text(encoding="utf-8")
    rows: dict[tuple[str, str], list[str]] = {}
    for line in load[load.index("| target | concurrent") :].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[(cells[0], cells[1])] = cells[2:]
    cold = _table(load, "| target | seconds")
    assert "tokenlean proxy" in shown
    for target, cells in shown.items():
        one, fifty = rows[(target, "1")], rows[(target, "50")]
        assert cells == [
            f"{one[2]} / {one[3]}",
            f"{fifty[2]} / {fifty[3]}",
            fifty[4],
            cold[target][0],
        ], target
