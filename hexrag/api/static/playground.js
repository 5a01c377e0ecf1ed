// hexrag playground: ask a question, stream the answer, draw what was retrieved.
// Everything shown comes from the server's own endpoints (/query/data, /query/stream,
// /scope/values, /workspaces); stored text is always inserted as text, never as HTML.
"use strict";

const SEP = "<SEP>";
const $ = (id) => document.getElementById(id);
const state = { data: null, unscoped: null, removed: { entities: [], relationships: [] },
                streamDone: false, answer: "", timings: {} };
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

function draw(data, removed) {
  if (window.hexrag.cy) window.hexrag.cy.destroy();
  const cy = cytoscape({
    container: $("graph"),
    elements: elements(data, removed),
    style: [
      { selector: "node", style: { label: "data(label)", "font-size": 10, "text-valign": "bottom",
        "text-margin-y": 3, width: 16, height: 16, "background-color": "#2457c5" } },
      { selector: "node.endpoint", style: { "background-color": "#98a2b3" } },
      { selector: "node.removed", style: { "background-color": "#fff", "border-width": 2,
        "border-style": "dashed", "border-color": "#d92d20", color: "#98a2b3" } },
      { selector: "edge", style: { width: "mapData(weight, 0, 10, 1, 7)", "line-color": "#7a8aa8",
        "curve-style": "bezier", opacity: 0.8 } },
      { selector: "edge.removed", style: { "line-style": "dashed", "line-color": "#f04438",
        opacity: 0.5 } },
      { selector: ":selected", style: { "overlay-color": "#2457c5", "overlay-opacity": 0.2 } },
    ],
    layout: { name: "cose", animate: false, randomize: false, nodeRepulsion: 9000 },
    wheelSensitivity: 0.2,
  });
  cy.on("tap", "node, edge", (evt) => showDetail(evt.target.data()));
  window.hexrag.cy = cy;
}

function chunksOf(record) {
  const ids = new Set(String(record && record.source_id || "").split(SEP).filter(Boolean));
  const all = (state.data && state.data.chunks) || [];
  return all.filter((c) => ids.has(c.chunk_id));
}

function showDetail(d) {
  const box = $("detail");
  box.replaceChildren();
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
  box.appendChild(el("p", String(r.description || "").split(SEP).join("\n")));
  if (r.file_path) box.appendChild(el("p", String(r.file_path).split(SEP).join(", "), "meta"));
  const chunks = chunksOf(r);
  const head = el("h4", chunks.length ? `chunks in the context (${chunks.length})`
                                      : "no chunk of it is in the context");
  box.appendChild(head);
  for (const c of chunks) {
    const div = el("div", c.content, "chunk");
    div.dataset.chunkId = c.chunk_id;
    box.appendChild(div);
  }
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

async function stream(body) {
  const answer = $("answer");
  answer.textContent = "";
  $("references").replaceChildren();
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
      if (msg.references) {
        for (const ref of msg.references) {
          $("references").appendChild(el("li", `[${ref.reference_id}] ${ref.file_path}`));
        }
      }
      if (msg.response) { state.answer += msg.response; answer.textContent = state.answer; }
      if (msg.error) throw new Error(msg.error);
      if (msg.status === "done") state.streamDone = true;
    }
    if (done) break;
  }
  state.timings["/query/stream"] = Math.round(performance.now() - t0);
}

async function run() {
  const query = $("query").value.trim();
  if (!query) { setStatus("type a question first", true); return; }
  const body = { query, mode: $("mode").value, include_references: true };
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
      const all = await postJSON("/query/data", { query, mode: body.mode });
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

window.hexrag.showDetail = showDetail;
$("api-key").value = localStorage.getItem("hexrag-api-key") || "";
$("api-key").addEventListener("change", () => {
  localStorage.setItem("hexrag-api-key", $("api-key").value.trim());
  loadWorkspaces().then(loadScopeValues);
});
$("workspace").addEventListener("change", loadScopeValues);
$("run").addEventListener("click", run);
$("query").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) run();
});
loadWorkspaces().then(loadScopeValues);
