// The FFT in the browser, float64: what numpy.fft and torch.fft compute, for the
// figures' arithmetic (frequency responses, the circulant product). Sizes whose only
// prime factors are 2, 3 and 5 (fftSize picks them, as tnn_core.core.toeplitz.fft_size
// does) go through a mixed-radix Cooley-Tukey recursion; any other size through
// Bluestein's chirp-z transform on a power of two. Arrays are Float64Array pairs
// (re, im); nothing here touches the DOM.

// Smallest even 5-smooth N >= 2n (tnn_core.core.toeplitz.fft_size).
function fftSize(n) {
  let N = 2 * n;
  while (!isFiveSmooth(N)) N += 2;
  return N;
}

function isFiveSmooth(N) {
  for (const p of [2, 3, 5]) while (N % p === 0) N /= p;
  return N === 1;
}

// Forward DFT X_k = sum_j x_j exp(-2 pi i jk / N) (sign -1) or inverse without the 1/N
// (sign +1), of length N = re.length; returns new arrays.
function dft(re, im, sign) {
  const N = re.length;
  if (N <= 1) return [Float64Array.from(re), Float64Array.from(im)];
  if (isFiveSmooth(N)) return mixedRadix(re, im, sign);
  return bluestein(re, im, sign);
}

function mixedRadix(re, im, sign) {
  const N = re.length;
  if (N === 1) return [Float64Array.from(re), Float64Array.from(im)];
  const p = N % 2 === 0 ? 2 : N % 3 === 0 ? 3 : 5;
  const m = N / p;
  // p interleaved sub-sequences x[p j + q], each transformed at length m
  const subs = [];
  for (let q = 0; q < p; q++) {
    const sr = new Float64Array(m), si = new Float64Array(m);
    for (let j = 0; j < m; j++) { sr[j] = re[p * j + q]; si[j] = im[p * j + q]; }
    subs.push(mixedRadix(sr, si, sign));
  }
  const outRe = new Float64Array(N), outIm = new Float64Array(N);
  for (let k = 0; k < N; k++) {
    let sumRe = 0, sumIm = 0;
    for (let q = 0; q < p; q++) {
      const angle = sign * 2 * Math.PI * q * k / N;  // twiddle exp(sign 2 pi i qk / N)
      const c = Math.cos(angle), s = Math.sin(angle);
      const [sr, si] = subs[q];
      const xr = sr[k % m], xi = si[k % m];
      sumRe += xr * c - xi * s;
      sumIm += xr * s + xi * c;
    }
    outRe[k] = sumRe; outIm[k] = sumIm;
  }
  return [outRe, outIm];
}

function bluestein(re, im, sign) {
  // X_k = sum_j x_j w^{jk}, w = exp(sign 2 pi i / N), with jk = (j^2 + k^2 - (k-j)^2)/2:
  // X_k = conj(chirp_k) sum_j (x_j conj(chirp_j)) chirp_{k-j} for the chirp
  // exp(-sign pi i j^2 / N), a convolution done by FFTs of a power-of-two size M >= 2N - 1.
  const N = re.length;
  let M = 1;
  while (M < 2 * N - 1) M *= 2;
  const chirpRe = new Float64Array(N), chirpIm = new Float64Array(N);
  for (let j = 0; j < N; j++) {
    const angle = -sign * Math.PI * ((j * j) % (2 * N)) / N;  // reduced: exact for large j
    chirpRe[j] = Math.cos(angle); chirpIm[j] = Math.sin(angle);
  }
  const aRe = new Float64Array(M), aIm = new Float64Array(M);
  for (let j = 0; j < N; j++) {  // a_j = x_j conj(chirp_j)
    aRe[j] = re[j] * chirpRe[j] + im[j] * chirpIm[j];
    aIm[j] = im[j] * chirpRe[j] - re[j] * chirpIm[j];
  }
  const bRe = new Float64Array(M), bIm = new Float64Array(M);
  for (let j = 0; j < N; j++) {
    bRe[j] = chirpRe[j]; bIm[j] = chirpIm[j];
    if (j > 0) { bRe[M - j] = chirpRe[j]; bIm[M - j] = chirpIm[j]; }
  }
  const [fa, fai] = mixedRadix(aRe, aIm, -1);
  const [fb, fbi] = mixedRadix(bRe, bIm, -1);
  for (let k = 0; k < M; k++) {
    const r = fa[k] * fb[k] - fai[k] * fbi[k];
    fai[k] = fa[k] * fbi[k] + fai[k] * fb[k];
    fa[k] = r;
  }
  const [cRe, cIm] = mixedRadix(fa, fai, 1);
  const outRe = new Float64Array(N), outIm = new Float64Array(N);
  for (let k = 0; k < N; k++) {  // X_k = conj(chirp_k) c_k / M
    const cr = cRe[k] / M, ci = cIm[k] / M;
    outRe[k] = cr * chirpRe[k] + ci * chirpIm[k];
    outIm[k] = ci * chirpRe[k] - cr * chirpIm[k];
  }
  return [outRe, outIm];
}

// numpy.fft.rfft(x, N): x zero-padded (or cut) to N; N / 2 + 1 complex values.
function rfft(x, N) {
  const re = new Float64Array(N);
  re.set(x.length > N ? x.subarray(0, N) : x);
  const [Xr, Xi] = dft(re, new Float64Array(N), -1);
  return [Xr.slice(0, Math.floor(N / 2) + 1), Xi.slice(0, Math.floor(N / 2) + 1)];
}

// numpy.fft.irfft(X, N): the real signal of length N whose rfft is X (Hermitian
// extension; the imaginary parts of DC and, for even N, Nyquist are ignored as numpy does).
function irfft(Xr, Xi, N) {
  const re = new Float64Array(N), im = new Float64Array(N);
  const half = Math.floor(N / 2);
  for (let k = 0; k <= half && k < Xr.length; k++) {
    re[k] = Xr[k]; im[k] = Xi[k];
    if (k > 0 && N - k > half) { re[N - k] = Xr[k]; im[N - k] = -Xi[k]; }
  }
  im[0] = 0;
  if (N % 2 === 0) im[half] = 0;
  const [yr] = dft(re, im, 1);
  for (let j = 0; j < N; j++) yr[j] /= N;
  return yr;
}
