// The Toeplitz matrix and kernel figure (Basics): T[i, j] = t_{i-j} as a picture beside the
// kernel t_k against the lag k, and one cell (i, j) followed to its diagonal and its lag.
//
// Data contract. The server sends `data` once per kernel (pages/basics.py):
//   name      the kernel's preset key ("exponential", "tno", "custom", ...)
//   kernel    {formula: NAME}  a synthetic preset (tnn_core.analysis.presets.synthetic_kernel,
//                              whose formulas presetKernel repeats): the browser evaluates t_k
//                              for every n, λ and causal itself;
//           | {coefficients: [2n-1] t_{-(n-1)} .. t_{n-1} as base64 float64 (decodeArray),
//              n, decay, causal, channel}
//                              a kernel only the server computes (an operator's, or typed),
//                              as computed at those settings; a setting given as null is one
//                              the kernel does not depend on (typed coefficients set their own
//                              n; for them causal is applied here, by zeroing lags k < 0);
//           | null             no kernel (typed text the server refused: the page says why).
//   causal    the settled causal switch (bool)
//   cell      the settled followed cell [i, j] (drawn clamped to n - 1)
//   cells     rows and columns drawn at most: every stride-th beyond (shownIndices)
//   inactive  controls the kernel ignores, disabled (decay for fd; n and decay when typed;
//             channel unless an operator's kernel)
//   hidden    controls not shown at all (optional: a learned kernel's λ where its model has
//             no one λ); the channel is hidden when inactive
//   locked    controls a lesson fixed, disabled
//   coefficients, typed_help  the typed text and its help (typed kernels only; else null)
//   controls  the sliders n, decay, channel (pages/figures.Control specs)
// Per frame (each `input`, a click, the switch) the browser computes the kernel (formula
// presets), the causal zeroing, the shown rows and columns, T's entries there, the picture,
// the kernel line, and the followed cell's lag and diagonal. A setting of a server-computed
// kernel it cannot draw marks the pictures stale (data-stale) until the server's arrives.
// On release it sets the state values n, decay, channel (sliders), causal (bool), cell
// ([i, j]) and coefficients (the typed text, which the server parses). After each draw:
// data-drawn = name=..&n=..&decay=..&causal=..&cell_i=..&cell_j=.. (and &channel=.. for an
// operator's kernel).

const MATRIX_SIDE = 360;  // CSS pixels of T's canvas, axes included, before it is sized

// T's canvas side (its axes included; the kernel plot's height too), in CSS pixels: grows
// with the figure's width and the window's height (a 1920 × 1080 screen gets a larger T),
// 280 at least, 640 at most.
function matrixSide(root) {
  const wide = Math.floor(0.42 * ((root.clientWidth || 2 * MATRIX_SIDE) - 16));
  return Math.max(280, Math.min(640, wide, Math.floor(0.5 * (window.innerHeight || 720))));
}
const SPIKES = [[0, 1.5], [1, -0.8], [-1, 0.6], [2, 0.4], [-2, -0.3]];  // spike_smooth's taps

// t_k of a synthetic preset, [2n-1] in the lag layout t[n-1+k] (presets.synthetic_kernel).
function presetKernel(name, n, decay, causal) {
  if (!(Number.isInteger(n) && n >= 1)) throw new Error(`n must be a whole number >= 1; got ${n}`);
  if (!(decay > 0 && decay <= 1)) throw new Error(`decay must be in (0, 1]; got ${decay}`);
  const t = new Float64Array(2 * n - 1);
  for (let k = -(n - 1); k < n; k++) {
    const envelope = Math.pow(decay, Math.abs(k));
    let value;
    if (name === 'exponential') value = envelope;
    else if (name === 'spike_smooth') value = 0.5 * envelope * (1 + Math.cos(Math.PI * k / Math.max(n, 2)));
    else if (name === 'oscillating') value = envelope * Math.cos(2 * Math.PI * k / 8);
    else throw new Error(`no formula for the kernel ${name}`);
    t[n - 1 + k] = value;
  }
  if (name === 'spike_smooth') {
    for (const [lag, value] of SPIKES) if (Math.abs(lag) < n) t[n - 1 + lag] += value;
  }
  return causal ? causalPart(t) : t;
}

// Zero the negative lags (core.toeplitz.causal_part): a new array.
function causalPart(t) {
  const n = (t.length + 1) / 2;
  const out = Float64Array.from(t);
  out.fill(0, 0, n - 1);
  return out;
}

