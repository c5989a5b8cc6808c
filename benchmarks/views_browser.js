// In-page half of benchmarks/views_browser.py: runs cells, clicks, and decides from the DOM when a view is drawn.
//
// "Drawn" (the marker convention, see views_browser.py's docstring):
//  - an element carrying `data-ai-drawn="<n>"` has drawn its data; n = the number of data items it represents
//    (records, steps, rows: not marks or bins); `data-ai-drawn="false"` (or no attribute) means not yet;
//  - a plotly plot (`.js-plotly-plot`) is drawn when its `.main-svg` is there, each visible SVG trace has its
//    `.trace` group, WebGL traces have their `canvas.gl-canvas`; it represents the points of its visible traces;
//  - a grid is drawn when rows are in the DOM (`tbody tr`, `[role=row]`) or it carries `data-ai-drawn`.
// Times are taken in the page (performance.now()), so the harness's round trips do not count.
(() => {
  const app = () => window.jupyterapp;
  const notebook = () => app().shell.currentWidget;
  const frame = () => new Promise(resolve => { requestAnimationFrame(() => resolve()); setTimeout(resolve, 50); });

  const plotItems = gd => {
    if (gd.hasAttribute('data-ai-drawn')) return markItems(gd);
    if (!gd._fullData || !gd.querySelector('.main-svg')) return null;
    const visible = gd._fullData.filter(t => t.visible === true);
    const gl = visible.filter(t => /gl$/.test(t.type));
    if (gd.querySelectorAll('.trace').length < visible.length - gl.length) return null;
    if (gl.length && !gd.querySelector('canvas.gl-canvas')) return null;
    let n = 0;
    for (const t of visible) n += Math.max((t.x || []).length, (t.y || []).length, (t.values || []).length);
    return n;
  };
  const markItems = el => {
    const v = el.getAttribute('data-ai-drawn');
    if (v === null || v === 'false') return null;
    const n = Number(v);
    return Number.isFinite(n) ? n : null;
  };

  // What is drawn under `root`: per plot / marked element its item count (null: not drawn yet), rows in the DOM.
  const state = root => {
    const marked = [...root.querySelectorAll('[data-ai-drawn]')].filter(e => !e.classList.contains('js-plotly-plot'));
    const plots = [...root.querySelectorAll('.js-plotly-plot')].map(plotItems);
    const marks = marked.map(markItems);
    const rows = root.querySelectorAll('tbody tr, [role="row"]').length;
    return {plots, marks, rows};
  };

  // need = {items: n, rows: bool}: every chart / marked element drawn (and non-empty when items > 0), the largest
  // one representing >= items, and with rows: rows in the DOM or a marked element.
  const drawn = (root, need) => {
    const s = state(root);
    const all = s.plots.concat(s.marks);
    if (!all.length && !(need.rows && s.rows)) return false;
    if (all.some(n => n === null)) return false;
    if (need.items > 0 && all.some(n => n < 1)) return false;
    if (Math.max(0, ...all) < need.items) return false;
    if (need.rows && !s.rows && !s.marks.length) return false;
    return true;
  };

  const outputRoot = index => notebook().content.widgets[index].outputArea.node;
  const errorsOf = index => notebook().content.widgets[index].model.outputs.toJSON()
    .filter(o => o.output_type === 'error').map(o => `${o.ename}: ${o.evalue}`);

  const bench = {
    result: null,
    state: index => state(outputRoot(index)),
    drawn: (root, need) => drawn(root, need),  // the rules above, on any element (tests hold them)
    value: root => valueOf(root),

    // Append a code cell with `code`, make it the only selected cell; returns its index.
    addCell(code) {
      const nb = notebook();
      const index = nb.content.widgets.length;
      nb.model.sharedModel.insertCell(index, {cell_type: 'code', source: code});
      nb.content.activeCellIndex = index;
      nb.content.deselectAll();
      return index;
    },

    // Run the active cell and wait for the kernel's reply (untimed set-up); returns its text outputs and errors.
    async runCell(index) {
      await app().commands.execute('notebook:run-cell');
      const outputs = notebook().content.widgets[index].model.outputs.toJSON();
      const text = outputs.map(o => o.text || (o.data && o.data['text/plain']) || '').join('');
      return {text, errors: errorsOf(index)};
    },

    // Start the active cell and, without waiting for it, poll the DOM of its output until `need` is drawn.
    // The outcome lands in bench.result: {ms, kernel_ms} or {timeout} or {errors}.
    startTimedRun(index, need, timeoutMs) {
      bench.result = null;
      const t0 = performance.now();
      let kernelMs = null;
      app().commands.execute('notebook:run-cell').then(() => { kernelMs = performance.now() - t0; });
      bench.poll(() => outputRoot(index), need, t0, timeoutMs, () => kernelMs, index);
    },

    // Arm a timer at the next mousedown (the harness then clicks), then poll until `done()` holds.
    armClick(index, kind, need, timeoutMs) {
      bench.result = null;
      const root = outputRoot(index);
      const before = valueOf(root);
      let t0 = null;
      document.addEventListener('mousedown', () => { t0 = performance.now(); }, {capture: true, once: true});
      (async () => {
        const started = performance.now();
        while (true) {
          if (t0 !== null) {
            const ok = kind === 'value' ? (valueOf(root) !== before && valueOf(root) !== null) : drawn(root, need);
            if (ok) { bench.result = {ms: performance.now() - t0}; return; }
          }
          if (performance.now() - started > timeoutMs) { bench.result = {timeout: true, clicked: t0 !== null}; return; }
          await frame();
        }
      })();
    },

    async poll(rootOf, need, t0, timeoutMs, kernelMs, index) {
      while (true) {
        if (drawn(rootOf(), need)) { bench.result = {ms: performance.now() - t0, kernel_ms: kernelMs()}; return; }
        const errors = errorsOf(index);
        if (errors.length) { bench.result = {errors}; return; }
        if (performance.now() - t0 > timeoutMs) { bench.result = {timeout: true, kernel_ms: kernelMs(), state: state(rootOf())}; return; }
        await frame();
      }
    },

    // Client coordinates of the centre of the first button under the cell's output whose text matches `pattern`.
    buttonIn(index, pattern) {
      const re = new RegExp(pattern);
      const button = [...outputRoot(index).querySelectorAll('button')].find(b => re.test(b.textContent.trim()));
      if (!button) return null;
      button.scrollIntoView({block: 'center'});
      const b = button.getBoundingClientRect();
      return {x: b.left + b.width / 2, y: b.top + b.height / 2, disabled: button.disabled};
    },

    // Client coordinates of a data point of the first chart under the cell's output, clear of the mode bar and of
    // any divergence ✕: a plotly point (its axes' own maps; the "live" trace or the largest one, from the middle
    // outwards)
    // or the centre of an element marked `data-ai-point`.
    pointIn(index) {
      const root = outputRoot(index);
      const gd = root.querySelector('.js-plotly-plot');
      if (gd && gd._fullLayout && gd._fullData) {
        gd.scrollIntoView({block: 'center'});
        const fl = gd._fullLayout, r = gd.getBoundingClientRect();
        const traces = gd._fullData.filter(t => t.visible === true && (t.x || []).length);
        const trace = traces.find(t => t.name === 'live') || traces.sort((a, b) => b.x.length - a.x.length)[0];
        if (!trace) return null;
        const at = (t, k) => ({x: r.left + fl._size.l + fl.xaxis.l2p(t.x[k]), y: r.top + fl._size.t + fl.yaxis.l2p(t.y[k])});
        // a divergence ✕ is drawn over the record beneath it and a click on it shows the divergence, not a value
        const marks = traces.filter(t => t.name === 'divergence').flatMap(t => t.x.map((_, k) => at(t, k)));
        const clear = p => marks.every(m => Math.hypot(m.x - p.x, m.y - p.y) > 16);
        const mid = trace.x.length >> 1;
        for (let d = 0; d < trace.x.length; d++) {
          for (const k of [mid + d, mid - d]) {
            if (k < 0 || k >= trace.x.length) continue;
            const {x, y} = at(trace, k);
            if (y > r.top + fl._size.t + 30 && y < r.bottom - fl._size.b && x > r.left + fl._size.l && clear({x, y})) {
              return {x, y};
            }
          }
        }
        return null;
      }
      const mark = root.querySelector('[data-ai-point]');
      if (!mark) return null;
      mark.scrollIntoView({block: 'center'});
      const b = mark.getBoundingClientRect();
      return {x: b.left + b.width / 2, y: b.top + b.height / 2};
    },
  };

  // The decoded value a click shows: an element marked `data-ai-value="<record position>"`, else the text of
  // `.ai-detail` when it names a record ("record 123: ..."); null while neither is there.
  const valueOf = root => {
    const marked = root.querySelector('[data-ai-value]');
    if (marked && marked.getAttribute('data-ai-value')) return 'value ' + marked.getAttribute('data-ai-value');
    const detail = root.querySelector('.ai-detail');
    const m = detail && /record \d+:/.exec(detail.textContent);
    return m ? detail.textContent : null;
  };

  window.__aiBench = bench;
})();
