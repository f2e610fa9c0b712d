"""report.md and report.html write a token count, a rate and an interval alike, and the reports and
summaries name their two mean-passes figures apart: to satisfied, and per run."""

from __future__ import annotations

import csv
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from support.helpers import md_table
from support.many_runs import write_verified_job

from rubric_runner.analysis.numbers import fmt_interval, fmt_rate, fmt_tokens
from rubric_runner.records import collect
from rubric_runner.report import write_all

TABLES = {"## By configuration": "groups", "## Graders against hidden verification": "judges",
          "### Answers against hidden verification": "answers", "### Graders ranked": "graders",
          "## Does the loop help?": "loop-arms", "### The rubric loop against each control": "loop-pairs",
          "### After each pass": "loop-curve", "## Which loop policy?": "policies", "## Runs": "runs"}
"""report.md's tables by their heading, and the id of each in report.html."""


class Tables(HTMLParser):
    """An HTML page's tables, by id: each row's cells as their text."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.table: str | None = None
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.table = dict(attrs)["id"]
            self.tables[self.table or ""] = []
        elif tag == "tr" and self.table:
            self.tables[self.table].append([])
        elif tag in ("td", "th") and self.table:
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self.table and self.cell is not None:
            self.tables[self.table][-1].append("".join(self.cell).strip())
            self.cell = None
        elif tag == "table":
            self.table = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def html_table(tables: Tables, table: str) -> list[dict[str, str]]:
    header, *rows = tables.tables[table]
    return [dict(zip(header, row, strict=True)) for row in rows]


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> Path:
    """Two configurations of ten verified tasks each, the rubric loop and a control (``loop.arm``)."""
    root = tmp_path_factory.mktemp("formats")
    write_verified_job(root / "0", 10)
    write_verified_job(root / "1", 10)
    record = json.loads((root / "1" / "result.json").read_text())
    record["header"]["config"]["loop"]["arm"] = "resample"
    (root / "1" / "result.json").write_text(json.dumps(record))
    write_all(root, collect(root))
    return root


def test_one_formatter_each_for_tokens_rates_and_intervals():
    assert (fmt_tokens(12345), fmt_tokens(1937.5), fmt_tokens(None)) == ("12,345", "1,938", "n/a")
    assert (fmt_rate(3, 4), fmt_rate(0, 0)) == ("3/4 (75.0%)", "-")
    assert fmt_interval((0.301, 0.954)) == "95% CI 30.1-95.4%"
    assert fmt_interval((-0.248, 0.413), "pts") == "95% CI -24.8 to 41.3"
    assert fmt_interval((0.31, 0.88), "") == "95% CI 0.31 to 0.88"


def test_md_and_html_write_tokens_rates_and_intervals_alike(reports):
    text = (reports / "report.md").read_text()
    page = (reports / "report.html").read_text()
    tables = Tables()
    tables.feed(page)
    tokens = re.compile(r"Tokens: worker [\d,]+, grader [\d,]+")
    assert tokens.search(text)[0] == tokens.search(re.sub(r"<[^>]+>", "", page))[0] == "Tokens: worker 38,760, grader 60,040"
    for heading, table in TABLES.items():
        md, html = md_table(text, heading), html_table(tables, table)
        shared = [column for column in md[0] if column in html[0]]
        assert len(shared) > 2, table
        assert [[row[c] for c in shared] for row in md] == [[row[c] for c in shared] for row in html], table
    runs = md_table(text, "## Runs")
    assert (runs[2]["worker tokens"], runs[2]["grader tokens"]) == ("3,060", "4,740")
    answers = html_table(tables, "answers")[0]
    assert (answers["final answer passed"], answers["lift"]) == (
        "6/10 (60.0%, 95% CI 31.3-83.2%)", "+10.0 pts (95% CI -24.8 to 41.3), p = 1.0 (exact McNemar); fixed 2, broken 1")
    assert html_table(tables, "groups")[0]["satisfied"] == "5/10 (50.0%)"


def test_the_two_mean_passes_figures_have_their_own_names(reports):
    """Of the satisfied runs' passes (1, 2, 3, 2, 1 in each configuration) in the reports; of every finished
    run's (1, 2, 3 in turn over ten) in the summaries."""
    text = (reports / "report.md").read_text()
    tables = Tables()
    tables.feed((reports / "report.html").read_text())
    for groups in (md_table(text, "## By configuration"), html_table(tables, "groups")):
        assert {(g["mean passes to satisfied"], g["runs by passes to satisfied"]) for g in groups} == {
            ("1.80", "1 pass: 2, 2 passes: 2, 3 passes: 1")}
        assert not [column for column in groups[0] if "iterations" in column]
    rows = [json.loads(line) for line in (reports / "summary.jsonl").read_text().splitlines()]
    with (reports / "summary.csv").open(newline="") as file:
        table = list(csv.DictReader(file))
    assert [row["mean_passes_per_run"] for row in rows] == [1.9, 1.9]
    assert [row["mean_passes_per_run"] for row in table] == ["1.9", "1.9"]
    assert "mean_iterations" not in rows[0] and "mean_iterations" not in table[0]


def test_a_tables_p_values_are_adjusted_together_by_holms_method():
    from types import SimpleNamespace

    from rubric_runner.analysis.intervals import holm
    from rubric_runner.report.columns import ANSWERS_COLUMNS, HOLM, with_holm

    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])  # R: p.adjust(..., "holm")
    assert holm([0.2, None, 0.9]) == pytest.approx([0.4, None, 0.9]) and holm([0.6, 0.7]) == [1.0, 1.0]
    rows = [SimpleNamespace(p=p) for p in (0.01, 0.04, 0.03, 0.005, None)]
    columns = with_holm(ANSWERS_COLUMNS, "lift", rows, lambda row: row.p)
    headers = [c.header for c in columns]
    assert headers[headers.index("lift") + 1] == HOLM and len(columns) == len(ANSWERS_COLUMNS) + 1
    assert [columns[headers.index(HOLM)].text(row) for row in rows] == ["p = 0.03", "p = 0.06", "p = 0.06", "p = 0.02", "-"]
    assert with_holm(ANSWERS_COLUMNS, "lift", rows[:1], lambda row: row.p) == ANSWERS_COLUMNS  # one test: nothing to adjust


def test_the_answers_table_adjusts_the_lifts_of_its_configurations(reports, tmp_path):
    from rubric_runner.analysis.intervals import holm
    from rubric_runner.analysis.numbers import fmt_p

    answers = md_table((reports / "report.md").read_text(), "### Answers against hidden verification")
    raw = [float(re.search(r"p = ([\d.]+)", row["lift"])[1]) for row in answers]
    assert [row["Holm p"] for row in answers] == [fmt_p(p) for p in holm(raw)]
    write_verified_job(tmp_path / "one", 10)
    write_all(tmp_path / "one", collect(tmp_path / "one"))
    (alone,) = md_table((tmp_path / "one" / "report.md").read_text(), "### Answers against hidden verification")
    assert "Holm p" not in alone and alone["lift"].endswith("(exact McNemar); fixed 2, broken 1")