// The kernel to draw at setting s = {n, decay, causal, channel}, or null when only the
// server can compute it there (the pictures then wait, marked stale).
function kernelAt(kernel, s) {
  if (kernel === null) return null;
  if (kernel.formula) return presetKernel(kernel.formula, s.n, s.decay, s.causal);
  const same = (given, now) => given === null || given === now;
  if (!same(kernel.n, s.n) || !same(kernel.decay, s.decay) || !same(kernel.causal, s.causal)
      || !same(kernel.channel, s.channel)) return null;
  const t = decodeArray(kernel.coefficients, 'float64');
  return kernel.causal === null && s.causal ? causalPart(t) : t;
}

// T[i, j] = t_{i-j} of kernel t [2n-1].
function toeplitzEntry(t, i, j) {
  return t[(t.length - 1) / 2 + i - j];
}

// The followed cell clamped to n - 1: its lag k = i - j and the n - |k| cells of its diagonal.
function followedCell(n, i, j) {
  const ci = Math.min(Math.max(i, 0), n - 1), cj = Math.min(Math.max(j, 0), n - 1);
  const lag = ci - cj;
  return {i: ci, j: cj, lag, count: n - Math.abs(lag)};
}

// Largest |t_k|, or 1 for the zero kernel: the colour scale runs over [-limit, limit].
function colourLimit(t) {
  let limit = 0;
  for (const v of t) limit = Math.max(limit, Math.abs(v));
  return limit || 1;
}

function formatValue(v) {
  return Number.isFinite(v) ? String(Number(v.toPrecision(4))) : String(v);
}

// T at the shown rows and columns idx, with its axes, the followed cell's diagonal dashed and
// the cell ringed. Each drawn cell (a, b) is the entry (idx[a], idx[b]).
function drawPicture(canvas, t, n, idx, cell, limit) {
  const image = document.createElement('canvas');
  drawEntries(image, idx, idx, (i, j) => toeplitzEntry(t, i, j), limit);
  const ctx = canvas.getContext('2d'), style = canvasStyle(canvas);
  ctx.font = style.font;
  const line = Math.ceil(style.size * 1.3);
  const left = line + 8 + Math.ceil(ctx.measureText(String(n - 1)).width), top = 12;
  const bottom = 2 * line + 6;
  const side = Math.min(canvas.width - left - 18, canvas.height - top - bottom);
  const stride = idx.length > 1 ? idx[1] - idx[0] : 1;
  const span = idx.length * stride;  // entries the picture spans (>= n)
  const at = (v) => (v + 0.5) / span * side;  // an entry's centre, from the picture's edge
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(image, left, top, side, side);
  ctx.strokeStyle = style.colour('axis');
  ctx.strokeRect(left - 0.5, top - 0.5, side + 1, side + 1);
  ctx.fillStyle = style.colour('ink');
  const ticks = [...new Set([0, Math.floor((n - 1) / 2), n - 1])];
  ctx.textAlign = 'center'; ctx.textBaseline = 'top';
  for (const v of ticks) ctx.fillText(String(v), left + at(v), top + side + 3);
  ctx.fillText('column j', left + side / 2, top + side + 3 + line);
  ctx.textAlign = 'right'; ctx.textBaseline = 'middle';
  for (const v of ticks) ctx.fillText(String(v), left - 4, top + at(v));
  ctx.save(); ctx.translate(2, top + side / 2); ctx.rotate(-Math.PI / 2);
  ctx.textAlign = 'center'; ctx.textBaseline = 'top'; ctx.fillText('row i', 0, 0); ctx.restore();
  ctx.textAlign = 'left'; ctx.textBaseline = 'alphabetic';
  const first = Math.max(0, cell.lag), last = Math.min(n, n + cell.lag) - 1;  // rows on it
  ctx.strokeStyle = style.colour('ink'); ctx.lineWidth = 1.5; ctx.setLineDash([4, 3]);
  ctx.beginPath();
  ctx.moveTo(left + at(first - cell.lag), top + at(first));
  ctx.lineTo(left + at(last - cell.lag), top + at(last));
  ctx.stroke();
  ctx.setLineDash([]);
  const ring = Math.max(8, side / idx.length);
  ctx.strokeRect(left + at(cell.j) - ring / 2, top + at(cell.i) - ring / 2, ring, ring);
  ctx.lineWidth = 1;
  return {left, top, side, span};
}

// Whole-number ticks from `low` to `high`: the ends and three between, rounded.
function lagTicks(low, high) {
  return [...new Set([0, 1, 2, 3, 4].map((q) => Math.round(low + (high - low) * q / 4)))];
}

