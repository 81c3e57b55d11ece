/* SPDX-License-Identifier: MIT */
/*
 * The page of `gpuspy report --html` (tools/report_html.c writes it): draws
 * the report's data, the JSON in #gspy-data, with uPlot. Every text the
 * page shows is the data's, put in with textContent, never as markup; the
 * numbers it prints as text (cards, diagnoses, the text report) come
 * formatted from gpuspy, so they read as the text report does. Charts:
 * window.gspyCharts lists each chart drawn, its points and each series'
 * values, also as JSON in body's data-charts, for the browser test
 * (tests/test_html.py). The view is chosen in the page's select, or with
 * #process=N in its address (N from 0; -1: all processes).
 */
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("gspy-data").textContent);
  const palette = ["#4269d0", "#efb118", "#ff725c", "#6cc5b0", "#3ca951", "#ff8ab7",
                   "#a463f2", "#97bbf5", "#9c6b4e", "#9498a0", "#1b9e77", "#d95f02", "#7570b3"];
  window.gspyCharts = [];

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function mib(b) { return b / 1048576; }
  function width(box) { return Math.max(560, Math.min(1100, box.clientWidth || 900)); }

  /* A chart, or a line that says why there is none. */
  function chart(box, title, opts, rows, why) {
    const fig = el("figure", "chart");
    fig.appendChild(el("figcaption", null, title));
    box.appendChild(fig);
    if (!rows || !rows[0] || rows[0].length === 0) {
      fig.appendChild(el("p", "none", why));
      return;
    }
    opts.width = width(box);
    opts.height = opts.height || 240;
    opts.scales = Object.assign({ x: { time: false } }, opts.scales || {});
    new uPlot(opts, rows, fig);
    const values = rows.slice(1).map(r => r.filter(v => v != null).length);
    window.gspyCharts.push({ title: title, series: rows.length - 1, points: rows[0].length, values: values });
  }

  /* Bars stacked from the first series up: uPlot draws each series from
   * zero, so series k is drawn at the sum of 1..k, the highest first; the
   * legend shows each series' own value. */
  function stacked(labels, raw, fmt) {
    const n = raw[0].length, sums = [], series = [{}];
    let acc = new Array(n).fill(0);
    for (let k = 0; k < labels.length; k++) {
      acc = acc.map((v, i) => v + (raw[k][i] || 0));
      sums.push(acc);
    }
    const rows = [];
    for (let k = labels.length - 1; k >= 0; k--) {
      const own = raw[k];
      rows.push(sums[k]);
      series.push({
        label: labels[k], fill: palette[k % palette.length], stroke: palette[k % palette.length],
        width: 0, points: { show: false }, paths: uPlot.paths.bars({ size: [0.8, 60] }),
        value: (u, v, s, i) => (i == null ? "-" : fmt(own[i])),
      });
    }
    return { series: series, rows: rows };
  }

  const fromZero = { range: (u, lo, hi) => [0, hi > 0 ? hi * 1.05 : 1] };

  function indexAxis(names) {
    return {
      values: (u, ticks) => ticks.map(t => (Number.isInteger(t) && names[t] !== undefined ? names[t] : "")),
      splits: () => names.map((_, i) => i),
    };
  }

  function stepsChart(box, s) {
    const st = s && s.steps;
    if (!st || !st.n.length)
      return chart(box, "Step time by phase", {}, null,
                   "No steps: no phase repeated in this process (see the text report's phases).");
    const x = [];
    let at = st.first || 1;
    for (const n of st.n) { x.push(at); at += n; }
    const labels = st.phases.map(p => p.name);
    const raw = st.phases.map(p => p.ns.map((v, i) => v / st.n[i] / 1e6));
    const k = stacked(labels, raw, v => v.toFixed(2) + " ms");
    const title = "Step time by phase (ms" + (st.per_point > 1 ? ", each bar the mean of " +
                  st.per_point + " steps" : ", one bar a step") + (st.first > 1 ? "; from step " + st.first +
                  ", where the step's phase was recognized" : "") + ")";
    chart(box, title, {
      series: [{ label: "step" }].concat(k.series.slice(1)),
      scales: { x: { time: false, range: (u, lo, hi) => [lo - 0.5, hi + 0.5] }, y: fromZero },
      axes: [{ label: "step" }, { label: "ms" }],
    }, [x].concat(k.rows));
  }

  function binTimes(s) { return s.busy_ns.map((_, i) => (i * s.bin_ns) / 1e9); }

  function busyChart(box, s, timing) {
    if (timing !== "gpu" || !s)
      return chart(box, "GPU busy and idle", {}, null,
                   "No GPU timestamps in this trace (CUPTI off or unavailable): GPU busy is unknown.");
    const d = Math.max(1, s.devices), w = s.bin_ns * d;
    const busy = s.busy_ns.map(v => Math.min(100, (100 * v) / w));
    chart(box, "GPU busy and idle (% of each " + fmtNs(s.bin_ns) + (d > 1 ? ", " + d + " devices" : "") + ")", {
      series: [{ label: "s" },
               { label: "busy %", stroke: palette[0], fill: "rgba(66,105,208,0.35)", value: (u, v) => v == null ? "-" : v.toFixed(1) },
               { label: "idle %", stroke: "#9498a0", value: (u, v) => v == null ? "-" : v.toFixed(1) }],
      scales: { y: { range: [0, 100] } },
      axes: [{ label: "seconds since the trace began" }, { label: "%" }],
    }, [binTimes(s), busy, busy.map(v => 100 - v)]);
  }

  function memoryChart(box, s) {
    if (!s) return chart(box, "Device memory", {}, null, "No series in this report.");
    const series = [{ label: "s" }, { label: "reserved (gpuspy) MiB", stroke: palette[2], value: (u, v) => v == null ? "-" : v.toFixed(1) }];
    const rows = [binTimes(s), s.reserved.map(mib)];
    if (s.nvml) {
      series.push({ label: "used (NVML) MiB", stroke: palette[4], spanGaps: true, value: (u, v) => v == null ? "-" : v.toFixed(1) });
      rows.push(s.nvml.used_mib);
    }
    chart(box, "Device memory (MiB)", { series: series, axes: [{ label: "seconds since the trace began" }, { label: "MiB" }] }, rows);
  }

  function copiesChart(box, rep) {
    const dirs = [], pageable = [], pinned = [], device = [];
    const copy = rep.totals.copy;
    for (const name of Object.keys(copy)) {
      const c = copy[name];
      const sum = (c.pageable ? c.pageable.bytes : 0) + (c.pinned ? c.pinned.bytes : 0) + (c.device ? c.device.bytes : 0);
      if (!sum) continue;
      dirs.push(name);
      pageable.push(mib(c.pageable ? c.pageable.bytes : 0));
      pinned.push(mib(c.pinned ? c.pinned.bytes : 0));
      device.push(mib(c.device ? c.device.bytes : 0));
    }
    if (!dirs.length) return chart(box, "Copies by direction", {}, null, "No copies in this trace.");
    const k = stacked(["pageable host memory", "pinned host memory", "device to device"], [pageable, pinned, device],
                      v => v.toFixed(1) + " MiB");
    chart(box, "Copies by direction (MiB)", {
      series: [{ label: "direction", value: (u, v) => dirs[v] || "-" }].concat(k.series.slice(1)),
      scales: { x: { time: false, range: () => [-0.5, dirs.length - 0.5] }, y: fromZero },
      axes: [Object.assign({ label: "direction" }, indexAxis(dirs)), { label: "MiB" }],
    }, [dirs.map((_, i) => i)].concat(k.rows));
  }

  function kernelsChart(box, rep, timing) {
    const top = rep.kernels.slice(0, 10);
    const gpu = timing === "gpu";
    if (!top.length) return chart(box, "Top kernels", {}, null, "No kernels in this trace.");
    const names = top.map((_, i) => "#" + (i + 1));
    chart(box, "Top kernels by " + (gpu ? "GPU" : "launch") + " time (ms)", {
      series: [{ label: "kernel", value: (u, v) => (v == null || !top[v] ? "-" : top[v].name) },
               { label: gpu ? "GPU time ms" : "launch time ms", fill: palette[0], stroke: palette[0], width: 0,
                 paths: uPlot.paths.bars({ size: [0.7, 60] }), points: { show: false } }],
      scales: { x: { time: false, range: () => [-0.5, top.length - 0.5] }, y: fromZero },
      axes: [Object.assign({ label: "kernel (named below)" }, indexAxis(names)), { label: "ms" }],
    }, [top.map((_, i) => i), top.map(k => (gpu ? k.gpu_ns : k.host_ns) / 1e6)]);
    const ol = el("ol", "kernels");
    for (const k of top) {
      const li = el("li", null, (gpu ? k.gpu_count : k.count) + " runs: " + k.name);
      li.title = k.name;
      ol.appendChild(li);
    }
    box.lastChild.appendChild(ol);
  }

  function telemetryCharts(box, s) {
    const n = s && s.nvml;
    const why = "No NVML samples (GPUSPY_NVML_MS=0, NVML unavailable, or another process sampled this GPU).";
    if (!n) {
      chart(box, "GPU utilization and power (NVML)", {}, null, why);
      return chart(box, "SM clock and temperature (NVML)", {}, null, why);
    }
    const t = binTimes(s), fix = (d) => (u, v) => (v == null ? "-" : v.toFixed(d));
    chart(box, "GPU utilization (%) and power (W), NVML", {
      series: [{ label: "s" }, { label: "utilization %", stroke: palette[0], spanGaps: true, scale: "%", value: fix(1) },
               { label: "power W", stroke: palette[2], spanGaps: true, scale: "W", value: fix(1) }],
      scales: { "%": { range: [0, 100] } },
      axes: [{ label: "seconds since the trace began" }, { scale: "%", label: "%" }, { scale: "W", side: 1, label: "W", grid: { show: false } }],
    }, [t, n.util_pct, n.power_w]);
    chart(box, "SM clock (MHz) and temperature (C), NVML", {
      series: [{ label: "s" }, { label: "SM MHz", stroke: palette[4], spanGaps: true, scale: "MHz", value: fix(0) },
               { label: "temperature C", stroke: palette[1], spanGaps: true, scale: "C", value: fix(1) }],
      axes: [{ label: "seconds since the trace began" }, { scale: "MHz", label: "MHz" }, { scale: "C", side: 1, label: "C", grid: { show: false } }],
    }, [t, n.sm_mhz, n.temp_c]);
  }

  function fmtNs(ns) { /* axis captions only: the numbers in text come from gpuspy */
    if (ns < 1e3) return ns + " ns";
    if (ns < 1e6) return (ns / 1e3).toFixed(1) + " us";
    if (ns < 1e9) return (ns / 1e6).toFixed(1) + " ms";
    return (ns / 1e9).toFixed(2) + " s";
  }

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

  function diagnoses(box, list) {
    box.appendChild(el("h2", null, "Diagnoses"));
    if (!list.length) return box.appendChild(el("p", "none", "None: nothing in this trace calls for a change."));
    const ul = el("ul", "diagnoses");
    for (const d of list) {
      const li = el("li", "diagnosis");
      li.dataset.id = d.id;
      for (const line of d.text.split("\n")) li.appendChild(el("p", null, line));
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

  function processTable(box) {
    const t = el("table", "procs"), head = el("tr");
    for (const h of ["process", "command", "traced", "events", "dropped"]) head.appendChild(el("th", null, h));
    t.appendChild(head);
    for (const p of data.processes) {
      const tr = el("tr"), val = (l) => (p.cards.find(c => c.label === l) || { value: "-" }).value;
      for (const v of [p.label, p.command, val("traced"), val("events"), val("dropped")]) tr.appendChild(el("td", null, v));
      t.appendChild(tr);
    }
    box.appendChild(t);
  }

  function draw(view) {
    const main = document.getElementById("view");
    main.textContent = "";
    window.gspyCharts = [];
    const timing = data.report.timing;
    if (view < 0) { /* all processes */
      main.appendChild(el("h2", null, "All " + data.processes.length + " processes"));
      cards(main, data.cards);
      processTable(main);
      diagnoses(main, data.processes.flatMap(p => p.diagnoses));
      const charts = el("section", "charts");
      main.appendChild(charts);
      copiesChart(charts, data.report);
      kernelsChart(charts, data.report, timing);
      textReport(main, data.text);
    } else {
      const p = data.processes[view], rep = data.report.processes[view], s = p.series;
      main.appendChild(el("h2", null, p.label + ": " + p.command));
      cards(main, p.cards);
      diagnoses(main, p.diagnoses);
      const charts = el("section", "charts");
      main.appendChild(charts);
      stepsChart(charts, s);
      busyChart(charts, s, timing);
      memoryChart(charts, s);
      copiesChart(charts, rep);
      kernelsChart(charts, rep, timing);
      telemetryCharts(charts, s);
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
})();
