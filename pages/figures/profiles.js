// Decay and frequency response of a kernel: |t_k| against the lag on a semilog axis (an
// exponential is a straight line) and a log-log axis (a power law is), with the decay fit,
// and the frequency response k̂(ω). What it computes is tnn_core.analysis.profiles
// (decay_profile's magnitude and receptive field, decay_fit, frequency_response) and the
// Frequency page's decay curve (tnn_core.lab.frequency.decay_curve).
//
// Data contract. The server sends `data` once per kernel (pages/frequency.py):
//   kernels   [{label, coeffs}]: coeffs base64 of little-endian float64 [2n-1], lags
//             -(n-1)..n-1. The first is the kernel the numbers describe; the others are
//             drawn beside it for comparison (the same n)
//   causal    |t_k| (causal) or max(|t_k|, |t_-k|) against k = 0..n-1 (decay_profile)
//   fit       {start, end, floor}: decay_fit(magnitude[0..end], start, floor); end null: n-1
//   floor     a lag whose magnitude is not above floor × its kernel's max is a gap on the
//             log axes (zeros and round-off), and the curve is said to stop there
//   envelope  λ, to draw λ^k × max beside the decay (TNN's decay bias), or null
//   response  whether to draw the frequency response (magnitude and phase at
//             ω_j = 2πj/N, j = 0..N/2, N = fft_size(n))
//   follows   the name of a figure whose announced parameters (common.js announce) the
//             kernels are made from, or null: while they differ from `drawn`, the figure is
//             stale (data-stale), waiting for the server's kernels
//   drawn     [[name, value]] the parameters the kernels were made with: data-drawn
// Per draw the browser computes the magnitudes, the curves' gaps and where they stop, both
// fits, the receptive field and the frequency response. It has no controls of its own.

const TINY = 2.2250738585072014e-308;  // the smallest normal float64 (numpy's finfo.tiny)
const RECEPTIVE_SHARE = 0.99;  // profiles.RECEPTIVE_SHARE
const PLOT_HEIGHT = 300;

// -- the maths: no DOM -----------------------------------------------------------------

// profiles._magnitudes: [n] at k = 0..n-1 of coeffs [2n-1].
function decayMagnitude(coeffs, causal) {
  const n = (coeffs.length + 1) / 2;
  const magnitude = new Float64Array(n);
  for (let k = 0; k < n; k++) {
    const forward = Math.abs(coeffs[n - 1 + k]), backward = Math.abs(coeffs[n - 1 - k]);
    magnitude[k] = causal ? forward : Math.max(forward, backward);
  }
  return magnitude;
}

// decay_profile's receptive field: the smallest L with Σ_{|k|<=L} |t_k| >= 0.99 Σ |t_k|.
function receptiveField(coeffs) {
  const n = (coeffs.length + 1) / 2;
  const cumulative = new Float64Array(n);
  let sum = 0;
  for (let k = 0; k < n; k++) {
    sum += k === 0 ? Math.abs(coeffs[n - 1])
      : Math.abs(coeffs[n - 1 + k]) + Math.abs(coeffs[n - 1 - k]);
    cumulative[k] = sum;
  }
  if (!(sum > 0)) return 0;
  const needed = RECEPTIVE_SHARE * sum;
  return Math.max(0, cumulative.findIndex((c) => c >= needed));
}

// Least squares y ≈ slope x + intercept and the RMS residual (profiles._line_fit); NaN
// below two points.
function lineFit(x, y) {
  const m = x.length;
  if (m < 2) return {slope: NaN, intercept: NaN, residual: NaN};
  let mx = 0, my = 0;
  for (let i = 0; i < m; i++) { mx += x[i]; my += y[i]; }
  mx /= m; my /= m;
  let sxy = 0, sxx = 0;
  for (let i = 0; i < m; i++) { sxy += (x[i] - mx) * (y[i] - my); sxx += (x[i] - mx) ** 2; }
  const slope = sxy / sxx, intercept = my - slope * mx;
  let squares = 0;
  for (let i = 0; i < m; i++) squares += (slope * x[i] + intercept - y[i]) ** 2;
  return {slope, intercept, residual: Math.sqrt(squares / m)};
}

