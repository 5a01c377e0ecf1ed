// hexrag playground: ask a question, stream the answer, draw what was retrieved.
// Everything shown comes from the server's own endpoints (/query/data, /query/stream,
// /scope/values, /workspaces); stored text is always inserted as text, never as HTML.
"use strict";

const SEP = "<SEP>";
const $ = (id) => document.getElementById(id);
const state = { data: null, unscoped: null, removed: { entities: [], relationships: [] },
                streamDone: false, answer: "", timings: {} };
// Labels: rendered size grows with the zoom (sub-linearly) between MIN and MAX px; below MIN
// only the hubs, the hovered node and the selection keep a label (at MIN px).
const LABEL = { base: 13, min: 9, max: 22, hubs: 12 };
// One mouse-wheel notch (100 px) zooms by 20 %, as maps and diagram tools do.
const WHEEL = { notch: 100, factor: 1.2, maxDelta: 300 };
const ZOOM = { min: 0.05, max: 6, step: 1.25 };
const PREVIEW = 90;  // characters of a collapsed chunk shown in its summary line
window.hexrag = { state, cy: null };  // for scripts and tests: the state and the graph

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}

function headers() {
  const h = { "Content-Type": "application/json" };
  const key = $("api-key").value.trim();
  if (key) h["X-API-Key"] = key;
  const ws = $("workspace").value;
  if (!$("workspace-box").hidden && ws) h["LIGHTRAG-WORKSPACE"] = ws;
  return h;
}

function setStatus(text, error) {
  $("status").textContent = text;
  $("status").classList.toggle("error", Boolean(error));
}

async function getJSON(path) {
  const r = await fetch(path, { headers: headers() });
  if (!r.ok) throw new Error(`${path}: ${r.status} ${(await r.text()).slice(0, 200)}`);
  return r.json();
}

