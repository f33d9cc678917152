// Figure "recurrent_fit": a causal kernel as a recurrence (an SSM). The learned kernel
// k_0..k_{n-1} with its fit by s damped complex exponentials drawn over it, the fit's poles
// on the unit disc, and the relative Frobenius error ‖T − T̂‖_F / ‖T‖_F against s beside
// band + W A Wᵀ's against r, on one count axis. Dragging s redraws here, with no server.
//
// Data, from pages/figures/recurrent_fit.py (once per kernel; lab.recurrent_fit):
//   id, n      the kernel's name (kernel_id) and length
//   column     packed float64 [n]: k_0..k_{n-1}, the kernel fitted
//   direct     d = k_0 (every fit has it exactly)
//   modes      [q] the ladder of s; poles, residues [q] packed float64 [2s] each:
//              z_j and c_j as re, im pairs (a mode not used is 0)
//   errors     [q] each fit's relative Frobenius error (null: below floor, not drawn)
//   undamped   [q] each fit's modes with |z| >= 1 − 1e-9 (never decaying), said in words
//   floor      that floor (the band + W A Wᵀ curve's); exact: the s below it
//   band, ranks, ski, optimal   the band + W A Wᵀ curve at band m: [p] r, its error with A
//              fitted (least squares) and the rank-r optimum (SVD), null below the floor
// Per frame, here: k̂_l = Re Σ_j c_j z_j^(l−1) (l ≥ 1), k̂_0 = d, the error of the drawn s,
// the three pictures.

const FIT_LAYOUT = `
<style>
  .panels { display: grid; grid-template-columns: minmax(0, 5fr) minmax(0, 2fr) minmax(0, 5fr); gap: 1rem; align-items: start; }
  .panels canvas { width: 100%; height: 260px; display: block; }
  .panels canvas.disc { height: auto; aspect-ratio: 1; max-width: 260px; }
  .legend { display: flex; flex-wrap: wrap; }
  /* a phone: the three panels one under the other */
  @media (max-width: 640px) { .panels { grid-template-columns: minmax(0, 1fr); } }
</style>
<div class="controls"></div>
<div class="panels">
  <div><div class="caption">Kernel against lag l (log axis from l = 1)</div>
    <canvas class="kernel"></canvas>
    <div class="legend"><span class="key" style="color: var(--figure-series-1)">kernel k_l</span>
      <span class="key dashed" style="color: var(--figure-series-4)">fit by s modes</span></div></div>
  <div><div class="caption">Poles z on the unit disc</div><canvas class="disc"></canvas>
    <div class="legend"><span>● z_j&nbsp; ○ its conjugate</span></div></div>
  <div><div class="caption">Relative Frobenius error against the count</div>
    <canvas class="errors"></canvas>
    <div class="legend"><span class="key" style="color: var(--figure-series-5)">SSM: s modes</span>
      <span class="key dashed" style="color: var(--figure-series-2)">band + W A Wᵀ: r points (A fitted)</span>
      <span class="key dotted" style="color: var(--figure-series-3)">band + best rank r (SVD)</span></div></div>
</div>
<div class="caption readout"></div>`;

// k̂_0 = d, k̂_l = Re Σ_j c_j z_j^(l−1): lags 0..n−1 (Float64Array [n]) of a fit whose poles
// and residues are re, im pairs. Powers by repeated multiplication, so 0^0 = 1.
function exponentialKernel(poles, residues, direct, n) {
  const out = new Float64Array(n);
  if (n > 0) out[0] = direct;
  for (let j = 0; 2 * j < poles.length; j++) {
    const zr = poles[2 * j], zi = poles[2 * j + 1];
    let pr = residues[2 * j], pi = residues[2 * j + 1];  // c z^(l−1), from l = 1
    for (let l = 1; l < n; l++) {
      out[l] += pr;
      const next = pr * zr - pi * zi;
      pi = pr * zi + pi * zr;
      pr = next;
    }
  }
  return out;
}

