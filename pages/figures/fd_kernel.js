// The FD kernel from its frequency response (FD-TNN, "SKI to go Faster" §3.3.2 and
// Algorithm 2): an RPE MLP of the frequency gives the response on the grid
// ω_j = 2πj/N, j = 0..N/2, N = fft_size(n), and the inverse FFT gives the kernel k[t].
// What the browser computes is tnn_core.analysis.fd_response, which reads one seeded
// one-channel operators.FD.
//
// Data contract. The server sends `data` once per n, depth and seed (pages/frequency.py):
//   n, N         the length and its FFT size fft_size(n)
//   depth        hidden layers of the MLP (OperatorConfig.rpe_layers)
//   widths       [W] the MLP widths offered (tnn_core.lab.frequency.WIDTHS), ascending
//   weights      {width: base64 of little-endian float32}: RpeWeights.parameters of
//                tnn_core.lab.frequency for each offered width, in its order: input weight
//                [e], input bias [e], per hidden layer weight [e, e] (row = output unit) and
//                bias [e], causal output weight [e] and bias [1] (R), bidirectional output
//                weight [2, e] and bias [2] (real and imaginary halves)
//   activations  the activations offered ("gelu", "silu", "relu")
//   activation, smooth, causal   the settled choices (a name, bools); smooth: the MLP reads
//                cos ω (fd_input "cosine") instead of ω
//   locked       controls a lesson fixed, shown disabled
//   drawn        [[name, value]] the server's settings (n, depth, seed), for data-drawn
//   controls     [the width slider's spec] (pages/figures.Control)
// Per frame (a width drag, a choice) the browser evaluates the MLP on the N/2 + 1
// frequencies with the RMS norm between layers (core/rpe.py), builds the response (causal:
// R and -H{R} by the Hilbert construction of core/spectrum.py; else both halves, the
// imaginary one 0 at ω = 0 and π) and the kernel at lags -(n-1)..n-1, and draws both.
// On release it sets the state values width (number), activation (name), smooth and
// causal (bools). After each draw: data-drawn = activation=..&width=..&smooth=..&causal=..
// &n=..&depth=..&seed=.., and the same parameters are announced (common.js) to a figure
// that follows this one (the decay figure, stale until the server's kernels for them).

const PLOT_HEIGHT = 300;
const KERNEL_LAGS = 48;  // the kernel is drawn at lags -48..48, where its two sides differ
const RMS_EPS = 1e-8;  // core.rpe.simple_rms_norm's eps

// -- the maths: no DOM -----------------------------------------------------------------

// erf(x) to double precision: W. J. Cody, "Rational Chebyshev approximations for the error
// function", Math. Comp. 23 (1969), as in Netlib's specfun CALERF: x·P/Q on |x| <= 0.46875,
// erfc = exp(-x²)·P/Q on (0.46875, 4], the asymptotic form beyond.
const ERF_A = [3.16112374387056560e0, 1.13864154151050156e2, 3.77485237685302021e2,
  3.20937758913846947e3, 1.85777706184603153e-1];
const ERF_B = [2.36012909523441209e1, 2.44024637934444173e2, 1.28261652607737228e3,
  2.84423683343917062e3];
const ERF_C = [5.64188496988670089e-1, 8.88314979438837594e0, 6.61191906371416295e1,
  2.98635138197400131e2, 8.81952221241769090e2, 1.71204761263407058e3, 2.05107837782607147e3,
  1.23033935479799725e3, 2.15311535474403846e-8];
const ERF_D = [1.57449261107098347e1, 1.17693950891312499e2, 5.37181101862009858e2,
  1.62138957456669019e3, 3.29079923573345963e3, 4.36261909014324716e3, 3.43936767414372164e3,
  1.23033935480374942e3];
const ERF_P = [3.05326634961232344e-1, 3.60344899949804439e-1, 1.25781726111229246e-1,
  1.60837851487422766e-2, 6.58749161529837803e-4, 1.63153871373020978e-2];
const ERF_Q = [2.56852019228982242e0, 1.87295284992346725e0, 5.27905102951428412e-1,
  6.05183413124413191e-2, 2.33520497626869185e-3];
const ONE_OVER_ROOT_PI = 5.6418958354775628695e-1;