async function postJSON(path, body) {
  const t0 = performance.now();
  const r = await fetch(path, { method: "POST", headers: headers(), body: JSON.stringify(body) });
  const text = await r.text();
  state.timings[path + (body.scope ? " (scoped)" : "")] = Math.round(performance.now() - t0);
  if (!r.ok) throw new Error(`${path}: ${r.status} ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

function selected(id) {
  return Array.from($(id).selectedOptions).map((o) => o.value);
}

function scope() {
  const s = {};
  for (const field of ["product_id", "category_id"]) {
    const values = selected("scope-" + field);
    if (values.length) s[field] = values;
  }
  return Object.keys(s).length ? s : null;
}

function fillSelect(id, values, keep) {
  const box = $(id);
  box.replaceChildren();
  for (const v of values) {
    const opt = el("option", v);
    opt.value = v;
    opt.selected = keep.includes(v);
    box.appendChild(opt);
  }
}

async function loadScopeValues() {
  try {
    const values = await getJSON("/scope/values");
    for (const field of ["product_id", "category_id"]) {
      fillSelect("scope-" + field, values[field] || [], selected("scope-" + field));
    }
  } catch (e) {
    setStatus("scope values: " + e.message, true);
  }
}

async function loadWorkspaces() {
  try {
    const r = await fetch("/workspaces", { headers: headers() });
    if (!r.ok) return;  // a single-stack server
    const info = await r.json();
    const names = Array.from(new Set([info.default, ...info.declared, ...info.open]));
    const box = $("workspace");
    box.replaceChildren();
    for (const name of names) {
      const opt = el("option", name || "(default)");
      opt.value = name;
      box.appendChild(opt);
    }
    $("workspace-box").hidden = names.length < 2;
  } catch (e) { /* no workspaces */ }
}

// ---- hexrag's encoded file_path -> product / category / source --------------------------
// hexrag.core.documents.encode_file_path writes "product_id:<p>:category:<c>:source:<s>" (the
// parts present, in that order; a source may hold ":"); hexrag.core.scope parses it the same way.

const PATH_KEYS = { product_id: "product", category: "category", category_id: "category",
                    source: "source", doc_id: "doc" };

function decodeSegment(segment) {
  const tokens = segment.trim().split(":");
  if (tokens.length < 2 || !(tokens[0] in PATH_KEYS)) return null;
  const found = {};
  let key = null;
  let value = [];
  for (const token of tokens) {
    if (token in PATH_KEYS && (key === null || value.length)) {
      if (key !== null) found[PATH_KEYS[key]] = value.join(":");
      key = token;
      value = [];
    } else {
      value.push(token);
    }
  }
  if (key !== null) found[PATH_KEYS[key]] = value.join(":");
  if (!found.product && !found.category && !found.doc) return null;
  return found;
}

// The sources named by a file_path (several when <SEP>-joined): [{product, category, source}]
function decodeFilePath(filePath) {
  const out = [];
  for (const segment of String(filePath || "").split(SEP)) {
    if (!segment.trim()) continue;
    out.push(decodeSegment(segment) || { source: segment.trim() });
  }
  return out;
}

function sourceParts(src) {
  return [src.product, src.category, src.source || src.doc].filter(Boolean);
}

function sourceLine(src) {
  const span = el("span", null, "src");
  sourceParts(src).forEach((part, i) => {
    if (i) span.appendChild(el("span", " / ", "sep"));
    span.appendChild(el("span", part, "part"));
  });
  return span;
}

function renderReferences(refs) {
  const list = $("references");
  list.replaceChildren();
  $("references-title").hidden = !refs.length;
  for (const ref of refs) {
    const li = el("li");
    li.dataset.referenceId = ref.reference_id;
    li.title = String(ref.file_path || "");  // the stored value, on hover
    li.appendChild(el("span", `[${ref.reference_id}]`, "ref-n"));
    li.appendChild(document.createTextNode(" "));
    const sources = decodeFilePath(ref.file_path);
    sources.forEach((src, i) => {
      if (i) li.appendChild(document.createTextNode("; "));
      li.appendChild(sourceLine(src));
    });
    if (!sources.length) li.appendChild(el("span", "unknown source", "src"));
    list.appendChild(li);
  }
}

// ---- the graph -----------------------------------------------------------------------------

function pairKey(a, b) { return a < b ? a + "\u0000" + b : b + "\u0000" + a; }

function elements(data, removed) {
  const out = [];
  const seen = new Set();
  for (const e of data.entities || []) {
    seen.add(e.entity_name);
    out.push({ group: "nodes", classes: "in",
               data: { id: e.entity_name, label: e.entity_name, kind: "entity", record: e } });
  }
  for (const r of data.relationships || []) {
    for (const end of [r.src_id, r.tgt_id]) {
      if (!seen.has(end)) {
        seen.add(end);
        out.push({ group: "nodes", classes: "endpoint",
                   data: { id: end, label: end, kind: "endpoint", record: null } });
      }
    }
    out.push({ group: "edges", classes: "in",
               data: { id: "r:" + pairKey(r.src_id, r.tgt_id), source: r.src_id, target: r.tgt_id,
                       weight: Number(r.weight) || 1, kind: "relation", record: r } });
  }
  const edgeIds = new Set(out.filter((x) => x.group === "edges").map((x) => x.data.id));
  for (const e of removed.entities) {
    if (seen.has(e.entity_name)) continue;
    seen.add(e.entity_name);
    out.push({ group: "nodes", classes: "removed",
               data: { id: e.entity_name, label: e.entity_name, kind: "removed", record: e } });
  }
  for (const r of removed.relationships) {
    const id = "r:" + pairKey(r.src_id, r.tgt_id);
    if (edgeIds.has(id) || !seen.has(r.src_id) || !seen.has(r.tgt_id)) continue;
    edgeIds.add(id);
    out.push({ group: "edges", classes: "removed",
               data: { id, source: r.src_id, target: r.tgt_id, weight: Number(r.weight) || 1,
                       kind: "removed", record: r } });
  }
  return out;
}

const STYLE = [
  { selector: "node", style: {
    label: "data(label)", "font-size": LABEL.base, "text-valign": "bottom", "text-margin-y": 3,
    "text-wrap": "ellipsis", "text-max-width": "160px", color: "#1d2330",
    "text-background-color": "#ffffff", "text-background-opacity": 0.8,
    "text-background-padding": "1px", "text-background-shape": "roundrectangle",
    width: "mapData(degree, 0, 12, 14, 34)", height: "mapData(degree, 0, 12, 14, 34)",
    "background-color": "#2457c5" } },
  { selector: "node.endpoint", style: { "background-color": "#98a2b3" } },
  { selector: "node.removed", style: { "background-color": "#fff", "border-width": 2,
    "border-style": "dashed", "border-color": "#d92d20", color: "#667085" } },
  { selector: "node.quiet", style: { "text-opacity": 0, "text-background-opacity": 0 } },
  { selector: "edge", style: { width: "mapData(weight, 0, 10, 1, 7)", "line-color": "#7a8aa8",
    "curve-style": "bezier", opacity: 0.8 } },
  { selector: "edge.removed", style: { "line-style": "dashed", "line-color": "#f04438",
    opacity: 0.5 } },
  { selector: "node:selected", style: { "border-width": 3, "border-color": "#f79009" } },
  { selector: "edge:selected", style: { "line-color": "#f79009", opacity: 1 } },
];

// Rendered label size (px) at zoom z: grows with the zoom, never above LABEL.max.
function labelPx(z) { return Math.min(LABEL.max, LABEL.base * Math.sqrt(z)); }

function updateLabels() {
  const cy = window.hexrag.cy;
  if (!cy) return;
  const z = cy.zoom();
  const px = labelPx(z);
  const small = px < LABEL.min;
  cy.batch(() => {
    cy.nodes().forEach((n) => {
      const keep = n.hasClass("hub") || n.hasClass("lit") || n.selected();
      n.style("font-size", (small ? LABEL.min : px) / z);
      n.toggleClass("quiet", small && !keep);
    });
  });
  $("label-hint").hidden = !small || cy.nodes().length <= LABEL.hubs;
}

let labelFrame = 0;
function scheduleLabels() {
  if (labelFrame) return;
  labelFrame = requestAnimationFrame(() => { labelFrame = 0; updateLabels(); });
}

function zoomBy(factor, at) {
  const cy = window.hexrag.cy;
  if (!cy) return;
  const level = Math.min(ZOOM.max, Math.max(ZOOM.min, cy.zoom() * factor));
  const box = $("graph");
  const pos = at || { x: box.clientWidth / 2, y: box.clientHeight / 2 };
  cy.zoom({ level, renderedPosition: pos });
  updateLabels();
}

function fitView() {
  const cy = window.hexrag.cy;
  if (!cy) return;
  cy.fit(undefined, 30);
  updateLabels();
}

// Cytoscape's own wheel zoom needs dozens of notches for a mouse: the page handles the wheel
// over the graph itself (caught on the way down, before cytoscape sees it).
function onWheel(e) {
  if (!window.hexrag.cy || !$("graph").contains(e.target)) return;
  e.preventDefault();
  e.stopPropagation();
  let dy = e.deltaY * (e.deltaMode === 1 ? 40 : e.deltaMode === 2 ? 800 : 1);
  if (e.ctrlKey) dy *= 4;  // a trackpad pinch sends small deltas with ctrlKey
  dy = Math.max(-WHEEL.maxDelta, Math.min(WHEEL.maxDelta, dy));
  const rect = $("graph").getBoundingClientRect();
  zoomBy(Math.pow(WHEEL.factor, -dy / WHEEL.notch),
         { x: e.clientX - rect.left, y: e.clientY - rect.top });
}

function light(node) {
  const cy = window.hexrag.cy;
  cy.nodes(".lit").removeClass("lit");
  if (node) node.closedNeighborhood("node").addClass("lit");
  updateLabels();
}

function updateLegend(cy) {
  const counts = {
    in: cy.nodes(".in").length, endpoint: cy.nodes(".endpoint").length,
    edges: cy.edges(".in").length, removed: cy.nodes(".removed").length,
    "removed-edges": cy.edges(".removed").length,
  };
  for (const [key, n] of Object.entries(counts)) {
    document.querySelector(`#legend [data-count="${key}"]`).textContent = String(n);
  }
  document.querySelector("#legend .removed-item").classList.toggle(
    "none", !counts.removed && !counts["removed-edges"]);
}

