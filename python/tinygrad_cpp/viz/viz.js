// The VIZ viewer: reads /trace.json (src/uop/viz_trace.h writes it), lists its contexts (schedules, kernels) and
// their passes, draws the graph after a pass with a layered layout computed here (nothing is fetched from the
// network), and shows the rules that fired, the kernel's texts and the timeline of runs.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const BOX_W = 150, BOX_H = 34, GAP_X = 20, GAP_Y = 46;
const MAX_LABELED = 3000;  // past this many nodes, boxes only: text is what makes big SVGs slow
let trace = null, current = { context: -1, step: -1 };
const view = { x: 0, y: 0, scale: 1 };

function el(tag, attrs, text) {
  const e = tag.startsWith("svg:") ? document.createElementNS(SVG, tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

// ---- graphs ----

// Node ids reachable from `root` through their sources, in a topological order (every node after its sources).
// The format does not promise that sources have smaller ids, so this is an iterative post-order DFS (no
// recursion: graphs can be deep) rather than a sort by id. A node may sit on the stack more than once; only its
// first expansion counts.
function reachable(root) {
  const n = trace.nodes.length;
  if (!(root >= 0 && root < n)) return [];
  const state = new Uint8Array(n), stack = [root], out = [];  // state: 0 unseen, 1 expanded, 2 emitted
  while (stack.length) {
    const u = stack[stack.length - 1];
    if (state[u] === 0) {
      state[u] = 1;
      for (const s of trace.nodes[u][3]) if (s >= 0 && s < n && state[s] === 0) stack.push(s);
    } else {
      stack.pop();
      if (state[u] === 1) { state[u] = 2; out.push(u); }
    }
  }
  return out;
}

// Largest value of f over a list, without spreading it into arguments (that overflows past ~100k entries).
function maxOf(list, f) { let m = -Infinity; for (const v of list) m = Math.max(m, f(v)); return m; }

// Layers by longest path from the leaves (leaves on top, the root at the bottom), then each layer ordered by the
// mean position of its nodes' sources (down) and users (up): a few sweeps untangle most edges in linear time.
function layout(ids) {
  const layer = new Map(), users = new Map();
  for (const u of ids) {
    let l = 0;
    for (const s of trace.nodes[u][3]) {
      if (!layer.has(s)) continue;  // (a source id outside the trace: drawn without it)
      l = Math.max(l, layer.get(s) + 1);
      if (!users.has(s)) users.set(s, []);
      users.get(s).push(u);
    }
    layer.set(u, l);
  }
  const layers = [];
  for (const u of ids) (layers[layer.get(u)] ||= []).push(u);
  const pos = new Map();
  const number = () => layers.forEach(row => row.forEach((u, i) => pos.set(u, i)));
  number();
  const mean = (list) => list && list.length ? list.reduce((a, v) => a + pos.get(v), 0) / list.length : -1;
  for (let sweep = 0; sweep < 2; sweep++) {
    for (let l = 1; l < layers.length; l++) reorder(layers[l], u => mean(trace.nodes[u][3]));
    number();
    for (let l = layers.length - 2; l >= 0; l--) reorder(layers[l], u => mean(users.get(u)));
    number();
  }
  const width = maxOf(layers, r => r.length);
  const xy = new Map();
  layers.forEach((row, l) => {
    const offset = (width - row.length) / 2;
    row.forEach((u, i) => xy.set(u, [(i + offset) * (BOX_W + GAP_X), l * (BOX_H + GAP_Y)]));
  });
  return { xy, width: width * (BOX_W + GAP_X), height: layers.length * (BOX_H + GAP_Y) };
}

// Sorts a layer by key (a barycenter), a node without one (-1) keeping its current index as its key. Keys are
// computed once per node, so a sweep costs O(edges) plus the sorts.
function reorder(row, key) {
  const keys = new Map(row.map((u, i) => { const k = key(u); return [u, k >= 0 ? k : i]; }));
  row.sort((a, b) => keys.get(a) - keys.get(b));
}

function short(s, n) { return s.length > n ? s.slice(0, n - 1) + "\u2026" : s; }

function drawGraph(root, before) {
  const t0 = performance.now();
  const g = document.getElementById("viewport");
  g.replaceChildren();
  const ids = reachable(root), old = new Set(before >= 0 ? reachable(before) : ids);
  const { xy, width, height } = layout(ids);
  const labeled = ids.length <= MAX_LABELED;
  const edges = el("svg:g"), nodes = el("svg:g");
  for (const u of ids) {
    const [x, y] = xy.get(u);
    for (const s of trace.nodes[u][3]) {
      if (!xy.has(s)) continue;
      const [sx, sy] = xy.get(s);
      const d = `M${sx + BOX_W / 2},${sy + BOX_H} C${sx + BOX_W / 2},${sy + BOX_H + GAP_Y / 2} ` +
                `${x + BOX_W / 2},${y - GAP_Y / 2} ${x + BOX_W / 2},${y}`;
      edges.appendChild(el("svg:path", { class: "edge", d }));
    }
    const [op, dtype, arg] = trace.nodes[u];
    const node = el("svg:g", { class: old.has(u) ? "node" : "node changed", "data-id": u,
                               transform: `translate(${x},${y})` });
    node.appendChild(el("svg:rect", { width: BOX_W, height: BOX_H }));
    if (labeled) {
      node.appendChild(el("svg:text", { x: 5, y: 13 }, short(`${op} ${dtype}`, 26)));
      if (arg) node.appendChild(el("svg:text", { x: 5, y: 27 }, short(arg, 26)));
    }
    node.addEventListener("click", (ev) => { ev.stopPropagation(); showNode(u, node); });
    nodes.appendChild(node);
  }
  g.append(edges, nodes);
  const changed = ids.filter(u => !old.has(u)).length;
  document.getElementById("graph-note").textContent =
    `${ids.length} nodes` + (before >= 0 ? `, ${changed} made by this pass` : "") + (labeled ? "" : " (labels off)") +
    `, drawn in ${Math.round(performance.now() - t0)} ms`;
  fit(width, height);
}

function showNode(u, node) {
  document.querySelectorAll(".node.selected").forEach(n => n.classList.remove("selected"));
  node.classList.add("selected");
  const [op, dtype, arg, src] = trace.nodes[u];
  document.getElementById("node-info").textContent =
    `node ${u}\nop     ${op}\ndtype  ${dtype}\narg    ${arg}\nsrc    [${src.join(", ")}]`;
}

// ---- pan and zoom: one transform on the viewport group ----

function applyView() {
  document.getElementById("viewport").setAttribute("transform",
    `translate(${view.x},${view.y}) scale(${view.scale})`);
}

function fit(width, height) {
  const box = document.getElementById("graph").getBoundingClientRect();
  const w = Math.max(box.width, 100), h = Math.max(box.height, 100);
  view.scale = Math.min(1.2, w / (width + 40), h / (height + 40));
  view.x = (w - width * view.scale) / 2;
  view.y = 20 * view.scale;
  applyView();
}

function setupPanZoom() {
  const svg = document.getElementById("graph");
  let drag = null;
  svg.addEventListener("mousedown", (e) => { drag = [e.clientX - view.x, e.clientY - view.y]; });
  window.addEventListener("mouseup", () => { drag = null; });
  window.addEventListener("mousemove", (e) => {
    if (!drag) return;
    view.x = e.clientX - drag[0];
    view.y = e.clientY - drag[1];
    applyView();
  });
  svg.addEventListener("wheel", (e) => {  // zoom about the pointer
    e.preventDefault();
    const r = svg.getBoundingClientRect(), px = e.clientX - r.left, py = e.clientY - r.top;
    const k = Math.exp(-e.deltaY * 0.0015);
    view.x = px - (px - view.x) * k;
    view.y = py - (py - view.y) * k;
    view.scale *= k;
    applyView();
  }, { passive: false });
}

// ---- lists and panes ----

function selectContext(c) {
  current = { context: c, step: -1 };
  document.querySelectorAll("#contexts li").forEach((li, i) => li.classList.toggle("selected", i === c));
  const ctx = trace.contexts[c], steps = document.getElementById("steps");
  steps.replaceChildren();
  for (const i of preOrder(ctx.steps)) {
    const s = ctx.steps[i];
    const li = el("li", { style: `padding-left:${4 + 12 * s.depth}px`, "data-step": i });
    li.append(s.pass + " ");
    li.appendChild(el("span", { class: "count" },
      (s.rewrites >= 0 ? `${s.rewrites} rewrites, ` : "") + `${s.us.toFixed(1)} us`));
    li.addEventListener("click", () => selectStep(i));
    steps.appendChild(li);
  }
  for (const key of ["realized", "source", "program", "opts"]) document.getElementById(key).textContent = ctx.text[key] || "";
  if (ctx.steps.length) selectStep(pickStep(ctx));
}

// Step indices in the order to list them: a step is recorded when it ends, so the passes nested in one (depth + 1)
// come just before it; listed after it instead, as in a call tree.
function preOrder(steps) {
  const stack = [];  // subtrees so far: {depth, items: step indices, the subtree's root first}
  steps.forEach((s, i) => {
    let items = [];
    while (stack.length && stack[stack.length - 1].depth > s.depth) items = stack.pop().items.concat(items);
    stack.push({ depth: s.depth, items: [i, ...items] });
  });
  return stack.flatMap(t => t.items);
}

// The step to show first: the first one that changed the graph, else the first.
function pickStep(ctx) {
  const i = ctx.steps.findIndex(s => s.in !== s.out);
  return i >= 0 ? i : 0;
}

function selectStep(i) {
  current.step = i;
  document.querySelectorAll("#steps li").forEach(li => li.classList.toggle("selected", Number(li.dataset.step) === i));
  const s = trace.contexts[current.context].steps[i];
  const rules = document.getElementById("rules");
  rules.replaceChildren();
  if (!s.rules.length) rules.appendChild(el("div", {}, s.rewrites < 0 ? "(not a rewrite)" : "(none)"));
  for (const r of s.rules) rules.appendChild(el("div", {}, `${r.count}x  ${r.loc}`));
  listMatches(s);
  drawStep();
}

// Each rewrite of the pass: clicking one draws the node it made with the nodes of the one it replaced plain, so
// the rewrites can be stepped through one by one.
function listMatches(s) {
  const list = document.getElementById("matches");
  list.replaceChildren();
  (s.matches || []).forEach(([rule, from, to], i) => {
    const [op] = trace.nodes[from], [op2] = trace.nodes[to];
    const li = el("li", { title: s.rules[rule].loc }, `${i + 1}. ${op} -> ${op2}  (${s.rules[rule].loc.split(" ")[0]})`);
    li.addEventListener("click", () => {
      list.querySelectorAll("li").forEach(x => x.classList.toggle("selected", x === li));
      drawGraph(to, from);
      document.getElementById("graph-note").textContent += `; rewrite ${i + 1}: node ${from} -> ${to}`;
    });
    list.appendChild(li);
  });
  if (s.matches && s.rewrites > s.matches.length)  // (a trace without the list: say nothing)
    list.appendChild(el("li", {}, `(the first ${(s.matches || []).length} of ${s.rewrites})`));
}

function drawStep() {
  const s = trace.contexts[current.context].steps[current.step];
  if (document.getElementById("show-input").checked) drawGraph(s.in, -1);
  else drawGraph(s.out, s.in === s.out ? -1 : s.in);
}

function drawTimeline() {
  const box = document.getElementById("timeline");
  box.replaceChildren();
  if (!trace.runs.length) return box.append("(no runs recorded)");
  const t0 = -maxOf(trace.runs, r => -r.start_us), t1 = maxOf(trace.runs, r => r.start_us + r.us);
  const width = Math.max(box.clientWidth - 90, 200), span = Math.max(t1 - t0, 1);
  const lanes = new Map();
  for (const r of trace.runs) {
    if (!lanes.has(r.device)) {
      const lane = el("div", { class: "lane" });
      lane.appendChild(el("span", { class: "lane-name" }, r.device));
      lanes.set(r.device, lane);
      box.appendChild(lane);
    }
    const bar = el("div", { class: "bar", title: `${r.name} ${r.us.toFixed(1)} us, ${r.bytes} bytes`,
      style: `left:${85 + (r.start_us - t0) / span * width}px;width:${r.us / span * width}px` });
    if (r.context >= 0) bar.addEventListener("click", () => selectContext(r.context));
    lanes.get(r.device).appendChild(bar);
  }
}

async function main() {
  trace = await (await fetch("trace.json")).json();
  document.getElementById("title").textContent =
    `${trace.program}: ${trace.contexts.length} contexts, ${trace.nodes.length} nodes, ${trace.runs.length} runs`;
  const list = document.getElementById("contexts");
  trace.contexts.forEach((c, i) => {
    const li = el("li", {}, `${c.kind} ${c.name}`);
    if (c.device) li.appendChild(el("span", { class: "count" }, ` ${c.device}`));
    li.addEventListener("click", () => selectContext(i));
    list.appendChild(li);
  });
  document.getElementById("show-input").addEventListener("change", () => current.step >= 0 && drawStep());
  setupPanZoom();
  drawTimeline();
  const kernel = trace.contexts.findIndex(c => c.kind === "kernel");
  if (trace.contexts.length) selectContext(kernel >= 0 ? kernel : 0);
}

main();
