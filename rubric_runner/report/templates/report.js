
(function () {
  var PAGE = 100;
  var CONTEXT = 200;
  var TOKENS = /\w+\s*|[^\w\s]\s*|\s+/g;
  var tables = {};
  var trails = null;

  function make(tag, className, text) {
    var el = document.createElement(tag);
    if (className) el.className = className;
    if (text !== undefined) el.textContent = text;
    return el;
  }
  function diff(before, after) {
    // [[op, text], ...] word by word: "=" kept, "-" removed, "+" added (a longest common subsequence)
    var x = before.match(TOKENS) || [], y = after.match(TOKENS) || [], ops = [];
    function push(op, text) {
      var last = ops[ops.length - 1];
      if (!text) return;
      if (last && last[0] === op) last[1] += text; else ops.push([op, text]);
    }
    var start = 0, endX = x.length, endY = y.length;
    while (start < endX && start < endY && x[start] === y[start]) start++;
    while (endX > start && endY > start && x[endX - 1] === y[endY - 1]) { endX--; endY--; }
    push("=", x.slice(0, start).join(""));
    var n = endX - start, m = endY - start, w = m + 1, i, j;
    if (n * m > 4e6) {
      push("-", x.slice(start, endX).join(""));
      push("+", y.slice(start, endY).join(""));
    } else {
      var common = new Uint32Array((n + 1) * w);
      for (i = n - 1; i >= 0; i--) {
        for (j = m - 1; j >= 0; j--) {
          common[i * w + j] = x[start + i] === y[start + j] ? common[(i + 1) * w + j + 1] + 1
            : Math.max(common[(i + 1) * w + j], common[i * w + j + 1]);
        }
      }
      for (i = 0, j = 0; i < n || j < m;) {
        if (i < n && j < m && x[start + i] === y[start + j]) { push("=", x[start + i]); i++; j++; }
        else if (j >= m || (i < n && common[(i + 1) * w + j] >= common[i * w + j + 1])) { push("-", x[start + i]); i++; }
        else { push("+", y[start + j]); j++; }
      }
    }
    push("=", x.slice(endX).join(""));
    return ops;
  }
  function kept(text) {
    return text.length <= 2 * CONTEXT ? text : text.slice(0, CONTEXT) + " \u2026 " + text.slice(-CONTEXT);
  }
  function badge(result) {
    var cls = {satisfied: "satisfied", needs_revision: "unsatisfied", max_iterations_reached: "unsatisfied", failed: "unsatisfied"};
    return make("span", "status " + (cls[result] || "error"), result);
  }
  function trailRow(details) {
    // an opened trail is drawn in a row of its own below its run's, as wide as the table
    var row = details.closest("tr");
    if (!row.trailRow) {
      row.trailRow = make("tr", "trail-row");
      var cell = make("td");
      cell.colSpan = row.cells.length;
      row.trailRow.appendChild(cell);
      if (row.parentNode) row.parentNode.insertBefore(row.trailRow, row.nextSibling);
    }
    row.trailRow.hidden = !details.open;
    return row.trailRow.cells[0];
  }
  function drawTrail(details) {
    var panel = trailRow(details);
    if (details.getAttribute("data-drawn")) return;
    details.setAttribute("data-drawn", "1");
    trails = trails || JSON.parse(document.getElementById("trails").textContent);
    var t = trails[+details.getAttribute("data-run")];
    if (t.passes.length) {
      var list = make("ol", "trail");
      t.passes.forEach(function (pass, number) {
        var item = make("li"), side = make("div", "passes");
        var verdict = make("div");
        verdict.appendChild(badge(pass.result));
        if (pass.unverified) verdict.appendChild(make("strong", "unverified", " unverified: the grader's satisfied covered fewer criteria than its checklist;"));
        verdict.appendChild(document.createTextNode(" " + pass.explanation +
          (pass.passed[1] ? " (" + pass.passed[0] + " of " + pass.passed[1] + " criteria passed)" : "")));
        if (pass.view) verdict.appendChild(make("div", "view", "cut view: " + pass.view));
        var gaps = make("ul");
        pass.failing.forEach(function (c) { gaps.appendChild(make("li", "gap", "\u2717 " + c[0] + ": " + c[1])); });
        (t.checks[number] || []).forEach(function (line) { gaps.appendChild(make("li", "gap", "hidden check failed: " + line)); });
        verdict.appendChild(gaps);
        side.appendChild(verdict);
        if (pass.result === "needs_revision" && number + 1 < t.attempts.length) {
          var changes = make("div", "diff");
          changes.appendChild(make("strong", "", "The answer after this pass: "));
          diff(t.attempts[number], t.attempts[number + 1]).forEach(function (op) {
            changes.appendChild(op[0] === "=" ? document.createTextNode(kept(op[1])) : make(op[0] === "-" ? "del" : "ins", "", op[1]));
          });
          side.appendChild(changes);
        }
        item.appendChild(side);
        list.appendChild(item);
      });
      panel.appendChild(list);
    } else {
      panel.appendChild(make("p", "", "No grading pass."));
    }
    (t.workspaces || []).forEach(function (w) {
      var files = make("details");
      files.appendChild(make("summary", "", "workspace, " + w.attempt + ": " + (w.changed.length ? w.changed.join(", ") : "no change")));
      if (w.tampered.length) files.appendChild(make("p", "gap", "tampered with protected files: " + w.tampered.join(", ")));
      files.appendChild(make("pre", "", w.diff));
      panel.appendChild(files);
    });
    (t.final_checks || []).forEach(function (line) { panel.appendChild(make("p", "gap", "final answer's hidden check failed: " + line)); });
    if (t.returned) panel.appendChild(make("p", "returned", "Returned: " + t.returned));
    if (t.error) panel.appendChild(make("p", "gap", t.error));
    var where = make("p");
    where.appendChild(document.createTextNode("Run dir "));
    where.appendChild(make("code", "", t.run_dir));
    where.appendChild(make("br"));
    where.appendChild(document.createTextNode("Overrides "));
    where.appendChild(make("code", "", t.overrides || "-"));
    panel.appendChild(where);
    if (t.answer) {
      var answer = make("details");
      answer.appendChild(make("summary", "", "final answer"));
      answer.appendChild(make("pre", "", t.answer));
      panel.appendChild(answer);
    }
  }

  function key(cell) {
    var value = cell.getAttribute("data-sort");
    if (value === null) value = cell.textContent.trim();
    var number = parseFloat(value);
    return isNaN(number) ? value.toLowerCase() : number;
  }

  function Table(table) {
    var self = this;
    var body = table.tBodies[0];
    var controls = document.querySelector('.controls[data-for="' + table.id + '"]');
    this.table = table;
    this.rows = Array.prototype.slice.call(body.rows);
    this.filters = {};
    this.page = 0;
    this.size = table.classList.contains("paged") ? PAGE : Math.max(1, this.rows.length);
    this.inputs = controls ? Array.prototype.slice.call(controls.querySelectorAll("[data-filter]")) : [];
    this.inputs.forEach(function (input) {
      input.addEventListener("input", function () {
        self.filters[input.getAttribute("data-filter")] = input.value;
        self.page = 0;
        self.draw();
        self.remember();
      });
    });
    if (controls) {
      Array.prototype.forEach.call(controls.querySelectorAll("[data-page]"), function (button) {
        button.addEventListener("click", function () {
          self.page += +button.getAttribute("data-page");
          self.draw();
        });
      });
      this.shownText = controls.querySelector(".shown");
    }
    this.heads = Array.prototype.slice.call(table.tHead.rows[0].cells);
    this.sorted = null;
    this.heads.forEach(function (th) {
      var button = make("button", "", th.textContent);
      button.type = "button";
      th.textContent = "";
      th.appendChild(button);
      button.addEventListener("click", function () {
        self.sortBy(th.textContent, th.getAttribute("aria-sort") === "ascending");
        self.draw();
        self.remember();
      });
    });
    this.draw();
    table.classList.add("ready");  // until now its rows were hidden: laying out all of them takes long
  }
  Table.prototype.sortBy = function (header, down) {
    var column = this.heads.map(function (th) { return th.textContent; }).indexOf(header);
    if (column < 0) return;
    this.heads.forEach(function (h) { h.removeAttribute("aria-sort"); });
    this.heads[column].setAttribute("aria-sort", down ? "descending" : "ascending");
    this.sorted = {sort: header, order: down ? "descending" : "ascending"};
    var keyed = this.rows.map(function (row, i) { return [key(row.cells[column]), i, row]; });
    keyed.sort(function (a, b) { return a[0] === b[0] ? a[1] - b[1] : (a[0] < b[0] ? -1 : 1) * (down ? -1 : 1); });
    this.rows = keyed.map(function (k) { return k[2]; });
  };
  Table.prototype.remember = function () {
    history.replaceState(null, "", "#" + this.table.id + "?" + this.query());
  };
  Table.prototype.matches = function (row) {
    for (var name in this.filters) {
      var value = this.filters[name];
      if (!value) continue;
      if (name === "q") {
        if (row.searchText === undefined) row.searchText = row.textContent.toLowerCase();
        if (row.searchText.indexOf(value.toLowerCase()) < 0) return false;
      } else if (row.getAttribute("data-" + name) !== value) {
        return false;
      }
    }
    return true;
  };
  Table.prototype.query = function () {
    var params = new URLSearchParams();
    var filters = this.filters;
    Object.keys(filters).forEach(function (k) { if (filters[k]) params.set(k, filters[k]); });
    if (this.sorted) {
      params.set("sort", this.sorted.sort);
      params.set("order", this.sorted.order);
    }
    return params.toString();
  };
  Table.prototype.draw = function (showRow) {
    var self = this;
    var shown = this.rows.filter(function (row) { return self.matches(row); });
    var pages = Math.max(1, Math.ceil(shown.length / this.size));
    if (showRow) this.page = Math.floor(shown.indexOf(showRow) / this.size);
    this.page = Math.min(Math.max(this.page, 0), pages - 1);
    var first = this.page * this.size;
    var body = this.table.tBodies[0];
    var page = document.createDocumentFragment();
    shown.slice(first, first + this.size).forEach(function (row) {
      page.appendChild(row);
      if (row.trailRow) page.appendChild(row.trailRow);
    });
    body.textContent = "";
    body.appendChild(page);
    if (this.shownText) {
      var count = function (n) { return n.toLocaleString("en"); };
      this.shownText.textContent = (shown.length ? count(first + 1) + "\u2013" + count(first + body.rows.length) : "0") +
        " of " + count(shown.length) + (shown.length < this.rows.length ? " (filtered from " + count(this.rows.length) + ")" : "");
    }
  };
  Table.prototype.filterBy = function (query) {
    var params = new URLSearchParams(query);
    var self = this;
    this.filters = {};
    params.forEach(function (value, name) { if (name !== "sort" && name !== "order") self.filters[name] = value; });
    this.inputs.forEach(function (input) { input.value = self.filters[input.getAttribute("data-filter")] || ""; });
    if (params.get("sort")) this.sortBy(params.get("sort"), params.get("order") === "descending");
    this.page = 0;
    this.draw();
  };

  function openTarget() {
    var hash;
    try { hash = decodeURIComponent(location.hash.slice(1)); } catch (error) { return; }
    var split = hash.indexOf("?");
    if (split >= 0 && tables[hash.slice(0, split)]) {
      var table = tables[hash.slice(0, split)];
      table.filterBy(location.hash.slice(location.hash.indexOf("?") + 1));
      table.table.scrollIntoView();
      return;
    }
    var runs = tables.runs;
    if (hash.indexOf("run-") === 0 && runs) {
      var row = runs.rows.filter(function (r) { return r.querySelector("#" + CSS.escape(hash)); })[0];
      if (row) {
        if (!runs.matches(row)) runs.filterBy("");
        runs.draw(row);
      }
    }
    var target = hash && document.getElementById(hash);
    if (!target) return;
    for (var el = target; el; el = el.parentElement) {
      if (el.tagName === "DETAILS") el.open = true;
    }
    if (target.hasAttribute("data-run")) drawTrail(target);
    target.scrollIntoView();
  }

  document.addEventListener("toggle", function (event) {
    if (!event.target.hasAttribute("data-run")) return;
    if (event.target.open) drawTrail(event.target); else trailRow(event.target);
  }, true);
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    tables[table.id] = new Table(table);
  });
  window.addEventListener("hashchange", openTarget);
  openTarget();
})();