// profiles.decay_fit of magnitude [T] at lags 0..T-1: lags >= start whose magnitude is a
// normal float above floor × max; the power law on those >= 1.
function decayFit(magnitude, start, floor) {
  let top = 0;
  for (const v of magnitude) top = Math.max(top, v);
  const threshold = floor * Math.max(top, TINY);
  const t = [], y = [], logT = [], powerY = [];
  for (let k = 0; k < magnitude.length; k++) {
    const v = magnitude[k];
    if (k < start || !(v >= TINY) || !(v > threshold)) continue;
    t.push(k); y.push(Math.log(v));
    if (k >= 1) { logT.push(Math.log(k)); powerY.push(Math.log(v)); }
  }
  const exponential = lineFit(t, y), power = lineFit(logT, powerY);
  return {rate: Math.exp(exponential.slope), intercept: exponential.intercept,
          exponent: -power.slope, powerIntercept: power.intercept,
          expResidual: exponential.residual, powerResidual: power.residual, points: t.length};
}

// DecayFit.better_law: the law with the smaller residual, or null (under three points).
function betterLaw(fit) {
  if (fit.points < 3 || !Number.isFinite(fit.expResidual) || !Number.isFinite(fit.powerResidual)) {
    return null;
  }
  return fit.expResidual < fit.powerResidual ? 'exponential' : 'power law';
}

// The magnitudes above floor × max, the others NaN (gaps), and the lag from which every
// one is below (lab.frequency.decay_curve's roundoff_from; null: never).
function decayCurve(magnitude, floor) {
  let top = 0;
  for (const v of magnitude) top = Math.max(top, v);
  const drawn = new Float64Array(magnitude.length);
  let last = -1;
  for (let k = 0; k < magnitude.length; k++) {
    const above = magnitude[k] > floor * top;
    drawn[k] = above ? magnitude[k] : NaN;
    if (above) last = k;
  }
  return {drawn, roundoffFrom: last + 1 < magnitude.length ? last + 1 : null};
}

// profiles.frequency_response: the DTFT at ω_j = 2πj/N, j = 0..N/2, by the rfft of the
// size-N circulant column of coeffs [2n-1]; N defaults to fft_size(n).
function frequencyResponse(coeffs, N) {
  const n = (coeffs.length + 1) / 2;
  const size = N === undefined ? fftSize(n) : N;
  const column = new Float64Array(size);
  for (let k = 0; k < n; k++) column[k] = coeffs[n - 1 + k];  // lags 0..n-1
  for (let k = 1; k < n; k++) column[size - k] = coeffs[n - 1 - k];  // lag -k
  const [re, im] = rfft(column, size);
  const F = re.length;
  const omega = new Float64Array(F), magnitude = new Float64Array(F), phase = new Float64Array(F);
  for (let j = 0; j < F; j++) {
    omega[j] = 2 * Math.PI * j / size;
    magnitude[j] = Math.hypot(re[j], im[j]);
    phase[j] = Math.atan2(im[j], re[j]);
  }
  return {omega, magnitude, phase};
}

// -- the figure -------------------------------------------------------------------------

const HTML = `
<style>
  /* the plots side by side in equal shares, each on its own row below 260 px */
  .pictures > div { flex: 1 1 0; min-width: min(100%, 260px); }
  .pictures canvas { display: block; }
</style>
<div class="body">
  <div class="pictures" style="display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start;">
    <div><div class="title semilog"></div>
      <canvas class="semilog" height="${PLOT_HEIGHT}"></canvas></div>
    <div><div class="title loglog"></div>
      <canvas class="loglog" height="${PLOT_HEIGHT}"></canvas></div>
    <div class="response">
      <div class="title">Frequency response: |k̂(ω)| above, its phase (radians) below</div>
      <canvas class="magnitude" height="${Math.round(PLOT_HEIGHT * 0.6)}"></canvas>
      <canvas class="phase" height="${Math.round(PLOT_HEIGHT * 0.4)}"></canvas></div>
  </div>
  <div class="legend"></div>
  <p class="numbers" style="margin: 0.25rem 0;"></p>
</div>
<p class="caption"></p>`;

