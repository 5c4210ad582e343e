"use strict";
// vramscope's report page. It only draws: every number comes from the JSON document in
// #data, made by the collector's analyses and worded by the CLI's formatting. Text from
// the input goes into the page through textContent only, never as markup.
(function () {
  const errorBox = document.getElementById("errors");
  function reportError(message) {
    errorBox.hidden = false;
    errorBox.textContent += message + "\n";
  }
  window.addEventListener("error", (e) => reportError("error: " + e.message));

  const D = JSON.parse(document.getElementById("data").textContent);
  const S = D.strings;
  const str = (i) => (i === null || i === undefined ? "" : S[i]);
  const main = document.getElementById("main");
  const DPR = Math.max(1, Math.min(3, window.devicePixelRatio || 1));
  const CATS = D.categories;
  const views = [];

  // ---- DOM, made from text only ----
  function el(tag, props, ...kids) {
    const e = document.createElement(tag);
    for (const k in props || {}) {
      const v = props[k];
      if (v === null || v === undefined) continue;
      if (k === "text") e.textContent = v;
      else if (k === "class") e.className = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v);
    }
    for (const kid of kids) if (kid !== null && kid !== undefined) e.append(kid);
    return e;
  }
  function table(headings, rows, numeric) {
    const head = el("tr", null, ...headings.map((h, i) => el("th", { class: numeric && numeric[i] ? "num" : null, text: h })));
    const body = rows.map((r) => el("tr", null, ...r.map((c, i) => el("td", { class: numeric && numeric[i] ? "num" : "label", text: c }))));
    return el("table", null, el("thead", null, head), el("tbody", null, ...body));
  }

  // ---- units, for axes and hover (tables carry the CLI's own text) ----
  const BYTE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  function fmtBytes(b) {
    let v = Math.abs(b), u = 0;
    while (v >= 1024 && u < BYTE_UNITS.length - 1) { v /= 1024; u++; }
    const digits = u === 0 ? 0 : v >= 100 ? 0 : v >= 10 ? 1 : 2;
    return (b < 0 ? "-" : "") + v.toFixed(digits) + " " + BYTE_UNITS[u];
  }
  function fmtTime(ns) {
    const a = Math.abs(ns);
    if (a >= 1e9) return (ns / 1e9).toFixed(a >= 1e11 ? 0 : a >= 1e10 ? 1 : 2) + " s";
    if (a >= 1e6) return (ns / 1e6).toFixed(a >= 1e8 ? 0 : a >= 1e7 ? 1 : 2) + " ms";
    if (a >= 1e3) return (ns / 1e3).toFixed(a >= 1e5 ? 0 : a >= 1e4 ? 1 : 2) + " µs";
    return Math.round(ns) + " ns";
  }
  function niceStep(range, count) {
    const raw = range / Math.max(1, count);
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
    return 10 * p;
  }
  function niceBytesStep(range, count) {
    const raw = range / Math.max(1, count);
    let unit = 1;
    while (unit * 1024 <= raw) unit *= 1024;
    for (const m of [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]) if (m * unit >= raw) return m * unit;
    return 1024 * unit;
  }

  // ---- curves: levels of (time, value) differences, drawn as min/max per column ----
  function undelta(a) {
    const out = new Float64Array(a.length);
    let s = 0;
    for (let i = 0; i < a.length; i++) { s += a[i]; out[i] = s; }
    return out;
  }
  function curve(levels) {
    return (levels || []).map((l) => ({ buckets: l.buckets, T: undelta(l.t), V: undelta(l.v) }));
  }
  function lowerBound(T, t) {
    let lo = 0, hi = T.length;
    while (lo < hi) { const m = (lo + hi) >> 1; if (T[m] < t) lo = m + 1; else hi = m; }
    return lo;
  }
  // The finest level with at most a few points a column in view (the exact points when
  // stored), as the viewer picks a pyramid level.
  function pickLevel(levels, t0, t1, cols) {
    for (let i = levels.length - 1; i >= 0; i--) {
      const l = levels[i];
      const n = lowerBound(l.T, t1) - lowerBound(l.T, t0);
      if (n <= cols * 8 || i === 0) return l;
    }
    return null;
  }
  // The collector's column_ranges: per column the value carried in and every value set in
  // it; NaN before the first point.
  function columnRanges(level, t0, t1, cols) {
    const lo = new Float64Array(cols).fill(NaN), hi = new Float64Array(cols).fill(NaN);
    if (!level || level.T.length === 0) return { lo, hi };
    const T = level.T, V = level.V, span = Math.max(t1 - t0, 1e-9);
    let next = lowerBound(T, t0);
    let carried = next > 0 ? V[next - 1] : NaN;
    for (let c = 0; c < cols; c++) {
      const end = t0 + (span * (c + 1)) / cols;
      let a = carried, b = carried;
      while (next < T.length && T[next] <= end) {
        const v = V[next];
        if (Number.isNaN(a)) { a = v; b = v; } else { a = Math.min(a, v); b = Math.max(b, v); }
        carried = v;
        next++;
      }
      lo[c] = a; hi[c] = b;
    }
    return { lo, hi };
  }
  function levelsMax(levels) {
    const l = levels[0];
    let m = 0;
    if (l) for (const v of l.V) m = Math.max(m, v);
    return m;
  }

  // ---- a shared time view per device: zoom and pan ----
  function TimeView(end) {
    this.full = [0, Math.max(end, 1)];
    this.t0 = 0; this.t1 = this.full[1];
    this.listeners = [];
  }
  TimeView.prototype.set = function (t0, t1) {
    const span = this.full[1] - this.full[0];
    let w = Math.min(Math.max(t1 - t0, span / 1e6, 1), span);
    t0 = Math.max(this.full[0], Math.min(t0, this.full[1] - w));
    this.t0 = t0; this.t1 = t0 + w;
    this.listeners.forEach((f) => f());
  };
  TimeView.prototype.zoom = function (factor, at) {
    const t = at === undefined ? (this.t0 + this.t1) / 2 : at;
    this.set(t - (t - this.t0) * factor, t + (this.t1 - t) * factor);
  };

  // A canvas that sizes itself, maps time to x, and turns wheel, drag and click into
  // zoom, pan and a picked instant.
  const MARGIN = { left: 74, right: 12, top: 10, bottom: 22 };
  function Chart(parent, view, height, draw) {
    this.canvas = el("canvas", { height: String(height) });
    this.status = el("div", { class: "status" });
    this.box = el("div", { class: "chart" }, this.canvas);
    parent.append(this.box, this.status);
    this.view = view; this.height = height; this.draw = draw;
    this.hoverX = null; this.onPick = null; this.onHover = null;
    view.listeners.push(() => this.paint());
    const c = this.canvas;
    let drag = null;
    c.addEventListener("wheel", (e) => {
      e.preventDefault();
      this.view.zoom(Math.pow(1.0015, e.deltaY), this.timeAt(e.clientX));
    }, { passive: false });
    c.addEventListener("mousedown", (e) => { drag = { x: e.clientX, t0: view.t0, t1: view.t1, moved: false }; });
    window.addEventListener("mousemove", (e) => {
      if (drag) {
        const dx = e.clientX - drag.x;
        if (Math.abs(dx) > 3) drag.moved = true;
        if (drag.moved) {
          const dt = (dx / this.plotWidth()) * (drag.t1 - drag.t0);
          view.set(drag.t0 - dt, drag.t1 - dt);
        }
      }
    });
    window.addEventListener("mouseup", () => { setTimeout(() => { drag = null; }, 0); });
    c.addEventListener("mousemove", (e) => {
      const r = c.getBoundingClientRect();
      this.hoverX = e.clientX - r.left; this.hoverY = e.clientY - r.top;
      this.paint();
    });
    c.addEventListener("mouseleave", () => { this.hoverX = null; this.paint(); });
    c.addEventListener("click", (e) => {
      if (drag && drag.moved) return;
      if (this.onPick) this.onPick(this.timeAt(e.clientX), e);
    });
    c.addEventListener("dblclick", () => view.set(view.full[0], view.full[1]));
  }
  Chart.prototype.plotWidth = function () {
    return Math.max(10, this.canvas.clientWidth - MARGIN.left - MARGIN.right);
  };
  Chart.prototype.timeAt = function (clientX) {
    const r = this.canvas.getBoundingClientRect();
    const f = (clientX - r.left - MARGIN.left) / this.plotWidth();
    return this.view.t0 + Math.max(0, Math.min(1, f)) * (this.view.t1 - this.view.t0);
  };
  Chart.prototype.xOf = function (t) {
    return MARGIN.left + ((t - this.view.t0) / (this.view.t1 - this.view.t0)) * this.plotWidth();
  };
  Chart.prototype.paint = function () {
    const c = this.canvas, w = c.clientWidth;
    if (!w) return;
    if (c.width !== Math.round(w * DPR)) { c.width = Math.round(w * DPR); c.height = Math.round(this.height * DPR); }
    const g = c.getContext("2d");
    g.setTransform(DPR, 0, 0, DPR, 0, 0);
    g.clearRect(0, 0, w, this.height);
    const frame = {
      g, w, h: this.height, x0: MARGIN.left, x1: w - MARGIN.right, y0: MARGIN.top, y1: this.height - MARGIN.bottom,
      cols: Math.max(10, Math.floor(this.plotWidth())), t0: this.view.t0, t1: this.view.t1, chart: this,
    };
    frame.x = (t) => frame.x0 + ((t - frame.t0) / (frame.t1 - frame.t0)) * (frame.x1 - frame.x0);
    this.draw(frame);
    timeAxis(frame);
  };

  function yAxis(f, yMax) {
    const g = f.g;
    f.yMax = yMax > 0 ? yMax : 1;
    f.y = (b) => f.y1 - (b / f.yMax) * (f.y1 - f.y0);
    const step = niceBytesStep(f.yMax, Math.max(2, Math.floor((f.y1 - f.y0) / 40)));
    g.font = "11px system-ui, sans-serif"; g.textAlign = "right"; g.textBaseline = "middle";
    for (let b = 0; b <= f.yMax; b += step) {
      const y = Math.round(f.y(b)) + 0.5;
      g.strokeStyle = "#ececec"; g.beginPath(); g.moveTo(f.x0, y); g.lineTo(f.x1, y); g.stroke();
      g.fillStyle = "#5f5f5f"; g.fillText(fmtBytes(b), f.x0 - 6, y);
    }
  }
  function timeAxis(f) {
    const g = f.g, step = niceStep(f.t1 - f.t0, Math.max(2, Math.floor((f.x1 - f.x0) / 110)));
    g.font = "11px system-ui, sans-serif"; g.textAlign = "center"; g.textBaseline = "top"; g.fillStyle = "#5f5f5f";
    g.strokeStyle = "#bbb"; g.beginPath(); g.moveTo(f.x0, f.y1 + 0.5); g.lineTo(f.x1, f.y1 + 0.5); g.stroke();
    for (let t = Math.ceil(f.t0 / step) * step; t <= f.t1; t += step) {
      const x = Math.round(f.x(t)) + 0.5;
      g.beginPath(); g.moveTo(x, f.y1); g.lineTo(x, f.y1 + 4); g.stroke();
      g.fillText(fmtTime(t), x, f.y1 + 6);
    }
  }
  // Step curve as min/max columns: filled to 0 (fill) and outlined.
  function drawColumns(f, ranges, colour, fill, dash) {
    const g = f.g, n = ranges.lo.length, dx = (f.x1 - f.x0) / n;
    if (fill) {
      g.fillStyle = fill;
      for (let c = 0; c < n; c++) {
        if (Number.isNaN(ranges.hi[c])) continue;
        const y = f.y(ranges.hi[c]);
        g.fillRect(f.x0 + c * dx, y, dx + 0.5, f.y1 - y);
      }
    }
    g.strokeStyle = colour; g.lineWidth = 1.5; g.setLineDash(dash || []);
    g.beginPath();
    let open = false;
    for (let c = 0; c < n; c++) {
      if (Number.isNaN(ranges.lo[c])) { open = false; continue; }
      const x = f.x0 + (c + 0.5) * dx;
      if (!open) { g.moveTo(x, f.y(ranges.lo[c])); open = true; } else g.lineTo(x, f.y(ranges.lo[c]));
      g.lineTo(x, f.y(ranges.hi[c]));
    }
    g.stroke(); g.setLineDash([]); g.lineWidth = 1;
  }
  const MIN_STEP_PX = 6;
  function drawSteps(f, steps) {
    const g = f.g;
    g.font = "10px system-ui, sans-serif"; g.textAlign = "left"; g.textBaseline = "top";
    steps.forEach((s, i) => {
      const a = Math.max(f.x0, f.x(s[1])), b = Math.min(f.x1, f.x(s[2]));
      // Steps narrower than a few pixels would grey the chart over: drawn once zoomed in.
      if (b - a < MIN_STEP_PX) return;
      if (i % 2 === 0) { g.fillStyle = "rgba(0,0,0,0.035)"; g.fillRect(a, f.y0, b - a, f.y1 - f.y0); }
      g.strokeStyle = "rgba(0,0,0,0.18)"; g.beginPath(); g.moveTo(Math.round(a) + 0.5, f.y0); g.lineTo(Math.round(a) + 0.5, f.y1); g.stroke();
      if (b - a > 40) { g.fillStyle = "#888"; g.textBaseline = "bottom"; g.fillText("step " + s[0], a + 3, f.y1 - 2); g.textBaseline = "top"; }
    });
  }
  function drawCursor(f, t, colour) {
    if (t === null || t === undefined || t < f.t0 || t > f.t1) return;
    const x = Math.round(f.x(t)) + 0.5, g = f.g;
    g.strokeStyle = colour; g.lineWidth = 1.5; g.beginPath(); g.moveTo(x, f.y0); g.lineTo(x, f.y1); g.stroke(); g.lineWidth = 1;
  }
  function hoverColumn(f) {
    const hx = f.chart.hoverX;
    if (hx === null || hx < f.x0 || hx > f.x1) return null;
    return Math.min(f.cols - 1, Math.floor(((hx - f.x0) / (f.x1 - f.x0)) * f.cols));
  }

  // ---- one device ----
  function deviceSection(input, dev, di, root, steps, end) {
    const box = el("section", { class: "device", id: "input" + input.index + "-device" + di });
    root.append(box);
    const title = el("h3", null, el("span", { class: "ident", text: str(dev.label) }));
    if (dev.name !== null) title.append(" — ", el("span", { class: "name", text: str(dev.name) }));
    box.append(title);
    // The summary's rows, each with its place in `summary --format json`.
    const facts = el("dl", { class: "facts two" });
    for (const r of dev.facts) {
      facts.append(el("dt", { text: str(r.label) }));
      facts.append(el("dd", { "data-summary-input": String(input.index), "data-summary-path": r.path, "data-value": r.value === null ? null : String(r.value), text: str(r.text) }));
    }
    box.append(facts);
    const view = new TimeView(end);
    const allocated = curve(dev.allocated), reserved = curve(dev.reserved), nvml = curve(dev.nvml_used);
    const state = { view, selected: null };
    views.push(state);
    if (allocated.length || reserved.length || nvml.length) {
      box.append(el("h4", { text: "Memory over time" }));
      const tools = el("div", { class: "toolbar" },
        el("button", { text: "−", title: "zoom out", onclick: () => view.zoom(2) }),
        el("button", { text: "+", title: "zoom in", onclick: () => view.zoom(0.5) }),
        el("button", { text: "whole run", onclick: () => view.set(view.full[0], view.full[1]) }),
        el("span", { class: "muted", text: "wheel: zoom · drag: pan · click: what was live then · double-click: whole run" }));
      box.append(tools);
      const legend = el("div", { class: "legend" });
      const swatch = (name, colour) => { const s = el("span", { text: name }); s.style.setProperty("--swatch", colour); legend.append(s); };
      if (allocated.length) swatch("allocated", D.colours.allocated);
      if (reserved.length) swatch("reserved", D.colours.reserved);
      if (nvml.length) swatch("NVML used (whole device)", D.colours.nvml);
      const dataMax = Math.max(levelsMax(allocated), levelsMax(reserved), levelsMax(nvml), 1);
      // The capacity line where it fits the scale; far above the curves it is named only.
      const showCapacity = dev.capacity_bytes && dev.capacity_bytes <= 1.5 * dataMax;
      if (dev.capacity_bytes) swatch("capacity " + fmtBytes(dev.capacity_bytes) + (showCapacity ? "" : " (far above the curves)"), "#444");
      box.append(legend);
      const yMax = 1.05 * Math.max(dataMax, showCapacity ? dev.capacity_bytes : 0);
      const chart = new Chart(box, view, 300, (f) => {
        yAxis(f, yMax);
        drawSteps(f, steps);
        const cols = f.cols;
        const ra = allocated.length ? columnRanges(pickLevel(allocated, f.t0, f.t1, cols), f.t0, f.t1, cols) : null;
        const rr = reserved.length ? columnRanges(pickLevel(reserved, f.t0, f.t1, cols), f.t0, f.t1, cols) : null;
        const rn = nvml.length ? columnRanges(pickLevel(nvml, f.t0, f.t1, cols), f.t0, f.t1, cols) : null;
        // Behind to front: what the device and the allocator hold, then what is allocated.
        if (rn) drawColumns(f, rn, D.colours.nvml, null, [5, 3]);
        if (rr) drawColumns(f, rr, D.colours.reserved, null);
        if (ra) drawColumns(f, ra, D.colours.allocated, "rgba(0,114,178,0.28)");
        const g = f.g;
        if (showCapacity) {
          const y = Math.round(f.y(dev.capacity_bytes)) + 0.5;
          g.strokeStyle = "#444"; g.setLineDash([2, 3]); g.beginPath(); g.moveTo(f.x0, y); g.lineTo(f.x1, y); g.stroke(); g.setLineDash([]);
        }
        g.font = "11px system-ui, sans-serif"; g.textBaseline = "bottom";
        for (const m of dev.ooms) {
          if (m.t < f.t0 || m.t > f.t1) continue;
          const x = Math.round(f.x(m.t)) + 0.5;
          g.strokeStyle = "#b00020"; g.beginPath(); g.moveTo(x, f.y0); g.lineTo(x, f.y1); g.stroke();
          g.fillStyle = "#b00020"; g.textAlign = "left"; g.fillText("OOM", x + 3, f.y0 + 12);
        }
        for (const m of dev.peaks) {
          if (m.t < f.t0 || m.t > f.t1) continue;
          const x = f.x(m.t), y = f.y(m.bytes);
          g.fillStyle = D.colours.peak; g.beginPath(); g.arc(x, y, 4, 0, 2 * Math.PI); g.fill();
          g.textAlign = x > (f.x0 + f.x1) / 2 ? "right" : "left";
          g.fillText(str(m.what) + " " + fmtBytes(m.bytes), x + (g.textAlign === "left" ? 6 : -6), Math.max(f.y0 + 12, y - 4));
        }
        drawCursor(f, state.selected, "#d55e00");
        const hc = hoverColumn(f);
        if (hc !== null) {
          const t = f.t0 + ((hc + 0.5) / cols) * (f.t1 - f.t0);
          const part = (name, r) => (r && !Number.isNaN(r.hi[hc]) ? " · " + name + " " + (r.lo[hc] === r.hi[hc] ? fmtBytes(r.hi[hc]) : fmtBytes(r.lo[hc]) + "–" + fmtBytes(r.hi[hc])) : "");
          f.chart.status.textContent = fmtTime(t) + part("allocated", ra) + part("reserved", rr) + part("NVML used", rn);
          drawCursor(f, t, "rgba(0,0,0,0.35)");
        }
      });
      chart.onPick = (t) => pick(state, t);
      state.chart = chart;
    }
    if (dev.categories) categoriesChart(box, dev, view, steps, state);
    if (dev.bands) bandsChart(box, dev, view, state);
    if (dev.compositions.instants.length) compositionPanel(box, dev, state);
    if (dev.segments) segmentsPanel(box, dev.segments);
  }

  function categoriesChart(box, dev, view, steps, state) {
    const cat = dev.categories, T = undelta(cat.t);
    const layers = cat.bytes.map(undelta);
    const totals = new Float64Array(T.length);
    layers.forEach((L) => L.forEach((v, i) => { totals[i] += v; }));
    let max = 1;
    for (const v of totals) max = Math.max(max, v);
    box.append(el("h4", { text: "Memory by category" }));
    const legend = el("div", { class: "legend" });
    for (const li of cat.layers.slice().reverse()) {
      const s = el("span", { text: CATS[li][0] }); s.style.setProperty("--swatch", CATS[li][1]); legend.append(s);
    }
    box.append(legend);
    new Chart(box, view, 220, (f) => {
      yAxis(f, max * 1.05);
      drawSteps(f, steps);
      const g = f.g, cols = f.cols, dx = (f.x1 - f.x0) / cols;
      // Per column the point of the highest total in it (or the one carried in), stacked.
      let k = lowerBound(T, f.t0) - 1;
      const picks = new Int32Array(cols).fill(-1);
      for (let c = 0; c < cols; c++) {
        const end = f.t0 + ((c + 1) / cols) * (f.t1 - f.t0);
        let best = k;
        while (k + 1 < T.length && T[k + 1] <= end) { k++; if (best < 0 || totals[k] > totals[best]) best = k; }
        picks[c] = best;
      }
      for (let c = 0; c < cols; c++) {
        const p = picks[c];
        if (p < 0) continue;
        let under = 0;
        layers.forEach((L, li) => {
          const v = L[p];
          if (v <= 0) { under += v; return; }
          g.fillStyle = CATS[cat.layers[li]][1];
          const ya = f.y(under + v), yb = f.y(under);
          g.fillRect(f.x0 + c * dx, ya, dx + 0.5, yb - ya);
          under += v;
        });
      }
      drawCursor(f, state.selected, "#d55e00");
      const hc = hoverColumn(f);
      if (hc !== null && picks[hc] >= 0) {
        const p = picks[hc];
        const parts = cat.layers.map((li, j) => [CATS[li][0], layers[j][p]]).filter((x) => x[1] !== 0).sort((a, b) => b[1] - a[1]);
        f.chart.status.textContent = fmtTime(T[p]) + " · " + parts.map((x) => x[0] + " " + fmtBytes(x[1])).join(" · ");
      }
    }).onPick = (t) => pick(state, t);
  }

  function keyColour(k) {
    const hue = ((k * 0.618034) % 1) * 360;
    return "hsl(" + hue.toFixed(0) + ",55%," + (k % 2 === 0 ? "62%" : "48%") + ")";
  }
  function bandsChart(box, dev, view, state) {
    const B = dev.bands, n = B.bands.length;
    const start = new Float64Array(n), end = new Float64Array(n);
    let t = 0;
    B.bands.forEach((b, i) => { t += b[0]; start[i] = t; end[i] = t + b[1]; });
    const allocated = curve(dev.allocated), before = curve(B.before_trace);
    const max = Math.max(levelsMax(allocated), 1) * 1.05;
    box.append(el("h4", { text: "Allocations" }));
    box.append(el("div", { class: "muted", text: n + " allocations drawn one by one (those at least 1/512 of the peak tall and 1/2048 of the run long" + (B.left_out ? "; " + B.left_out + " more left out for size" : "") + "); the rest of the allocated bytes in grey." }));
    const segsOf = (i) => {
      const b = B.bands[i], mv = B.moves[i], out = [[start[i], b[4]]];
      let tm = start[i], off = b[4];
      for (let j = 0; j + 1 < mv.length; j += 2) { tm += mv[j]; off += mv[j + 1]; out.push([tm, off]); }
      return out;
    };
    const chart = new Chart(box, view, 260, (f) => {
      yAxis(f, max);
      const g = f.g, cols = f.cols, dx = (f.x1 - f.x0) / cols;
      if (allocated.length) {
        const r = columnRanges(pickLevel(allocated, f.t0, f.t1, cols), f.t0, f.t1, cols);
        g.fillStyle = "#d9d9d9";
        for (let c = 0; c < cols; c++) if (!Number.isNaN(r.hi[c])) { const y = f.y(r.hi[c]); g.fillRect(f.x0 + c * dx, y, dx + 0.5, f.y1 - y); }
      }
      if (before.length) {
        const r = columnRanges(pickLevel(before, f.t0, f.t1, cols), f.t0, f.t1, cols);
        g.fillStyle = "#9a9a9a";
        for (let c = 0; c < cols; c++) if (!Number.isNaN(r.hi[c]) && r.hi[c] > 0) { const y = f.y(r.hi[c]); g.fillRect(f.x0 + c * dx, y, dx + 0.5, f.y1 - y); }
      }
      for (let i = 0; i < n; i++) {
        if (end[i] < f.t0 || start[i] > f.t1) continue;
        const b = B.bands[i], segs = segsOf(i);
        g.fillStyle = state.band === i ? "#000" : keyColour(b[3]);
        for (let s = 0; s < segs.length; s++) {
          const a = Math.max(f.x0, f.x(segs[s][0])), z = Math.min(f.x1, f.x(s + 1 < segs.length ? segs[s + 1][0] : end[i]));
          if (z < a) continue;
          const ya = f.y(segs[s][1] + b[2]), yb = f.y(segs[s][1]);
          g.fillRect(a, ya, Math.max(z - a, 0.7), Math.max(yb - ya, 0.7));
        }
      }
      drawCursor(f, state.selected, "#d55e00");
    });
    const bandAt = (tm, bytes) => {
      for (let i = n - 1; i >= 0; i--) {
        if (tm < start[i] || tm > end[i]) continue;
        const segs = segsOf(i);
        let s = segs.length - 1;
        while (s > 0 && segs[s][0] > tm) s--;
        if (bytes >= segs[s][1] && bytes <= segs[s][1] + B.bands[i][2]) return i;
      }
      return -1;
    };
    const describe = (i) => {
      const b = B.bands[i];
      return fmtBytes(b[2]) + " allocated at " + fmtTime(start[i]) + ", live " + fmtTime(b[1]) + " · " + str(B.keys[b[3]]);
    };
    chart.canvas.addEventListener("mousemove", (e) => {
      const r = chart.canvas.getBoundingClientRect(), f = { h: chart.height };
      const y = e.clientY - r.top, y1 = f.h - MARGIN.bottom, y0 = MARGIN.top;
      const bytes = ((y1 - y) / (y1 - y0)) * max;
      const i = bandAt(chart.timeAt(e.clientX), bytes);
      chart.status.textContent = i >= 0 ? describe(i) : "";
    });
    chart.onPick = (tm, e) => {
      const r = chart.canvas.getBoundingClientRect();
      const y1 = chart.height - MARGIN.bottom, y0 = MARGIN.top;
      const i = bandAt(tm, ((y1 - (e.clientY - r.top)) / (y1 - y0)) * max);
      state.band = i >= 0 ? i : null;
      pick(state, tm);
    };
  }

  // ---- what was live: at the peak, or the computed instant nearest a click ----
  const GROUPINGS = [["by_op", "op"], ["by_stack", "stack"], ["by_category", "category"]];
  function compositionPanel(box, dev, state) {
    const C = dev.compositions;
    const panel = el("div", { class: "composition-panel" });
    box.append(el("h4", { text: "What was live" }), panel);
    const head = el("div", { class: "status" });
    const tabs = el("div", { class: "tabs toolbar" });
    const rowsBox = el("div"), framesBox = el("div");
    panel.append(head, tabs, el("div", { class: "composition" }, rowsBox, framesBox));
    let grouping = C.instants.some((x) => x.by_stack.some((g) => g[5].length)) ? "by_stack" : "by_op";
    const buttons = GROUPINGS.map(([key, name]) => {
      const b = el("button", { text: "by " + name, onclick: () => { grouping = key; show(); } });
      tabs.append(b);
      return [key, b];
    });
    tabs.append(el("button", { text: "at the peak", onclick: () => { if (C.peak !== null) { state.selected = C.instants[C.peak].t; state.shown = C.peak; state.clicked = null; repaint(); show(); } } }));
    const repaint = () => state.view.listeners.forEach((f) => f());
    function show() {
      buttons.forEach(([key, b]) => b.classList.toggle("on", key === grouping));
      const idx = state.shown === null || state.shown === undefined ? (C.peak !== null ? C.peak : 0) : state.shown;
      const inst = C.instants[idx];
      let text = (idx === C.peak ? "At the peak, " : "At ") + str(inst.when) + ": " + str(inst.allocated) + " allocated.";
      if (state.clicked !== null && state.clicked !== undefined) {
        text += " Clicked at " + fmtTime(state.clicked) + "; shown: the nearest of the " + C.instants.length + " instants computed (the highest point of each 1/48 of the run, the peak and the OOMs).";
      }
      head.textContent = text;
      head.setAttribute("data-instant-ns", String(inst.t));
      const groups = inst[grouping];
      rowsBox.replaceChildren();
      framesBox.replaceChildren();
      if (!groups.length) { rowsBox.append(el("p", { class: "muted", text: "Nothing to show by this grouping here." })); return; }
      const tbody = el("tbody");
      groups.forEach((gr) => {
        const tr = el("tr", { class: gr[5].length ? "clickable" : null },
          el("td", { class: "num", text: str(gr[2]) }), el("td", { class: "num", text: str(gr[3]) }),
          el("td", { class: "num", text: gr[4] ? String(gr[4]) : "" }), el("td", { class: "label", text: str(gr[0]) }));
        tr.setAttribute("data-bytes", String(gr[1]));
        if (gr[5].length) tr.addEventListener("click", () => {
          tbody.querySelectorAll("tr.selected").forEach((r) => r.classList.remove("selected"));
          tr.classList.add("selected");
          framesBox.replaceChildren(el("div", { class: "muted", text: "Full stack, innermost frame first:" }),
            el("ol", { class: "frames" }, ...gr[5].map((fr) => el("li", { text: str(fr) }))));
        });
        tbody.append(tr);
      });
      const thead = el("thead", null, el("tr", null, el("th", { class: "num", text: "bytes" }), el("th", { class: "num", text: "share" }), el("th", { class: "num", text: "blocks" }), el("th", { text: grouping === "by_stack" ? "stack (click for the whole stack)" : grouping.slice(3) })));
      rowsBox.append(el("div", { class: "scroll" }, el("table", { class: "groups" }, thead, tbody)));
    }
    state.showComposition = show;
    state.instants = C.instants;
    if (C.peak !== null) state.selected = C.instants[C.peak].t;
    show();
  }
  function pick(state, t) {
    state.clicked = t;
    if (state.instants) {
      let best = 0;
      state.instants.forEach((x, i) => { if (Math.abs(x.t - t) < Math.abs(state.instants[best].t - t)) best = i; });
      state.shown = best;
      state.selected = state.instants[best].t;
      state.showComposition();
    } else state.selected = t;
    state.view.listeners.forEach((f) => f());
  }

  function segmentsPanel(box, seg) {
    box.append(el("h4", { text: "Segments and fragmentation " + str(seg.when) }));
    const facts = el("dl", { class: "facts" });
    for (const [l, t] of seg.facts) facts.append(el("dt", { text: str(l) }), el("dd", { text: str(t) }));
    box.append(facts);
    const colours = ["#0072b2", "#e69f00", "#e4e4e4", "#9a9a9a"];
    const legend = el("div", { class: "legend" });
    ["allocated", "pending free", "free", "more blocks"].forEach((name, i) => { const s = el("span", { text: name }); s.style.setProperty("--swatch", colours[i]); legend.append(s); });
    box.append(legend);
    const rowH = 7, n = seg.segments.length, largest = Math.max(1, ...seg.segments.map((s) => s[0]));
    const canvas = el("canvas", { height: String(n * rowH + 4) });
    const status = el("div", { class: "status", text: n + " segments, largest first" + (seg.left_out ? " (" + seg.left_out + " smaller ones left out)" : "") + "; a row's length is its size against the largest (" + fmtBytes(largest) + ")." });
    box.append(el("div", { class: "scroll", style: "display:block" }, canvas), status);
    const paint = () => {
      const w = canvas.clientWidth;
      if (!w) return;
      canvas.width = Math.round(w * DPR); canvas.height = Math.round((n * rowH + 4) * DPR);
      const g = canvas.getContext("2d");
      g.setTransform(DPR, 0, 0, DPR, 0, 0);
      seg.segments.forEach((s, r) => {
        let x = 0;
        const scale = (w - 4) / largest;
        for (let j = 0; j + 1 < s[2].length; j += 2) {
          g.fillStyle = colours[s[2][j + 1]] || "#999";
          const bw = s[2][j] * scale;
          g.fillRect(2 + x, 2 + r * rowH, Math.max(bw - 0.3, 0.5), rowH - 2);
          x += bw;
        }
      });
    };
    canvas.addEventListener("mousemove", (e) => {
      const r = Math.floor((e.clientY - canvas.getBoundingClientRect().top - 2) / rowH), s = seg.segments[r];
      if (!s) return;
      const blocks = [0, 0, 0, 0];
      for (let j = 0; j + 1 < s[2].length; j += 2) blocks[s[2][j + 1]] += s[2][j];
      status.textContent = "segment of " + fmtBytes(s[0]) + " (" + ["large", "small", "other"][s[1]] + " pool): " + fmtBytes(blocks[0]) + " allocated, " + fmtBytes(blocks[2]) + " free" + (blocks[1] ? ", " + fmtBytes(blocks[1]) + " pending free" : "");
    });
    paints.push(paint);
  }
  const paints = [];

  // ---- tables ----
  const OP_COLUMNS = ["Name", "# of Calls", "Self CPU Mem", "CPU Mem", "Self CUDA Mem", "CUDA Mem"];
  function opsTable(root, tables) {
    root.append(el("h3", { text: "Per-op memory (key_averages)" }));
    const select = el("select");
    tables.forEach((t, i) => select.append(el("option", { value: String(i), text: str(t.range) })));
    const filter = el("input", { type: "search", placeholder: "filter by name" });
    const note = el("span", { class: "muted" });
    root.append(el("div", { class: "toolbar" }, el("span", { text: "range:" }), select, filter, note));
    const box = el("div", { class: "scroll" });
    root.append(box);
    let sortBy = null, up = false;
    function render() {
      const t = tables[Number(select.value)];
      // A column pair of zeros says nothing (as report.md): a CPU run's CUDA columns.
      const has = (k) => t.rows.some((r) => r[2][k] !== 0 || r[2][k + 1] !== 0);
      const cols = [0, 1].concat(has(0) ? [2, 3] : [], has(2) ? [4, 5] : []);
      const needle = filter.value.toLowerCase();
      let rows = t.rows.filter((r) => !needle || str(r[0]).toLowerCase().includes(needle));
      if (sortBy !== null) {
        const key = (r) => (sortBy === 0 ? str(r[0]) : sortBy === 1 ? r[1] : r[2][sortBy - 2]);
        rows = rows.slice().sort((a, b) => { const x = key(a), y = key(b); const c = x < y ? -1 : x > y ? 1 : 0; return up ? c : -c; });
      }
      const head = el("tr");
      cols.forEach((c) => {
        const th = el("th", { class: "sortable" + (c ? " num" : "") + (sortBy === c ? " sorted" + (up ? " up" : "") : ""), text: OP_COLUMNS[c], title: "sort" });
        th.addEventListener("click", () => { if (sortBy === c) up = !up; else { sortBy = c; up = c === 0; } render(); });
        head.append(th);
      });
      const body = el("tbody");
      for (const r of rows) {
        body.append(el("tr", null, ...cols.map((c) => c === 0 ? el("td", { class: "label", text: str(r[0]) }) : c === 1 ? el("td", { class: "num", text: String(r[1]) }) : el("td", { class: "num", "data-bytes": String(r[2][c - 2]), text: str(r[3][c - 2]) }))));
      }
      box.replaceChildren(el("table", { class: "ops" }, el("thead", null, head), body));
      note.textContent = rows.length + " rows" + (t.left_out ? " (" + t.left_out + " more, the smallest, left out of the page)" : "") + "; click a heading to sort.";
    }
    select.addEventListener("change", render);
    filter.addEventListener("input", render);
    render();
  }

  function inputSection(input, i) {
    input.index = i;
    const sec = el("section", { id: "input" + i });
    main.append(sec);
    sec.append(el("h2", null, el("span", { class: "name", text: str(input.name) })));
    // The file's facts first; its environment (properties, allocator settings) folded.
    const facts = el("dl", { class: "facts" }), env = el("dl", { class: "facts" });
    input.facts.forEach(([l, t], k) => (k < 2 || str(l) === "rank" ? facts : env).append(el("dt", { text: str(l) }), el("dd", { text: str(t) })));
    sec.append(facts);
    if (env.children.length) sec.append(el("details", null, el("summary", { text: "environment (" + env.children.length / 2 + ")" }), env));
    for (const w of input.warnings) sec.append(el("p", { class: "warn", text: "⚠ " + str(w) }));
    if (!input.devices.length) sec.append(el("p", { class: "muted", text: "No memory events in this file: nothing to say about memory." }));
    const end = input.summary.duration_us * 1000;
    input.devices.forEach((dev, di) => deviceSection(input, dev, di, sec, input.steps, end));
    if (input.ooms.length) {
      sec.append(el("h3", { text: "Out of memory" }));
      for (const [line, live] of input.ooms) {
        sec.append(el("p", { class: "verdict", text: str(line) }));
        if (live.length) sec.append(el("ul", null, ...live.map((l) => el("li", { class: "label", text: str(l) }))));
      }
    }
    if (input.ops.length) opsTable(sec, input.ops);
    if (input.advice.length) {
      sec.append(el("h3", { text: "What-if advice" }));
      sec.append(el("p", { class: "muted", text: "Estimated peaks under each memory-saving technique (vramscope advise with its defaults; docs/ADVISOR.md has their accuracy)." }));
      for (const a of input.advice) {
        sec.append(el("h4", { text: str(a.title) }));
        sec.append(table(["technique", "estimated peak", "saving", "price"], a.rows.map((r) => [str(r[0]), str(r[1]), str(r[2]), str(r[3])]), [false, true, true, false]));
        if (a.fit !== null) sec.append(el("p", { text: str(a.fit) }));
      }
    }
  }

  function selfTest() {
    // Click the first device's timeline at 40% of its width, as a person would, and say
    // what the composition then shows (read by tests/html/check.py from --dump-dom).
    const out = document.getElementById("selftest");
    const state = views.find((v) => v.chart && v.instants);
    const result = { clicked: false, compositions: views.some((v) => v.instants) };
    if (state) {
      const c = state.chart.canvas, r = c.getBoundingClientRect();
      const x = r.left + MARGIN.left + 0.4 * state.chart.plotWidth(), y = r.top + 100;
      const t = state.chart.timeAt(x);
      for (const type of ["mousedown", "mouseup", "click"]) c.dispatchEvent(new MouseEvent(type, { clientX: x, clientY: y, bubbles: true }));
      const nearest = state.instants.reduce((b, s) => (Math.abs(s.t - t) < Math.abs(b.t - t) ? s : b), state.instants[0]);
      const panel = c.closest("section").querySelector(".composition-panel");
      const rows = panel.querySelectorAll("tbody tr");
      let sum = 0;
      rows.forEach((tr) => { sum += Number(tr.getAttribute("data-bytes")); });
      result.clicked = true;
      result.clicked_ns = t;
      result.shown_ns = Number(panel.querySelector(".status").getAttribute("data-instant-ns"));
      result.nearest_ns = nearest.t;
      result.rows = rows.length;
      result.bytes = sum;
      result.heading = panel.querySelector(".status").textContent;
      // The timeline drew: the share of its pixels painted (axes and labels alone are ~5%).
      const px = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
      let painted = 0;
      for (let i = 3; i < px.length; i += 4) if (px[i] > 0) painted++;
      result.painted = painted / (c.width * c.height);
      // A wheel notch over the chart zooms in about the pointer; a double-click restores.
      const whole = state.view.t1 - state.view.t0;
      c.dispatchEvent(new WheelEvent("wheel", { deltaY: -300, clientX: x, clientY: y, bubbles: true, cancelable: true }));
      result.zoomed = state.view.t1 - state.view.t0 < whole;
      c.dispatchEvent(new MouseEvent("dblclick", { clientX: x, clientY: y, bubbles: true }));
      result.reset = state.view.t1 - state.view.t0 === whole;
    }
    // A click on the per-op table's "# of Calls" heading sorts it, largest first.
    const calls = [...document.querySelectorAll("table.ops th")].find((th) => th.textContent === "# of Calls");
    if (calls) {
      const box = calls.closest(".scroll");
      calls.click();
      // The table is drawn anew on a sort: read the one now in its box.
      const values = [...box.querySelectorAll("tbody tr")].map((tr) => Number(tr.children[1].textContent));
      result.sorted = values.length > 0 && values.every((v, i) => i === 0 || values[i - 1] >= v);
    }
    out.hidden = false;
    out.textContent = JSON.stringify(result);
  }

  // ---- the page ----
  const inputs = D.inputs;
  document.getElementById("generator").textContent = "Made by " + D.generator + " from " + inputs.length + (inputs.length === 1 ? " input" : " inputs") + ". Every number is vramscope's; this page only draws.";
  document.title = "vramscope report — " + inputs.map((x) => str(x.name)).join(", ");
  const toc = document.getElementById("toc");
  if (inputs.length > 1) inputs.forEach((x, i) => toc.append(el("span", { class: "name", text: (i + 1) + ". " + str(x.name) })));
  if (D.ranks) {
    const R = D.ranks;
    main.append(el("h2", { text: "Ranks" }), el("p", { text: R.count }));
    main.append(el("div", { class: "scroll" }, table(R.headings, R.rows, R.right)));
    const f = el("dl", { class: "facts" });
    for (const [l, t] of R.findings) f.append(el("dt", { text: l }), el("dd", { text: t }));
    main.append(f);
  }
  inputs.forEach(inputSection);
  const paintAll = () => { views.forEach((v) => v.view.listeners.forEach((f) => f())); paints.forEach((p) => p()); };
  paintAll();
  let resizeTimer = null;
  window.addEventListener("resize", () => { clearTimeout(resizeTimer); resizeTimer = setTimeout(paintAll, 100); });
  if (location.hash === "#selftest") selfTest();
  document.body.setAttribute("data-rendered", "1");
})();
