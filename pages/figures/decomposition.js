// Figure "decomposition": T ≈ band + W A Wᵀ (SKI to go Faster, Algorithm 1), drawn in the
// browser on every move of r, m and (for a synthetic kernel) λ: the four pictures, the
// factors W · A · Wᵀ and the numbers. The maths, what tnn_core.analysis.decompose computes
// for the "sample" method in float64, is decomposition_maths.js: one of this figure's parts
// (pages/figures/__init__.py PARTS), which script("decomposition") puts before this file.
//
// Data, from pages/figures/decomposition.py and, once per side, pages/figures/difference.py
// (both built by tnn_core/lab/common/decomposition_figures.py, figure_data):
//   kernel   once per kernel: {id, n, causal, label, limits} and either coeffs [2n-1] (t_k at lag
//            k in coeffs[n-1+k]) or, for a synthetic preset, base and extra [2n-1] with
//            t_k = base_k λ^|k| + extra_k, so λ moves in the browser too; each array as
//            base64 float64 (decodeArray), so the browser has the server's numbers exactly
//   decay    λ of the kernel sent (null: the kernel has no λ). With coeffs (an operator's
//            kernel, not base × λ^|k|) a move of λ waits for the server: the pictures stay
//            at this λ and the numbers are marked stale until the kernel at the new λ comes
//   method   "sample" or "fit"
//   fitted   the least-squares A of "fit" for the settled values: {drawn, coeffs [2r-1]
//            base64 float64}, or null (drawn: the data-drawn string it belongs to)
//   numbers  the server's numbers for the settled values: {drawn, spectral, optimalSpectral,
//            optimalFrobenius, gap}: ‖R‖₂/‖T‖₂ by Lanczos, the Eckart–Young optima over
//            ‖T‖, their ratio (null where undefined); or null
//   controls rank, band and, for a kernel with a λ, decay (pages/figures), each named
//            prefix + its name
//   prefix   optional, "" when absent: what the controls' names start with, so one page can
//            mount the figure twice (Compare A/B: "a_", "b_"). data-drawn, the values sent
//            back and numbers.drawn / fitted.drawn then name band, rank, decay and method
//            prefix + name (n=256&a_band=9&a_rank=32&a_decay=0.99&a_method=sample); n stays n
//   scaleWith  optional: the prefix of another decomposition figure on the page whose
//            residual shares this one's colour scale, ±max of the two max|residual|; each
//            hears the other's announcements (common.js announce), so the scale follows
//            either figure's drag in the same frame. Absent: the residual has its own scale
//   locked   optional: names of controls a lesson fixed, drawn disabled
//   factors  optional: false to mount with "Where W A Wᵀ comes from" folded (default open)
//   compact  optional: true to leave out the colour scale's sentence (a lesson step's
//            screen, where the step's own text says what the colours mean)
// Per frame, here: t at λ, then everything above at the slider's r and m; the server's
// numbers stay, marked stale, until the server sends them for the values drawn.
//
// Letters: n length, r rank (inducing points), m band lags, l a lag of A.

const PICTURE_CELLS = 256;  // rows and columns a picture of T shows at most