// ‖T − T̂‖_F / ‖T‖_F of the causal Toeplitz matrices of lags column and fitted: lag l fills
// n − l entries (NaN when T = 0).
function relativeError(column, fitted) {
  const n = column.length;
  let top = 0, bottom = 0;
  for (let l = 0; l < n; l++) {
    const e = column[l] - fitted[l];
    top += (n - l) * e * e; bottom += (n - l) * column[l] * column[l];
  }
  return bottom > 0 ? Math.sqrt(top / bottom) : NaN;
}

// The unit disc with the poles, its labels in the figure's text size: the disc's radius
// leaves a line of text and a label's width around it.
function drawDisc(canvas, poles) {
  const side = canvas.clientWidth || 200;
  canvas.width = side; canvas.height = side;
  const ctx = canvas.getContext('2d'), style = canvasStyle(canvas);
  ctx.font = style.font;
  const line = Math.ceil(style.size * 1.3), room = ctx.measureText('−1').width + 6;
  const c = side / 2, R = Math.max(8, side / 2 - Math.max(line, room) - 2);
  const at = (re, im) => [c + re * R, c - im * R];
  ctx.clearRect(0, 0, side, side);
  ctx.strokeStyle = style.colour('muted'); ctx.beginPath(); ctx.moveTo(4, c);
  ctx.lineTo(side - 4, c); ctx.moveTo(c, 4); ctx.lineTo(c, side - 4); ctx.stroke();
  ctx.strokeStyle = style.colour('axis'); ctx.beginPath(); ctx.arc(c, c, R, 0, 2 * Math.PI);
  ctx.stroke();
  ctx.fillStyle = style.colour('ink'); ctx.textBaseline = 'middle';
  ctx.textAlign = 'left'; ctx.fillText('1', c + R + 3, c + line / 2);
  ctx.textAlign = 'right'; ctx.fillText('−1', c - R - 3, c + line / 2);
  ctx.textAlign = 'left'; ctx.textBaseline = 'bottom'; ctx.fillText('i', c + 4, c - R - 2);
  ctx.textBaseline = 'top'; ctx.fillText('−i', c + 4, c + R + 2);
  ctx.textAlign = 'right'; ctx.textBaseline = 'bottom'; ctx.fillText('Re z', side - 2, c - 2);
  ctx.textBaseline = 'top'; ctx.fillText('Im z', c - 4, 2);
  ctx.textAlign = 'left'; ctx.textBaseline = 'alphabetic';
  for (let j = 0; 2 * j < poles.length; j++) {
    const [re, im] = [poles[2 * j], poles[2 * j + 1]];
    ctx.strokeStyle = ctx.fillStyle = style.colour('series-4');
    const [x, y] = at(re, im);
    ctx.beginPath(); ctx.arc(x, y, 4, 0, 2 * Math.PI); ctx.fill();
    if (im !== 0) {
      const [xc, yc] = at(re, -im);
      ctx.beginPath(); ctx.arc(xc, yc, 4, 0, 2 * Math.PI); ctx.stroke();
    }
  }
}

function drawFit(root, state) {
  const { data } = state;
  const i = Math.max(0, data.modes.indexOf(state.modes));
  const s = data.modes[i];
  const poles = state.poles[i], residues = state.residues[i];
  const fitted = exponentialKernel(poles, residues, data.direct, data.n);
  const error = relativeError(state.column, fitted);
  const lags = Array.from({ length: data.n }, (_, l) => l);
  const size = (canvas, height) => {
    canvas.width = canvas.clientWidth || 480; canvas.height = canvas.clientHeight || height;
  };
  const kernel = root.querySelector('canvas.kernel');
  size(kernel, 260);
  drawLines(kernel, [{ x: lags, y: Array.from(state.column), colour: 'series-1' },
    { x: lags, y: Array.from(fitted), colour: 'series-4', dash: [9, 4] }],
  { logX: true, xLabel: 'lag l', yLabel: 'k_l' });
  drawDisc(root.querySelector('canvas.disc'), poles);
  const errors = root.querySelector('canvas.errors');
  size(errors, 260);
  const asNumbers = (values) => values.map((v) => (v === null ? NaN : v));
  drawLines(errors, [
    { x: data.modes, y: asNumbers(data.errors), colour: 'series-5' },
    { x: data.ranks, y: asNumbers(data.ski), colour: 'series-2', dash: [9, 4] },
    { x: data.ranks, y: asNumbers(data.optimal), colour: 'series-3', dash: [2, 3] }],
  { logX: true, logY: true, xLabel: 's modes or r inducing points',
    yLabel: '‖T − T̂‖_F / ‖T‖_F', marks: [{ x: s, label: `s = ${s}` }] });
  root.querySelector('.readout').textContent = readout(data, s, error, poles,
    data.undamped[i]);
  markDrawn(root, [['n', data.n], ['modes', s]]);
}