function erf(x) {
  const y = Math.abs(x);
  if (Number.isNaN(x)) return NaN;
  if (y <= 0.46875) {
    const z = y > 1.11e-16 ? y * y : 0;
    let num = ERF_A[4] * z, den = z;
    for (let i = 0; i < 3; i++) { num = (num + ERF_A[i]) * z; den = (den + ERF_B[i]) * z; }
    return x * (num + ERF_A[3]) / (den + ERF_B[3]);
  }
  let tail;  // erfc(y)
  if (y <= 4) {
    let num = ERF_C[8] * y, den = y;
    for (let i = 0; i < 7; i++) { num = (num + ERF_C[i]) * y; den = (den + ERF_D[i]) * y; }
    tail = (num + ERF_C[7]) / (den + ERF_D[7]);
  } else if (y >= 26.543) {
    tail = 0;
  } else {
    const z = 1 / (y * y);
    let num = ERF_P[5] * z, den = z;
    for (let i = 0; i < 4; i++) { num = (num + ERF_P[i]) * z; den = (den + ERF_Q[i]) * z; }
    tail = (ONE_OVER_ROOT_PI - z * (num + ERF_P[4]) / (den + ERF_Q[4])) / y;
  }
  if (tail !== 0) {  // exp(-y²) split so that y² is exact in its leading part
    const lead = Math.trunc(y * 16) / 16, rest = (y - lead) * (y + lead);
    tail *= Math.exp(-lead * lead) * Math.exp(-rest);
  }
  const value = (0.5 - tail) + 0.5;
  return x < 0 ? -value : value;
}

// The activations as torch computes them in float64 (F.relu, F.silu, F.gelu exact).
const ACTIVATIONS = {
  relu: (x) => (x > 0 ? x : 0),
  silu: (x) => x / (1 + Math.exp(-x)),
  gelu: (x) => x * 0.5 * (1 + erf(x * Math.SQRT1_2)),
};

// The MLP's layers from RpeWeights.parameters [P] (see the contract above).
function rpeLayers(parameters, width, depth) {
  const e = width;
  let at = 0;
  const take = (count) => {
    at += count;
    return parameters.subarray(at - count, at);
  };
  const layers = {width: e, inWeight: take(e), inBias: take(e), hidden: []};
  for (let l = 0; l < depth; l++) layers.hidden.push({weight: take(e * e), bias: take(e)});
  layers.causal = {weight: take(e), bias: take(1)};
  layers.bidirectional = {weight: take(2 * e), bias: take(2)};
  if (at !== parameters.length) {
    throw new Error(`width ${e}, depth ${depth}: expected ${at} parameters; `
                    + `got ${parameters.length}`);
  }
  return layers;
}

// h [P, e] row by row: act(simple_rms_norm(h)) in place.
function normaliseAndActivate(h, P, e, act) {
  const scale = Math.pow(e, -0.5);
  for (let p = 0; p < P; p++) {
    let squares = 0;
    for (let i = 0; i < e; i++) squares += h[p * e + i] * h[p * e + i];
    const divisor = Math.sqrt(squares) * scale + RMS_EPS;
    for (let i = 0; i < e; i++) h[p * e + i] = act(h[p * e + i] / divisor);
  }
}

// a [P, e] -> a W^T + b [P, out] for W [out, e].
function linear(a, P, e, weight, bias) {
  const out = bias.length;
  const y = new Float64Array(P * out);
  for (let p = 0; p < P; p++) {
    for (let o = 0; o < out; o++) {
      let sum = 0;
      for (let i = 0; i < e; i++) sum += a[p * e + i] * weight[o * e + i];
      y[p * out + o] = sum + bias[o];
    }
  }
  return y;
}

// RpeMLP.forward (core/rpe.py) at inputs x [P]: outputs [out][P], out = 1 (causal) or 2.
function rpeOutputs(layers, x, activation, causal) {
  const act = ACTIVATIONS[activation];
  if (!act) throw new Error(`activation must be one of relu, silu, gelu; got ${activation}`);
  const P = x.length, e = layers.width;
  let h = new Float64Array(P * e);  // (P, e)
  for (let p = 0; p < P; p++) {
    for (let i = 0; i < e; i++) h[p * e + i] = x[p] * layers.inWeight[i] + layers.inBias[i];
  }
  for (const layer of layers.hidden) {
    normaliseAndActivate(h, P, e, act);
    h = linear(h, P, e, layer.weight, layer.bias);  // (P, e)
  }
  normaliseAndActivate(h, P, e, act);
  const last = causal ? layers.causal : layers.bidirectional;
  const y = linear(h, P, e, last.weight, last.bias);  // (P, out)
  const out = last.bias.length;
  const outputs = [];
  for (let o = 0; o < out; o++) {
    const column = new Float64Array(P);
    for (let p = 0; p < P; p++) column[p] = y[p * out + o];
    outputs.push(column);
  }
  return outputs;
}

