// Figure "error_curve": SKI's relative Frobenius error ‖T − band − W A Wᵀ‖_F / ‖T‖_F
// against the number of inducing points r, sampled and fitted A, beside the Eckart–Young
// optimum (the SVD's best rank-r part of T − band), with the current r marked. It has no
// slider of its own: it follows the page's decomposition figure (`follow`), so the mark
// moves in the same frame as that figure's r, with no server.
//
// Data, from pages/decomposition.py (once per kernel and m; lab.decomposition.rank_curve):
//   n, band    the kernel's length and the m the curve is for
//   ranks      [q] the ranks on the curve; sample, fit, optimal [q] their errors (null:
//              below the curve's floor, round-off, not drawn)
//   floor      that floor; exact: the ranks where some curve is below it
//   rank       the settled r (clamped to n), marked until the decomposition figure moves
//   height     optional: the plot's height in CSS pixels (default 300; a lesson step's is
//              lower, to share the screen with the decomposition figure). A page may set
//              it in CSS instead, --curve-height (presenter mode: from the screen's height,
//              pages/lessons.py), which wins
// Per frame, here: the mark at the decomposition figure's r; while its m differs from the
// curve's, the curve is marked stale (data-stale) until the server sends the new one.

const CURVE_LAYOUT = `
<style>
  canvas { width: 100%; height: 300px; display: block; }
</style>
<div class="caption title"></div>
<canvas></canvas>
<div class="legend">
  <span class="key" style="color: var(--figure-series-1)">SKI, A sampled</span>
  <span class="key dashed" style="color: var(--figure-series-2)">SKI, A fitted (least squares)</span>
  <span class="key dotted" style="color: var(--figure-series-3)">optimum, rank r (SVD)</span>
</div>
<div class="caption readout" data-stale="false"></div>`;

// Each curve its own colour and line style (solid, dashed, dotted), as its legend key shows.
const SERIES = [['sample', 'series-1', []], ['fit', 'series-2', [9, 4]],
                ['optimal', 'series-3', [2, 3]]];

const asNumbers = (values) => values.map((v) => (v === null ? NaN : v));

function drawCurve(root, state) {
  const { data, rank, band, frobenius } = state;
  const canvas = root.querySelector('canvas');
  canvas.width = canvas.clientWidth || 640;
  canvas.height = canvas.clientHeight || 300;
  const last = data.ranks[data.ranks.length - 1];
  drawLines(canvas, SERIES.map(([name, colour, dash]) => ({
    x: data.ranks, y: asNumbers(data[name]), colour, dash })), {
    logX: true, logY: true, xLabel: 'inducing points r', yLabel: 'relative Frobenius error',
    marks: rank <= last ? [{ x: rank, label: `r = ${rank}` }] : [],
  });
  root.querySelector('.title').textContent = `Error against r at m = ${data.band}, n = ${data.n}`;
  const stale = band !== data.band;
  const readout = root.querySelector('.readout');
  readout.textContent = (stale
    ? `The curve is for m = ${data.band}; the one for m = ${band} follows once m settles. `
    : '') + (rank > last ? `r = ${rank} is beyond the curve's last rank, ${last}. ` : '') +
    (Number.isFinite(frobenius) && !stale
      ? `At r = ${rank}: ${frobenius.toExponential(3)} with A sampled (the figure above). `
      : '') +
    `Errors below ${data.floor} are round-off and not drawn` +
    (data.exact.length ? ` (exact up to round-off at r = ${data.exact.join(', ')}).` : '.');
  markStale(readout, stale);
  markDrawn(root, [['n', data.n], ['band', data.band], ['rank', rank]]);
}

export default function (component) {
  const { data, parentElement } = component;
  const [root, created] = figureRoot(parentElement, 'error_curve', CURVE_LAYOUT);
  if (created) root.state = {};
  const state = root.state;
  root.querySelector('canvas').style.height = `var(--curve-height, ${data.height || 300}px)`;
  if (!state.data || state.data.id !== data.id || state.settled !== data.rank) {
    Object.assign(state, { rank: data.rank, band: data.band, frobenius: NaN, settled: data.rank });
  }
  state.data = data;
  follow(root, (figure, params) => {
    if (figure !== 'decomposition' || params.n !== data.n) return;
    Object.assign(state, { rank: params.rank, band: params.band, frobenius: params.frobenius });
    drawCurve(root, state);
  });
  drawCurve(root, state);
  return () => unfollow(root);
}
