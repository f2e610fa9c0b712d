"""The review page in a real browser: `rubric-runner review` serves it on 127.0.0.1, a person labels two
tasks, reloads and sees the labels kept, and the labels reach report.md as a grader-against-people table."""

from __future__ import annotations

import contextlib
import http.server
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest
from support.browser import headless_chromium
from support.helpers import (
    ROOT,
    free_port,
    run_cli,
    scripted_overrides,
    verdict,
    write_script,
)

import rubric_runner
from rubric_runner.review.labels import read_labels

DEMO = ["rubric=humaneval", "worker=scripted", "grader=scripted", "rubric.tasks=[0:5]", "run.console=false"]
BEYOND = "The code does what the docstring asks, for inputs beyond its examples too"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("review") / "run"
    rubric_runner.run(DEMO, run_dir)
    return run_dir


@contextlib.contextmanager
def serving(run_dir, *options):
    """`rubric-runner review [OPTIONS] RUN_DIR` in a real process: (its URL, the process)."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "rubric_runner", "review", *options, "--port", str(port), str(run_dir)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith(f"review page: http://127.0.0.1:{port}/"), (line, proc.stderr.read() if proc.poll() is not None else "")
        yield f"http://127.0.0.1:{port}/", proc
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def server(run_dir):
    with serving(run_dir, "--blind") as found:
        yield found


@pytest.fixture(scope="module")
def browser():
    """Chromium in which attacker.test and rebind.test resolve to 127.0.0.1 (as a DNS-rebinding page's would)."""
    with headless_chromium("--host-resolver-rules=MAP attacker.test 127.0.0.1, MAP rebind.test 127.0.0.1") as launched:
        yield launched


def test_a_person_labels_two_tasks_reloads_and_the_labels_reach_the_report(run_dir, server, browser):
    url, proc = server
    page = browser.new_page()
    page.goto(url)
    rows = page.locator("#queue tbody tr")
    assert rows.count() == 5
    # the queue puts first the tasks where the grader and the hidden checks disagree (HumanEval-2 and -3)
    assert {rows.nth(0).get_attribute("data-key"), rows.nth(1).get_attribute("data-key")} == {
        "tasks/HumanEval-2-r0", "tasks/HumanEval-3-r0"}
    assert page.locator("#queue tbody tr td:nth-child(3)").all_inner_texts() == ["hidden"] * 5
    assert page.locator("#queue tbody tr td:nth-child(4)").all_inner_texts() == ["hidden"] * 5  # the checks too

    page.click("a[href='/task/tasks/HumanEval-3-r0']")
    assert "def below_zero" in page.locator("#final-answer").inner_text()
    assert "docstring" in page.locator("#rubric").inner_text()
    assert page.locator("#verdict-hidden").count() == 1 and page.locator("#verdict").count() == 0  # blind
    assert "def below_zero" in page.locator(".msg.ai").first.inner_text()  # the transcript: the worker's reply
    page.check("input[name=satisfied][value=no]")
    page.locator("fieldset.criterion", has_text=BEYOND).locator("input[value=fail]").check()
    page.fill("textarea[name=note]", "a withdrawal is not a negative balance")
    page.click("button[type=submit]")
    page.wait_for_selector("#verdict")
    assert page.locator("#verdict").inner_text().startswith("satisfied")  # shown once labelled: the grader accepted it

    page.goto(url + "task/tasks/HumanEval-2-r0")
    page.check("input[name=satisfied][value=yes]")
    page.click("button[type=submit]")
    page.wait_for_selector("#saved")

    page.goto(url + "task/tasks/HumanEval-3-r0")
    page.reload()
    assert page.is_checked("input[name=satisfied][value=no]")
    assert page.locator("fieldset.criterion", has_text=BEYOND).locator("input[value=fail]").is_checked()
    assert page.input_value("textarea[name=note]") == "a withdrawal is not a negative balance"
    page.goto(url)
    labelled = dict(zip(page.locator("#queue tbody tr").evaluate_all("rows => rows.map(r => r.dataset.key)"),
                        page.locator("#queue td.label").all_inner_texts()))
    assert labelled["tasks/HumanEval-3-r0"] == "not satisfactory" and labelled["tasks/HumanEval-2-r0"] == "satisfactory"
    page.close()

    saved = read_labels(run_dir)
    assert set(saved) == {"tasks/HumanEval-2-r0", "tasks/HumanEval-3-r0"}
    assert saved["tasks/HumanEval-3-r0"].criteria == {BEYOND: False} and not saved["tasks/HumanEval-3-r0"].verdict_seen

    report = run_cli("report", str(run_dir), cwd=ROOT)
    assert report.returncode == 0, report.stderr
    text = (run_dir / "report.md").read_text()
    section = text.split("## Grader against people")[1].split("\n## ")[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "configuration" not in line]
    grader, people = rows
    # HumanEval-3: accepted, labelled not satisfactory (a false satisfied); HumanEval-2: rejected, labelled
    # satisfactory (a false rejection): the grader agrees with the person on neither
    assert "| 2 | 0.0% " in grader and "| 1/1 (100.0%" in grader and grader.count("1/1 (100.0%") == 2
    assert people.startswith("| people against hidden checks | 2 | 100.0%")


def test_a_taken_port_is_one_line_and_exit_2(run_dir, server):
    url, _ = server
    port = url.rsplit(":", 1)[1].strip("/")
    started = time.monotonic()
    proc = run_cli("review", "--port", port, str(run_dir), cwd=ROOT, timeout=60)
    assert proc.returncode == 2 and time.monotonic() - started < 60
    assert proc.stderr.strip().splitlines() == [f"error: --port: cannot listen on 127.0.0.1:{port}: Address already in use "
                                                "(give another --port, or --port 0 for any free one)"]


def test_the_page_shows_the_tool_calls_their_outputs_and_the_diff_between_revisions(tmp_path):
    script = write_script(
        tmp_path / "s.yaml",
        worker=[{"tool_calls": [{"name": "ls", "args": {"path": "/"}}]}, {"content": "first line\nold second line"},
                {"content": "first line\nnew second line"}],
        grader=[verdict("needs_revision", ("c", False)), verdict("satisfied", ("c", True))],
    )
    run_dir = tmp_path / "run"  # a process of its own: the browser's event loop runs in this one
    made = run_cli(*scripted_overrides(script), f"hydra.run.dir={run_dir}", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    with serving(run_dir) as (url, _):
        page = urllib.request.urlopen(url + "task/tasks/task-r0").read().decode()
    assert "calls ls" in page and "&#34;path&#34;: &#34;/&#34;" in page  # the worker's tool call and its arguments
    assert '<div class="msg tool"><b>tool ls</b>' in page  # the tool's output, as a message of its own
    assert '<span class="del">-old second line</span>' in page and '<span class="add">+new second line</span>' in page
    assert '<p id="verdict">satisfied' in page and "pass 1: needs_revision" in page  # not blind: the verdicts show


def test_the_page_names_each_failed_hidden_check_in_one_line(tmp_path):
    script = write_script(tmp_path / "s.yaml", worker=[{"tool_calls": [{"name": "ls", "args": {"path": "/"}}]}, {"content": "done"}],
                          grader=[verdict("satisfied", ("c", True))])
    run_dir = tmp_path / "run"
    made = run_cli(*scripted_overrides(script, "+rubric.verify.trajectory={max_calls:{ls:0},called:[ls]}"), f"hydra.run.dir={run_dir}", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    with serving(run_dir) as (url, _):
        page = urllib.request.urlopen(url + "task/tasks/task-r0").read().decode()
    assert '<p id="verdict">satisfied; hidden checks: failed</p>' in page
    assert ('<ul id="failed-checks"><li class="flag">count_syllables: failed</li>'  # the haiku rubric's own check
            '<li class="flag">trajectory: max_calls.ls: 1 call of ls, at most 0</li></ul>') in page


def test_the_queue_puts_disagreements_first_then_the_unlabelled():
    from rubric_runner.records import (
        CheckOutcome,
        Status,
        TaskRecord,
        Verification,
        Verifications,
    )
    from rubric_runner.review.labels import PersonLabel
    from rubric_runner.review.queue import Item, queue

    def item(key, status, passed):
        final = Verification(outcome=CheckOutcome.PASSED if passed else CheckOutcome.FAILED, passed=passed)
        return Item(key, TaskRecord(status=status, verification=Verifications(final=final), rubric="- a\n- b"), [])

    found = [item("agree-labelled", Status.SATISFIED, True), item("agree", Status.SATISFIED, True),
             item("grader-wrong", Status.SATISFIED, False), item("label-wrong", Status.FAILED, False)]
    labels = {"agree-labelled": PersonLabel(True), "label-wrong": PersonLabel(True)}
    # label-wrong: grader and checks say no, the person yes (2 disagreements); grader-wrong: 1
    assert [i.key for i in queue(found, labels)] == ["label-wrong", "grader-wrong", "agree", "agree-labelled"]
    assert found[0].criteria == ["a", "b"]  # no graded pass: the rubric's lines


ATTACKER = """<!doctype html><html><body><form method="post" action="{action}">
<input name="satisfied" value="yes"><input name="note" value="posted from another site"></form>
<script>document.forms[0].submit()</script></body></html>"""


@contextlib.contextmanager
def attacker_site(action):
    """Another origin's page that posts a label to ``action`` as soon as it opens: its URL's port."""
    page = ATTACKER.format(action=action).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args):
            pass

    site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=site.serve_forever, daemon=True).start()
    try:
        yield site.server_address[1]
    finally:
        site.shutdown()
        site.server_close()


def test_a_label_posted_from_another_sites_page_is_refused_and_the_pages_own_form_saves(run_dir, tmp_path, browser):
    own = tmp_path / "run"
    shutil.copytree(run_dir, own)
    (own / "labels.json").unlink(missing_ok=True)
    key = "tasks/HumanEval-0-r0"
    with serving(own) as (url, _):
        with attacker_site(f"{url}task/{key}/label") as port:
            page = browser.new_page()
            answers = []
            page.on("response", lambda response: answers.append((response.url, response.status)))
            page.goto(f"http://attacker.test:{port}/")
            page.wait_for_url(f"{url}task/{key}/label")
            assert (f"{url}task/{key}/label", 403) in answers
            assert "refused" in page.content()
        assert key not in read_labels(own)
        page.goto(f"{url}task/{key}")  # the page's own form, in the same browser
        page.check("input[name=satisfied][value=yes]")
        page.click("button[type=submit]")
        page.wait_for_selector("#saved")
        page.close()
    assert read_labels(own)[key].satisfied is True


def test_a_request_for_another_host_is_refused_so_a_rebinding_page_reads_nothing(run_dir, browser):
    with serving(run_dir) as (url, _):
        port = url.rsplit(":", 1)[1].strip("/")
        page = browser.new_page()
        answer = page.goto(f"http://rebind.test:{port}/")
        assert answer.status == 421 and "HumanEval" not in page.content()
        page.close()
        request = urllib.request.Request(url + "labels.json", headers={"Host": f"evil.example:{port}"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request)
        assert refused.value.code == 421
        assert urllib.request.urlopen(f"http://localhost:{port}/").status == 200