// The kernel t_k against k on its own axes (whole-number lags), a zero line, and the
// followed cell's lag dashed with its value ringed; margins measured from the figure's text.
function drawKernel(canvas, t, n, cell) {
  const ctx = canvas.getContext('2d'), style = canvasStyle(canvas);
  ctx.font = style.font;
  let low = 0, high = 0;  // the y-range holds 0
  for (const v of t) { low = Math.min(low, v); high = Math.max(high, v); }
  if (high === low) { high += 1; low -= 1; }
  const pad = 0.05 * (high - low);
  low -= pad; high += pad;
  const line = Math.ceil(style.size * 1.3);
  const widest = Math.max(...roundTicks(low, high).map((v) => ctx.measureText(formatTick(v)).width));
  const W = canvas.width, H = canvas.height, right = 16, top = line + 4, bottom = 2 * line + 6;
  const left = Math.ceil(widest) + 10;
  ctx.clearRect(0, 0, W, H);
  const first = -(n - 1), last = n - 1, width = Math.max(last - first, 1);
  const px = (k) => left + (k - first + (n === 1 ? 0.5 : 0)) / width * (W - left - right);
  const py = (v) => top + (high - v) / (high - low) * (H - top - bottom);
  ctx.strokeStyle = style.colour('axis'); ctx.lineWidth = 1;
  ctx.beginPath(); ctx.moveTo(left, top); ctx.lineTo(left, H - bottom);
  ctx.lineTo(W - right, H - bottom); ctx.stroke();
  ctx.fillStyle = style.colour('ink');
  ctx.textAlign = 'center'; ctx.textBaseline = 'top';
  for (const k of lagTicks(first, last)) {
    ctx.fillText(String(k), px(k), H - bottom + 4);
    ctx.beginPath(); ctx.moveTo(px(k), H - bottom); ctx.lineTo(px(k), H - bottom + 3); ctx.stroke();
  }
  ctx.textBaseline = 'bottom';
  ctx.fillText('lag k = i − j', left + (W - left - right) / 2, H - 2);
  ctx.textAlign = 'right'; ctx.textBaseline = 'middle';
  for (const v of roundTicks(low, high)) ctx.fillText(formatTick(v), left - 5, py(v));
  ctx.textAlign = 'left'; ctx.textBaseline = 'alphabetic';
  ctx.strokeStyle = style.colour('muted');
  ctx.beginPath(); ctx.moveTo(left, py(0)); ctx.lineTo(W - right, py(0)); ctx.stroke();
  ctx.strokeStyle = style.colour('series-1'); ctx.lineWidth = 1.5; ctx.beginPath();
  for (let a = 0; a < t.length; a++) {
    if (a === 0) ctx.moveTo(px(first + a), py(t[a])); else ctx.lineTo(px(first + a), py(t[a]));
  }
  if (n === 1) ctx.arc(px(0), py(t[0]), 2, 0, 2 * Math.PI);
  ctx.stroke();
  const x = px(cell.lag), label = `k = ${cell.lag}`;
  ctx.strokeStyle = style.colour('ink'); ctx.lineWidth = 1; ctx.setLineDash([4, 3]);
  ctx.beginPath(); ctx.moveTo(x, top); ctx.lineTo(x, H - bottom); ctx.stroke();
  ctx.setLineDash([]);
  ctx.beginPath(); ctx.arc(x, py(t[n - 1 + cell.lag]), 4, 0, 2 * Math.PI); ctx.stroke();
  const fits = x + 4 + ctx.measureText(label).width <= W;
  ctx.textAlign = fits ? 'left' : 'right'; ctx.textBaseline = 'bottom';
  ctx.fillText(label, x + (fits ? 4 : -4), top - 2);
  ctx.textAlign = 'left'; ctx.textBaseline = 'alphabetic';
}

const HTML = `
<div class="controls"></div>
<label class="control typed" style="display: none;"><span class="label">Coefficients
  t_{-(n-1)}, …, t_{n-1}</span><input type="text" name="coefficients"></label>
<div class="pictures" style="display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start;">
  <div><div class="caption" style="margin: 0;">T[i, j] = t_{i−j}: click a cell to follow it</div>
    <canvas class="matrix" width="${MATRIX_SIDE}" height="${MATRIX_SIDE}"
            style="cursor: crosshair;"></canvas></div>
  <div><div class="caption" style="margin: 0;">The kernel t_k against the lag k</div>
    <canvas class="kernel" width="560" height="${MATRIX_SIDE}"></canvas></div>
</div>
<div class="follow" style="display: flex; gap: 12px; align-items: flex-end;"></div>
<p class="caption drawn"></p>`;

