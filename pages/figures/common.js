// What every figure shares: its root and the test contract, its sliders, a colour
// scale, a heatmap and a line plot on a canvas. Each figure's own file (NAME.js) follows
// this one in the same module and ends with `export default function (component)`.
//
// The contract (pages/figures/__init__.py): the root element carries
// data-testid="figure" and data-figure="NAME"; after each draw, data-drawn holds the
// parameters it drew as a URL query string; a numbers panel that waits for the server
// carries data-stale="true" until it shows the server's values.

// The figure's root inside `parent` (the component's shadow root), made on first mount.
// Returns [root, created].
function figureRoot(parent, name, html) {
  let root = parent.querySelector('[data-testid="figure"]');
  if (root) return [root, false];
  root = document.createElement('div');
  root.className = 'figure';
  root.setAttribute('data-testid', 'figure');
  root.setAttribute('data-figure', name);
  root.innerHTML = html;
  parent.appendChild(root);
  return [root, true];
}

// Record what was drawn: params is an array of [name, value] pairs, in the URL's order.
function markDrawn(root, params) {
  root.setAttribute('data-drawn', new URLSearchParams(params.map(([k, v]) => [k, String(v)]))
    .toString());
}

// A panel's values are the server's (stale false) or an earlier setting's (stale true).
function markStale(panel, stale) {
  panel.setAttribute('data-stale', stale ? 'true' : 'false');
  panel.classList.toggle('stale', stale);
}

// A labelled range input: spec {name, label, min, max, step, value, help, format}. The
// readout follows every `input` (drag); `onInput(value)` redraws, `onSettle(value)` runs
// on release (`change`). Returns the input element.
function slider(container, spec, onInput, onSettle) {
  const box = document.createElement('label');
  box.className = 'control';
  box.title = spec.help || '';
  const format = spec.format || ((v) => String(v));
  box.innerHTML = `<span class="label"></span> <output></output>
    <input type="range" min="${spec.min}" max="${spec.max}" step="${spec.step}">`;
  box.querySelector('.label').textContent = spec.label;
  const input = box.querySelector('input');
  const readout = box.querySelector('output');
  input.name = spec.name;
  input.value = String(spec.value);
  readout.textContent = format(Number(input.value));
  input.addEventListener('input', () => {
    readout.textContent = format(Number(input.value));
    onInput(Number(input.value));
  });
  input.addEventListener('change', () => onSettle(Number(input.value)));
  container.appendChild(box);
  return input;
}

// Diverging colour for v in [-limit, limit]: blue (negative), white (0), red (positive),
// the RdBu ends of the server-drawn heatmaps. Returns [r, g, b] in 0..255.
const NEGATIVE = [33, 102, 172], POSITIVE = [178, 24, 43];
function divergingColour(v, limit) {
  if (!(limit > 0) || !Number.isFinite(v)) return [255, 255, 255];
  const t = Math.max(-1, Math.min(1, v / limit));
  const end = t < 0 ? NEGATIVE : POSITIVE;
  const a = Math.abs(t);
  return [0, 1, 2].map((c) => Math.round(255 + a * (end[c] - 255)));
}

// The rows (and columns) a picture of side `pixels` shows of an n x n matrix: every
// stride-th index from 0, so a drawn cell is a real entry, never an average.
function shownIndices(n, pixels) {
  const stride = Math.max(1, Math.ceil(n / pixels));
  const out = [];
  for (let i = 0; i < n; i += stride) out.push(i);
  return out;
}

// Draw entry(i, j) for the shown rows and columns on `canvas`, coloured on [-limit, limit].
function drawMatrix(canvas, idx, entry, limit) {
  const side = idx.length;
  canvas.width = side; canvas.height = side;
  const ctx = canvas.getContext('2d');
  const image = ctx.createImageData(side, side);
  for (let a = 0; a < side; a++) {
    for (let b = 0; b < side; b++) {
      const [r, g, bl] = divergingColour(entry(idx[a], idx[b]), limit);
      const p = 4 * (a * side + b);
      image.data[p] = r; image.data[p + 1] = g; image.data[p + 2] = bl; image.data[p + 3] = 255;
    }
  }
  ctx.putImageData(image, 0, 0);
}