const LAYOUT = `
<style>
  .pictures { display: grid; grid-template-columns: repeat(4, 1fr); gap: 0.6rem; }
  .pictures figure, .pieces figure { margin: 0; }
  .pictures canvas { width: 100%; aspect-ratio: 1; border: 1px solid var(--figure-muted);
                     display: block; }
  .pictures figcaption, .pieces figcaption { font-size: 1em; text-align: center; }
  .pieces { display: flex; gap: 0.8rem; align-items: center; margin-top: 0.4rem; }
  .pieces canvas { border: 1px solid var(--figure-muted); display: block; }
  .pieces .caption { flex: 1; }
  .numbers { display: flex; gap: 0.2rem 1.5rem; flex-wrap: wrap; margin: 0.3rem 0; font-size: 1em; }
  .numbers b { font-size: 1.15em; }
  .note { color: var(--figure-note); font-size: 1em; }
  details summary { cursor: pointer; font-size: 1em; }
  /* a slider's label and value on one line, the slider under them */
  .figure .controls .control { flex-direction: row; flex-wrap: wrap; align-items: baseline;
                               column-gap: 0.5em; }
  /* from 420 px wide the sliders share one row (a lesson step's column at 1280 × 720 too);
     mounted narrow (Compare A/B's two columns), W · A · Wᵀ wraps; narrower still (a phone),
     each slider has a row of its own (figure.css) */
  .figure { container-type: inline-size; }
  @container (min-width: 420px) {
    .figure .controls { gap: 0.8rem; flex-wrap: nowrap; }
    .figure .controls .control { min-width: 0; flex: 1; }
  }
  @container (max-width: 640px) {
    .pieces { flex-wrap: wrap; }
    .pieces .caption { flex-basis: 100%; }
  }
</style>
<div class="controls"></div>
<div class="pictures">
  <figure><canvas data-picture="T"></canvas><figcaption class="title-T">T</figcaption></figure>
  <figure><canvas data-picture="B"></canvas><figcaption>= band</figcaption></figure>
  <figure><canvas data-picture="L"></canvas><figcaption>+ low rank W A Wᵀ</figcaption></figure>
  <figure><canvas data-picture="R"></canvas><figcaption class="title-R">+ residual</figcaption>
  </figure>
</div>
<div class="caption scale"></div>
<div class="numbers live" data-stale="false"></div>
<div class="numbers server" data-stale="true"></div>
<div class="note"></div>
<details class="factors" open><summary>Where W A Wᵀ comes from: W · A · Wᵀ</summary>
  <div class="pieces">
    <figure><canvas data-picture="W"></canvas><figcaption>W</figcaption></figure>
    <figure><canvas data-picture="A"></canvas><figcaption>· A</figcaption></figure>
    <figure><canvas data-picture="Wt"></canvas><figcaption>· Wᵀ</figcaption></figure>
    <div class="caption factors-text"></div>
  </div>
</details>`;
// The height of W's picture (and the width of Wᵀ's): --factors-height, which a page may set
// (presenter mode: from the screen's height, pages/lessons.py), else 192 px.
const FACTOR_SIZE = 'var(--factors-height, 192px)';

const scientific = (v, digits = 2) => (v === null || v === undefined || !Number.isFinite(v)
  ? '—' : v.toExponential(digits));

// The parameters drawn, in the contract's order: [[name, value], ...] (data-drawn), every
// name but n after data.prefix.
function drawnParams(data, values, band, rank, method) {
  const params = [['n', data.kernel.n], ['band', band], ['rank', rank]];
  const decay = data.kernel.base ? values.decay : data.decay;  // the λ of the kernel drawn
  if (decay !== null && decay !== undefined) params.push(['decay', decay]);
  params.push(['method', method]);
  const prefix = data.prefix || '';
  return params.map(([name, value]) => [name === 'n' ? name : prefix + name, value]);
}

// The residual's colour limit: its own max|residual|, or with data.scaleWith the larger of
// its own and the other figure's last announced one; never below ROUNDOFF_SHARE × max|t_k|,
// so round-off (5.7e-15 at r = n) is drawn white, not as a saturated diagonal.
function residualScale(state, dec) {
  const largest = state.data.scaleWith ? Math.max(dec.residualLimit, state.peerLimit || 0)
    : dec.residualLimit;
  return residualColourLimit(largest, dec.limit);
}

// A residual no larger than this share of max|t_k| is round-off (float64's 2.2e-16 times
// the n-term sums of the decomposition stays far below it at n ≤ 4096).
const ROUNDOFF_SHARE = 1e-12;

// The colour limit of a residual whose max|entry| is `largest`, beside T's max|t_k| `limit`.
function residualColourLimit(largest, limit) {
  return Math.max(largest, ROUNDOFF_SHARE * limit);
}

const queryString = (params) => new URLSearchParams(params.map(([k, v]) => [k, String(v)]))
  .toString();

function drawPictures(root, dec, scale, shared) {
  const idx = shownIndices(dec.n, PICTURE_CELLS);
  for (const name of ['T', 'B', 'L']) {
    drawEntries(root.querySelector(`[data-picture="${name}"]`), idx, idx, dec[name], dec.limit);
  }
  drawResidual(root, dec, scale, shared);
}

