
(function () {
  var PAGE = 100;
  var tables = {};
  var trails = null;

  function make(tag, className, text) {
    var el = document.createElement(tag);
    if (className) el.className = className;
    if (text !== undefined) el.textContent = text;
    return el;
  }
  function badge(result) {
    var cls = {satisfied: "satisfied", needs_revision: "unsatisfied", max_iterations_reached: "unsatisfied", failed: "unsatisfied"};
    return make("span", "status " + (cls[result] || "error"), result);
  }
  function drawTrail(details) {
    if (details.getAttribute("data-drawn")) return;
    details.setAttribute("data-drawn", "1");
    trails = trails || JSON.parse(document.getElementById("trails").textContent);
    var t = trails[+details.getAttribute("data-run")];
    if (t.passes.length) {
      var list = make("ol", "trail");
      t.passes.forEach(function (pass) {
        var item = make("li");
        var verdict = make("div");
        verdict.appendChild(badge(pass.result));
        verdict.appendChild(document.createTextNode(" " + pass.explanation +
          (pass.passed[1] ? " (" + pass.passed[0] + " of " + pass.passed[1] + " criteria passed)" : "")));
        var gaps = make("ul");
        pass.failing.forEach(function (c) { gaps.appendChild(make("li", "gap", "\u2717 " + c[0] + ": " + c[1])); });
        verdict.appendChild(gaps);
        item.appendChild(verdict);
        if (pass.diff) {
          var diff = make("div", "diff");
          diff.appendChild(make("strong", "", "The answer after this pass: "));
          pass.diff.forEach(function (op) {
            diff.appendChild(op[0] === "=" ? document.createTextNode(op[1]) : make(op[0] === "-" ? "del" : "ins", "", op[1]));
          });
          item.className = "passes";
          item.appendChild(diff);
        }
        list.appendChild(item);
      });
      details.appendChild(list);
    } else {
      details.appendChild(make("p", "", "No grading pass."));
    }
    if (t.error) details.appendChild(make("p", "gap", t.error));
    var where = make("p");
    where.appendChild(document.createTextNode("Run dir "));
    where.appendChild(make("code", "", t.run_dir));
    where.appendChild(make("br"));
    where.appendChild(document.createTextNode("Overrides "));
    where.appendChild(make("code", "", t.overrides || "-"));
    details.appendChild(where);
    if (t.answer) {
      var answer = make("details");
      answer.appendChild(make("summary", "", "final answer"));
      answer.appendChild(make("pre", "", t.answer));
      details.appendChild(answer);
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
        history.replaceState(null, "", "#" + table.id + "?" + self.query());
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
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, column) {
      var button = make("button", "", th.textContent);
      button.type = "button";
      th.textContent = "";
      th.appendChild(button);
      button.addEventListener("click", function () {
        var up = th.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", up ? "ascending" : "descending");
        var keyed = self.rows.map(function (row, i) { return [key(row.cells[column]), i, row]; });
        keyed.sort(function (a, b) { return (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1]) * (up ? 1 : -1); });
        self.rows = keyed.map(function (k) { return k[2]; });
        self.draw();
      });
    });
    this.draw();
  }
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
    var filters = this.filters;
    return Object.keys(filters).filter(function (k) { return filters[k]; }).map(function (k) {
      return encodeURIComponent(k) + "=" + encodeURIComponent(filters[k]);
    }).join("&");
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
    shown.slice(first, first + this.size).forEach(function (row) { page.appendChild(row); });
    body.textContent = "";
    body.appendChild(page);
    if (this.shownText) {
      var last = Math.min(first + this.size, shown.length);
      this.shownText.textContent = (shown.length ? (first + 1) + "\u2013" + last : "0") + " of " + shown.length.toLocaleString("en") +
        (shown.length < this.rows.length ? " (filtered from " + this.rows.length.toLocaleString("en") + ")" : "");
    }
  };
  Table.prototype.filterBy = function (query) {
    var params = new URLSearchParams(query);
    var self = this;
    this.filters = {};
    params.forEach(function (value, name) { self.filters[name] = value; });
    this.inputs.forEach(function (input) { input.value = self.filters[input.getAttribute("data-filter")] || ""; });
    this.page = 0;
    this.draw();
  };

  function openTarget() {
    var hash = decodeURIComponent(location.hash.slice(1));
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
    if (event.target.open && event.target.hasAttribute("data-run")) drawTrail(event.target);
  }, true);
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    tables[table.id] = new Table(table);
  });
  window.addEventListener("hashchange", openTarget);
  openTarget();
})();