// A line plot on `canvas`: series [{x, y, colour, dash, guide}] (arrays), options
// {logX, logY, xLabel, yLabel, marks: [{x, label}], bounds: {x: [lo, hi], y: [lo, hi]}}.
// Non-positive values are left out on a log axis. The data series set the axes, unless
// `bounds` fixes them; a guide (a fitted line, an envelope) is drawn over them, clipped to
// the plot, and never stretches an axis. Returns the plot's frame (``frameToData``).
function drawLines(canvas, series, options) {
  const ctx = canvas.getContext('2d');
  const W = canvas.width, H = canvas.height, left = 56, bottom = 34, top = 10, right = 10;
  ctx.clearRect(0, 0, W, H);
  const tx = (v) => (options.logX ? Math.log10(v) : v);
  const ty = (v) => (options.logY ? Math.log10(v) : v);
  const ok = (x, y) => Number.isFinite(tx(x)) && Number.isFinite(ty(y));
  let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
  for (const s of series) {
    if (s.guide) continue;
    for (let i = 0; i < s.x.length; i++) {
      if (!ok(s.x[i], s.y[i])) continue;
      x0 = Math.min(x0, tx(s.x[i])); x1 = Math.max(x1, tx(s.x[i]));
      y0 = Math.min(y0, ty(s.y[i])); y1 = Math.max(y1, ty(s.y[i]));
    }
  }
  if (options.bounds) {
    [x0, x1] = options.bounds.x.map(tx);
    [y0, y1] = options.bounds.y.map(ty);
  }
  if (!(x1 >= x0) || !(y1 >= y0)) return null;
  if (x1 === x0) { x0 -= 1; x1 += 1; }
  if (y1 === y0) { y0 -= 1; y1 += 1; }
  const px = (v) => left + (tx(v) - x0) / (x1 - x0) * (W - left - right);
  const py = (v) => top + (1 - (ty(v) - y0) / (y1 - y0)) * (H - top - bottom);
  ctx.strokeStyle = '#888'; ctx.fillStyle = '#444'; ctx.font = '11px sans-serif';
  ctx.beginPath(); ctx.moveTo(left, top); ctx.lineTo(left, H - bottom); ctx.lineTo(W - right, H - bottom);
  ctx.stroke();
  for (const v of axisTicks(x0, x1, options.logX)) {  // v on the drawn (log10) scale
    const xp = left + (v - x0) / (x1 - x0) * (W - left - right);
    ctx.fillText(formatTick(options.logX ? 10 ** v : v), xp - 12, H - bottom + 14);
  }
  ctx.textAlign = 'right';  // the y ticks end at the axis, clear of the rotated y label
  for (const v of axisTicks(y0, y1, options.logY)) {
    const yp = H - bottom - (v - y0) / (y1 - y0) * (H - top - bottom);
    ctx.fillText(formatTick(options.logY ? 10 ** v : v), left - 4, yp + 4);
  }
  ctx.textAlign = 'left';
  ctx.fillText(options.xLabel || '', (W - left) / 2 + left - 20, H - 4);
  ctx.save(); ctx.translate(12, top + (H - top - bottom) / 2 + 20); ctx.rotate(-Math.PI / 2);
  ctx.fillText(options.yLabel || '', 0, 0); ctx.restore();
  ctx.save(); ctx.beginPath(); ctx.rect(left, top, W - left - right, H - top - bottom); ctx.clip();
  for (const s of series) {
    ctx.strokeStyle = s.colour || '#1f77b4'; ctx.setLineDash(s.dash || []); ctx.beginPath();
    let pen = false;
    for (let i = 0; i < s.x.length; i++) {
      if (!ok(s.x[i], s.y[i])) { pen = false; continue; }
      if (pen) ctx.lineTo(px(s.x[i]), py(s.y[i])); else ctx.moveTo(px(s.x[i]), py(s.y[i]));
      pen = true;
    }
    ctx.stroke();
  }
  ctx.restore();
  ctx.setLineDash([4, 3]); ctx.strokeStyle = '#555';
  for (const mark of options.marks || []) {
    if (!Number.isFinite(tx(mark.x))) continue;
    ctx.beginPath(); ctx.moveTo(px(mark.x), top); ctx.lineTo(px(mark.x), H - bottom); ctx.stroke();
    ctx.fillText(mark.label, px(mark.x) + 3, top + 10);
  }
  ctx.setLineDash([]);
  return { left, top, width: W - left - right, height: H - top - bottom, x0, x1, y0, y1,
           logX: Boolean(options.logX), logY: Boolean(options.logY) };
}

// A point of the canvas (its pixels) in the data units of the plot drawLines drew there.
function frameToData(frame, xp, yp) {
  const x = frame.x0 + (xp - frame.left) / frame.width * (frame.x1 - frame.x0);
  const y = frame.y0 + (1 - (yp - frame.top) / frame.height) * (frame.y1 - frame.y0);
  return [frame.logX ? 10 ** x : x, frame.logY ? 10 ** y : y];
}