const FIGURES = new WeakMap();  // root -> its state across reruns

function numberBox(container, label, help, onSettle) {
  const box = document.createElement('label');
  box.className = 'control';
  box.title = help;
  box.innerHTML = '<span class="label"></span><input type="number" min="0" step="1">';
  box.style.minWidth = '8em';
  box.querySelector('.label').textContent = label;
  const input = box.querySelector('input');
  input.addEventListener('change', () => onSettle(Math.trunc(Number(input.value)) || 0));
  container.appendChild(box);
  return input;
}

// Build the figure's controls once; returns its state object.
function build(root, data) {
  // values: what is drawn; server: the server's last value of each; pending: values sent
  // on release that the server has not echoed yet (JSON), oldest first
  const fig = {values: {}, server: {}, pending: {}, inputs: {}, data, layout: null, send: null};
  const controls = root.querySelector('.controls');
  const settle = (name, value) => { fig.values[name] = value; fig.send(name, value); };
  for (const spec of data.controls) {
    const format = spec.name === 'decay' ? (v) => v.toFixed(2) : String;
    fig.inputs[spec.name] = slider(controls, {...spec, format}, (value) => {
      fig.values[spec.name] = value; draw(root, fig);
    }, (value) => settle(spec.name, value));
  }
  const causalBox = document.createElement('label');
  causalBox.className = 'control';
  causalBox.style.minWidth = '6em';
  causalBox.title = 'Causal kernels have t_k = 0 for k < 0: output i sees inputs j ≤ i only, '
    + 'so T is lower triangular.';
  causalBox.innerHTML = '<span class="label">Causal</span><input type="checkbox" name="causal">';
  controls.appendChild(causalBox);
  fig.inputs.causal = causalBox.querySelector('input');
  fig.inputs.causal.addEventListener('change', () => {
    fig.values.causal = fig.inputs.causal.checked; draw(root, fig);
    fig.send('causal', fig.values.causal);
  });
  const pick = (i, j) => {
    fig.values.cell = [i, j]; draw(root, fig); fig.send('cell', [i, j]);
  };
  const follow = root.querySelector('.follow');
  fig.inputs.cell_i = numberBox(follow, 'Cell row i', 'Row of the cell of T to follow; or '
    + 'click a cell of T.', (i) => pick(i, fig.values.cell[1]));
  fig.inputs.cell_j = numberBox(follow, 'Cell column j', 'Column of the cell of T to follow; '
    + 'or click a cell of T.', (j) => pick(fig.values.cell[0], j));
  const typed = root.querySelector('.typed input');
  typed.addEventListener('change', () => fig.send('coefficients', typed.value));
  fig.inputs.coefficients = typed;
  const sentence = document.createElement('p');
  sentence.className = 'caption followed';
  sentence.style.margin = '0 0 0.3rem';
  follow.appendChild(sentence);
  root.querySelector('canvas.matrix').addEventListener('click', (event) => {
    const layout = fig.layout;
    if (layout === null || fig.inputs.cell_i.disabled || fig.inputs.cell_j.disabled) return;
    const box = event.target.getBoundingClientRect();
    const x = event.clientX - box.left - layout.left, y = event.clientY - box.top - layout.top;
    if (x < 0 || y < 0 || x >= layout.side || y >= layout.side) return;
    const cellPixels = layout.side / layout.idx.length;  // a click picks a drawn cell
    pick(layout.idx[Math.floor(y / cellPixels)], layout.idx[Math.floor(x / cellPixels)]);
  });
  return fig;
}