// Kernel i: colour and line style (common.js LINE_STYLES) both differ from kernel i − 1, so
// the kernels compared (activations, settings) are told apart without colour too.
const COLOURS = ['series-1', 'series-2', 'series-3', 'series-4'];
const FIT = 'muted', ENVELOPE = 'series-5';
const FIGURES = new WeakMap();  // root -> its state across reruns

function rangeFrom(first, last) {
  const out = [];
  for (let k = first; k <= last; k++) out.push(k);
  return out;
}

// The kernels' curves, fits and numbers: everything drawn, as plain values.
function profile(data) {
  const kernels = data.kernels.map(({label, coeffs}) => {
    const t = decodeArray(coeffs, 'float64');
    const magnitude = decayMagnitude(t, data.causal);
    return {label, coeffs: t, magnitude, ...decayCurve(magnitude, data.floor)};
  });
  const main = kernels[0];
  const n = main.magnitude.length;
  const end = data.fit.end === null ? n - 1 : Math.min(data.fit.end, n - 1);
  const fit = decayFit(main.magnitude.subarray(0, end + 1), data.fit.start, data.fit.floor);
  let lowest = Infinity;  // lines beside the curve stop at its smallest drawn value
  for (const v of main.drawn) if (v > 0) lowest = Math.min(lowest, v);
  return {kernels, main, n, end, fit, lowest, receptiveField: receptiveField(main.coeffs),
          response: data.response ? frequencyResponse(main.coeffs) : null};
}

function format(v, digits) {
  return Number.isFinite(v) ? v.toFixed(digits) : '—';
}

function sized(canvas) {
  canvas.width = Math.max(200, canvas.parentElement.clientWidth || 420);  // its panel's share
  return canvas;
}

// Kernel i's colour and dash: both differ from kernel i − 1's.
const kernelColour = (i) => COLOURS[i % COLOURS.length];
const kernelDash = (i) => LINE_STYLES[i % LINE_STYLES.length].dash;

// The semilog and log-log decay plots: every kernel's curve (the one described on top),
// its fits over lags data.fit.start … p.end and the envelope λ^t · max, the guides stopping
// at the curve's smallest drawn value.
function drawDecay(root, data, p) {
  const label = data.causal ? '|k[t]|' : 'max(|k[t]|, |k[−t]|)';
  const lags = Float64Array.from(rangeFrom(0, p.n - 1));
  const curves = p.kernels.map((k, i) => ({x: lags, y: k.drawn, colour: kernelColour(i),
                                           dash: kernelDash(i)}))
    .reverse();  // the kernel described last, on top
  const clip = (v) => (v >= p.lowest ? v : NaN);
  const fitted = rangeFrom(Math.max(data.fit.start, 0), p.end);
  const marks = p.end >= data.fit.start ? [{x: p.end, label: `fit ends, t = ${p.end}`}] : [];
  const semilog = [...curves];
  if (Number.isFinite(p.fit.rate)) {
    const line = (t) => clip(Math.exp(p.fit.intercept) * p.fit.rate ** t);
    semilog.push({x: fitted, y: fitted.map(line), colour: FIT, dash: [9, 4], guide: true});
  }
  const top = p.main.magnitude.reduce((a, b) => Math.max(a, b), 0);
  if (data.envelope !== null) {
    semilog.push({x: lags, y: Array.from(lags, (t) => clip(top * data.envelope ** t)),
                  colour: ENVELOPE, dash: [2, 3], guide: true});
  }
  root.querySelector('.title.semilog').textContent =
    `${label}, semilog: a straight line is an exponential`;
  drawLines(sized(root.querySelector('canvas.semilog')), semilog,
            {logY: true, xLabel: 'lag t', yLabel: '',
             marks: [{x: p.receptiveField, label: `99 % of Σ within ${p.receptiveField}`}]});
  const loglog = [...curves];
  const powerLags = fitted.filter((t) => t >= 1);
  if (Number.isFinite(p.fit.exponent)) {
    const line = (t) => clip(Math.exp(p.fit.powerIntercept) * t ** -p.fit.exponent);
    loglog.push({x: powerLags, y: powerLags.map(line), colour: FIT, dash: [9, 4], guide: true});
  }
  root.querySelector('.title.loglog').textContent =
    `${label}, log-log: a straight line is a power law`;
  drawLines(sized(root.querySelector('canvas.loglog')), loglog,
            {logX: true, logY: true, xLabel: 'lag t', yLabel: '', marks});
}

