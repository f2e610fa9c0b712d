"""Opening report.html in headless Debian chromium, and reading the page it leaves."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest


def chromium():
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path:
        return path
    if os.environ.get("CI"):
        pytest.fail("chromium is missing: scripts/setup installs Debian's chromium package with apt")
    pytest.skip("chromium is not installed and scripts/setup could not install it (Debian's chromium, with apt as root)")


def browse(url, profile, *args, timeout=90):
    """Run headless chromium on ``url`` (``--dump-dom``: returns the page as its scripts left it);
    fails when a script of the page raised an error."""
    command = [
        chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--enable-logging=stderr", "--v=0", f"--user-data-dir={profile}", *args, url,
    ]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line and "Uncaught" in line]
    assert not errors, f"the page's scripts raised: {errors}"
    return proc.stdout


def timed_dom(url, profile):
    """(the page as its scripts left it, seconds chromium took to open, run and dump it)."""
    started = time.monotonic()
    dom = browse(url, profile, "--dump-dom")
    return dom, time.monotonic() - started


class Elements(HTMLParser):
    """Every start tag of a document, with its attributes."""

    def __init__(self, text):
        super().__init__()
        self.found = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, dict(attrs)))

    def all(self, tag, **attrs):
        return [a for t, a in self.found if t == tag and all(a.get(k) == v for k, v in attrs.items())]


class Page(HTMLParser):
    """The tables of a page (``tables[id]``: the body's rows, each a list of cell texts, each row's
    ``data-*`` attributes in ``attrs[id]``; an opened trail's row, ``tr.trail-row``, is no row of its
    table), and the text of each element with an id or class."""

    def __init__(self, text):
        super().__init__()
        self.tables, self.attrs, self.texts = {}, {}, {}
        self._table, self._row, self._cell, self._open = None, None, None, []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self._table = attrs.get("id")
            self.tables[self._table], self.attrs[self._table] = [], []
        elif tag == "tr" and self._table is not None and self._in_body and "trail-row" not in (attrs.get("class") or ""):
            self._row = []
            self.tables[self._table].append(self._row)
            self.attrs[self._table].append({k[5:]: v for k, v in attrs.items() if k.startswith("data-")})
        elif tag == "td" and self._row is not None:
            self._cell = []
            self._row.append(self._cell)
        elif tag == "tbody":
            self._in_body = True
        if tag not in ("br", "input", "meta", "line", "rect") and tag != "tr":
            names = [attrs.get("id"), *(attrs.get("class") or "").split(), tag if tag in ("del", "ins") else None]
            self._open.append((tag, [n for n in names if n]))

    _in_body = False

    def handle_endtag(self, tag):
        if tag == "table":
            self._table, self._in_body = None, False
        elif tag == "td" and self._cell is not None:
            self._row[-1] = "".join(self._cell).strip()
            self._cell = None
        elif tag == "tr":
            self._row = None
        if self._open and tag != "tr" and self._open[-1][0] == tag:
            self._open.pop()

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        for _, names in self._open:
            for name in names:
                self.texts[name] = self.texts.get(name, "") + data


@contextlib.contextmanager
def headless_chromium(*args: str) -> Iterator[Any]:
    """Debian's chromium, headless, through Playwright, with chromium's flags ``args`` (skipped without
    Playwright; a failure under CI, whose set-up installs it); closed on the way out."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("playwright is missing: scripts/setup installs the test extra, which has it")
        pytest.skip("playwright is not installed (the test extra has it: pip install -e '.[test]')")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(), args=["--no-sandbox", *args])
        try:
            yield browser
        finally:
            browser.close()


def layout(url: str, width: int, screenshot: Path) -> dict:
    """Open ``url`` in headless chromium through Playwright, ``width`` px wide, and measure where things
    end: ``page`` (the document's scroll width), each table's right edge (``tables``, by id; a table in a
    box that scrolls sideways counts the box's), and the opened trail's (``trail``, None when none is
    open); a full-page screenshot goes to ``screenshot``."""
    with headless_chromium() as browser:
        page = browser.new_page(viewport={"width": width, "height": 900})
        page.goto(url)
        page.wait_for_load_state("load")
        seen = page.evaluate("""() => ({
            page: document.documentElement.scrollWidth,
            tables: Object.fromEntries([...document.querySelectorAll("table")].map(t => {
                const box = t.closest(".wide") || t;
                return [t.id, Math.ceil(Math.max(t.getBoundingClientRect().right - box.scrollLeft,
                                                 box.getBoundingClientRect().left + box.scrollWidth))];
            })),
            trail: (() => { const row = document.querySelector("tr.trail-row:not([hidden])");
                            return row ? Math.ceil(Math.max(...[...row.querySelectorAll("*")].map(e => e.getBoundingClientRect().right))) : null; })(),
        })""")
        page.screenshot(path=str(screenshot), full_page=True)
    return seen
