// The compact key history (widgets/_history.py). Every piece of record text goes in with textContent:
// payloads are untrusted. The kernel holds the lines; this side draws one page and asks for more.

function node(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

function badge(kind, value, title) {
  const b = node("span", `ai-h-badge ai-h-${kind}`, value);
  b.dataset.value = String(value).toLowerCase();
  if (title) b.title = title;
  return b;
}

// "1 record", "2 records": counts with the noun in the right number.
function plural(n, noun) {
  return `${(n || 0).toLocaleString()} ${n === 1 ? noun : noun + "s"}`;
}

// Clipboard API first; the textarea + execCommand fallback for insecure pages; if both fail the text
// stays selected in a box the user copies by hand.
async function copyText(el, text, label) {
  let done = false;
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      done = true;
    }
  } catch (err) {
    done = false;
  }
  if (!done) {
    const area = node("textarea", "ai-h-copybox");
    area.value = text;
    area.readOnly = true;
    el.appendChild(area);
    area.select();
    try {
      done = document.execCommand("copy");
    } catch (err) {
      done = false;
    }
    if (done) area.remove();
  }
  el.dataset.copied = text;
  const status = el.querySelector(":scope > .ai-h-copied") || el.appendChild(node("span", "ai-h-copied"));
  status.textContent = done ? `${label} copied` : `select and copy the ${label} above`;
}

