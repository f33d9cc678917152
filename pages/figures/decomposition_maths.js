// Figure "decomposition", its maths: T ≈ band + W A Wᵀ (SKI to go Faster, Algorithm 1) in
// float64, plain functions, no DOM. What tnn_core.analysis.decompose computes for the
// "sample" method: the band lags, the smooth continuation k̃, A's coefficients
// a_l = k̃(l h), W, the band taps optimal given W A Wᵀ and ‖T − band − W A Wᵀ‖_F / ‖T‖_F
// (tests/test_figure_decomposition.py holds the two to 1e-9).
//
// One of the figure's parts (pages/figures/__init__.py PARTS): script("decomposition") puts
// it after the shared fft.js and common.js and before decomposition.js, the figure itself,
// which draws what decompose() returns.
//
// Letters: n length, r rank (inducing points), m band lags, l a lag of A.

// t [2n-1] at λ: t_k = base_k λ^|k| + extra_k (base, extra [2n-1]).
function kernelAt(base, extra, decay) {
  const n = (base.length + 1) / 2, t = new Float64Array(2 * n - 1);
  for (let k = -(n - 1); k < n; k++) {
    t[n - 1 + k] = base[n - 1 + k] * Math.pow(decay, Math.abs(k)) + extra[n - 1 + k];
  }
  return t;
}

// The band's lags [lo, hi], contiguous: |k| <= m//2, or 0 <= k < m when causal; |k| < n
// (gram.band_lags).
function bandLags(n, band, causal) {
  if (causal) return [0, Math.min(band, n) - 1];
  const half = Math.min(Math.floor(band / 2), n - 1);
  return [-half, half];
}

// k̃: t with the band's lags replaced by the straight line between the lags just outside
// it (0 beyond ±(n-1)) (decompose.smooth_continuation).
function smoothContinuation(t, lo, hi) {
  const n = (t.length + 1) / 2, out = Float64Array.from(t);
  const a = lo - 1, b = hi + 1;  // the anchoring lags
  const left = a >= -(n - 1) ? t[n - 1 + a] : 0, right = b <= n - 1 ? t[n - 1 + b] : 0;
  for (let k = lo; k <= hi; k++) out[n - 1 + k] = left + (k - a) / (b - a) * (right - left);
  return out;
}

// numpy.interp(x, [-(n-1) .. n-1], values) for x on that grid.
function interpolateLags(x, values, n) {
  if (x >= n - 1) return values[2 * n - 2];
  const lag = Math.floor(x), j = n - 1 + lag;
  if (lag === x) return values[j];
  return (values[j + 1] - values[j]) * (x - lag) + values[j];
}

// a_l = k̃(l h), l = -(r-1) .. r-1, at a[r-1+l] (decompose.sample_inducing_coeffs).
function sampleInducingCoeffs(continued, r) {
  const n = (continued.length + 1) / 2, h = (n - 1) / (r - 1), a = new Float64Array(2 * r - 1);
  for (let l = -(r - 1); l < r; l++) {
    const x = Math.min(Math.max(l * h, -(n - 1)), n - 1);  // rounding must not leave the grid
    a[r - 1 + l] = interpolateLags(x, continued, n);
  }
  return a;
}

// W [n, r] as SKI keeps it (core.interpolation.interpolation): row i has w0[i] at column
// index[i] and w1[i] at index[i] + 1; in integers so the fraction is exact.
function interpolation(n, r) {
  const index = new Int32Array(n), w0 = new Float64Array(n), w1 = new Float64Array(n);
  const den = Math.max(n - 1, 1);
  for (let i = 0; i < n; i++) {
    const num = i * (r - 1);
    const left = Math.min((num - num % den) / den, r - 2);
    const frac = (num - left * den) / den;
    index[i] = left; w0[i] = 1 - frac; w1[i] = frac;
  }
  return { n, r, index, w0, w1 };
}

// (W A Wᵀ)[i, j] with A[p, q] = a[r-1+p-q]: row i of W A, read at j's two columns.
function lowRankEntry(W, a, i, j) {
  const d = W.r - 1 + W.index[i] - W.index[j];
  const left = W.w0[i] * a[d] + W.w1[i] * a[d + 1];  // (W A)[i, index[j]]
  const right = W.w0[i] * a[d - 1] + W.w1[i] * a[d];  // (W A)[i, index[j] + 1]
  return W.w0[j] * left + W.w1[j] * right;
}

