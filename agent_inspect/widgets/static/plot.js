// One chart of the agent_inspect views (widgets/_plot.py is the kernel side).
// plotly.js (gzipped) is the state of one shared model per kernel that every chart refers to (`_library`): it
// reaches the page once, with that model, and is saved once with the widget state, so a saved notebook draws
// its charts without the kernel that made them. The first chart on a page loads it; every chart awaits that one
// promise. Each chart's state holds only its figure, numeric arrays as binary buffers. Hover text comes from the
// kernel for the point under the mouse and is shown with textContent (never parsed as HTML).
const SHARED = "__agentInspectPlotly";
const REF = "IPY_MODEL_";

async function library(model) {
  const ref = model.get("_library");
  if (ref && typeof ref === "object") return ref; // already a model
  if (typeof ref !== "string" || !ref.startsWith(REF)) throw new Error("this chart names no plotly.js model");
  return model.widget_manager.get_model(ref.slice(REF.length));
}

function loadPlotly(model) {
  let promise = globalThis[SHARED];
  if (promise) return promise;
  promise = (async () => {
    const bundle = (await library(model)).get("bundle");
    const stream = new Blob([bundle]).stream().pipeThrough(new DecompressionStream("gzip"));
    const source = await new Response(stream).text();
    const module = { exports: {} };
    new Function("module", "exports", source)(module, module.exports);
    return module.exports;
  })();
  promise.catch(() => { if (globalThis[SHARED] === promise) delete globalThis[SHARED]; });
  globalThis[SHARED] = promise;
  return promise;
}

const TYPED = {
  float64: Float64Array, float32: Float32Array, int32: Int32Array, uint32: Uint32Array,
  int16: Int16Array, uint16: Uint16Array, int8: Int8Array, uint8: Uint8Array,
};

function typedArray(ref, buffers) {
  const view = buffers[ref.__ai_array__];
  const Type = TYPED[ref.dtype] || Float64Array;
  let bytes = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
  if (view.byteOffset % Type.BYTES_PER_ELEMENT) bytes = bytes.slice();
  const flat = new Type(bytes.buffer, bytes.byteOffset, bytes.byteLength / Type.BYTES_PER_ELEMENT);
  const shape = ref.shape || [flat.length];
  if (shape.length < 2) return flat;
  const width = shape[shape.length - 1];
  const rows = [];
  for (let i = 0; i < flat.length; i += width) rows.push(flat.subarray(i, i + width));
  return rows;
}

function unlift(value, buffers) {
  if (Array.isArray(value)) return value.map((v) => unlift(v, buffers));
  if (value && typeof value === "object") {
    if (typeof value.__ai_array__ === "number") return typedArray(value, buffers);
    const out = {};
    for (const [k, v] of Object.entries(value)) out[k] = unlift(v, buffers);
    return out;
  }
  return value;
}

// The theme: JupyterLab's light or dark (data-jp-theme-light on <body>). Charts are built with the light
// variants of the palette (_style.py); in the dark theme each is swapped for its dark variant, and paper,
// text and grid take JupyterLab's own colours (the palette's where JupyterLab's are missing).
function isDark() {
  return document.body.dataset.jpThemeLight === "false";
}

function swapColours(value, swaps) {
  if (typeof value === "string") return swaps[value.toLowerCase()] || value;
  if (Array.isArray(value)) return value.map((v) => swapColours(v, swaps));
  if (value && typeof value === "object" && value.constructor === Object) {
    const out = {};
    for (const [k, v] of Object.entries(value)) out[k] = swapColours(v, swaps);
    return out;
  }
  return value; // typed arrays and numbers stay as they are
}

function template(el, dark) {
  const css = getComputedStyle(el);
  const pick = (...names) => {
    for (const name of names) {
      const value = css.getPropertyValue(name).trim();
      if (value) return value;
    }
    return "";
  };
  const ink = pick("--jp-ui-font-color1", "--ai-ink") || (dark ? "white" : "black");
  const grid = pick("--jp-border-color2", "--ai-line") || "lightgray";
  const line = pick("--jp-border-color1", "--ai-muted") || "gray";
  const paper = pick("--jp-layout-color0", "--ai-paper") || (dark ? "black" : "white");
  const axis = { gridcolor: grid, linecolor: line, zerolinecolor: line, tickcolor: line, automargin: true,
                 title: { font: { color: ink } }, tickfont: { color: ink } };
  const roles = ["info", "warn", "good", "bad", "violet", "brown", "pink", "cyan"];
  const colorway = roles.map((role) => pick(`--ai-${role}`)).filter(Boolean);
  return {
    layout: {
      paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
      ...(colorway.length === roles.length ? { colorway } : {}),
      font: { color: ink, family: pick("--jp-ui-font-family") || undefined },
      title: { font: { color: ink } },
      xaxis: axis, yaxis: axis,
      legend: { bgcolor: "rgba(0,0,0,0)", font: { color: ink } },
      hoverlabel: { bgcolor: paper, bordercolor: line, font: { color: ink } },
      annotationdefaults: { font: { color: ink } },
    },
  };
}