// Tick positions on [a, b] of the drawn scale: whole decades on a log axis that spans two or
// more (at most six, evenly strided); else round values (steps of 1, 2 or 5 × 10^k, about
// five of them), taken on the values themselves for a log axis.
function axisTicks(a, b, log) {
  if (log && Math.floor(b) - Math.ceil(a) >= 1) {
    const first = Math.ceil(a), last = Math.floor(b);
    const stride = Math.ceil((last - first + 1) / 6);
    const out = [];
    for (let d = first; d <= last; d += stride) out.push(d);
    return out;
  }
  if (log) return roundTicks(10 ** a, 10 ** b).filter((v) => v > 0).map(Math.log10);
  return roundTicks(a, b);
}

// Multiples of a round step (1, 2 or 5 × 10^k) inside [a, b]: the finest step that gives
// at most six of them (three at least).
function roundTicks(a, b) {
  const count = (step) => Math.floor(b / step + 1e-9) - Math.ceil(a / step - 1e-9) + 1;
  let step = 10 ** Math.floor(Math.log10((b - a) / 10));
  for (let i = 0; count(step) > 6; i++) step *= [2, 2.5, 2][i % 3];  // 1, 2, 5, 10, 20, …
  const out = [];
  for (let k = Math.ceil(a / step - 1e-9); k <= Math.floor(b / step + 1e-9); k++) {
    out.push(Number((k * step).toPrecision(12)));
  }
  return out;
}

function formatTick(v) {
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-2 || a >= 1e5)) return Number(v.toPrecision(3)).toExponential();
  return Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(3)));
}

// Linked figures on one page: a figure announces what it just drew (`announce(figure,
// params)`, params a plain object), and another follows in the same frame, with no
// server (`follow(root, handler)`: handler(figure, params) on every announcement; one
// handler per root, a later call replaces it). Return `() => unfollow(root)` from the
// default export so an unmounted figure stops listening.
const ANNOUNCEMENT = 'toeplitz-lab-figure-drawn';
function announce(figure, params) {
  window.dispatchEvent(new CustomEvent(ANNOUNCEMENT, { detail: { figure, params } }));
}

function follow(root, handler) {
  unfollow(root);
  root.followHandler = (event) => handler(event.detail.figure, event.detail.params);
  window.addEventListener(ANNOUNCEMENT, root.followHandler);
}

function unfollow(root) {
  if (root.followHandler) window.removeEventListener(ANNOUNCEMENT, root.followHandler);
  root.followHandler = null;
}

// drawMatrix for a rows × columns picture, in divergingColour's colours without making an
// array per pixel (six 256 × 256 pictures a frame at n = 4096 spent half their time there):
// entry(rows[a], columns[b]) at pixel (a, b), coloured on [-limit, limit].
function drawEntries(canvas, rows, columns, entry, limit) {
  const height = rows.length, width = columns.length;
  canvas.width = width; canvas.height = height;
  const ctx = canvas.getContext('2d');
  const image = ctx.createImageData(width, height), pixels = image.data;
  const coloured = limit > 0;  // else white, as divergingColour
  for (let a = 0; a < height; a++) {
    for (let b = 0, p = 4 * a * width; b < width; b++, p += 4) {
      const v = coloured ? entry(rows[a], columns[b]) / limit : 0;
      const t = Number.isFinite(v) ? Math.max(-1, Math.min(1, v)) : 0;
      const end = t < 0 ? NEGATIVE : POSITIVE, s = Math.abs(t);
      pixels[p] = Math.round(255 + s * (end[0] - 255));
      pixels[p + 1] = Math.round(255 + s * (end[1] - 255));
      pixels[p + 2] = Math.round(255 + s * (end[2] - 255));
      pixels[p + 3] = 255;
    }
  }
  ctx.putImageData(image, 0, 0);
}

// Numbers the server packs as base64 of little-endian float32 or float64 (numpy's
// `astype('<f4').tobytes()` / `'<f8'`), far smaller than JSON: a Float64Array. kind is
// 'float32' or 'float64'; float32 values widen exactly.
function decodeArray(text, kind) {
  const bytes = Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  const size = kind === 'float32' ? 4 : kind === 'float64' ? 8 : 0;
  if (size === 0) throw new Error(`kind must be 'float32' or 'float64'; got ${kind}`);
  if (bytes.length % size) throw new Error(`${bytes.length} bytes are not whole ${kind} values`);
  const view = new DataView(bytes.buffer), out = new Float64Array(bytes.length / size);
  for (let i = 0; i < out.length; i++) {
    out[i] = size === 4 ? view.getFloat32(4 * i, true) : view.getFloat64(8 * i, true);
  }
  return out;
}

// 1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, 21st: an ordinal for a caption.
function ordinal(k) {
  const tens = k % 100, ones = k % 10;
  const suffix = tens >= 11 && tens <= 13 ? 'th' : ['th', 'st', 'nd', 'rd'][ones] || 'th';
  return `${k}${suffix}`;
}