// The residual on ±scale, and the caption that states both scales.
function drawResidual(root, dec, scale, shared) {
  const idx = shownIndices(dec.n, PICTURE_CELLS);
  drawEntries(root.querySelector('[data-picture="R"]'), idx, idx, dec.R, scale);
  const roundoff = dec.residualLimit <= ROUNDOFF_SHARE * dec.limit;  // said even when compact
  root.querySelector('.title-R').textContent = roundoff ? '+ residual: round-off (white)'
    : `+ residual (${shared ? 'shared scale' : 'own scale'})`;
  const step = idx.length > 1 ? idx[1] - idx[0] : 1;
  root.querySelector('.scale').textContent =
    `Blue negative, white 0, red positive. T, band and W A Wᵀ share one scale, ` +
    `±max|t_k| = ±${dec.limit.toPrecision(3)}; ` + residualWords(dec, scale, shared, roundoff) +
    (step > 1 ? `Every ${ordinal(step)} row and column of the ${dec.n} × ${dec.n} matrices is drawn ` +
      `(real entries, not averages); the numbers are over all entries.`
      : `All ${dec.n} × ${dec.n} entries are drawn.`);
}

// What the residual's colours mean: its scale, shared or its own, or that it is round-off.
function residualWords(dec, scale, shared, roundoff) {
  const largest = dec.residualLimit.toPrecision(3);
  if (roundoff && !shared) {
    return `the residual is round-off: max|residual| = ${largest} is below ${ROUNDOFF_SHARE} ` +
      `× max|t_k|, so it is drawn on ±${scale.toPrecision(3)} and shows white; T = band + ` +
      `W A Wᵀ up to round-off. `;
  }
  return (shared ? `the residual shares one with the other setting's, ±${scale.toPrecision(3)}, ` +
      `the larger of the two max|residual| (this one's: ${largest}). `
    : `the residual has its own, ±max|residual| = ±${largest}. `) +
    (roundoff ? `This residual is round-off (below ${ROUNDOFF_SHARE} × max|t_k|). ` : '');
}

// W (every k-th row, all r columns), A (every k-th row and column) and Wᵀ, sized so that W
// stands, A is square and Wᵀ lies.
function drawFactors(root, dec) {
  const { W, a, rank: r, n } = dec;
  const rows = shownIndices(n, PICTURE_CELLS), points = shownIndices(r, PICTURE_CELLS);
  const wEntry = (i, q) => (W.index[i] === q ? W.w0[i] : W.index[i] + 1 === q ? W.w1[i] : 0);
  const share = Math.min(1, Math.max(0.35, r / n)).toFixed(3);  // of FACTOR_SIZE: r's side
  const full = FACTOR_SIZE, thin = `calc(${FACTOR_SIZE} * ${share})`;
  const size = (name, width, height) => {
    const canvas = root.querySelector(`[data-picture="${name}"]`);
    canvas.style.width = width; canvas.style.height = height;
    return canvas;
  };
  drawEntries(size('W', thin, full), rows, points, wEntry, 1);
  drawEntries(size('A', thin, thin), points, points, (p, q) => a[r - 1 + p - q], dec.limit);
  drawEntries(size('Wt', full, thin), points, rows, (q, i) => wEntry(i, q), 1);
  const aMax = a.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
  const i = Math.min(n - 1, Math.round(n / 3));
  root.querySelector('.factors-text').textContent =
    `W (${n} × ${r}) interpolates each position from its two neighbouring inducing points, ` +
    `h = ${dec.spacing.toPrecision(4)} apart: row ${i} holds ${W.w0[i].toPrecision(3)} at ` +
    `column ${W.index[i]} and ${W.w1[i].toPrecision(3)} at column ${W.index[i] + 1} (white ` +
    `0 … red 1). A (${r} × ${r}) is Toeplitz, A_pq = a_(p−q): the smooth part k̃ at the ` +
    `inducing points' lags, on T's scale` + (aMax > dec.limit ? ` (its largest |a_l|, ` +
      `${aMax.toPrecision(3)}, is clipped)` : '') + `. Their product is the third picture ` +
    `above.` + (rows.length < n || points.length < r ? ' Every k-th row and column drawn.' : '');
}