function figure(model, el, swaps) {
  const spec = model.get("_spec") || {};
  const buffers = model.get("_arrays") || [];
  const dark = isDark();
  let layout = unlift(spec.layout || {}, buffers);
  let data = unlift(spec.data || [], buffers);
  if (dark && swaps) {
    layout = swapColours(layout, swaps);
    data = swapColours(data, swaps);
  }
  delete layout.width;
  layout.template = template(el, dark);
  return { data, layout, hover: new Set(spec.hover || []) };
}

const CONFIG = { displaylogo: false, responsive: true, displayModeBar: "hover" };

// The points a figure draws (the "drawn" count when the kernel does not say what the chart stands for).
function pointCount(data) {
  let n = 0;
  for (const t of data || []) n += Math.max((t.x || []).length, (t.y || []).length, (t.values || []).length);
  return n;
}

async function render({ model, el }) {
  el.classList.add("ai-plot");
  const gd = document.createElement("div");
  gd.className = "ai-plot-area";
  const tip = document.createElement("div");
  tip.className = "ai-plot-tip";
  tip.hidden = true;
  el.append(gd, tip);
  let hoverSet = new Set();
  let hoverId = 0;
  let alive = true;

  let Plotly;
  try {
    Plotly = await loadPlotly(model);
  } catch (error) {
    gd.textContent = `the chart cannot be drawn: plotly.js did not load (${error})`;
    el.dataset.aiError = String(error && error.stack || error);
    return () => { alive = false; };
  }
  if (!alive) return;
  let swaps = null;
  try {
    const palette = (await library(model)).get("dark_swaps") || {};
    swaps = Object.fromEntries(Object.entries(palette).map(([k, v]) => [k.toLowerCase(), v]));
  } catch (error) {
    swaps = null; // an older saved state: the light colours stay
  }
  if (!alive) return;
  const draw = () => {
    const fig = figure(model, el, swaps);
    el.dataset.aiTheme = isDark() ? "dark" : "light";
    hoverSet = fig.hover;
    el.dataset.drawn = "0";
    el.dataset.aiDrawn = "false";
    return Plotly.react(gd, fig.data, fig.layout, CONFIG).then(() => {
      el.dataset.drawn = "1";
      const items = model.get("items");
      el.dataset.aiDrawn = String(items >= 0 ? items : pointCount(fig.data));
    });
  };
  let pending = Promise.resolve();
  const redraw = () => { pending = pending.then(draw, draw); };
  const onMessage = (msg) => {
    if (!msg || msg.type !== "hover" || msg.id !== hoverId) return;
    tip.replaceChildren(...(msg.lines || []).map((line) => {
      const div = document.createElement("div");
      div.textContent = line;
      return div;
    }));
    tip.hidden = !(msg.lines && msg.lines.length);
  };
  model.on("change:_spec", redraw);
  model.on("msg:custom", onMessage);
  redraw();
  await pending;

  gd.on("plotly_click", (ev) => {
    const first = ev && ev.points && ev.points[0];
    if (!first) return;
    const points = ev.points.filter((p) => p.curveNumber === first.curveNumber).map((p) => p.pointNumber);
    model.send({ type: "click", trace: first.curveNumber, points });
  });
  gd.on("plotly_hover", (ev) => {
    const p = ev && ev.points && ev.points[0];
    if (!p || !hoverSet.has(p.curveNumber)) return;
    const box = el.getBoundingClientRect();
    const mouse = ev.event || {};
    const x = (mouse.clientX ?? box.left) - box.left + 14;
    const y = (mouse.clientY ?? box.top) - box.top + 14;
    tip.style.left = `${Math.min(Math.max(0, x), Math.max(0, box.width - 320))}px`;
    tip.style.top = `${Math.max(0, y)}px`;
    hoverId += 1;
    model.send({ type: "hover", id: hoverId, trace: p.curveNumber, point: p.pointNumber });
  });
  gd.on("plotly_unhover", () => { hoverId += 1; tip.hidden = true; });
  gd.on("plotly_relayout", (ev) => {
    if (ev && Object.keys(ev).some((k) => k.startsWith("xaxis") || k.startsWith("yaxis"))) {
      model.send({ type: "relayout", event: ev });
    }
  });
  const resize = new ResizeObserver(() => { if (gd._fullLayout) Plotly.Plots.resize(gd); });
  resize.observe(el);
  // JupyterLab switches theme by flipping an attribute on <body>: draw again in the other colours
  const theme = new MutationObserver(() => {
    if (el.dataset.aiTheme !== (isDark() ? "dark" : "light")) redraw();
  });
  theme.observe(document.body, { attributes: true, attributeFilter: ["data-jp-theme-light"] });

  return () => {
    alive = false;
    resize.disconnect();
    theme.disconnect();
    model.off("change:_spec", redraw);
    model.off("msg:custom", onMessage);
    Plotly.purge(gd);
  };
}

export default { render };
