/* SPDX-License-Identifier: MIT */
/*
 * The charts of the `gpuspy report --html` page (page.js draws the page,
 * flame.js its flame graph), drawn with uPlot from the report's data.
 * Each chart takes its box's width and follows it when the window (or
 * the box) changes width. A legend shows, before any hover, what the
 * whole chart sums to (a total, a mean or a peak, said beside it); hover
 * shows the point's own values. The step chart's axis is scaled to the
 * steps after the warm-up, and a step taller than it is cut and marked.
 * window.gspyCharts lists each chart drawn for the browser test
 * (tests/test_html.py): its title, points, values per series, width, the
 * top of its y axis and the points it cut; gspy.plots holds each chart's
 * uPlot (u) and the box it follows.
 * Names are put in as text (textContent), never as markup.
 */
"use strict";
window.gspy = (function () {
  const palette = ["#4269d0", "#efb118", "#ff725c", "#6cc5b0", "#3ca951", "#ff8ab7",
                   "#a463f2", "#97bbf5", "#9c6b4e", "#9498a0", "#1b9e77", "#d95f02", "#7570b3"];
  const plots = []; /* {u, box, height}: the charts drawn, resized with their box */
  /* Resized in the next frame, not in the observer's callback: a chart
   * resized there could change the layout it observes in the same frame. */
  const follow = new ResizeObserver(entries => requestAnimationFrame(() => {
    for (const e of entries)
      for (const p of plots)
        if (p.box === e.target && p.box.isConnected) {
          const w = width(p.box);
          if (w !== p.u.width) p.u.setSize({ width: w, height: p.height });
        }
  }));

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function mib(b) { return b / 1048576; }
  function width(box) { return Math.max(260, Math.floor(box.clientWidth)); }
  function sum(a) { return a.reduce((s, v) => s + (v || 0), 0); }
  function mean(a) { const v = a.filter(x => x != null); return v.length ? sum(v) / v.length : 0; }

  function fmtNs(ns) { /* captions and legends: the numbers in text come from gpuspy */
    if (ns < 1e3) return ns + " ns";
    if (ns < 1e6) return (ns / 1e3).toFixed(1) + " us";
    if (ns < 1e9) return (ns / 1e6).toFixed(1) + " ms";
    return (ns / 1e9).toFixed(2) + " s";
  }
  function fmtBytes(b) {
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let u = 0;
    while (b >= 1024 && u < units.length - 1) { b /= 1024; u++; }
    return (u && b < 10 ? b.toFixed(1) : b.toFixed(0)) + " " + units[u];
  }

  /* A series' legend value: its own value at the hovered point, or, before
   * any hover, what the chart sums to (dflt). */
  function legend(dflt, fmt) { return (u, v, s, i) => (i == null ? dflt : v == null ? "-" : fmt(v, i)); }

  /* A chart in a figure of box, or a line that says why there is none.
   * extra: {wide, note, marks (the points cut), top (the y axis' top)}. */
  function chart(box, title, opts, rows, why, extra) {
    extra = extra || {};
    const fig = el("figure", "chart" + (extra.wide ? " wide" : ""));
    fig.appendChild(el("figcaption", null, title));
    box.appendChild(fig);
    if (!rows || !rows[0] || rows[0].length === 0) {
      fig.appendChild(el("p", "none", why));
      return fig;
    }
    if (extra.note) fig.appendChild(el("p", "note", extra.note));
    const holder = el("div", "plot");
    fig.appendChild(holder);
    opts.width = width(holder);
    opts.height = opts.height || (extra.wide ? 260 : 240);
    opts.scales = Object.assign({ x: { time: false } }, opts.scales || {});
    const u = new uPlot(opts, rows, holder);
    plots.push({ u: u, box: holder, height: opts.height });
    follow.observe(holder);
    const values = rows.slice(1).map(r => r.filter(v => v != null).length);
    window.gspyCharts.push({ title: title, series: rows.length - 1, points: rows[0].length, values: values,
                             width: u.width, top: extra.top, cut: extra.marks || [] });
    return fig;
  }

  /* Bars stacked from the first series up: uPlot draws each series from
   * zero, so series k is drawn at the sum of 1..k, the highest first; the
   * legend shows each series' own value, or dflt[k] before any hover. */
  function stacked(labels, raw, fmt, dflt) {
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
        value: (u, v, s, i) => (i == null ? dflt[k] : fmt(own[i])),
      });
    }
    return { series: series, rows: rows };
  }

  const fromZero = { range: (u, lo, hi) => [0, hi > 0 ? hi * 1.05 : 1] };

  /* An x axis of names, one a bar; the labels drawn are also in the
   * figure's data-ticks (JSON), for the browser test. */
  function indexAxis(names, fit) {
    return {
      values: (u, ticks) => {
        const out = ticks.map(t => (Number.isInteger(t) && names[t] !== undefined ? (fit ? fit(u, names[t]) : names[t])
                                                                                   : ""));
        const fig = u.root.closest("figure");
        if (fig) fig.dataset.ticks = JSON.stringify(out);
        return out;
      },
      splits: () => names.map((_, i) => i),
    };
  }

  /*
   * The step chart's y axis. The first steps carry one-time costs (lazy
   * initialization, autotuning, compilation: a 1.5 s first step beside
   * 15 ms ones), and scaled to them the steady steps draw flat. So the
   * axis is scaled to the steps after the warm-up: those that began
   * before the report's steady state, and at least the first step when
   * there are four or more. Its top is 1.2 times their 95th percentile
   * (nearest rank) when some step is taller than that; each such step is
   * cut at the top, marked, and named in the note with its time.
   */
  function stepAxis(ms, starts, steadyFrom) {
    const n = ms.length, most = Math.max(...ms);
    let warm = 0;
    while (warm < n && steadyFrom != null && starts[warm] < steadyFrom) warm++;
    if (warm === 0 && n >= 4) warm = 1;
    const after = ms.slice(warm).sort((a, b) => a - b);
    if (after.length < 3) return { top: most > 0 ? most * 1.05 : 1, cut: [], warm: warm };
    const p95 = after[Math.ceil(0.95 * after.length) - 1], top = 1.2 * p95;
    if (most <= top) return { top: most > 0 ? most * 1.05 : 1, cut: [], warm: warm };
    const cut = [];
    ms.forEach((v, i) => { if (v > top) cut.push(i); });
    return { top: top, cut: cut, p95: p95, warm: warm };
  }

  function stepNote(ax, x, ms, per) {
    const named = ax.cut.slice(0, 6).map(i => x[i] + " (" + ms[i].toFixed(1) + " ms)");
    const more = ax.cut.length > 6 ? " and " + (ax.cut.length - 6) + " more" : "";
    const what = per > 1 ? "points" : "steps";
    const list = named.length === 1 ? named[0] : named.slice(0, -1).join(", ") + (more ? ", " + named.slice(-1) + more
                                                                                       : " and " + named.slice(-1));
    return "The axis stops at " + ax.top.toFixed(1) + " ms, 1.2 times the 95th percentile of the " + what +
           " after the warm-up (" + ax.p95.toFixed(1) + " ms): " + (per > 1 ? "point" : "step") +
           (ax.cut.length > 1 ? "s " : " ") + list + (ax.cut.length > 1 ? " are" : " is") +
           " taller, cut at the top and marked \u25B2.";
  }

  /* Marks each cut bar at the top of the plot: a triangle and its time. */
  function markCut(x, ms, cut) {
    return u => {
      const ctx = u.ctx, top = u.bbox.top, px = devicePixelRatio || 1;
      ctx.save();
      ctx.font = Math.round(11 * px) + "px system-ui, sans-serif";
      ctx.textBaseline = "top";
      ctx.textAlign = "left";
      for (const i of cut) {
        const cx = u.valToPos(x[i], "x", true), t = ms[i].toFixed(1) + " ms";
        ctx.fillStyle = "#b3261e";
        ctx.beginPath();
        ctx.moveTo(cx - 6 * px, top + 9 * px);
        ctx.lineTo(cx + 6 * px, top + 9 * px);
        ctx.lineTo(cx, top);
        ctx.fill();
        ctx.fillStyle = "rgba(255,255,255,0.85)";
        ctx.fillRect(cx + 7 * px, top, ctx.measureText(t).width + 4 * px, 13 * px);
        ctx.fillStyle = "#b3261e";
        ctx.fillText(t, cx + 9 * px, top + 1 * px);
      }
      ctx.restore();
    };
  }

  function stepsChart(box, s, step) {
    const st = s && s.steps;
    if (!st || !st.n.length)
      return chart(box, "Step time by phase", {}, null,
                   "No steps: no phase repeated in this process (see the text report's phases).", { wide: true });
    const x = [];
    let at = st.first || 1;
    for (const n of st.n) { x.push(at); at += n; }
    const ms = st.total_ns.map((v, i) => v / st.n[i] / 1e6);
    const ax = stepAxis(ms, st.t_ns, step && step.found ? step.steady_from_ns : null);
    /* Before any hover: each phase's mean over the steps after the warm-up. */
    const from = ax.warm < x.length ? ax.warm : 0, steps = sum(st.n.slice(from));
    const dflt = st.phases.map(p => (sum(p.ns.slice(from)) / steps / 1e6).toFixed(2) + " ms");
    const labels = st.phases.map(p => p.name);
    const raw = st.phases.map(p => p.ns.map((v, i) => v / st.n[i] / 1e6));
    const k = stacked(labels, raw, v => v.toFixed(2) + " ms", dflt);
    const span = "mean of steps " + x[from] + "-" + (x[x.length - 1] + st.n[st.n.length - 1] - 1);
    const title = "Step time by phase (ms" + (st.per_point > 1 ? ", each bar the mean of " +
                  st.per_point + " steps" : ", one bar a step") + (st.first > 1 ? "; from step " + st.first +
                  ", where the step's phase was recognized" : "") + ")";
    chart(box, title, {
      series: [{ label: "step", value: legend(span, v => String(v)) }].concat(k.series.slice(1)),
      scales: { x: { time: false, range: (u, lo, hi) => [lo - 0.5, hi + 0.5] }, y: { range: () => [0, ax.top] } },
      axes: [{ label: "step" }, { label: "ms" }],
      hooks: ax.cut.length ? { draw: [markCut(x, ms, ax.cut)] } : {},
    }, [x].concat(k.rows), null, { wide: true, top: ax.top, marks: ax.cut.map(i => x[i]),
                                   note: ax.cut.length ? stepNote(ax, x, ms, st.per_point) : null });
  }

  function binTimes(s) { return s.busy_ns.map((_, i) => (i * s.bin_ns) / 1e9); }

  function busyChart(box, s, timing, duration) {
    if (timing !== "gpu" || !s)
      return chart(box, "GPU busy and idle", {}, null,
                   "No GPU timestamps in this trace (CUPTI off or unavailable): GPU busy is unknown.", { wide: true });
    const d = Math.max(1, s.devices), w = s.bin_ns * d;
    const busy = s.busy_ns.map(v => Math.min(100, (100 * v) / w));
    const run = duration ? (100 * sum(s.busy_ns)) / (duration * d) : 0; /* the cards' share */
    const pct = v => v.toFixed(1);
    chart(box, "GPU busy and idle (% of each " + fmtNs(s.bin_ns) + (d > 1 ? ", " + d + " devices" : "") + ")", {
      series: [{ label: "s", value: legend("the whole run", v => v.toFixed(3)) },
               { label: "busy %", stroke: palette[0], fill: "rgba(66,105,208,0.35)", value: legend(pct(run), pct) },
               { label: "idle %", stroke: "#9498a0", value: legend(pct(100 - run), pct) }],
      scales: { y: { range: [0, 100] } },
      axes: [{ label: "seconds since the trace began" }, { label: "%" }],
    }, [binTimes(s), busy, busy.map(v => 100 - v)], null, { wide: true });
  }

  function memoryChart(box, s) {
    if (!s) return chart(box, "Device memory", {}, null, "No series in this report.");
    const one = v => v.toFixed(1), res = s.reserved.map(mib);
    const series = [{ label: "s", value: legend("peak", v => v.toFixed(3)) },
                    { label: "reserved (gpuspy) MiB", stroke: palette[2], value: legend(one(Math.max(0, ...res)), one) }];
    const rows = [binTimes(s), res];
    if (s.nvml) {
      const used = s.nvml.used_mib.filter(v => v != null);
      series.push({ label: "used (NVML) MiB", stroke: palette[4], spanGaps: true,
                    value: legend(used.length ? one(Math.max(...used)) : "-", one) });
      rows.push(s.nvml.used_mib);
    }
    chart(box, "Device memory (MiB)", { series: series, axes: [{ label: "seconds since the trace began" }, { label: "MiB" }] }, rows);
  }

  function copiesChart(box, rep, wide) {
    const dirs = [], pageable = [], pinned = [], device = [];
    const copy = rep.totals.copy;
    for (const name of Object.keys(copy)) {
      const c = copy[name];
      const total = (c.pageable ? c.pageable.bytes : 0) + (c.pinned ? c.pinned.bytes : 0) + (c.device ? c.device.bytes : 0);
      if (!total) continue;
      dirs.push(name);
      pageable.push(mib(c.pageable ? c.pageable.bytes : 0));
      pinned.push(mib(c.pinned ? c.pinned.bytes : 0));
      device.push(mib(c.device ? c.device.bytes : 0));
    }
    if (!dirs.length) return chart(box, "Copies by direction", {}, null, "No copies in this trace.", { wide: wide });
    const mb = v => v.toFixed(1) + " MiB";
    const k = stacked(["pageable host memory", "pinned host memory", "device to device"], [pageable, pinned, device],
                      mb, [mb(sum(pageable)), mb(sum(pinned)), mb(sum(device))]);
    chart(box, "Copies by direction (MiB)", {
      series: [{ label: "direction", value: (u, v) => (v == null ? "all" : dirs[v] || "-") }].concat(k.series.slice(1)),
      scales: { x: { time: false, range: () => [-0.5, dirs.length - 0.5] }, y: fromZero },
      axes: [Object.assign({ label: "direction" }, indexAxis(dirs)), { label: "MiB" }],
    }, [dirs.map((_, i) => i)].concat(k.rows), null, { wide: wide });
  }

  /* A kernel's short name (the kernels table's) cut to its bar's width. */
  function fitName(u, name) {
    const n = u.data[0].length || 1, px = u.bbox.width / (devicePixelRatio || 1) / n;
    const chars = Math.max(4, Math.floor((px - 6) / 6.6));
    return name.length <= chars ? name : name.slice(0, chars - 1) + "\u2026";
  }

  function kernelsChart(box, rep, timing, labels) {
    const top = rep.kernels.slice(0, 10);
    const gpu = timing === "gpu";
    if (!top.length) return chart(box, "Top kernels", {}, null, "No kernels in this trace.");
    const ms = top.map(k => (gpu ? k.gpu_ns : k.host_ns) / 1e6), names = top.map((k, i) => labels[i] || k.name);
    const fig = chart(box, "Top kernels by " + (gpu ? "GPU" : "launch") + " time (ms)", {
      series: [{ label: "kernel", value: (u, v) => (v == null ? "the top " + top.length + " of " + rep.kernels.length
                                                      : top[v] ? names[v] : "-") },
               { label: gpu ? "GPU time ms" : "launch time ms", fill: palette[0], stroke: palette[0], width: 0,
                 paths: uPlot.paths.bars({ size: [0.7, 60] }), points: { show: false },
                 value: legend(sum(ms).toFixed(2) + " in all", v => v.toFixed(2)) }],
      scales: { x: { time: false, range: () => [-0.5, top.length - 0.5] }, y: fromZero },
      axes: [Object.assign({ label: "kernel (full names below)", size: 40 }, indexAxis(names, fitName)),
             { label: "ms" }],
    }, [top.map((_, i) => i), ms], null, { wide: true });
    const ol = el("ol", "kernels");
    for (const k of top) {
      const li = el("li", null, (gpu ? k.gpu_count : k.count) + " runs: " + k.name);
      li.title = k.name;
      ol.appendChild(li);
    }
    fig.appendChild(ol);
  }

  /* NVML's samples of this process's devices: its own, or, where another
   * traced process sampled its device (one process a device samples), that
   * one's; else why there are none, from the trace's header. */
  function telemetrySource(data, view) {
    const p = data.processes[view], me = data.report.processes[view], hdr = p.nvml || {};
    if (p.series && p.series.nvml) return { s: p.series };
    for (const [d, pid] of (hdr.sampler || []).entries()) {
      if (!pid || pid === me.pid) continue;
      const j = data.report.processes.findIndex(q => q.pid === pid && q.host === me.host);
      if (j >= 0 && data.processes[j].series && data.processes[j].series.nvml)
        return { s: data.processes[j].series, who: data.processes[j].label, device: d };
      return { why: "No NVML samples here: device " + d + " was sampled by pid " + pid + ", whose trace is not " +
                    "in this report (one process a device samples)." };
    }
    if (hdr.state === "unavailable")
      return { why: "No NVML samples: NVML could not be used in the traced process (no libnvidia-ml.so.1, or " +
                    "it did not know the device)." };
    if (hdr.state === "off" || !hdr.ms)
      return { why: "No NVML samples: sampling was off when this trace was recorded (its header has no period: " +
                    "GPUSPY_NVML_MS=0, or a gpuspy older than its telemetry)." };
    return { why: "No NVML samples in this trace, though it asked for one every " + hdr.ms + " ms." };
  }

  function telemetryCharts(box, data, view) {
    const src = telemetrySource(data, view), s = src.s, n = s && s.nvml;
    if (!n) {
      chart(box, "GPU utilization and power (NVML)", {}, null, src.why);
      return chart(box, "SM clock and temperature (NVML)", {}, null, src.why);
    }
    const t = binTimes(s);
    const whose = src.who ? "; device " + src.device + " as " + src.who + " sampled it, " +
                            "seconds since its trace began" : "";
    const avg = (a, d) => legend(mean(a).toFixed(d) + " (mean)", v => v.toFixed(d));
    const xs = { label: "s", value: legend("the whole run", v => v.toFixed(3)) };
    const xlabel = src.who ? "seconds since " + src.who + "'s trace began" : "seconds since the trace began";
    chart(box, "GPU utilization (%) and power (W), NVML" + whose, {
      series: [xs, { label: "utilization %", stroke: palette[0], spanGaps: true, scale: "%", value: avg(n.util_pct, 1) },
               { label: "power W", stroke: palette[2], spanGaps: true, scale: "W", value: avg(n.power_w, 1) }],
      scales: { "%": { range: [0, 100] } },
      axes: [{ label: xlabel }, { scale: "%", label: "%" }, { scale: "W", side: 1, label: "W", grid: { show: false } }],
    }, [t, n.util_pct, n.power_w]);
    chart(box, "SM clock (MHz) and temperature (C), NVML" + whose, {
      series: [xs, { label: "SM MHz", stroke: palette[4], spanGaps: true, scale: "MHz", value: avg(n.sm_mhz, 0) },
               { label: "temperature C", stroke: palette[1], spanGaps: true, scale: "C", value: avg(n.temp_c, 1) }],
      axes: [{ label: xlabel }, { scale: "MHz", label: "MHz" }, { scale: "C", side: 1, label: "C", grid: { show: false } }],
    }, [t, n.sm_mhz, n.temp_c]);
  }

  /* The charts of a view drawn over: no longer followed. */
  function forget() {
    for (const p of plots) follow.unobserve(p.box);
    plots.length = 0;
  }

  return { plots: plots, el: el, fmtNs: fmtNs, fmtBytes: fmtBytes, follow: follow, stepsChart: stepsChart, busyChart: busyChart,
           memoryChart: memoryChart, copiesChart: copiesChart, kernelsChart: kernelsChart,
           telemetryCharts: telemetryCharts, forget: forget };
})();