function draw(data, removed) {
  if (window.hexrag.cy) window.hexrag.cy.destroy();
  const items = elements(data, removed);
  const degree = new Map();
  for (const x of items) {
    if (x.group !== "edges") continue;
    for (const end of [x.data.source, x.data.target]) degree.set(end, (degree.get(end) || 0) + 1);
  }
  for (const x of items) if (x.group === "nodes") x.data.degree = degree.get(x.data.id) || 0;
  const cy = cytoscape({
    container: $("graph"),
    elements: items,
    style: STYLE,
    minZoom: ZOOM.min,
    maxZoom: ZOOM.max,
  });
  // the best-connected nodes keep their label when the others are hidden
  cy.nodes().sort((a, b) => b.degree(false) - a.degree(false) || (a.id() < b.id() ? -1 : 1))
    .slice(0, LABEL.hubs).addClass("hub");
  cy.layout({ name: "cose", animate: false, randomize: false, nodeRepulsion: 9000,
              fit: true, padding: 30 }).run();
  cy.on("tap", "node, edge", (evt) => {
    showDetail(evt.target.data());
    light(evt.target.isNode() ? evt.target : null);
  });
  cy.on("tap", (evt) => { if (evt.target === cy) light(null); });
  cy.on("mouseover", "node", (evt) => { evt.target.addClass("lit"); updateLabels(); });
  cy.on("mouseout", "node", (evt) => {
    if (!evt.target.selected()) evt.target.removeClass("lit");
    updateLabels();
  });
  cy.on("zoom", scheduleLabels);
  window.hexrag.cy = cy;
  updateLegend(cy);
  updateLabels();
}