// The frequency response r (frequencyResponse): its magnitude above, its phase below.
function drawResponse(root, r) {
  drawLines(sized(root.querySelector('canvas.magnitude')),
            [{x: r.omega, y: r.magnitude, colour: COLOURS[0]}],
            {xLabel: 'ω (radians, 0 … π)', yLabel: ''});
  drawLines(sized(root.querySelector('canvas.phase')),
            [{x: r.omega, y: r.phase, colour: COLOURS[1]}],
            {xLabel: 'ω (radians, 0 … π)', yLabel: ''});
}

// The legend (a key per kernel, the fits, the envelope), the numbers of the kernel
// described and the caption.
function writeText(root, data, p) {
  const legend = p.kernels.map((k, i) => [kernelColour(i), kernelDash(i),
                                          i === 0 ? `${k.label} (this setting)` : k.label]);
  legend.push([FIT, [9, 4], 'the fits (grey, dashed)']);
  if (data.envelope !== null) legend.push([ENVELOPE, [2, 3], `λ^t · max, λ = ${data.envelope}`]);
  root.querySelector('.legend').replaceChildren(...legend.map(([swatch, style, text]) =>
    legendKey(text, swatch, style)));
  const law = betterLaw(p.fit);
  const fitRange = `lags ${data.fit.start} … ${p.end} above `
    + `${data.fit.floor.toExponential(0)} × max`;
  root.querySelector('.numbers').textContent = `${p.main.label}: effective λ `
    + `${format(p.fit.rate, 4)} (|k[t]| ≈ c λ^t) and power-law exponent p `
    + `${format(p.fit.exponent, 2)} (|k[t]| ≈ c t^−p), fitted on ${fitRange}: `
    + (law === null ? 'too few lags to say which fits better. ' : `the ${law} fits better. `)
    + `99 % of Σ|k[t]| lies within |t| ≤ ${p.receptiveField}. `
    + (p.main.roundoffFrom === null ? 'It stays above round-off up to t = n − 1.'
      : `From t = ${p.main.roundoffFrom} on it is below ${data.floor.toExponential(0)} × max: `
        + 'round-off, not decay.');
  root.querySelector('.caption').textContent = `Each curve stops where it falls below `
    + `${data.floor.toExponential(0)} × its own max (float64 round-off). Semilog: a straight `
    + 'line is an exponential; log-log: a straight line is a power law, its slope −p.';
}

function draw(root, fig) {
  const data = fig.data, p = profile(data);
  // the response panel shown or not first: the panels' shares, and so the canvases' widths
  root.querySelector('.response').style.display = data.response ? '' : 'none';
  drawDecay(root, data, p);
  if (p.response !== null) drawResponse(root, p.response);
  writeText(root, data, p);
  markDrawn(root, data.drawn);
  fig.drawnParams = Object.fromEntries(data.drawn.map(([k, v]) => [k, String(v)]));
  restale(root, fig);
}

// Stale while the followed figure shows parameters these kernels were not made for.
function restale(root, fig) {
  const heard = fig.heard, mine = fig.drawnParams || {};
  const stale = heard !== null && Object.keys(mine).some(
    (k) => heard[k] !== undefined && heard[k] !== null && String(heard[k]) !== mine[k]);
  markStale(root.querySelector('.body'), stale);
}

export default function (component) {
  const {data, parentElement} = component;
  const [root] = figureRoot(parentElement, 'profiles', HTML);
  let fig = FIGURES.get(root);
  if (fig === undefined) {
    fig = {data, heard: null, drawnParams: null};
    FIGURES.set(root, fig);
  }
  fig.data = data;
  if (data.follows) {
    follow(root, (figure, params) => {
      if (figure !== data.follows) return;
      fig.heard = params;
      restale(root, fig);
    });
  } else {
    unfollow(root);
  }
  draw(root, fig);
  return () => unfollow(root);
}