// The numbers: the browser's (Frobenius) and the server's (spectral, optima), each marked
// stale while it is not for the values drawn.
function showNumbers(root, state, dec, drawn, fitted, waiting) {
  const fit = state.data.method === 'fit';
  if (fitted) state.fitFrobenius = dec.relativeFrobenius;
  const live = root.querySelector('.live');
  const frobenius = fit ? state.fitFrobenius : dec.relativeFrobenius;
  live.innerHTML = `<span>Relative Frobenius error ‖T − band − W A Wᵀ‖_F / ‖T‖_F: ` +
    `<b>${scientific(frobenius, 3)}</b></span>` +
    `<span>max |residual|: <b>${scientific(dec.residualLimit)}</b></span>` +
    `<span>h = (n − 1)/(r − 1): <b>${dec.spacing.toPrecision(4)}</b></span>`;
  markStale(live, waiting || (fit && !fitted));
  const server = root.querySelector('.server');
  const numbers = state.data.numbers;
  if (numbers) {
    server.innerHTML =
      `<span>Relative spectral error ‖R‖₂/‖T‖₂: <b>${scientific(numbers.spectral)}</b></span>` +
      `<span>optimum σ_(r+1)(T − band)/‖T‖₂: <b>${scientific(numbers.optimalSpectral)}</b>` +
      `</span><span>ratio: <b>${Number.isFinite(numbers.gap) ? numbers.gap.toFixed(2) : '—'}` +
      `</b></span><span>Frobenius optimum: <b>${scientific(numbers.optimalFrobenius)}</b></span>`;
  }
  markStale(server, waiting || !numbers || numbers.drawn !== drawn);
}

// One frame at the current values; data-drawn says what was drawn.
function draw(root, state) {
  const { data, values } = state;
  const n = data.kernel.n;
  const { limits } = data.kernel;  // the largest m and r n allows (decomposition_limits)
  const band = Math.min(values.band, limits.band), rank = Math.min(values.rank, limits.rank);
  const wanted = queryString(drawnParams(data, values, band, rank, data.method));
  const fitted = data.method === 'fit' && data.fitted !== null && data.fitted.drawn === wanted;
  const factors = root.querySelector('.factors').open;
  const key = [data.kernel.id, data.kernel.causal, wanted, fitted, factors].join('|');
  if (!state.frame || state.frame.key !== key) {  // else only the server's numbers are new
    const t = state.base ? kernelAt(state.base, state.extra, values.decay) : state.coeffs;
    const dec = decompose(t, band, rank, data.kernel.causal,
      fitted ? decodeArray(data.fitted.coeffs, 'float64') : null);
    drawPictures(root, dec, residualScale(state, dec), Boolean(data.scaleWith));
    if (factors) drawFactors(root, dec);
    state.frame = { key, dec, frobenius: null };
  }
  const { dec } = state.frame;
  // λ moved on a kernel only the server computes: drawn at the server's λ until it comes
  const waiting = !state.base && values.decay !== undefined && values.decay !== data.decay;
  showNumbers(root, state, dec, wanted, fitted, waiting);
  const notes = [];
  if (waiting) {
    notes.push(`λ = ${values.decay}: this kernel (an operator's) comes from the server once ` +
      `λ settles; drawn at λ = ${data.decay} until then.`);
  }
  if (values.rank > rank || values.band > band) {
    notes.push(`n = ${n} allows at most r = ${limits.rank} inducing points and a band of ` +
      `m = ${limits.band} lags (one lag a side is left for the low-rank part): drawn with ` +
      `r = ${rank}, m = ${band}.`);
  }
  if (data.method === 'fit' && !fitted) {
    notes.push('While you move, A is sampled from the kernel; the least-squares A follows ' +
      'from the server once the value settles.');
  }
  root.querySelector('.note').textContent = notes.join(' ');
  const method = fitted || data.method === 'sample' ? data.method : 'sample';
  state.frame.frobenius = method === 'sample' ? dec.relativeFrobenius : null;
  markDrawn(root, drawnParams(data, values, band, rank, method));
  announceDrawn(root, state, state.frame.frobenius);
}