// ---- the selection panel -------------------------------------------------------------------

function chunksOf(record) {
  const ids = new Set(String(record && record.source_id || "").split(SEP).filter(Boolean));
  const all = (state.data && state.data.chunks) || [];
  return all.filter((c) => ids.has(c.chunk_id));
}

function preview(text) {
  const flat = String(text || "").replace(/\s+/g, " ").trim();
  return flat.length > PREVIEW ? flat.slice(0, PREVIEW) + "…" : flat;
}

function chunkBox(c, n) {
  const box = el("details", null, "chunk");
  box.dataset.chunkId = c.chunk_id;
  const summary = el("summary");
  summary.appendChild(el("span", `#${n}`, "cid"));
  summary.appendChild(el("span", preview(c.content), "preview"));
  summary.title = c.chunk_id;
  box.appendChild(summary);
  box.appendChild(el("div", c.content, "text"));
  const sources = decodeFilePath(c.file_path);
  if (sources.length) {
    const meta = el("p", null, "meta");
    sources.forEach((s) => meta.appendChild(sourceLine(s)));
    box.appendChild(meta);
  }
  return box;
}

function showDetail(d) {
  const box = $("detail");
  box.replaceChildren();
  box.scrollTop = 0;
  state.selected = d.id;
  const r = d.record || {};
  if (d.kind === "relation" || (d.kind === "removed" && d.source)) {
    box.appendChild(el("h3", `${d.source} — ${d.target}`));
    box.appendChild(el("p", `weight ${r.weight}; keywords: ${r.keywords || ""}`, "meta"));
  } else {
    box.appendChild(el("h3", d.label));
    if (r.entity_type) box.appendChild(el("p", `type ${r.entity_type}`, "meta"));
  }
  if (d.kind === "removed") box.appendChild(el("p", "removed by the scope", "meta"));
  if (d.kind === "endpoint") {
    box.appendChild(el("p", "only an endpoint of a retrieved relation", "meta"));
    return;
  }
  const parts = String(r.description || "").split(SEP).filter((p) => p.trim());
  if (parts.length > 1) {
    const list = el("ul", null, "desc");
    for (const p of parts) list.appendChild(el("li", p));
    box.appendChild(list);
  } else {
    box.appendChild(el("p", parts[0] || "", "desc-one"));
  }
  const sources = decodeFilePath(r.file_path);
  if (sources.length) {
    const meta = el("p", null, "meta sources");
    meta.appendChild(document.createTextNode(sources.length > 1 ? "sources: " : "source: "));
    sources.forEach((s, i) => {
      if (i) meta.appendChild(document.createTextNode("; "));
      meta.appendChild(sourceLine(s));
    });
    box.appendChild(meta);
  }
  const chunks = chunksOf(r);
  const head = el("h4", chunks.length ? `chunks in the context (${chunks.length})`
                                      : "no chunk of it is in the context");
  if (chunks.length > 1) {
    const toggle = el("button", "expand all", "link");
    toggle.type = "button";
    toggle.addEventListener("click", () => {
      const open = toggle.textContent === "expand all";
      box.querySelectorAll("details.chunk").forEach((x) => { x.open = open; });
      toggle.textContent = open ? "collapse all" : "expand all";
    });
    head.appendChild(toggle);
  }
  box.appendChild(head);
  chunks.forEach((c, i) => box.appendChild(chunkBox(c, i + 1)));
}

