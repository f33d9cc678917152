// What every figure shares: its root and the test contract, its sliders, a colour
// scale, a heatmap and a line plot on a canvas. Each figure's own files (its PARTS, then
// NAME.js: pages/figures/__init__.py script) follow this one in the same module, which
// ends with NAME.js's `export default function (component)`.
//
// The contract (pages/figures/__init__.py): the root element carries
// data-testid="figure" and data-figure="NAME"; after each draw, data-drawn holds the
// parameters it drew as a URL query string; a numbers panel that waits for the server
// carries data-stale="true" until it shows the server's values.

// The figure's root inside `parent` (the component's shadow root), made on first mount.
// Returns [root, created].
function figureRoot(parent, name, html) {
  let root = parent.querySelector('[data-testid="figure"]');
  if (root) { applyTheme(root); return [root, false]; }
  root = document.createElement('div');
  root.className = 'figure';
  root.setAttribute('data-testid', 'figure');
  root.setAttribute('data-figure', name);
  root.innerHTML = html;
  parent.appendChild(root);
  applyTheme(root);
  keepArrowKeys();
  return [root, true];
}

// The page's theme, light or dark, into root's data-theme (figure.css picks the palette from
// it): dark when the background Streamlit gives the component (--st-background-color) is
// darker than mid-grey. Called on every render, so a theme switch recolours the figure.
function applyTheme(root) {
  const background = getComputedStyle(root).getPropertyValue('--st-background-color').trim();
  const rgb = background.match(/^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i);
  const dark = rgb !== null && rgb.slice(1).reduce((s, h) => s + parseInt(h, 16), 0) < 3 * 128;
  root.setAttribute('data-theme', dark ? 'dark' : 'light');
}

// What canvas text and lines take from the figure's CSS (figure.css): the one text size
// (--figure-font, which the page raises in presenter mode), the font, and the palette's
// colours by name ('ink', 'muted', 'axis', 'series-1'..'series-5'; --figure-NAME).
function canvasStyle(canvas) {
  const style = getComputedStyle(canvas);
  const size = parseFloat(style.fontSize) || 14.4;
  const colour = (name) => style.getPropertyValue(`--figure-${name}`).trim() || style.color;
  return { size, font: `${size}px ${style.fontFamily || 'sans-serif'}`, colour };
}

// A figure's sliders keep their arrow keys: a lesson page moves between steps on Left and
// Right (pages/lessons.py listens on document, in the capture phase, before the slider). This
// listener runs before it (window, capture) and stops the key there when it is aimed at a
// figure's range input; the input still moves (the browser's default action is not
// prevented). Registered once per page.
const SLIDER_KEYS = new Set(['ArrowLeft', 'ArrowRight', 'ArrowUp', 'ArrowDown', 'Home', 'End',
                             'PageUp', 'PageDown']);
