// blkscope report: the interactive time charts. Each device's data is a JSON document embedded
// in the page (script.blkscope-device); this draws it as SVG, names whatever the pointer is on
// (a tooltip filled with textContent only: trace strings never become markup), and keeps every
// time chart on one time window: drag across any of them to zoom all, double-click to reset.
(function () {
  "use strict";
  // the SVG namespace, from the parser itself: the page spells out no URL at all
  const probe = document.createElement("div");
  probe.innerHTML = "<svg></svg>";
  const NS = probe.firstChild.namespaceURI;
  const W = 1000; // viewBox width; the page scales it to its width
  const LEFT = 78;
  const RIGHT = 14;
  const GAP = 70; // between the two columns of the throughput chart
  const HEAT = ["#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c", "#08306b"]; // few .. many IOs
  const MOST_STEPS = 100; // rate and depth panels: about this many steps across the chart

  const clock = JSON.parse(document.getElementById("blkscope-clock").textContent);
  const devices = Array.from(document.querySelectorAll("script.blkscope-device"), (e) => JSON.parse(e.textContent));
  const charts = [];
  let full = [Infinity, -Infinity];
  for (const d of devices) {
    full[0] = Math.min(full[0], d.bins.start);
    full[1] = Math.max(full[1], d.bins.start + d.bins.count * d.bins.width);
  }
  let view = full.slice();

  // ---- words -------------------------------------------------------------------------------
  function g3(v) {
    return String(Number(v.toPrecision(3)));
  }
  function dur(ns) {
    if (ns === null || ns === undefined) return "-";
    const a = Math.abs(ns);
    if (a >= 1e9) return g3(ns / 1e9) + " s";
    if (a >= 1e6) return g3(ns / 1e6) + " ms";
    if (a >= 1e3) return g3(ns / 1e3) + " us";
    return Math.round(ns) + " ns";
  }
  function secs(ns, digits) {
    return (ns / 1e9).toFixed(digits === undefined ? 3 : digits) + " s";
  }
  function count(n) {
    return Math.round(n).toLocaleString("en-US");
  }
  function num(v) {
    return Math.abs(v) >= 100 ? count(v) : g3(v);
  }
  function hms(dayS, digits) {
    const s = ((dayS % 86400) + 86400) % 86400;
    const h = Math.floor(s / 3600);
    const m = Math.floor((s % 3600) / 60);
    const sec = s - h * 3600 - m * 60;
    const ss = digits ? sec.toFixed(digits).padStart(3 + digits, "0") : String(Math.floor(sec)).padStart(2, "0");
    return String(h).padStart(2, "0") + ":" + String(m).padStart(2, "0") + ":" + ss;
  }
  function wall(ns) {
    if (!clock.known) return "wall clock unknown";
    const s = clock.zero_day_s + ns / 1e9;
    let text = hms(s, 3) + " UTC";
    if (clock.zone) text += " = " + hms(s + clock.zone_offset_s, 3) + " " + clock.zone;
    return text;
  }
  function when(ns) {
    return secs(ns) + " (" + wall(ns) + ")";
  }
  function span(a, b) {
    return secs(a) + " to " + secs(b) + " (" + wall(a) + ")";
  }

  // ---- SVG ---------------------------------------------------------------------------------
  function el(tag, attrs, parent) {
    const e = document.createElementNS(NS, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function text(parent, x, y, s, attrs) {
    const t = el("text", Object.assign({ x: x, y: y }, attrs || {}), parent);
    t.textContent = s;
    return t;
  }
  function r2(v) {
    return Math.round(v * 100) / 100;
  }

  // ---- scales and ticks ----------------------------------------------------------------------
  function niceStep(range, most) {
    const raw = range / Math.max(1, most);
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
    return 10 * p;
  }
  // y scales: the value -> y of a panel, its inverse, and its ticks
  function yScale(kind, lo, hi, top, h) {
    const f = kind === "log" ? Math.log10 : kind === "symlog" ? (v) => Math.log10(1 + Math.max(0, v)) : (v) => v;
    const inv = kind === "log" ? (u) => Math.pow(10, u) : kind === "symlog" ? (u) => Math.pow(10, u) - 1 : (u) => u;
    const a = f(lo);
    const b = f(hi) > a ? f(hi) : a + 1;
    const s = (v) => top + h - ((f(v) - a) / (b - a)) * h;
    s.invert = (y) => inv(a + ((top + h - y) / h) * (b - a));
    s.ticks = function () {
      if (kind === "linear") {
        const step = niceStep(hi - lo, 4);
        const out = [];
        for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(v);
        return out;
      }
      const out = kind === "symlog" ? [0] : [];
      const first = kind === "symlog" ? 0 : Math.floor(Math.log10(lo));
      for (let k = first; Math.pow(10, k) <= hi * 1.0001; k++) if (Math.pow(10, k) >= lo * 0.9999) out.push(Math.pow(10, k));
      if (out.length < 3 && kind === "log") {
        const more = [];
        for (let k = Math.floor(Math.log10(lo)); Math.pow(10, k) <= hi; k++)
          for (const m of [2, 5]) if (m * Math.pow(10, k) >= lo && m * Math.pow(10, k) <= hi) more.push(m * Math.pow(10, k));
        return out.concat(more).sort((x, y) => x - y);
      }
      return out;
    };
    return s;
  }
  const WALL_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200];

  // ---- the tooltip ---------------------------------------------------------------------------
  const tip = document.createElement("div");
  tip.id = "blkscope-tip";
  tip.setAttribute("role", "tooltip");
  tip.hidden = true;
  document.body.appendChild(tip);
  function showTip(groups, ev) {
    tip.replaceChildren();
    for (const lines of groups) {
      for (const [i, line] of lines.entries()) {
        const div = document.createElement("div");
        if (i === 0) div.className = "tip-head";
        div.textContent = line;
        tip.appendChild(div);
      }
    }
    tip.hidden = false;
    tip.style.left = "0px"; // measured where nothing squeezes it, then placed
    const x = ev.pageX + 14;
    const wide = tip.offsetWidth;
    const right = window.scrollX + document.documentElement.clientWidth - wide - 8;
    tip.style.left = Math.max(window.scrollX + 4, Math.min(x, right)) + "px";
    tip.style.top = ev.pageY + 14 + "px";
  }
  function hideTip() {
    tip.hidden = true;
  }

  // ---- a chart: panels stacked (and side by side) on one time axis ----------------------------
  function Chart(figure, device, key, layout) {
    this.figure = figure;
    this.d = device;
    this.key = key;
    this.layout = layout; // [{x0, x1, top, h, draw(panel), bottomAxis, topAxis}]
    this.height = Math.max(...layout.map((p) => p.top + p.h)) + 42;
    this.svg = el("svg", { viewBox: "0 0 " + W + " " + this.height, class: "tchart", "data-chart": key, role: "img" });
    this.svg.setAttribute("aria-labelledby", figure.dataset.title);
    figure.appendChild(this.svg);
    this.hook();
  }
  Chart.prototype.x = function (p, t) {
    return p.x0 + ((t - view[0]) / (view[1] - view[0])) * (p.x1 - p.x0);
  };
  Chart.prototype.t = function (p, x) {
    return view[0] + ((x - p.x0) / (p.x1 - p.x0)) * (view[1] - view[0]);
  };
  Chart.prototype.draw = function () {
    this.svg.replaceChildren();
    this.svg.setAttribute("data-view-t0", String(Math.round(view[0])));
    this.svg.setAttribute("data-view-t1", String(Math.round(view[1])));
    for (const p of this.layout) {
      p.targets = []; // points: {x, y, lines}
      p.marks = []; // markers hit by x near the top: {x, lines}
      p.spans = []; // episodes: {x0, x1, lines}
      p.g = el("g", {}, this.svg);
      const clip = this.d.id + "-" + this.key + "-" + p.name;
      const cp = el("clipPath", { id: clip }, p.g);
      el("rect", { x: p.x0, y: p.top, width: p.x1 - p.x0, height: p.h }, cp);
      p.plot = el("g", { "clip-path": "url(#" + clip + ")" }, p.g);
      p.axes = el("g", { class: "axes" }, p.g);
      this.markers(p);
      p.draw.call(this, p);
      this.timeAxis(p);
      el("rect", { x: p.x0, y: p.top, width: p.x1 - p.x0, height: p.h, class: "frame" }, p.axes);
    }
  };
  Chart.prototype.yAxis = function (p, scale, label, fmt) {
    let last = Infinity;
    for (const v of scale.ticks()) {
      const y = r2(scale(v));
      if (y < p.top - 0.5 || y > p.top + p.h + 0.5 || Math.abs(last - y) < 10) continue;
      last = y;
      el("line", { x1: p.x0, x2: p.x1, y1: y, y2: y, class: "grid" }, p.axes);
      text(p.axes, p.x0 - 4, y + 3, fmt ? fmt(v) : num(v), { class: "tick", "text-anchor": "end" });
    }
    const lab = text(p.axes, 0, 0, label, { class: "label", "text-anchor": "middle" });
    lab.setAttribute("transform", "translate(" + (p.x0 - 52) + "," + (p.top + p.h / 2) + ") rotate(-90)");
  };
  Chart.prototype.timeAxis = function (p) {
    const span = (view[1] - view[0]) / 1e9;
    if (p.bottomAxis) {
      const step = niceStep(span, Math.max(3, Math.floor((p.x1 - p.x0) / 90)));
      const digits = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
      for (let s = Math.ceil(view[0] / 1e9 / step) * step; s <= view[1] / 1e9 + 1e-9; s += step) {
        const x = r2(this.x(p, s * 1e9));
        el("line", { x1: x, x2: x, y1: p.top, y2: p.top + p.h, class: "grid" }, p.axes);
        text(p.axes, x, p.top + p.h + 13, s.toFixed(digits), { class: "tick xtick", "text-anchor": "middle" });
      }
      text(p.axes, (p.x0 + p.x1) / 2, p.top + p.h + 30, "time since trace start (s)", { class: "label", "text-anchor": "middle" });
    }
    if (p.topAxis && clock.known) {
      const most = Math.max(3, Math.floor((p.x1 - p.x0) / 95));
      const step = WALL_STEPS.find((s) => span / s <= most) || WALL_STEPS[WALL_STEPS.length - 1];
      const z = clock.zero_day_s;
      for (let w = Math.ceil((z + view[0] / 1e9) / step) * step; w <= z + view[1] / 1e9 + 1e-9; w += step) {
        const x = r2(this.x(p, (w - z) * 1e9));
        el("line", { x1: x, x2: x, y1: p.top - 4, y2: p.top, class: "axisline" }, p.axes);
        text(p.axes, x, p.top - 7, hms(w, 0), { class: "tick walltick", "text-anchor": "middle" });
        if (clock.zone) text(p.axes, x, p.top - 19, hms(w + clock.zone_offset_s, 0), { class: "tick walltick", "text-anchor": "middle" });
      }
      text(p.axes, p.x0 - 30, p.top - 7, "UTC", { class: "label", "text-anchor": "end" });
      if (clock.zone) text(p.axes, p.x0 - 30, p.top - 19, clock.zone, { class: "label", "text-anchor": "end" });
    }
  };
  // what every time panel overlays: episodes shaded, writeback work ticks, flusher/journal bursts
  Chart.prototype.markers = function (p) {
    const d = this.d;
    for (const e of d.episodes) {
      const x0 = this.x(p, e.start);
      const x1 = this.x(p, e.end);
      if (x1 < p.x0 || x0 > p.x1) continue;
      el("rect", { x: r2(x0), y: p.top, width: r2(Math.max(1, x1 - x0)), height: p.h, class: "episode" }, p.plot);
      const lines = ["Episode " + e.id + ": " + span(e.start, e.end), "cause: " + e.cause];
      if (e.reason) lines.push(e.reason);
      if (e.worst) lines.push("worst: " + e.worst + " " + dur(e.peak_latency) + " at " + when(e.peak));
      p.spans.push({ x0: x0, x1: x1, lines: lines });
    }
    if (d.writeback.length) {
      let path = "";
      for (const w of d.writeback) {
        const x = this.x(p, w.end);
        if (x < p.x0 - 1 || x > p.x1 + 1) continue;
        path += "M" + r2(x) + " " + p.top + "v" + r2(p.h * 0.1);
        const lines = ["Writeback work item (writeback log)", "ended " + when(w.end), "began " + secs(w.start)];
        if (w.pages !== null && w.pages !== undefined) lines.push(count(w.pages) + " pages left at its end");
        if (w.reason) lines.push("reason: " + w.reason);
        p.marks.push({ x: x, y: p.top + p.h * 0.05, lines: lines });
      }
      el("path", { d: path, class: "wbtick" }, p.plot);
    }
    for (const series in d.bursts) {
      const down = series === "kworker_writes";
      for (const t of d.bursts[series]) {
        const x = this.x(p, t);
        if (x < p.x0 - 4 || x > p.x1 + 4) continue;
        const y = p.top + p.h * 0.14;
        const pts = down ? [x - 4, y - 4, x + 4, y - 4, x, y + 3] : [x - 4, y + 3, x + 4, y + 3, x, y - 4];
        el("polygon", { points: pts.map(r2).join(" "), class: down ? "burst-kworker" : "burst-jbd2" }, p.plot);
        p.marks.push({ x: x, y: y, lines: [(down ? "Flusher (kworker) write burst" : "Journal (jbd2) burst") + " began", when(t)] });
      }
    }
  };
  // the bins of the device within the view, widened to a multiple of k bins
  Chart.prototype.binRange = function (k) {
    const b = this.d.bins;
    const first = Math.max(0, Math.floor((view[0] - b.start) / b.width / k) * k);
    const last = Math.min(b.count, Math.ceil((view[1] - b.start) / b.width / k) * k);
    return [first, last];
  };
  Chart.prototype.binT = function (i) {
    return this.d.bins.start + i * this.d.bins.width;
  };
  Chart.prototype.hook = function () {
    const svg = this.svg;
    const chart = this;
    let drag = null;
    const at = (ev) => {
      const pt = svg.createSVGPoint();
      pt.x = ev.clientX;
      pt.y = ev.clientY;
      const q = pt.matrixTransform(svg.getScreenCTM().inverse());
      const p = chart.layout.find((l) => q.x >= l.x0 && q.x <= l.x1 && q.y >= l.top && q.y <= l.top + l.h);
      return { x: q.x, y: q.y, p: p };
    };
    svg.addEventListener("mousedown", (ev) => {
      const a = at(ev);
      if (!a.p || ev.button !== 0) return;
      ev.preventDefault();
      drag = { p: a.p, x: a.x, box: el("rect", { x: a.x, y: 0, width: 0, height: chart.height, class: "zoombox" }, svg) };
    });
    svg.addEventListener("mousemove", (ev) => {
      const a = at(ev);
      if (drag) {
        const x = Math.max(drag.p.x0, Math.min(drag.p.x1, a.x));
        drag.box.setAttribute("x", Math.min(x, drag.x));
        drag.box.setAttribute("width", Math.abs(x - drag.x));
        hideTip();
        return;
      }
      const groups = a.p ? chart.hover(a.p, a.x, a.y) : null;
      if (groups) showTip(groups, ev);
      else hideTip();
    });
    svg.addEventListener("mouseleave", hideTip);
    window.addEventListener("mouseup", (ev) => {
      if (!drag) return;
      const p = drag.p;
      const x = Math.max(p.x0, Math.min(p.x1, at(ev).x));
      const a = chart.t(p, Math.min(x, drag.x));
      const b = chart.t(p, Math.max(x, drag.x));
      drag.box.remove();
      const wide = Math.abs(x - drag.x) > 4;
      drag = null;
      if (wide && b - a >= 1e3) zoom(a, b);
    });
    svg.addEventListener("dblclick", () => zoom(full[0], full[1]));
  };
  // what is under the pointer, as groups of lines: the points within reach, nearest first (a
  // spike's ring and the dot it rings both name themselves); else a marker, a cell, an episode
  Chart.prototype.hover = function (p, x, y) {
    const near = p.targets
      .map((t) => [Math.hypot(t.x - x, t.y - y), t])
      .filter(([dd]) => dd < 7)
      .sort((a, b) => a[0] - b[0]);
    if (near.length) return near.slice(0, 3).map(([, t]) => t.lines);
    for (const m of p.marks) if (Math.abs(m.x - x) < 5 && Math.abs(m.y - y) < 9) return [m.lines];
    if (p.cell) {
      const lines = p.cell.call(this, p, x, y);
      if (lines) return [lines];
    }
    for (const s of p.spans) if (x >= s.x0 && x <= s.x1) return [s.lines];
    return null;
  };

  // ---- drawing helpers -----------------------------------------------------------------------
  function dot(p, x, y, r, cls, lines, data) {
    const c = el("circle", Object.assign({ cx: r2(x), cy: r2(y), r: r, class: cls }, data || {}), p.plot);
    p.targets.push({ x: x, y: y, lines: lines });
    return c;
  }
  // the user series (the application's own log) as a line with a dot per sample
  function userSeries(chart, p, scale) {
    chart.d.user.forEach((s) => {
      const colour = s.colour;
      let path = "";
      for (let k = 0; k < s.t.length; k++) {
        if (s.t[k] < view[0] || s.t[k] > view[1] || s.ns[k] <= 0) continue;
        const x = chart.x(p, s.t[k]);
        const y = scale(s.ns[k]);
        path += (path ? "L" : "M") + r2(x) + " " + r2(y);
      }
      el("path", { d: path, class: "user-line", stroke: colour }, p.plot);
      for (let k = 0; k < s.t.length; k++) {
        if (s.t[k] < view[0] || s.t[k] > view[1] || s.ns[k] <= 0) continue;
        const x = chart.x(p, s.t[k]);
        const y = scale(s.ns[k]);
        const lines = [s.name + ": " + dur(s.ns[k]), "at " + when(s.t[k]), "the application's own log (" + (s.unit || "no unit, read as ns") + ")"];
        dot(p, x, y, 1.8, "user-dot", lines, { fill: colour, "data-series": s.name, "data-t-ns": s.t[k], "data-ns": s.ns[k] });
      }
    });
  }
  // each spike of the panel's metric (or of a user series) ringed at its peak
  function spikes(chart, p, scale, metrics) {
    for (const s of chart.d.spikes) {
      if (!metrics.includes(s.metric) || s.peak < view[0] || s.peak > view[1]) continue;
      const x = chart.x(p, s.peak);
      const y = scale(s.peak_latency);
      const lines = ["Spike " + s.id + " of " + s.metric + ": " + dur(s.peak_latency), "at " + when(s.peak), "window " + secs(s.start, 1) + " to " + secs(s.end, 1) + (s.episode ? ", episode " + s.episode : "")];
      dot(p, x, y, 5, "spike", lines, { "data-metric": s.metric });
    }
  }
  function latencyRange(d, stage) {
    let lo = Infinity;
    let hi = 0;
    for (const v of d.latency[stage].p50) if (v > 0) lo = Math.min(lo, v);
    for (const v of d.latency[stage].max) if (v > 0) hi = Math.max(hi, v);
    for (const s of d.user)
      for (const v of s.ns)
        if (v > 0) {
          lo = Math.min(lo, v);
          hi = Math.max(hi, v);
        }
    if (!isFinite(lo)) return [1e3, 1e6];
    return [Math.pow(10, Math.floor(Math.log10(lo))), hi * 1.3];
  }
  function msLabel(v) {
    return g3(v / 1e6);
  }
  function userNames(d) {
    return d.user.map((s) => s.name);
  }

  // ---- the charts ----------------------------------------------------------------------------
  function latencyPanel(stage) {
    return function (p) {
      const d = this.d;
      const band = d.latency[stage];
      if (!band.n.some((n) => n > 0) && !d.user.some((s) => s.t.length)) {
        text(p.axes, (p.x0 + p.x1) / 2, p.top + p.h / 2, "no completions: no latency to draw", { class: "empty", "text-anchor": "middle" });
      }
      const [lo, hi] = latencyRange(d, stage);
      const scale = yScale("log", lo, hi, p.top, p.h);
      this.yAxis(p, scale, stage + " (ms, log)", msLabel);
      const [b0, b1] = this.binRange(1);
      let area = "";
      let line = "";
      for (let i = b0; i < b1; i++) {
        if (!band.n[i]) continue;
        const x0 = r2(this.x(p, this.binT(i)));
        const x1 = r2(this.x(p, this.binT(i + 1)));
        area += "M" + x0 + " " + r2(scale(band.p99[i])) + "H" + x1 + "V" + r2(scale(band.p50[i])) + "H" + x0 + "Z";
        line += "M" + x0 + " " + r2(scale(band.p50[i])) + "H" + x1;
      }
      el("path", { d: area, class: "band" }, p.plot);
      el("path", { d: line, class: "p50" }, p.plot);
      for (let i = b0; i < b1; i++) {
        if (!band.n[i]) continue;
        const t = this.binT(i);
        const lines = [
          "Slowest IO in " + secs(t) + " to " + secs(t + d.bins.width) + ": " + dur(band.max[i]),
          wall(t),
          "process: " + (band.slowest[i] === null ? "?" : d.strings[band.slowest[i]]),
          "p50 " + dur(band.p50[i]) + ", p99 " + dur(band.p99[i]) + " of " + count(band.n[i]) + " IOs (" + stage + ")",
        ];
        dot(p, this.x(p, t + d.bins.width / 2), scale(band.max[i]), 1.6, "max", lines, { "data-t-ns": t, "data-ns": band.max[i] });
      }
      userSeries(this, p, scale);
      spikes(this, p, scale, [stage.toLowerCase()].concat(userNames(d)));
    };
  }
  function heatColour(n, most) {
    const u = most > 1 ? Math.log(n) / Math.log(most) : 1;
    const k = Math.min(HEAT.length - 1, Math.floor(u * (HEAT.length - 1) + 0.5));
    return HEAT[k];
  }
  function heatPanel(stage) {
    return function (p) {
      const d = this.d;
      const cells = d.heatmap[stage];
      if (!cells || !cells.n.length) {
        text(p.axes, (p.x0 + p.x1) / 2, p.top + p.h / 2, "no completions: no latency to draw", { class: "empty", "text-anchor": "middle" });
        return;
      }
      let lo = Math.min(...cells.lo.filter((v) => v > 0));
      let hi = Math.max(...cells.hi);
      for (const s of d.user) for (const v of s.ns) if (v > 0) (lo = Math.min(lo, v)), (hi = Math.max(hi, v));
      lo = Math.pow(10, Math.floor(Math.log10(lo)));
      const scale = yScale("log", lo, hi * 1.1, p.top, p.h);
      this.yAxis(p, scale, stage + " (ms, log)", msLabel);
      const most = Math.max(...cells.n);
      const byBin = new Map();
      const [b0, b1] = this.binRange(1);
      const groups = new Map();
      for (let k = 0; k < cells.n.length; k++) {
        const i = cells.bin[k];
        if (i < b0 || i >= b1) continue;
        if (!byBin.has(i)) byBin.set(i, []);
        byBin.get(i).push(k);
        const colour = heatColour(cells.n[k], most);
        const x0 = r2(this.x(p, this.binT(i)));
        const x1 = r2(this.x(p, this.binT(i + 1)));
        const y0 = r2(scale(Math.max(cells.lo[k], lo)));
        const y1 = r2(scale(cells.hi[k]));
        groups.set(colour, (groups.get(colour) || "") + "M" + x0 + " " + y1 + "H" + x1 + "V" + y0 + "H" + x0 + "Z");
      }
      for (const [colour, path] of groups) el("path", { d: path, fill: colour, class: "cell" }, p.plot);
      p.cell = function (p2, x, y) {
        const i = Math.floor((this.t(p2, x) - d.bins.start) / d.bins.width);
        const v = scale.invert(y);
        for (const k of byBin.get(i) || []) {
          if (v >= cells.lo[k] && v < cells.hi[k]) {
            const t = this.binT(i);
            const lines = [
              count(cells.n[k]) + " IOs with " + stage + " " + dur(cells.lo[k]) + " to " + dur(cells.hi[k]),
              "completed " + secs(t) + " to " + secs(t + d.bins.width) + " (" + wall(t) + ")",
              "slowest " + dur(cells.max[k]) + ", process " + d.strings[cells.slowest[k]],
            ];
            if (cells.observer[k]) lines.push(count(cells.observer[k]) + " of them by the capture's own tools");
            return lines;
          }
        }
        return null;
      };
      userSeries(this, p, scale);
      spikes(this, p, scale, userNames(d));
      // the colour key: few to many IOs per cell
      const kx = p.x1 - 250;
      HEAT.forEach((c, j) => el("rect", { x: kx + j * 18, y: p.top + 4, width: 18, height: 8, fill: c, class: "key" }, p.axes));
      text(p.axes, kx - 4, p.top + 12, "1", { class: "tick", "text-anchor": "end" });
      text(p.axes, kx + HEAT.length * 18 + 4, p.top + 12, count(most) + " IOs per cell", { class: "tick" });
    };
  }
  // rates and depth: the bins within the view, k at a time, k the smallest 1, 2 or 5 x 10^n bins
  // giving at most MOST_STEPS steps (a round step: a periodic load at 0.5 s then draws a level
  // line, where a step of 5 bins drew a comb); the line is the mean over the k bins, the light
  // area the busiest bin among them
  function buckets(chart, values) {
    const [b0, b1] = chart.binRange(1);
    const k = Math.max(1, niceStep(b1 - b0, MOST_STEPS));
    const [c0, c1] = chart.binRange(k);
    const out = [];
    for (let i = c0; i < c1; i += k) {
      let sum = 0;
      let top = 0;
      for (let j = i; j < Math.min(i + k, values.length); j++) {
        sum += values[j];
        top = Math.max(top, values[j]);
      }
      out.push({ i: i, mean: sum / k, top: top });
    }
    return { k: k, rows: out };
  }
  function stepPath(chart, p, rows, k, scale, key) {
    let path = "";
    for (const r of rows) {
      const x0 = r2(chart.x(p, chart.binT(r.i)));
      const x1 = r2(chart.x(p, chart.binT(r.i + k)));
      path += (path ? "L" : "M") + x0 + " " + r2(scale(r[key])) + "H" + x1;
    }
    return path;
  }
  function areaPath(chart, p, rows, k, scale, key) {
    let path = "";
    const base = r2(scale(0));
    for (const r of rows) {
      if (!r[key]) continue;
      const x0 = r2(chart.x(p, chart.binT(r.i)));
      const x1 = r2(chart.x(p, chart.binT(r.i + k)));
      path += "M" + x0 + " " + base + "V" + r2(scale(r[key])) + "H" + x1 + "V" + base + "Z";
    }
    return path;
  }
  function ratePanel(op, key) {
    return function (p) {
      const d = this.d;
      const s = d.rates[op][key];
      const unit = key === "iops" ? "IOs/s" : "MiB/s";
      const mine = buckets(this, s.values);
      const theirs = s.observer ? buckets(this, s.observer) : null;
      const top = Math.max(1e-9, ...mine.rows.map((r) => r.top));
      const scale = yScale(s.log ? "symlog" : "linear", 0, top * 1.05, p.top, p.h);
      const width = dur(mine.k * d.bins.width);
      this.yAxis(p, scale, op + " " + unit, null);
      el("path", { d: areaPath(this, p, mine.rows, mine.k, scale, "top"), class: "peak", fill: d.op_colours[op] }, p.plot);
      el("path", { d: stepPath(this, p, mine.rows, mine.k, scale, "mean"), class: "rate", stroke: d.op_colours[op] }, p.plot);
      if (theirs) el("path", { d: stepPath(this, p, theirs.rows, theirs.k, yScaleClamped(scale, p), "mean"), class: "rate observer", stroke: d.observer_colour }, p.plot);
      text(p.axes, p.x0 + 4, p.top + 10, "per " + width + (s.log ? ", log axis" : ""), { class: "tick" });
      p.cell = function (p2, x) {
        const i = Math.floor((this.t(p2, x) - d.bins.start) / d.bins.width);
        const r = mine.rows.find((row) => i >= row.i && i < row.i + mine.k);
        if (!r) return null;
        const t = this.binT(r.i);
        const lines = [op + " " + unit + " over " + secs(t) + " to " + secs(t + mine.k * d.bins.width) + ": " + num(r.mean), wall(t), "busiest " + dur(d.bins.width) + " bin in it: " + num(r.top) + " " + unit];
        const o = theirs && theirs.rows.find((row) => row.i === r.i);
        if (o && o.mean) lines.push("capture's own tools: " + num(o.mean) + " " + unit + " (grey, not in the axis)");
        return lines;
      };
    };
  }
  // the observer's line is drawn on the workload's scale, pinned at the top where it exceeds it
  function yScaleClamped(scale, p) {
    const f = (v) => Math.max(p.top, scale(v));
    return f;
  }
  function depthPanel(p) {
    const d = this.d;
    if (!d.depth) {
      text(p.axes, (p.x0 + p.x1) / 2, p.top + p.h / 2, "no dispatches: no depth to draw", { class: "empty", "text-anchor": "middle" });
      return;
    }
    const most = buckets(this, d.depth.max);
    const mean = buckets(this, d.depth.mean);
    // the observer's own bursts do not set the axis (they run off its top, clipped)
    const top = Math.max(1, ...most.rows.filter((r) => !d.depth.observer_bins.some((b) => b >= r.i && b < r.i + most.k)).map((r) => r.top));
    const scale = yScale(d.depth.log ? "symlog" : "linear", 0, top * 1.05, p.top, p.h);
    this.yAxis(p, scale, "requests in the driver", null);
    el("path", { d: stepPath(this, p, most.rows, most.k, scale, "top"), class: "rate", stroke: "#D55E00" }, p.plot);
    el("path", { d: stepPath(this, p, mean.rows, mean.k, scale, "mean"), class: "rate", stroke: "#0072B2" }, p.plot);
    text(p.axes, p.x0 + 4, p.top + 10, "per " + dur(most.k * d.bins.width), { class: "tick" });
    p.cell = function (p2, x) {
      const i = Math.floor((this.t(p2, x) - d.bins.start) / d.bins.width);
      const r = most.rows.find((row) => i >= row.i && i < row.i + most.k);
      if (!r) return null;
      const m = mean.rows.find((row) => row.i === r.i);
      const t = this.binT(r.i);
      return ["In the driver, " + secs(t) + " to " + secs(t + most.k * d.bins.width), wall(t), "highest " + count(r.top) + " requests, time-weighted mean " + num(m ? m.mean : 0)];
    };
  }
  function lbaPanel(p) {
    const d = this.d;
    const m = d.lba;
    const size = m.bucket_sectors * 512;
    const rows = m.n.length ? Math.max(...m.bucket) + 1 : 1;
    const gib = (b) => (m.lo_sector * 512 + b * size) / 2 ** 30;
    const scale = yScale("linear", gib(0), gib(rows), p.top, p.h);
    this.yAxis(p, scale, "offset on the device (GiB)", null);
    if (!m.n.length) {
      text(p.axes, (p.x0 + p.x1) / 2, p.top + p.h / 2, "no bio with a sector", { class: "empty", "text-anchor": "middle" });
      return;
    }
    const [b0, b1] = this.binRange(1);
    const paths = {};
    const at = new Map();
    for (let k = 0; k < m.n.length; k++) {
      const i = m.bin[k];
      if (i < b0 || i >= b1) continue;
      const x0 = this.x(p, this.binT(i));
      const w = Math.max(1.2, this.x(p, this.binT(i + 1)) - x0);
      const y1 = scale(gib(m.bucket[k] + 1));
      const h = Math.max(1.2, scale(gib(m.bucket[k])) - y1);
      const op = d.ops[m.op[k]];
      paths[op] = (paths[op] || "") + "M" + r2(x0) + " " + r2(y1) + "h" + r2(w) + "v" + r2(h) + "h" + r2(-w) + "Z";
      const key = i + ":" + m.bucket[k];
      if (!at.has(key)) at.set(key, []);
      at.get(key).push(k);
    }
    for (const op in paths) el("path", { d: paths[op], fill: d.op_colours[op], class: "lba" }, p.plot);
    p.cell = function (p2, x, y) {
      const i = Math.floor((this.t(p2, x) - d.bins.start) / d.bins.width);
      const b = Math.floor(((scale.invert(y) * 2 ** 30) - m.lo_sector * 512) / size);
      const ks = at.get(i + ":" + b) || at.get(i + ":" + (b - 1)) || at.get(i + ":" + (b + 1));
      if (!ks) return null;
      const t = this.binT(i);
      const off = gib(m.bucket[ks[0]]);
      return ["Queued " + secs(t) + " to " + secs(t + d.bins.width) + " (" + wall(t) + ")", "offset " + g3(off) + " to " + g3(off + size / 2 ** 30) + " GiB", ks.map((k) => count(m.n[k]) + " " + d.ops[m.op[k]]).join(", ") + " bios"];
    };
  }

  // ---- layouts -------------------------------------------------------------------------------
  const TOP = 34; // room for the wall-clock labels
  function stack(names, h, gap, draw) {
    return names.map((name, j) => ({
      name: name, x0: LEFT, x1: W - RIGHT, top: TOP + j * (h + gap), h: h,
      topAxis: j === 0, bottomAxis: j === names.length - 1, draw: draw(name),
    }));
  }
  const LAYOUTS = {
    latency: (d) => stack(["D2C", "Q2C"], 190, 22, latencyPanel),
    heatmap: (d) => stack(["D2C", "Q2C"], 190, 22, heatPanel),
    depth: (d) => stack(["driver"], 200, 0, () => depthPanel),
    lba: (d) => stack(["lba"], 260, 0, () => lbaPanel),
    throughput: function (d) {
      const ops = Object.keys(d.rates);
      const colW = (W - LEFT - RIGHT - GAP) / 2;
      const out = [];
      ops.forEach((op, j) => {
        ["iops", "mib"].forEach((key, c) => {
          if (!d.rates[op][key]) return;
          const x0 = LEFT + c * (colW + GAP);
          out.push({
            name: op + "-" + key, x0: x0, x1: x0 + colW, top: TOP + j * 112, h: 92,
            topAxis: j === 0, bottomAxis: j === ops.length - 1 || (key === "mib" && op === "flush"),
            draw: ratePanel(op, key),
          });
        });
      });
      if (!out.length) {
        const none = stack(["none"], 92, 0, () => function (p) {
          text(p.axes, (p.x0 + p.x1) / 2, p.top + p.h / 2, "no completions: no rate to draw", { class: "empty", "text-anchor": "middle" });
        });
        return none;
      }
      // flushes carry no data: the MiB/s column ends above them, and takes the time axis
      for (const p of out) if (p.name.endsWith("-mib")) p.bottomAxis = !out.some((q) => q.name.endsWith("-mib") && q.top > p.top);
      return out;
    },
  };

  function zoom(a, b) {
    view = [a, b];
    for (const c of charts) c.draw();
  }
  window.blkscope = { zoom: zoom, full: full, charts: charts };

  for (const figure of document.querySelectorAll("figure.timechart")) {
    const d = devices.find((x) => x.id === figure.dataset.device);
    const key = figure.dataset.chart;
    if (!d || !LAYOUTS[key]) continue;
    const noscript = figure.querySelector(".needs-script");
    if (noscript) noscript.remove();
    charts.push(new Chart(figure, d, key, LAYOUTS[key](d)));
  }
  for (const c of charts) c.draw();
  document.documentElement.setAttribute("data-charts-drawn", String(charts.length));
})();