// Take the server's data. A value the server changed itself (a new link, a clamp) replaces
// the browser's; one it repeats, or an echo of a value sent on an earlier release, leaves
// the browser's alone: reruns arrive while the pointer has moved on.
function receive(root, fig, data) {
  fig.data = data;
  const server = {causal: data.causal, cell: data.cell, coefficients: data.coefficients};
  for (const spec of data.controls) server[spec.name] = spec.value;
  for (const [name, value] of Object.entries(server)) {
    const said = JSON.stringify(value);
    if (said === JSON.stringify(fig.server[name])) continue;
    fig.server[name] = value;
    const pending = fig.pending[name] || [];
    const echo = pending.indexOf(said);
    if (echo >= 0) { pending.splice(0, echo + 1); continue; }
    fig.pending[name] = [];
    fig.values[name] = value;
    const input = fig.inputs[name];
    if (name === 'causal') input.checked = value;
    else if (name === 'coefficients') input.value = value === null ? '' : value;
    else if (input) {
      input.value = String(value);
      input.parentElement.querySelector('output').textContent =
        name === 'decay' ? value.toFixed(2) : String(value);
    }
  }
  const off = new Set([...data.inactive, ...data.locked]);
  for (const [name, input] of Object.entries(fig.inputs)) {
    const control = name.startsWith('cell_') ? 'cell' : name;
    input.disabled = off.has(control) || off.has(name);
  }
  // hidden: controls that mean nothing for this kernel (a learned kernel's λ where its
  // model has none); the channel of a kernel that is not one of the operator's channels
  const hidden = new Set(data.hidden || []);
  if (data.inactive.includes('channel')) hidden.add('channel');
  for (const name of ['channel', 'decay'])
    fig.inputs[name].parentElement.style.display = hidden.has(name) ? 'none' : '';
  const typedBox = fig.inputs.coefficients.parentElement;
  typedBox.style.display = data.coefficients === null ? 'none' : '';
  typedBox.title = data.typed_help || '';
  draw(root, fig);
}

function draw(root, fig) {
  const data = fig.data;
  const s = {n: fig.values.n, decay: fig.values.decay, causal: fig.values.causal,
             channel: fig.values.channel};
  const pictures = root.querySelector('.pictures');
  const t = kernelAt(data.kernel, s);
  if (t === null) { markStale(pictures, true); return; }
  markStale(pictures, false);
  const n = (t.length + 1) / 2, idx = shownIndices(n, data.cells);  // typed: the text's n
  const cell = followedCell(n, fig.values.cell[0], fig.values.cell[1]);
  fig.inputs.cell_i.max = String(n - 1); fig.inputs.cell_j.max = String(n - 1);
  fig.inputs.cell_i.value = String(cell.i); fig.inputs.cell_j.value = String(cell.j);
  const limit = colourLimit(t);
  const matrix = root.querySelector('canvas.matrix'), kernel = root.querySelector('canvas.kernel');
  const side = matrixSide(root);
  matrix.width = matrix.height = kernel.height = side;
  fig.layout = {...drawPicture(matrix, t, n, idx, cell, limit), idx};
  // where the picture sits on its canvas (its margins follow the text size), for tests
  matrix.setAttribute('data-frame', `${fig.layout.left} ${fig.layout.top} ${fig.layout.side}`);
  // beside T (2 px spare: a canvas exactly as wide as the row wraps), or below it on a
  // narrow screen
  const rest = root.clientWidth - side - 18;
  kernel.width = rest >= 320 ? rest : Math.max(260, root.clientWidth || 560);
  drawKernel(kernel, t, n, cell);
  const stride = idx.length > 1 ? idx[1] - idx[0] : 1;
  const shown = stride > 1 ? `every ${ordinal(stride)} row and column drawn (${idx.length} of ${n}), `
    + 'each a real entry' : `all ${n} × ${n} entries`;
  root.querySelector('.caption.drawn').textContent = `Left: T, ${n} × ${n}, row 0 on top; `
    + `${shown}. Colour: −${formatValue(limit)} blue … 0 white … +${formatValue(limit)} red. `
    + 'Right: t_k against the lag k; dashed, the followed cell’s lag.';
  root.querySelector('.caption.followed').textContent = `T[${cell.i}, ${cell.j}] = `
    + `t_${cell.lag} = ${formatValue(toeplitzEntry(t, cell.i, cell.j))}, on all ${cell.count} `
    + `cells of the diagonal i − j = ${cell.lag}: a Toeplitz matrix stores ${2 * n - 1} `
    + `numbers for its ${n * n} entries.`;
  const drawn = [['name', data.name], ['n', n], ['decay', s.decay], ['causal', s.causal],
                 ['cell_i', cell.i], ['cell_j', cell.j]];
  if (!data.inactive.includes('channel')) drawn.push(['channel', s.channel]);
  markDrawn(root, drawn);
}

export default function (component) {
  const {data, setStateValue, parentElement} = component;
  const [root] = figureRoot(parentElement, 'toeplitz', HTML);
  let fig = FIGURES.get(root);
  if (fig === undefined) {
    fig = build(root, data);
    FIGURES.set(root, fig);
  }
  fig.send = (name, value) => {
    (fig.pending[name] = fig.pending[name] || []).push(JSON.stringify(value));
    setStateValue(name, value);
  };
  receive(root, fig, data);
}