// core.spectrum.kernel_from_spectrum: lags -(n-1)..n-1 [2n-1] of irfft(spectrum, N).
function kernelFromSpectrum(re, im, n, N) {
  const c = irfft(re, im, N);  // (N,)
  const kernel = new Float64Array(2 * n - 1);
  for (let t = 1; t < n; t++) kernel[n - 1 - t] = c[N - t];  // lag -t
  for (let t = 0; t < n; t++) kernel[n - 1 + t] = c[t];
  return kernel;
}

// analysis.fd_response for the MLP `layers`: {omega [F], real [F], imag [F], kernel [2n-1],
// spectralKernel [2n-1]}. Causal (Algorithm 2): the spectrum rfft(irfft(R)·w) of the MLP's
// R = MLP(input) has real part R (to round-off) and imaginary part -H{R}; the kernel's lags
// 0..n-1 are irfft(R)·(1 at 0, 2 after) and its negative lags exact zeros (FD.kernel);
// spectralKernel goes through the spectrum, as the forward applies it. Bidirectional
// (§3.3.2): real and imag from the MLP, imag weighted by sin ω when fed cos ω and set to 0
// at ω = 0 and π.
function fdResponse(layers, activation, smooth, causal, n, N) {
  const F = N / 2 + 1;
  const omega = new Float64Array(F);
  for (let j = 0; j < F; j++) omega[j] = j * (2 * Math.PI / N);
  const input = smooth ? omega.map(Math.cos) : omega;
  const outputs = rpeOutputs(layers, input, activation, causal);
  if (causal) {
    const even = irfft(outputs[0], new Float64Array(F), N);  // (N,) even: h[t] = h[N - t]
    const column = new Float64Array(N);  // causal_kernel: weights 1, 2 .. 2, 1, then 0
    column[0] = even[0];
    for (let t = 1; t < N / 2; t++) column[t] = 2 * even[t];
    column[N / 2] = even[N / 2];
    const [specRe, specIm] = rfft(column, N);  // (F,) R - i H{R}
    const kernel = new Float64Array(2 * n - 1);
    for (let t = 0; t < n; t++) kernel[n - 1 + t] = (t === 0 ? 1 : 2) * even[t];
    return {omega, real: specRe, imag: specIm, kernel,
            spectralKernel: kernelFromSpectrum(specRe, specIm, n, N)};
  }
  const [real, half] = outputs;
  const imag = new Float64Array(F);
  for (let j = 1; j < F - 1; j++) imag[j] = half[j] * (smooth ? Math.sin(omega[j]) : 1);
  const kernel = kernelFromSpectrum(real, imag, n, N);
  return {omega, real, imag, kernel, spectralKernel: kernel};
}

// max |k[t]| over t < 0 of kernel [2n-1], relative to max |k[t]| (0 for the zero kernel).
function negativeShare(kernel) {
  const n = (kernel.length + 1) / 2;
  let negative = 0, top = 0;
  for (let a = 0; a < kernel.length; a++) {
    top = Math.max(top, Math.abs(kernel[a]));
    if (a < n - 1) negative = Math.max(negative, Math.abs(kernel[a]));
  }
  return top > 0 ? negative / top : 0;
}

// -- the figure -------------------------------------------------------------------------

const HTML = `
<style>
  /* two plots side by side in equal shares, each on its own row below 2 × 320 px */
  .pictures > .panel { flex: 1 1 0; min-width: min(100%, 320px); }
  .pictures canvas { display: block; }
</style>
<div class="controls"></div>
<div class="pictures" style="display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start;">
  <div class="panel"><div class="title response"></div>
    <canvas class="response" width="480" height="${PLOT_HEIGHT}"></canvas>
    <div class="legend response"></div></div>
  <div class="panel"><div class="title kernel"></div>
    <canvas class="kernel" width="480" height="${PLOT_HEIGHT}"></canvas>
    <div class="legend kernel"></div></div>
</div>
<p class="numbers" style="margin: 0.25rem 0;"></p>
<p class="caption"></p>`;