function render({ model, el }) {
  el.classList.add("ai-history-root");
  const head = node("div", "ai-h-head");
  const bar = node("div", "ai-h-bar");
  const search = node("input", "ai-h-search");
  search.type = "search";
  search.placeholder = "search any attribute or value (an order id, an event id…) — Enter";
  const searchInfo = node("span", "ai-h-search-info");
  const firstDiv = node("button", "ai-h-first-divergence", "⇢ first divergence");
  const nextRerun = node("button", "ai-h-next-rerun", "⇢ next re-run");
  const prev = node("button", "ai-h-prev", "‹ prev");
  const next = node("button", "ai-h-next", "next ›");
  const pageInfo = node("span", "ai-h-page-info");
  const notice = node("div", "ai-h-notice");
  bar.append(search, firstDiv, nextRerun, prev, pageInfo, next);
  const cols = node("div", "ai-h-line ai-h-cols");
  const list = node("div", "ai-h-list");
  el.append(head, bar, searchInfo, notice, cols, list);

  search.value = model.get("query");
  search.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") {
      model.set("query", search.value);
      model.save_changes();
    }
  });
  search.addEventListener("search", () => {
    if (search.value === "" && model.get("query") !== "") {
      model.set("query", "");
      model.save_changes();
    }
  });
  firstDiv.addEventListener("click", () => model.send({ action: "divergence" }));
  nextRerun.addEventListener("click", () => model.send({ action: "rerun" }));
  prev.addEventListener("click", () => model.send({ action: "page", page: model.get("page") - 1 }));
  next.addEventListener("click", () => model.send({ action: "page", page: model.get("page") + 1 }));

  function drawHead() {
    const h = model.get("header") || {};
    head.replaceChildren();
    const title = node("div", "ai-title");
    const terms = h.terms || {};
    title.append("history of key ", node("code", null, h.key), ` · ${plural(h.lines, "execution")} · ` +
      plural(h.records, "record"));
    if (h.rule) {
      const rule = node("span", "ai-h-rule", `rule ${h.rule}`);
      if (terms.rule) rule.title = terms.rule;
      title.append(" · ", rule);
    }
    const counts = node("div", "ai-h-counts");
    for (const [name, n] of Object.entries(h.statuses || {})) counts.append(badge("status", name, terms[name]), ` ${plural(n, "record")}  `);
    for (const [name, n] of Object.entries(h.outcomes || {})) counts.append(badge("outcome", name, terms[name]), ` ${plural(n, "line")}  `);
    const diverged = node("span", null, `${plural(h.divergent_lines, "line")} in a divergence`);
    if (terms.divergence) diverged.title = terms.divergence;
    const reruns = node("span", null, plural(h.reruns, "re-run"));
    if (terms.RERUN) reruns.title = terms.RERUN;
    counts.append(" · ", diverged, " · ", reruns);
    head.append(title, counts);
    // the column headers, each with the glossary's line for what it shows
    cols.replaceChildren(...(h.columns || []).map(([label, tip]) => {
      const c = node("span", null, label);
      if (tip) c.title = tip;
      return c;
    }));
  }

  function drawRecords(box, detail) {
    box.replaceChildren();
    const focus = model.get("focus_record");
    for (const r of detail.records || []) {
      const rec = node("div", "ai-h-record");
      rec.dataset.pos = String(r.pos);
      if (r.pos === focus) rec.classList.add("ai-h-focused-record");
      if (r.match) rec.classList.add("ai-h-match");
      const meta = node("div", "ai-h-record-meta");
      meta.append(node("b", null, `record ${r.pos}`), ` ${r.kind} · partition ${r.partition} offset ${r.offset} · ${r.time}`);
      const terms = (model.get("header") || {}).terms || {};
      if (r.status) meta.append(" ", badge("status", r.status, terms[r.status]));
      if (r.outcome) meta.append(" ", badge("outcome", r.outcome, terms[r.outcome]));
      if (r.divergence !== null && r.divergence !== undefined) meta.append(" ", badge("divergence", `divergence ${r.divergence}`, terms.divergence));
      if (r.reason) meta.append(node("div", "ai-h-reason", r.reason));
      const tools = node("div", "ai-h-tools");
      const copyJson = node("button", "ai-h-copy-json", "copy JSON");
      const copyLink = node("button", "ai-h-copy-link", "copy link");
      const snippet = node("code", "ai-h-snippet", r.snippet);
      copyJson.addEventListener("click", (ev) => { ev.stopPropagation(); copyText(tools, r.json, "JSON"); });
      copyLink.addEventListener("click", (ev) => { ev.stopPropagation(); copyText(tools, r.snippet, "link"); });
      tools.append(copyJson, copyLink, snippet);
      rec.append(meta, tools, node("pre", "ai-value", r.json));
      box.appendChild(rec);
    }
  }

  // line number -> { wrap, line, box, detail }: the drawn page, so a reply that only opens a line or
  // moves the focus touches that line, not the whole page.
  const items = new Map();

  function drawRows() {
    const rows = model.get("rows") || [];
    items.clear();
    const frag = document.createDocumentFragment();
    for (const r of rows) {
      const wrap = node("div", "ai-h-item");
      wrap.dataset.line = String(r.line);
      const line = node("div", "ai-h-line");
      if (r.divergences.length) line.classList.add("ai-h-diverged");
      if (r.rerun) line.classList.add("ai-h-rerun");
      if (r.matches) line.classList.add("ai-h-match");
      const time = node("span", "ai-h-time", r.time);
      time.title = r.date;
      const action = node("span", "ai-h-action", r.action);
      if (r.action_id && r.action_id !== r.action) action.title = `action UUID ${r.action_id}`;
      line.append(
        time, node("span", "ai-h-duration", r.duration), node("span", null, r.seq), node("span", null, r.attempt),
        action, node("span", "ai-h-event", r.event), node("span", null, r.records));
      const terms = (model.get("header") || {}).terms || {};
      const st = node("span");
      if (r.status) st.appendChild(badge("status", r.status, terms[r.status]));
      const oc = node("span");
      if (r.outcome) oc.appendChild(badge("outcome", r.outcome, terms[r.outcome]));
      const marks = node("span", "ai-h-marks");
      if (r.divergences.length) {
        const ids = r.divergences.map((d) => `#${d}`).join(", ");
        marks.appendChild(badge("divergence", `${r.divergences.length === 1 ? "divergence" : "divergences"} ${ids}`,
                                terms.divergence));
      }
      if (r.matches) marks.appendChild(badge("match", `${r.matches} match`));
      line.append(st, oc, marks);
      if (r.reason) line.title = r.reason;
      line.addEventListener("click", () => {
        const open = (model.get("details") || {})[String(r.line)] !== undefined;
        model.send({ action: open ? "collapse" : "expand", line: r.line });
      });
      wrap.appendChild(line);
      frag.appendChild(wrap);
      items.set(r.line, { wrap, line, box: null, detail: undefined });
    }
    list.replaceChildren(frag);
    pageInfo.textContent = `page ${model.get("page") + 1} of ${model.get("page_count")} · ${plural(model.get("total"), "line")}`;
    prev.disabled = model.get("page") <= 0;
    next.disabled = model.get("page") >= model.get("page_count") - 1;
  }

  function drawDetails() {
    const details = model.get("details") || {};
    for (const [lineNo, item] of items) {
      const detail = details[String(lineNo)];
      if (detail === item.detail) continue;
      item.detail = detail;
      if (item.box) item.box.remove();
      item.box = null;
      if (detail !== undefined) {
        item.box = node("div", "ai-h-records");
        drawRecords(item.box, detail);
        item.wrap.appendChild(item.box);
      }
    }
  }

  function drawFocus() {
    const focus = model.get("focus_line");
    const pos = String(model.get("focus_record"));
    let target = null;
    for (const [lineNo, item] of items) {
      const on = lineNo === focus;
      item.line.classList.toggle("ai-h-focused", on);
      if (on) target = item.wrap;
      if (!item.box) continue;
      for (const rec of item.box.children) {
        const hit = rec.dataset.pos === pos;
        rec.classList.toggle("ai-h-focused-record", hit);
        if (hit) target = rec;
      }
    }
    if (target && target.scrollIntoView) target.scrollIntoView({ block: "nearest" });
  }

  function drawInfo() {
    searchInfo.textContent = model.get("search_info");
    notice.textContent = model.get("notice");
    if (search.value !== model.get("query") && document.activeElement !== search) search.value = model.get("query");
  }

  // Several traits change per kernel reply (rows, details, focus…): draw what changed once per frame.
  const dirty = { rows: false, details: false, focus: false };
  let pending = false;
  function schedule(what) {
    dirty[what] = true;
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      const rows = dirty.rows;
      if (rows) drawRows();
      el.dataset.aiDrawn = String(model.get("total"));  // drawn: this page of `total` lines
      if (rows || dirty.details) drawDetails();
      if (rows || dirty.details || dirty.focus) drawFocus();
      dirty.rows = dirty.details = dirty.focus = false;
    });
  }

  drawHead();
  drawRows();
  drawDetails();
  drawFocus();
  drawInfo();
  el.dataset.aiDrawn = String(model.get("total"));
  model.on("change:header", drawHead);
  model.on("change:rows", () => schedule("rows"));
  model.on("change:details", () => schedule("details"));
  model.on("change:focus_line", () => schedule("focus"));
  model.on("change:focus_record", () => schedule("focus"));
  model.on("change:search_info", drawInfo);
  model.on("change:notice", drawInfo);
  model.on("change:query", drawInfo);
}

export default { render };
