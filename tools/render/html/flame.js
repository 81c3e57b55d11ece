/* SPDX-License-Identifier: MIT */
/*
 * The flame graph of the `gpuspy report --html` page (page.js places it):
 * where the host's time in CUDA calls, or the device and pinned bytes
 * allocated, come from, by call stack (Python and native frames), from
 * the tree that report/stacks.c puts in the page's data: each frame with
 * its calls, time and bytes, its callees' included. Drawn in SVG as an
 * icicle, the root (the process) on top and each callee below its
 * caller, as wide as its share. Click a frame to zoom into it: it takes
 * the whole width and its callers stay above it; click one of those (or
 * the root) to zoom back out. A frame's title (shown on hover) names it,
 * with its time or bytes, its calls and its share of the whole. Frames
 * narrower than half a pixel are not drawn (a zoom shows them). The graph
 * is in the figure's data-flame (JSON: the metric, the frame zoomed into,
 * each frame's path from the root, value, place and whether it is drawn),
 * for the browser test.
 */
"use strict";
(function (gspy) {
  const el = gspy.el, ROW = 18, SVG = "http://www.w3.org/2000/svg";
  const METRICS = { ns: "host time in CUDA calls", bytes: "bytes allocated (device and pinned)" };

  function svg(tag, attrs) {
    const e = document.createElementNS(SVG, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    return e;
  }

  /* The frames, each with its callees in name order (as flamegraph.pl):
   * one order for both metrics, so a switch keeps frames in place. */
  function tree(fl) {
    const nodes = fl.name.map((n, i) => ({ i: i, name: fl.names[n], parent: fl.parent[i], calls: fl.calls[i],
                                           ns: fl.ns[i], bytes: fl.bytes[i], kids: [] }));
    for (const x of nodes) if (x.parent >= 0) nodes[x.parent].kids.push(x);
    for (const x of nodes) x.kids.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return nodes;
  }

  function path(nodes, x) {
    const p = [];
    for (; x; x = x.parent >= 0 ? nodes[x.parent] : null) p.unshift(x.name);
    return p;
  }

  /* Python frames ("f (file.py:12)") blue, native ones warm, the root and
   * frames of unknown code grey; shades by name, so a frame keeps its
   * colour through a zoom. */
  function colour(x) {
    let h = 0;
    for (let i = 0; i < x.name.length; i++) h = (h * 31 + x.name.charCodeAt(i)) >>> 0;
    const l = 62 + (h % 16);
    if (x.parent < 0 || /^\?|^\[/.test(x.name)) return "hsl(220, 8%, " + l + "%)";
    if (/\.py:\d+\)$/.test(x.name)) return "hsl(" + (195 + (h % 30)) + ", 60%, " + l + "%)";
    if (/\+0x[0-9a-f]+/.test(x.name)) return "hsl(35, 25%, " + l + "%)";
    return "hsl(" + (h % 45) + ", 75%, " + l + "%)";
  }

  function value(metric, v) { return metric === "ns" ? gspy.fmtNs(v) : gspy.fmtBytes(v); }

  function title(metric, x, root) {
    const v = x[metric], share = root ? ((100 * v) / root).toFixed(1) : "0.0";
    const self = v - x.kids.reduce((s, k) => s + k[metric], 0);
    let t = x.name + "\n" + value(metric, v);
    if (metric === "ns") t += " in " + x.calls + (x.calls === 1 ? " call" : " calls");
    t += ", " + share + "% of all";
    if (self > 0 && x.kids.length) t += "; " + value(metric, self) + " in calls made here";
    return t;
  }

  function cover(fl) {
    const c = fl.cover, notes = [];
    if (c.stacked < c.calls)
      notes.push(c.stacked + " of " + c.calls + " CUDA calls carry a call stack (" +
                 (c.host_ns ? ((100 * c.stacked_ns) / c.host_ns).toFixed(1) : "0.0") + "% of their host time): " +
                 "only they are drawn. GPUSPY_STACKS=all GPUSPY_STACK_LAUNCHES=1 GPUSPY_STACK_MIN=0 give every call one.");
    if (fl.pruned)
      notes.push(fl.pruned + " smaller frames are left out of the page: their time and bytes are in their callers'.");
    return notes.join(" ");
  }

  gspy.flame = function (box, fl) {
    const fig = el("figure", "chart wide flame");
    fig.appendChild(el("figcaption", null, "Where the CUDA calls come from (flame graph, by call stack)"));
    box.appendChild(fig);
    if (!fl || !fl.cover || !fl.cover.stacked) {
      fig.appendChild(el("p", "none", "No call stacks in this trace: gpuspy records the stacks of allocations, " +
                         "frees, pageable copies and waits of 10 us or more by default (GPUSPY_STACKS), so none of " +
                         "its calls has one. Record with GPUSPY_STACKS=all GPUSPY_STACK_LAUNCHES=1 GPUSPY_STACK_MIN=0 " +
                         "for a stack on every call."));
      return;
    }
    const nodes = tree(fl), state = { metric: "ns", focus: 0 };
    const bar = el("div", "switch");
    for (const m of Object.keys(METRICS)) {
      const lab = el("label"), r = el("input");
      r.type = "radio";
      r.name = "flame-metric";
      r.value = m;
      r.checked = m === state.metric;
      r.disabled = !nodes[0][m];
      r.addEventListener("change", () => { state.metric = m; state.focus = 0; draw(); });
      lab.appendChild(r);
      lab.appendChild(document.createTextNode(" " + METRICS[m] + (nodes[0][m] ? "" : " (none with a stack)")));
      bar.appendChild(lab);
    }
    bar.appendChild(el("span", "hint", "click a frame to zoom into it, one above it to zoom out"));
    fig.appendChild(bar);
    const note = cover(fl);
    if (note) fig.appendChild(el("p", "note", note));
    const holder = el("div", "flame-plot");
    fig.appendChild(holder);

    function draw() {
      const W = Math.max(260, Math.floor(holder.clientWidth)), m = state.metric, root = nodes[0][m];
      const focus = nodes[state.focus], drawn = [];
      const g = svg("svg", { width: W, role: "img" });
      function frame(x, depth, left, w, above) {
        drawn.push({ path: path(nodes, x), value: x[m], x: +left.toFixed(2), w: +w.toFixed(2), depth: depth,
                     drawn: w >= 0.5 });
        if (w < 0.5) return;
        const e = svg("g", { class: "frame" + (above ? " above" : ""), "data-i": x.i });
        e.appendChild(svg("rect", { x: left, y: depth * ROW, width: Math.max(w - 0.5, 0.5), height: ROW - 1,
                                    fill: colour(x) }));
        const chars = Math.floor((w - 6) / 6.6);
        if (chars >= 3)
          e.appendChild(svg("text", { x: left + 3, y: depth * ROW + 13 })).textContent =
            x.name.length <= chars ? x.name : x.name.slice(0, chars - 1) + "\u2026";
        e.appendChild(svg("title", {})).textContent = title(m, x, root);
        g.appendChild(e);
      }
      const callers = [];
      for (let x = focus; x.parent >= 0; ) callers.unshift((x = nodes[x.parent]));
      callers.forEach((x, d) => frame(x, d, 0, W, true));
      let deepest = callers.length;
      const scale = focus[m] ? W / focus[m] : 0;
      (function lay(x, depth, left) {
        frame(x, depth, left, x[m] * scale, false);
        if (x[m] * scale >= 0.5) deepest = Math.max(deepest, depth);
        for (const k of x.kids) {
          if (k[m] > 0) lay(k, depth + 1, left);
          left += k[m] * scale;
        }
      })(focus, callers.length, 0);
      g.setAttribute("height", (deepest + 1) * ROW);
      holder.textContent = "";
      holder.appendChild(g);
      fig.dataset.flame = JSON.stringify({ metric: m, focus: path(nodes, focus), width: W, frames: drawn });
    }

    holder.addEventListener("click", e => {
      const f = e.target.closest("g.frame");
      if (!f) return;
      state.focus = Number(f.dataset.i);
      draw();
    });
    let last = 0;
    new ResizeObserver(() => requestAnimationFrame(() => { /* next frame: see charts.js */
      if (holder.isConnected && Math.floor(holder.clientWidth) !== last) { last = Math.floor(holder.clientWidth); draw(); }
    })).observe(holder);
    draw();
    last = Math.floor(holder.clientWidth);
  };
})(window.gspy);