// The two parts, told apart by colour and by line style (solid, dashed) as their keys show.
const LINES = [{colour: 'series-1', dash: LINE_STYLES[0].dash},
               {colour: 'series-2', dash: LINE_STYLES[1].dash}];
const FIGURES = new WeakMap();  // root -> its state across reruns
const HELP = {
  activation: 'The MLP\'s activation. Theorems 2-4 tie its smoothness to how fast the kernel '
    + 'decays in time.',
  smooth: 'OperatorConfig(fd_input="cosine"). Off (Algorithm 2): the MLP reads ω in [0, π]; on '
    + 'the circle the response then has kinks (causal) or jumps (bidirectional) at ω = 0 and '
    + 'π. On: it reads cos ω, and the imaginary part is weighted by sin ω, so the response is '
    + 'as smooth as the MLP.',
  causal: 'On: Algorithm 2, the real part from the MLP, the imaginary part from the Hilbert '
    + 'transform. Off: §3.3.2, the MLP gives both parts.',
};

function labelled(container, label, help, html) {
  const box = document.createElement('label');
  box.className = 'control';
  box.style.minWidth = '9em';
  box.title = help;
  box.innerHTML = `<span class="label"></span>${html}`;
  box.querySelector('.label').textContent = label;
  container.appendChild(box);
  return box.querySelector('select, input');
}

// Legend keys (common.js legendKey): each a sample of its line, in its colour and style.
function legend(box, entries) {
  box.replaceChildren(...entries.map(([line, text]) => legendKey(text, line.colour, line.dash)));
}

function build(root, data) {
  const fig = {values: {}, sent: {}, inputs: {}, layers: {}, data, send: null};
  const controls = root.querySelector('.controls');
  const select = labelled(controls, 'Activation', HELP.activation,
                          '<select name="activation"></select>');
  for (const name of data.activations) select.add(new Option(name, name));
  const choose = () => { fig.values.activation = select.value; draw(root, fig); };
  select.addEventListener('input', choose);
  select.addEventListener('change', () => { choose(); fig.send('activation', select.value); });
  fig.inputs.activation = select;
  const widths = data.widths;
  const spec = data.controls.find((c) => c.name === 'width');
  fig.inputs.width = slider(controls, {
    ...spec, min: 0, max: widths.length - 1, step: 1,
    value: Math.max(0, widths.indexOf(spec.value)),
    format: (i) => String(widths[i]),
  }, (i) => { fig.values.width = widths[i]; draw(root, fig); },
  (i) => fig.send('width', widths[i]));
  for (const [name, label] of [['smooth', 'Feed the MLP cos ω'], ['causal', 'Causal']]) {
    const box = labelled(controls, label, HELP[name], `<input type="checkbox" name="${name}"
                         style="width: auto; align-self: flex-start;">`);
    const flip = () => { fig.values[name] = box.checked; draw(root, fig); };
    box.addEventListener('input', flip);
    box.addEventListener('change', () => { flip(); fig.send(name, box.checked); });
    fig.inputs[name] = box;
  }
  return fig;
}

// Take the server's data: a value the server changed (a new link) replaces the browser's;
// one it only echoes leaves the controls as they are.
function receive(root, fig, data) {
  if (fig.data.n !== data.n || fig.data.depth !== data.depth
      || JSON.stringify(fig.data.drawn) !== JSON.stringify(data.drawn)) fig.layers = {};
  fig.data = data;
  const asked = data.controls.find((c) => c.name === 'width').value;
  const width = data.widths.reduce((a, b) => (Math.abs(b - asked) < Math.abs(a - asked) ? b : a));
  const server = {activation: data.activation, smooth: data.smooth, causal: data.causal, width};
  for (const [name, value] of Object.entries(server)) {
    if (value === fig.sent[name]) continue;
    fig.sent[name] = value;
    fig.values[name] = value;
    const input = fig.inputs[name];
    if (name === 'width') {
      input.value = String(data.widths.indexOf(value));
      input.parentElement.querySelector('output').textContent = String(value);
    } else if (name === 'activation') input.value = value;
    else input.checked = value;
  }
  for (const [name, input] of Object.entries(fig.inputs)) {
    input.disabled = data.locked.includes(name);
  }
  draw(root, fig);
}