function showInfo(data) {
  const box = $("info");
  box.replaceChildren();
  const meta = (data && data.metadata) || {};
  const rows = [["keywords", meta.keywords], ["mode", meta.mode],
                ...Object.entries(meta.processing_info || {}),
                ["timings (ms, in the browser)", state.timings]];
  const table = el("table");
  for (const [k, v] of rows) {
    if (v === undefined) continue;
    const tr = el("tr");
    tr.appendChild(el("td", k));
    const td = el("td");
    td.appendChild(el("code", typeof v === "object" ? JSON.stringify(v, null, 1) : v));
    tr.appendChild(td);
    table.appendChild(tr);
  }
  box.appendChild(table);
}

// ---- the answer: LightRAG's answers are Markdown; a small safe subset is drawn (headings,
// lists, paragraphs, **bold**, `code`), every piece of text inserted as text --------------------

function inline(parent, text) {
  const parts = String(text).split(/(\*\*[^*]+\*\*|`[^`]+`)/);
  for (const part of parts) {
    if (!part) continue;
    if (part.startsWith("**") && part.endsWith("**") && part.length > 4) {
      parent.appendChild(el("strong", part.slice(2, -2)));
    } else if (part.startsWith("`") && part.endsWith("`") && part.length > 2) {
      parent.appendChild(el("code", part.slice(1, -1)));
    } else {
      parent.appendChild(document.createTextNode(part));
    }
  }
  return parent;
}

function renderAnswer(text) {
  const box = $("answer");
  box.replaceChildren();
  let list = null;
  let para = null;
  for (const raw of String(text).split("\n")) {
    const line = raw.trimEnd();
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    const item = /^\s*(?:[-*+]|\d+[.)])\s+(.*)$/.exec(line);
    if (heading) {
      list = para = null;
      box.appendChild(inline(el("h" + Math.min(6, heading[1].length + 2)), heading[2]));
    } else if (item) {
      para = null;
      if (!list) list = box.appendChild(el("ul"));
      list.appendChild(inline(el("li"), item[1]));
    } else if (!line.trim()) {
      list = para = null;
    } else {
      list = null;
      if (para) para.appendChild(document.createTextNode("\n"));
      else para = box.appendChild(el("p"));
      inline(para, line);
    }
  }
}

// ---- the query -----------------------------------------------------------------------------

async function stream(body) {
  const answer = $("answer");
  answer.textContent = "";
  renderReferences([]);
  state.answer = "";
  state.streamDone = false;
  const t0 = performance.now();
  const r = await fetch("/query/stream", { method: "POST", headers: headers(),
                                           body: JSON.stringify(body) });
  if (!r.ok) throw new Error(`/query/stream: ${r.status} ${(await r.text()).slice(0, 300)}`);
  const reader = r.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (value) buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, cut).trim();
      buffer = buffer.slice(cut + 1);
      if (!line) continue;
      const msg = JSON.parse(line);
      if (msg.references) renderReferences(msg.references);
      if (msg.response) { state.answer += msg.response; renderAnswer(state.answer); }
      if (msg.error) throw new Error(msg.error);
      if (msg.status === "done") state.streamDone = true;
    }
    if (done) break;
  }
  state.timings["/query/stream"] = Math.round(performance.now() - t0);
}

async function run() {
  if ($("run").disabled) return;  // one query at a time
  const query = $("query").value.trim();
  if (!query) { setStatus("type a question first", true); $("query").focus(); return; }
  const body = { query, mode: $("mode").value, include_references: true };
  const topK = parseInt($("top-k").value, 10);
  if (topK > 0) body.top_k = topK;
  const s = scope();
  if (s) body.scope = s;
  $("run").disabled = true;
  state.timings = {};
  state.streamDone = false;
  try {
    setStatus("retrieving...");
    state.data = await postJSON("/query/data", body);
    state.removed = { entities: [], relationships: [] };
    if (s) {
      const { scope: _, ...unscoped } = body;
      const all = await postJSON("/query/data", unscoped);
      const kept = new Set((state.data.data.entities || []).map((e) => e.entity_name));
      const keptEdges = new Set((state.data.data.relationships || [])
        .map((r) => pairKey(r.src_id, r.tgt_id)));
      state.removed.entities = (all.data.entities || []).filter((e) => !kept.has(e.entity_name));
      state.removed.relationships = (all.data.relationships || [])
        .filter((r) => !keptEdges.has(pairKey(r.src_id, r.tgt_id)));
    }
    state.data.chunks = state.data.data.chunks || [];
    draw(state.data.data, state.removed);
    showInfo(state.data);
    setStatus("answering...");
    await stream({ ...body, stream: true });
    showInfo(state.data);
    setStatus(`done: ${(state.data.data.entities || []).length} entities, ` +
              `${(state.data.data.relationships || []).length} relations, ` +
              `${state.data.chunks.length} chunks`);
  } catch (e) {
    setStatus(e.message, true);
  } finally {
    $("run").disabled = false;
  }
}

Object.assign(window.hexrag, { showDetail, decodeFilePath, labelPx, fitView, zoomBy,
                               renderAnswer });
$("api-key").value = localStorage.getItem("hexrag-api-key") || "";
$("api-key").addEventListener("change", () => {
  localStorage.setItem("hexrag-api-key", $("api-key").value.trim());
  loadWorkspaces().then(loadScopeValues);
});
$("workspace").addEventListener("change", loadScopeValues);
$("ask").addEventListener("submit", (e) => { e.preventDefault(); run(); });
// Enter submits from the question and the pickers; Shift+Enter is a new line in the question
$("ask").addEventListener("keydown", (e) => {
  if (e.key !== "Enter" || e.shiftKey || e.isComposing) return;
  if (!["TEXTAREA", "SELECT", "INPUT"].includes(e.target.tagName)) return;
  e.preventDefault();
  $("ask").requestSubmit();
});
$("zoom-in").addEventListener("click", () => zoomBy(ZOOM.step));
$("zoom-out").addEventListener("click", () => zoomBy(1 / ZOOM.step));
$("fit").addEventListener("click", fitView);
$("graph-box").addEventListener("wheel", onWheel, { capture: true, passive: false });
// the graph takes the height its row gets: tell cytoscape when that changes
new ResizeObserver(() => { if (window.hexrag.cy) window.hexrag.cy.resize(); }).observe($("graph"));
loadWorkspaces().then(loadScopeValues);