function keepArrowKeys() {
  if (window.toeplitzFigureKeys) return;
  window.toeplitzFigureKeys = true;
  window.addEventListener('keydown', (event) => {
    const target = event.composedPath()[0];
    if (SLIDER_KEYS.has(event.key) && target?.type === 'range' && target.closest?.('.figure')) {
      event.stopPropagation();
    }
  }, true);
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

// A line plot on `canvas`: series [{x, y, colour, dash, guide}] (arrays; colour a CSS colour
// or a palette name of canvasStyle, e.g. 'series-2'), options {logX, logY, xLabel, yLabel,
// marks: [{x, label}], bounds: {x: [lo, hi], y: [lo, hi]}}. Non-positive values are left
// out on a log axis. The data series set the axes, unless `bounds` fixes them; a guide (a
// fitted line, an envelope) is drawn over them, clipped to the plot, and never stretches an
// axis. Text is in the figure's one size (canvasStyle) and the margins are measured from it,
// so a larger size moves the plot, never cuts a label. Returns the plot's frame
// (``frameToData``).
function drawLines(canvas, series, options) {
  const ctx = canvas.getContext('2d'), style = canvasStyle(canvas);
  const W = canvas.width, H = canvas.height;
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
  ctx.font = style.font;
  const frame = { ...plotMargins(ctx, style, W, H, [y0, y1], options), x0, x1, y0, y1,
                  logX: Boolean(options.logX), logY: Boolean(options.logY) };
  const px = (v) => frame.left + (tx(v) - x0) / (x1 - x0) * frame.width;
  const py = (v) => frame.top + (1 - (ty(v) - y0) / (y1 - y0)) * frame.height;
  drawAxes(ctx, style, frame, options);
  ctx.save(); ctx.beginPath(); ctx.rect(frame.left, frame.top, frame.width, frame.height);
  ctx.clip(); ctx.lineWidth = 1.5;
  for (const s of series) {
    ctx.strokeStyle = lineColour(style, s.colour); ctx.setLineDash(s.dash || []);
    ctx.beginPath();
    let pen = false;
    for (let i = 0; i < s.x.length; i++) {
      if (!ok(s.x[i], s.y[i])) { pen = false; continue; }
      if (pen) ctx.lineTo(px(s.x[i]), py(s.y[i])); else ctx.moveTo(px(s.x[i]), py(s.y[i]));
      pen = true;
    }
    ctx.stroke();
  }
  ctx.restore();
  drawMarks(ctx, style, frame, (options.marks || []).filter((m) => Number.isFinite(tx(m.x)))
    .map((m) => ({ at: px(m.x), label: m.label })));
  return frame;
}

// Line styles told apart without colour, each with its legend key's class (figure.css .key).
const LINE_STYLES = [{dash: [], key: 'key'}, {dash: [9, 4], key: 'key dashed'},
                     {dash: [2, 3], key: 'key dotted'}];

// A legend entry: a sample of the line (in `colour`, a palette name or CSS colour, and the
// style of `dash`, one of LINE_STYLES') before `text`.
function legendKey(text, colour, dash) {
  const item = document.createElement('span');
  const style = LINE_STYLES.find((s) => String(s.dash) === String(dash || [])) || LINE_STYLES[1];
  item.className = style.key;
  item.style.color = /^[a-z]+(-\d)?$/.test(colour) ? `var(--figure-${colour})` : colour;
  item.append(text);
  return item;
}

// A series' colour: a palette name of canvasStyle ('series-1', ...) or a CSS colour.
const lineColour = (style, colour) => (/^[a-z]+(-\d)?$/.test(colour || '')
  ? style.colour(colour) : colour || style.colour('series-1'));

// The plot's frame inside a W × H canvas: room on the left for the widest y tick label and
// the rotated y label, below for the x tick labels and the x label, above for a mark's
// label, each one line of the figure's text (ctx.font set) high. A y label longer than the
// plot is tall goes above the plot, level (yLabelAbove), rather than be cut.
function plotMargins(ctx, style, W, H, [y0, y1], options) {
  const line = Math.ceil(style.size * 1.3);
  const labels = axisTicks(y0, y1, options.logY).map((v) => formatTick(options.logY ? 10 ** v : v));
  const widest = Math.max(0, ...labels.map((t) => ctx.measureText(t).width));
  const marked = (options.marks || []).length > 0;
  const bottom = line + 6 + (options.xLabel ? line : 0), right = Math.ceil(style.size);
  let top = marked ? line + 4 : Math.ceil(line / 2);
  const yLabelAbove = Boolean(options.yLabel)
    && ctx.measureText(options.yLabel).width > H - top - bottom;
  if (yLabelAbove) top += line;
  const left = Math.ceil(widest) + 8 + (options.yLabel && !yLabelAbove ? line : 0);
  return { left, top, width: Math.max(1, W - left - right), height: Math.max(1, H - top - bottom),
           line, yLabelAbove };
}

// The axes, their tick labels and their names, in the figure's ink and size.
function drawAxes(ctx, style, frame, options) {
  const { left, top, width, height, x0, x1, y0, y1 } = frame;
  ctx.strokeStyle = style.colour('axis'); ctx.fillStyle = style.colour('ink'); ctx.lineWidth = 1;
  ctx.setLineDash([]);
  ctx.beginPath(); ctx.moveTo(left, top); ctx.lineTo(left, top + height);
  ctx.lineTo(left + width, top + height); ctx.stroke();
  ctx.textAlign = 'center'; ctx.textBaseline = 'top';
  for (const v of axisTicks(x0, x1, options.logX)) {  // v on the drawn (log10) scale
    const text = formatTick(options.logX ? 10 ** v : v), half = ctx.measureText(text).width / 2;
    const at = left + (v - x0) / (x1 - x0) * width;
    ctx.fillText(text, Math.min(Math.max(at, half), ctx.canvas.width - half), top + height + 4);
  }
  ctx.textAlign = 'right'; ctx.textBaseline = 'middle';  // clear of the rotated y label
  for (const v of axisTicks(y0, y1, options.logY)) {
    ctx.fillText(formatTick(options.logY ? 10 ** v : v), left - 4,
                 top + height - (v - y0) / (y1 - y0) * height);
  }
  ctx.textAlign = 'center'; ctx.textBaseline = 'bottom';
  ctx.fillText(options.xLabel || '', left + width / 2, ctx.canvas.height - 2);
  ctx.textAlign = 'left'; ctx.textBaseline = 'top';
  if (frame.yLabelAbove) {
    ctx.fillText(options.yLabel, 2, 2);
  } else {
    ctx.save(); ctx.translate(0, top + height / 2); ctx.rotate(-Math.PI / 2);
    ctx.textAlign = 'center'; ctx.fillText(options.yLabel || '', 0, 2); ctx.restore();
  }
  ctx.textAlign = 'left'; ctx.textBaseline = 'alphabetic';
}

// Dashed vertical marks at canvas x `at`, each labelled above the plot: to the right of its
// line, or to the left where the label would run past the canvas.
function drawMarks(ctx, style, frame, marks) {
  ctx.setLineDash([4, 3]); ctx.strokeStyle = style.colour('muted');
  ctx.fillStyle = style.colour('ink'); ctx.textBaseline = 'bottom';
  for (const { at, label } of marks) {
    ctx.beginPath(); ctx.moveTo(at, frame.top); ctx.lineTo(at, frame.top + frame.height);
    ctx.stroke();
    const fits = at + 3 + ctx.measureText(label).width <= ctx.canvas.width;
    ctx.textAlign = fits ? 'left' : 'right';
    ctx.fillText(label, fits ? at + 3 : at - 3, frame.top - 2);
  }
  ctx.setLineDash([]); ctx.textAlign = 'left'; ctx.textBaseline = 'alphabetic';
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