function layersFor(fig, width) {
  if (!(width in fig.layers)) {
    const parameters = decodeArray(fig.data.weights[String(width)], 'float32');
    fig.layers[width] = rpeLayers(parameters, width, fig.data.depth);
  }
  return fig.layers[width];
}

function sized(canvas) {
  canvas.width = Math.max(200, canvas.parentElement.clientWidth || 480);  // its panel's share
  return canvas;
}

function draw(root, fig) {
  const data = fig.data, v = fig.values, n = data.n, N = data.N;
  const response = fdResponse(layersFor(fig, v.width), v.activation, v.smooth, v.causal, n, N);
  const input = v.smooth ? 'cos ω' : 'ω';
  root.querySelector('.title.response').textContent = v.causal
    ? 'The Hilbert pair: the response on the operator\'s grid'
    : 'The response on the operator\'s grid, both parts from the MLP';
  drawLines(sized(root.querySelector('canvas.response')),
            [{x: response.omega, y: response.real, ...LINES[0]},
             {x: response.omega, y: response.imag, ...LINES[1]}],
            {xLabel: 'ω (radians, 0 … π)', yLabel: ''});
  legend(root.querySelector('.legend.response'), v.causal
    ? [[LINES[0], `R(ω), the MLP of ${input}`],
       [LINES[1], '−H{R}(ω), the Hilbert transform']]
    : [[LINES[0], `real part, the MLP of ${input}`],
       [LINES[1], `imaginary part, ${v.smooth ? 'sin ω · ' : ''}the MLP of ${input}; `
                    + '0 at 0 and π']]);
  const shown = Math.min(n - 1, KERNEL_LAGS);
  const lags = new Float64Array(2 * shown + 1);
  for (let a = 0; a < lags.length; a++) lags[a] = a - shown;
  root.querySelector('.title.kernel').textContent = 'The kernel k[t], '
    + (v.causal ? 'causal' : 'two-sided')
    + (shown < n - 1 ? `: lags −${shown} … ${shown} of ±${n - 1}` : '');
  drawLines(sized(root.querySelector('canvas.kernel')),
            [{x: lags, y: response.kernel.subarray(n - 1 - shown, n + shown), ...LINES[0]}],
            {xLabel: 'lag t', yLabel: '', marks: n > 1 ? [{x: 0, label: 't = 0'}] : []});
  legend(root.querySelector('.legend.kernel'), [[LINES[0], v.causal
    ? 'k[t]; every t < 0 is exactly 0' : 'k[t], both sides from the inverse FFT']]);
  const leak = negativeShare(response.spectralKernel);
  root.querySelector('.numbers').textContent = `N = ${N} = fft_size(${n}) frequencies, the `
    + `smallest even 5-smooth size ≥ 2n; the MLP has width ${v.width} and depth ${data.depth}. `
    + (v.causal ? `max |k[t]| at t < 0: 0 exactly; through the spectrum, as the forward `
      + `applies it, ${leak.toExponential(1)} × max |k|, round-off.` : '');
  root.querySelector('.caption').textContent = v.causal
    ? 'Causal (Algorithm 2): the MLP made only the real part R, the Hilbert transform made the '
      + 'imaginary part, and every lag left of t = 0 is exactly zero. Switch Causal off and the '
      + 'MLP makes both parts: the kernel gets a left half.'
    : 'Two-sided (§3.3.2): the MLP makes both parts, and the kernel has a left half. Fed ω, '
      + 'the imaginary part jumps to 0 at ω = 0 and π and the tails die slowly; feed it cos ω '
      + 'and watch them shrink.';
  const params = [...fig.params(), ...data.drawn];
  markDrawn(root, params);
  announce('fd_kernel', Object.fromEntries(params.map(([k, value]) => [k, String(value)])));
}

export default function (component) {
  const {data, setStateValue, parentElement} = component;
  const [root] = figureRoot(parentElement, 'fd_kernel', HTML);
  let fig = FIGURES.get(root);
  if (fig === undefined) {
    fig = build(root, data);
    FIGURES.set(root, fig);
  }
  fig.params = () => [['activation', fig.values.activation], ['width', fig.values.width],
                      ['smooth', fig.values.smooth], ['causal', fig.values.causal]];
  fig.send = (name, value) => { fig.sent[name] = value; setStateValue(name, value); };
  receive(root, fig, data);
}
