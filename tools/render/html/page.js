/* SPDX-License-Identifier: MIT */
/*
 * The page of `gpuspy report --html` (tools/render/html.c writes it): draws
 * the report's data, the JSON in #gspy-data, with the charts of charts.js
 * and the flame graph of flame.js. Every text the page shows is the
 * data's, put in with textContent, never as markup; the numbers it prints
 * as text (cards, diagnoses, the ranks table, the text report) come
 * formatted from gpuspy, so they read as the text report does. The view
 * is chosen in the page's select, or with #process=N in its address (N
 * from 0; -1: all processes). body's data-charts holds window.gspyCharts
 * as JSON, for the browser test (tests/test_html.py).
 */
"use strict";
(function (gspy) {
  const data = JSON.parse(document.getElementById("gspy-data").textContent);
  const el = gspy.el;
  window.gspyCharts = [];

  function cards(box, list) {
    const dl = el("dl", "cards");
    for (const c of list) {
      const d = el("div", "card");
      d.appendChild(el("dt", null, c.label));
      d.appendChild(el("dd", null, c.value));
      dl.appendChild(d);
    }
    box.appendChild(dl);
  }

  /* Each diagnosis; in the view of all processes, each says whose it is
   * (rank, or pid without one), as the text report's do. */
  function diagnoses(box, list, all) {
    box.appendChild(el("h2", null, "Diagnoses"));
    if (!list.length) return box.appendChild(el("p", "none", "None: nothing in this trace calls for a change."));
    const ul = el("ul", "diagnoses");
    for (const d of list) {
      const li = el("li", "diagnosis");
      li.dataset.id = d.id;
      const lines = d.text.split("\n"), first = el("p");
      if (all) {
        li.dataset.process = d.who;
        first.appendChild(el("span", "who", d.who));
        first.appendChild(document.createTextNode(" " + lines[0]));
      } else {
        first.textContent = lines[0];
      }
      li.appendChild(first);
      for (const line of lines.slice(1)) li.appendChild(el("p", null, line));
      if (d.saving) li.appendChild(el("p", "saving", d.saving));
      ul.appendChild(li);
    }
    box.appendChild(ul);
  }

  function textReport(box, text) {
    const det = el("details", "text");
    det.appendChild(el("summary", null, "Text report (as gpuspy report prints it)"));
    det.appendChild(el("pre", null, text));
    box.appendChild(det);
  }

  function table(cls, head, rows) {
    const t = el("table", cls), tr = el("tr");
    for (const h of head) tr.appendChild(el("th", null, h));
    t.appendChild(tr);
    for (const r of rows) {
      const row = el("tr");
      for (const v of r) row.appendChild(el("td", null, v));
      t.appendChild(row);
    }
    return t;
  }

  function processTable(box) {
    const val = (p, l) => (p.cards.find(c => c.label === l) || { value: "-" }).value;
    box.appendChild(el("h2", null, "Processes"));
    box.appendChild(table("procs", ["process", "command", "traced", "events", "dropped"],
                          data.processes.map(p => [p.label, p.command, val(p, "traced"), val(p, "events"),
                                                   val(p, "dropped")])));
  }

  /* The ranks of one job side by side, as the text report's "== ranks"
   * table: each cell gpuspy's, the lines below it too. */
  function ranksTable(box, k) {
    const sec = el("section", "ranks");
    sec.appendChild(el("h2", null, "Ranks"));
    sec.appendChild(el("p", null, k.head));
    sec.appendChild(table("procs ranks", k.columns, k.rows));
    if (k.notes) sec.appendChild(el("pre", "notes", k.notes.replace(/\n$/, "")));
    box.appendChild(sec);
  }

  function draw(view) {
    const main = document.getElementById("view");
    main.textContent = "";
    gspy.forget();
    window.gspyCharts = [];
    const timing = data.report.timing;
    const charts = el("section", "charts");
    if (view < 0) { /* all processes */
      main.appendChild(el("h2", null, "All " + data.processes.length + " processes"));
      cards(main, data.cards);
      if (data.ranks) ranksTable(main, data.ranks);
      processTable(main);
      diagnoses(main, data.processes.flatMap(p => p.diagnoses.map(d => Object.assign({ who: p.label }, d))), true);
      main.appendChild(charts);
      gspy.copiesChart(charts, data.report, true);
      gspy.kernelsChart(charts, data.report, timing, data.kernel_labels || []);
      gspy.flame(charts, data.flame);
      textReport(main, data.text);
    } else {
      const p = data.processes[view], rep = data.report.processes[view], s = p.series;
      main.appendChild(el("h2", null, p.label + ": " + p.command));
      cards(main, p.cards);
      diagnoses(main, p.diagnoses, false);
      main.appendChild(charts);
      gspy.stepsChart(charts, s, rep.step);
      gspy.busyChart(charts, s, timing, rep.duration_ns);
      gspy.memoryChart(charts, s);
      gspy.copiesChart(charts, rep);
      gspy.kernelsChart(charts, rep, timing, p.kernel_labels || []);
      gspy.telemetryCharts(charts, data, view);
      gspy.flame(charts, p.flame);
      textReport(main, p.text);
    }
    document.body.dataset.view = String(view);
    document.body.dataset.charts = JSON.stringify(window.gspyCharts);
    document.body.dataset.drawnMs = performance.now().toFixed(0); /* since the page was asked for */
  }

  const header = el("header");
  header.appendChild(el("h1", null, "gpuspy report"));
  header.appendChild(el("span", "tool", data.tool));
  const pick = el("select");
  pick.id = "process";
  if (data.processes.length > 1) pick.appendChild(new Option("all processes", "-1"));
  data.processes.forEach((p, i) => pick.appendChild(new Option(p.label + ": " + p.command, String(i))));
  const label = el("label", null, "Process ");
  label.appendChild(pick);
  header.appendChild(label);
  document.body.appendChild(header);
  const main = el("main");
  main.id = "view";
  document.body.appendChild(main);
  const asked = /process=(-?\d+)/.exec(location.hash);
  if (asked && [...pick.options].some(o => o.value === asked[1])) pick.value = asked[1];
  pick.addEventListener("change", () => { location.hash = "process=" + pick.value; draw(Number(pick.value)); });
  draw(Number(pick.value));
})(window.gspy);