// The band taps optimal given W A Wᵀ: β_k = t_k − μ_k, μ_k the mean of W A Wᵀ on diagonal
// k (decompose.Decomposition). Returns B's lags [2n-1], zero off the band.
function bandTaps(t, W, a, lo, hi) {
  const n = W.n, band = new Float64Array(2 * n - 1);
  for (let k = lo; k <= hi; k++) {
    let sum = 0;
    for (let i = Math.max(0, k); i <= Math.min(n - 1, n - 1 + k); i++) sum += lowRankEntry(W, a, i, i - k);
    band[n - 1 + k] = t[n - 1 + k] - sum / (n - Math.abs(k));
  }
  return band;
}

// ‖T‖_F² = Σ_k (n − |k|) t_k² (errors.frobenius_sq).
function frobeniusSquared(t) {
  const n = (t.length + 1) / 2;
  let sum = 0;
  for (let k = -(n - 1); k < n; k++) sum += (n - Math.abs(k)) * t[n - 1 + k] * t[n - 1 + k];
  return sum;
}

// ‖R‖_F and max |R| of R = (T − B) − W A Wᵀ, summed entry by entry, so a small error is
// as exact as a large one (no difference of large squares). R is persymmetric, R[i, j] =
// R[n-1-j, n-1-i] (Toeplitz parts, and W A Wᵀ on a symmetric grid), so row i is read up to
// the anti-diagonal only, j <= n-1-i, the entries before it counted twice: O(n (n/2 + r)).
function residualNorms(smooth, W, a) {
  const n = W.n, r = W.r, row = new Float64Array(r);
  const { index, w0, w1 } = W;
  let sum = 0, largest = 0;
  for (let i = 0; i < n; i++) {
    for (let q = 0; q < r; q++) {  // (W A)[i, q] = w0 a[p_i − q] + w1 a[p_i + 1 − q]
      const d = r - 1 + index[i] - q;
      row[q] = w0[i] * a[d] + w1[i] * a[d + 1];
    }
    const base = n - 1 + i, last = n - 1 - i;  // smooth[base − j] = (T − B)[i, j]
    let twice = 0;
    for (let j = 0; j < last; j++) {
      const e = smooth[base - j] - (w0[j] * row[index[j]] + w1[j] * row[index[j] + 1]);
      twice += e * e;
      if (e > largest) largest = e; else if (-e > largest) largest = -e;
    }
    const e = smooth[base - last] - (w0[last] * row[index[last]] + w1[last] * row[index[last] + 1]);
    sum += 2 * twice + e * e;
    if (Math.abs(e) > largest) largest = Math.abs(e);
  }
  return { frobenius: Math.sqrt(sum), largest };
}

// Everything the figure draws at one setting. fittedA: A's coefficients [2r-1] of "fit"
// (from the server), or null for "sample". band and rank within what n allows (the
// kernel's limits, tnn_core.analysis.decompose.decomposition_limits: r in [2, n], m in
// [1, 2n-2]); the figure clamps before it calls.
function decompose(t, band, rank, causal, fittedA) {
  const n = (t.length + 1) / 2;
  if (n < 2) throw new RangeError(`n must be >= 2 to decompose; got n = ${n}`);
  if (rank < 2 || rank > n || band < 1 || band > 2 * n - 2) {
    throw new RangeError(`rank must be in [2, ${n}] and band in [1, ${2 * n - 2}]; ` +
      `got rank = ${rank}, band = ${band}`);
  }
  const [lo, hi] = bandLags(n, band, causal);
  const continued = smoothContinuation(t, lo, hi);
  const a = fittedA || sampleInducingCoeffs(continued, rank);
  const W = interpolation(n, rank);
  const bandCoeffs = bandTaps(t, W, a, lo, hi);
  const smooth = new Float64Array(2 * n - 1);  // T − B
  for (let k = 0; k < 2 * n - 1; k++) smooth[k] = t[k] - bandCoeffs[k];
  const norms = residualNorms(smooth, W, a);
  const norm = Math.sqrt(frobeniusSquared(t));
  return {
    n, band, rank, causal, lo, hi, t, continued, a, W, bandCoeffs, smooth,
    spacing: (n - 1) / (rank - 1),
    limit: t.reduce((m, v) => Math.max(m, Math.abs(v)), 0),  // max |t_k|
    residualLimit: norms.largest,
    relativeFrobenius: norm > 0 ? norms.frobenius / norm : NaN,
    T: (i, j) => t[n - 1 + i - j],
    B: (i, j) => bandCoeffs[n - 1 + i - j],
    L: (i, j) => lowRankEntry(W, a, i, j),
    R: (i, j) => smooth[n - 1 + i - j] - lowRankEntry(W, a, i, j),
  };
}
