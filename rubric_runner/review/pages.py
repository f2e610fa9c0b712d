"""The review page's HTML: the queue, and one transcript with its label form (Jinja2, autoescaped)."""

from __future__ import annotations

from functools import cache

from jinja2 import DictLoader, Environment, select_autoescape

STYLE = """body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:60rem;padding:1rem 1.5rem;color:#1d1d1f}
pre{background:#f5f5f7;padding:.6rem;overflow-x:auto;white-space:pre-wrap}.msg{border-left:3px solid #ccc;padding-left:.7rem;margin:.8rem 0}
.msg.ai{border-color:#4a7bd0}.msg.tool{border-color:#3a9a5b}.msg.human{border-color:#b07a2a}.call{color:#4a7bd0}
table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:.25rem .5rem;text-align:left}.add{color:#1a7f37}.del{color:#b3261e}
fieldset{margin:.6rem 0}.flag{color:#b3261e;font-weight:600}"""

QUEUE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Review: {{ run }}</title>
<style>{{ style }}</style></head><body><h1>Review {{ run }}</h1>
<p>{{ labelled }} of {{ items|length }} labelled{% if blind %}; blind: a grader's verdict shows once the answer is labelled{% endif %}.
Tasks where the grader, the hidden checks and the labels disagree come first.</p>
<table id="queue"><thead><tr><th>#</th><th>task</th><th>grader</th><th>hidden checks</th><th>label</th><th>disagreements</th></tr></thead><tbody>
{% for row in items %}<tr data-key="{{ row.key }}"><td>{{ loop.index }}</td><td><a href="/task/{{ row.key }}">{{ row.name }}</a></td>
<td>{{ row.verdict }}</td><td>{{ row.checked }}</td><td class="label">{{ row.label }}</td><td>{{ row.disagreement }}</td></tr>
{% endfor %}</tbody></table></body></html>"""

TASK = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{{ name }}</title>
<style>{{ style }}</style></head><body><p><a href="/">queue</a>{% if next %} · <a id="next" href="/task/{{ next }}">next</a>{% endif %}</p>
<h1>{{ name }}</h1>
<h2>Final answer</h2><pre id="final-answer">{{ record.final_answer or "(none)" }}</pre>
<h2>Rubric</h2><pre id="rubric">{{ record.rubric or "(none)" }}</pre>
<h2>Your label</h2>
<form id="label" method="post" action="/task/{{ key }}/label"><input type="hidden" name="token" value="{{ token }}">
<fieldset><legend>The final answer is</legend>
<label><input type="radio" name="satisfied" value="yes" {% if label and label.satisfied %}checked{% endif %}> satisfactory</label>
<label><input type="radio" name="satisfied" value="no" {% if label and label.satisfied == false %}checked{% endif %}> not satisfactory</label></fieldset>
{% for criterion in criteria %}<fieldset class="criterion"><legend>{{ criterion }}</legend>
<label><input type="radio" name="criterion-{{ loop.index0 }}" value="pass" {% if label and label.criteria.get(criterion) == true %}checked{% endif %}> pass</label>
<label><input type="radio" name="criterion-{{ loop.index0 }}" value="fail" {% if label and label.criteria.get(criterion) == false %}checked{% endif %}> fail</label></fieldset>
{% endfor %}<p><label>Note<br><textarea name="note" rows="3" cols="70">{{ label.note if label else "" }}</textarea></label></p>
<p><button type="submit">Save label</button>{% if label %} <span id="saved">saved {{ label.labelled_at }}</span>{% endif %}</p></form>
<h2>Grader</h2>
{% if hidden %}<p id="verdict-hidden">Hidden until you label this answer (blind review).</p>{% else %}
<p id="verdict">{{ verdict }}{% if checked %}; hidden checks: {{ checked }}{% endif %}</p>
{% if failures %}<ul id="failed-checks">{% for line in failures %}<li class="flag">{{ line }}</li>{% endfor %}</ul>{% endif %}
{% for e in record.evaluations %}<div class="msg"><b>pass {{ loop.index }}: {{ e.result }}{% if e.unverified %} (unverified){% endif %}</b> {{ e.explanation }}
{% if e.view and e.view.is_cut %}<p class="view">cut view: {{ e.view.describe() }}</p>{% endif %}
<ul>{% for c in e.criteria %}<li>{{ "pass" if c.passed else "fail" }}: {{ c.name }}{% if c.gap %} ({{ c.gap }}){% endif %}</li>{% endfor %}</ul></div>{% endfor %}{% endif %}
<h2>Revisions</h2>{% for r in revisions %}<h3>answer {{ r.number }}</h3><pre class="diff">{% for line in r.diff %}<span class="{{ 'add' if line.startswith('+') else 'del' if line.startswith('-') else '' }}">{{ line }}</span>
{% endfor %}</pre>{% else %}<p>One answer: no revision.</p>{% endfor %}
<h2>Transcript</h2>{% for m in messages %}<div class="msg {{ m.type }}"><b>{{ m.type }}{% if m.name %} {{ m.name }}{% endif %}</b>
{% if m.content %}<pre>{{ m.content }}</pre>{% endif %}{% for c in m.tool_calls %}<div class="call">calls {{ c.name }}<pre>{{ c.args }}</pre></div>{% endfor %}</div>
{% endfor %}</body></html>"""


@cache
def environment() -> Environment:
    env = Environment(loader=DictLoader({"queue.html": QUEUE, "task.html": TASK}), autoescape=select_autoescape(["html"]))
    env.globals["style"] = STYLE
    return env


def render(page: str, **context: object) -> str:
    """The ``page`` (``queue.html``, ``task.html``) drawn with ``context``."""
    return environment().get_template(page).render(**context)