// What this figure drew, for a figure that follows it (the error curve, the other setting,
// Compare's difference, the decay figure): n, band, rank and λ (null: none) unprefixed,
// and its prefix, data-drawn and residual.
function announceDrawn(root, state, frobenius) {
  const { dec } = state.frame;
  const prefix = state.data.prefix || '';
  const decay = new URLSearchParams(root.getAttribute('data-drawn') || '').get(`${prefix}decay`);
  announce('decomposition', { n: dec.n, band: dec.band, rank: dec.rank, decay, frobenius,
    prefix, drawn: root.getAttribute('data-drawn'),
    residualLimit: dec.residualLimit, peerLimit: state.peerLimit ?? null });
}

// The other setting drew (data.scaleWith): its max|residual| may change the shared scale;
// a figure that has not heard this one's is told it.
function hearPeer(root, state, params) {
  if (!state.frame) return;
  const { dec } = state.frame;
  if (params.residualLimit !== state.peerLimit) {
    state.peerLimit = params.residualLimit;
    drawResidual(root, dec, residualScale(state, dec), true);
  }
  if (params.peerLimit !== dec.residualLimit) announceDrawn(root, state, state.frame.frobenius);
}

// A kernel not seen before is unpacked once (base64 float64 arrays); then data is the
// state's.
function receive(state, data) {
  if (!state.data || state.data.kernel.id !== data.kernel.id) {
    const unpack = (name) => (data.kernel[name] ? decodeArray(data.kernel[name], 'float64') : null);
    Object.assign(state, { coeffs: unpack('coeffs'), base: unpack('base'), extra: unpack('extra'),
      fitFrobenius: NaN });
  }
  state.data = data;
}

// A control's own name (band, rank, decay): its name after data.prefix.
function ownName(data, name) {
  const prefix = data.prefix || '';
  return name.startsWith(prefix) ? name.slice(prefix.length) : name;
}

// This source's sliders, made once (again when its controls change), and drawn disabled
// where a lesson locked them. State goes by the control's own name.
function makeSliders(root, state, data, setStateValue) {
  const box = root.querySelector('.controls');
  const names = data.controls.map((c) => c.name).join(',');
  if (box.dataset.names !== names) {
    box.replaceChildren();
    box.dataset.names = names;
    for (const spec of data.controls) {
      const name = ownName(data, spec.name);
      state.inputs[name] = slider(box, spec, (value) => {
        state.values[name] = value;
        draw(root, state);
      }, (value) => {
        state.sent[name] = value;
        setStateValue(spec.name, value);
      });
      // its accessible name (the label around it does not give one inside the shadow root)
      state.inputs[name].setAttribute('aria-label', spec.label);
      delete state.applied[name];
    }
  }
  for (const spec of data.controls) state.inputs[ownName(data, spec.name)].disabled =
    (data.locked || []).includes(spec.name);
}

// A value the server changed (a link, a clamp) moves the slider, unless it is behind the
// last value sent: a rerun for an earlier key press must not pull the slider back.
function moveSliders(state, data) {
  for (const { name: full, value } of data.controls) {
    const name = ownName(data, full);
    if (state.applied[name] === value) continue;
    state.applied[name] = value;
    const sent = state.sent[name];
    if (sent !== undefined && sent !== value) continue;
    delete state.sent[name];
    state.values[name] = value;
    const input = state.inputs[name];
    input.value = String(value);
    input.parentElement.querySelector('output').textContent = input.value;
  }
}

export default function (component) {
  const { data, parentElement, setStateValue } = component;
  const [root, created] = figureRoot(parentElement, 'decomposition', LAYOUT);
  if (created) {
    root.state = { values: {}, applied: {}, sent: {}, inputs: {}, fitFrobenius: NaN };
    root.querySelector('.factors').open = data.factors !== false;
    root.querySelector('.factors').addEventListener('toggle', () => draw(root, root.state));
  }
  root.querySelector('.scale').hidden = data.compact === true;
  const state = root.state;
  receive(state, data);
  root.querySelector('.title-T').textContent = data.kernel.label;
  makeSliders(root, state, data, setStateValue);
  moveSliders(state, data);
  if (data.scaleWith) {
    follow(root, (figure, params) => {
      if (figure === 'decomposition' && params.prefix === data.scaleWith) {
        hearPeer(root, state, params);
      }
    });
  } else {
    unfollow(root);
  }
  draw(root, state);
  return () => unfollow(root);
}
