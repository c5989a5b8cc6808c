// agent_inspect data grid (_grid.py): the rows stay in the kernel; this draws the window it sends.
// Scrolling asks for another window (viewport), a header click for a sort, a filter box for a filter,
// a row click sends {type: "select", row}. Every cell and header is set with textContent, never as HTML.
const ROW = 24;
const OVERSCAN = 20;

function make(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

export default {
  render({ model, el }) {
    el.classList.add("ai-grid");
    const status = make("div", "ai-grid-status");
    const head = make("div", "ai-grid-head");
    const filters = make("div", "ai-grid-filters");
    const scroller = make("div", "ai-grid-scroll");
    const spacer = make("div", "ai-grid-spacer");
    const body = make("div", "ai-grid-body");
    const empty = make("div", "ai-grid-empty");
    spacer.appendChild(body);
    scroller.appendChild(spacer);
    const table = make("div", "ai-grid-table");
    table.append(head, filters, scroller);
    el.append(status, table, empty);
    let asked = "";
    let timer = null;
    let widths = "";

    // Column widths from the header and the first window's text, fixed while scrolling so rows line up.
    function measure() {
      const cells = (model.get("window") || {}).cells || [];
      widths = model.get("columns").map((column, j) => {
        let chars = column.length + 3;
        for (const row of cells.slice(0, 100)) chars = Math.max(chars, String(row[j]).length);
        return `${Math.min(420, Math.max(56, Math.round(chars * 7.4 + 14)))}px`;
      }).join(" ");
    }
    const template = () => widths;

    function drawHead() {
      if (!widths) measure();
      const columns = model.get("columns");
      const sort = model.get("sort") || [];
      const active = model.get("filters") || {};
      head.replaceChildren();
      filters.replaceChildren();
      for (const column of columns) {
        const cell = make("button", "ai-grid-header", column);
        cell.dataset.column = column;
        if (sort[0] === column) {
          cell.textContent = column + (sort[1] ? " ▼" : " ▲");
          cell.classList.add("ai-grid-sorted");
        }
        // what the column counts, in the glossary's words (the kernel sends them), then what a click does
        const tip = (model.get("tips") || {})[column];
        cell.title = tip ? `${column}: ${tip} (click to sort)` : `sort by ${column}`;
        cell.addEventListener("click", () => {
          const now = model.get("sort") || [];
          model.set("sort", [column, now[0] === column ? !now[1] : false]);
          model.save_changes();
        });
        head.appendChild(cell);
        const box = make("input", "ai-grid-filter");
        box.type = "text";
        box.placeholder = "filter";
        box.dataset.column = column;
        box.value = active[column] || "";
        const apply = () => {
          const now = model.get("filters") || {};
          if ((now[column] || "") === box.value) return;
          model.set("filters", { ...now, [column]: box.value });
          model.save_changes();
        };
        box.addEventListener("change", apply);
        box.addEventListener("keydown", (event) => { if (event.key === "Enter") apply(); });
        filters.appendChild(box);
      }
      for (const row of [head, filters]) row.style.gridTemplateColumns = template();
    }

    function drawStatus() {
      const total = model.get("total");
      const error = model.get("error");
      status.textContent = error ? error : `${total.toLocaleString("en-US")} rows`;
      empty.textContent = total === 0 ? model.get("message") : "";
      empty.style.display = total === 0 ? "" : "none";
    }

    function drawRows() {
      const win = model.get("window") || {};
      const cells = win.cells || [];
      const ids = win.ids || [];
      const total = win.total !== undefined ? win.total : model.get("total");
      spacer.style.height = `${total * ROW}px`;
      body.style.transform = `translateY(${(win.start || 0) * ROW}px)`;
      const selected = model.get("selected");
      const columns = template();
      body.replaceChildren();
      cells.forEach((values, i) => {
        const row = make("div", "ai-grid-row");
        row.dataset.row = String(ids[i]);
        row.style.gridTemplateColumns = columns;
        if (ids[i] === selected) row.classList.add("ai-grid-selected");
        for (const value of values) {
          const cell = row.appendChild(make("div", "ai-grid-cell", value));
          if (value !== null && value !== undefined && String(value).length > 16) cell.title = String(value);  // cut: whole on hover
        }
        row.addEventListener("click", () => {
          model.send({ type: "select", row: ids[i] });
        });
        body.appendChild(row);
      });
      el.dataset.aiDrawn = String(total);  // drawn: the rows in view of `total` (benchmarks/views_browser.py)
    }

    function askWindow() {
      const first = Math.floor(scroller.scrollTop / ROW);
      const visible = Math.ceil(scroller.clientHeight / ROW) || 15;
      const start = Math.max(0, first - OVERSCAN);
      const count = visible + 2 * OVERSCAN;
      const win = model.get("window") || {};
      const have = (win.start || 0) <= first && first + visible <= (win.start || 0) + (win.ids || []).length;
      const key = `${start}:${count}`;
      if (have || key === asked) return;
      asked = key;
      model.set("viewport", [start, count]);
      model.save_changes();
    }

    scroller.style.maxHeight = `${model.get("height")}px`;  // shorter when the rows are fewer
    scroller.addEventListener("scroll", () => {
      // keep the header aligned with horizontally scrolled rows
      head.style.transform = filters.style.transform = `translateX(${-scroller.scrollLeft}px)`;
      clearTimeout(timer);
      timer = setTimeout(askWindow, 30);
    });
    model.on("change:columns", () => { widths = ""; drawHead(); drawRows(); });
    model.on("change:tips", drawHead);
    model.on("change:sort", () => { scroller.scrollTop = 0; asked = ""; drawHead(); });
    model.on("change:filters", () => { scroller.scrollTop = 0; asked = ""; drawHead(); });
    // a selection made in the kernel (open a record) scrolls its row into view once, when its window arrives
    let reveal = false;
    function revealSelected() {
      const win = model.get("window") || {};
      const i = (win.ids || []).indexOf(model.get("selected"));
      if (!reveal || i < 0) return;
      reveal = false;
      const top = ((win.start || 0) + i) * ROW;
      if (top < scroller.scrollTop || top + ROW > scroller.scrollTop + scroller.clientHeight) {
        scroller.scrollTop = Math.max(0, top - 2 * ROW);
      }
    }
    model.on("change:window", () => { drawRows(); revealSelected(); askWindow(); });
    model.on("change:selected", () => { reveal = true; drawRows(); revealSelected(); });
    model.on("change:total", drawStatus);
    model.on("change:error", drawStatus);
    model.on("change:message", drawStatus);
    drawHead();
    drawStatus();
    drawRows();
    return () => clearTimeout(timer);
  },
};