function readout(data, s, error, poles, undamped) {
  const used = poles.length / 2 - countUnused(poles);
  const reach = data.ranks.find((r, k) => data.ski[k] !== null && data.ski[k] <= error);
  const words = Number.isFinite(error) && error >= data.floor ? error.toExponential(2)
    : `below ${data.floor} (exact up to round-off)`;
  return `s = ${s} (${used} used): ‖T − T̂‖_F / ‖T‖_F = ` +
    `${words}, the lags weighted by the n − l entries each fills, as for band + W A Wᵀ. ` +
    `k₀ = d = ${Number(data.direct.toPrecision(4))} is exact (lag 0 is off the log axis). ` +
    (reach !== undefined ? `Band + W A Wᵀ with m = ${data.band} first reaches that error at ` +
      `r = ${reach} on its curve.` : `Band + W A Wᵀ with m = ${data.band} does not reach ` +
      `that error for any r on its curve (up to ${data.ranks[data.ranks.length - 1]}).`) +
    (data.exact.length ? ` Errors below ${data.floor} are not drawn (s = ` +
      `${runs(data.exact)}).` : '') +
    (undamped ? ` ${undamped === 1 ? '1 pole lies' : `${undamped} poles lie`} on the unit ` +
      'circle (|z| = 1, where the bound |z| ≤ 1 holds it): such a mode never decays, its ' +
      'state keeps every input it has read.' : '');
}

// Ascending integers as runs: [1, 2, 3, 5, 7, 8] -> "1–3, 5, 7–8".
function runs(values) {
  const parts = [];
  for (let i = 0; i < values.length; i++) {
    let j = i;
    while (j + 1 < values.length && values[j + 1] === values[j] + 1) j++;
    parts.push(j > i ? `${values[i]}–${values[j]}` : `${values[i]}`);
    i = j;
  }
  return parts.join(', ');
}

function countUnused(poles) {
  let unused = 0;
  for (let j = 0; 2 * j < poles.length; j++) {
    if (poles[2 * j] === 0 && poles[2 * j + 1] === 0) unused += 1;
  }
  return unused;
}

export default function (component) {
  const { data, parentElement, setStateValue } = component;
  const [root, created] = figureRoot(parentElement, 'recurrent_fit', FIT_LAYOUT);
  if (created) root.state = { sent: undefined, applied: undefined };
  const state = root.state;
  if (!state.data || state.data.id !== data.id) {  // a new kernel: unpacked once
    Object.assign(state, {
      column: decodeArray(data.column, 'float64'),
      poles: data.poles.map((p) => decodeArray(p, 'float64')),
      residues: data.residues.map((c) => decodeArray(c, 'float64')) });
  }
  state.data = data;
  const spec = data.controls[0];
  const box = root.querySelector('.controls');
  if (!state.input) {
    state.input = slider(box, spec, (value) => { state.modes = value; drawFit(root, state); },
      (value) => { state.sent = value; setStateValue(spec.name, value); });
    state.input.setAttribute('aria-label', spec.label);
  }
  state.input.disabled = (data.locked || []).includes(spec.name);
  // The server's value moves the slider, unless a rerun for an earlier move is behind it.
  if (state.applied !== spec.value && (state.sent === undefined || state.sent === spec.value)) {
    state.sent = undefined;
    state.modes = spec.value;
    state.input.value = String(spec.value);
    state.input.parentElement.querySelector('output').textContent = state.input.value;
  }
  state.applied = spec.value;
  drawFit(root, state);
}
