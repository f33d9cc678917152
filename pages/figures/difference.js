// Figure "difference": Compare A/B's strip below its two band + W A Wᵀ figures. B − A of
// the two approximations band + W A Wᵀ as a picture, and each error of A and B with B
// against A in words. The server computes all of it once a move settles (spectral norms,
// optima and the fitted A are the server's): tnn_core/lab/compare.py,
// difference_figure_data. The figure has no controls: it follows the page's two
// decomposition figures (their announcements, common.js announce) and marks itself stale
// (data-stale on .body) while either draws a setting this strip was not computed for.
//
// Data, from pages/compare.py:
//   drawn    [[name, value]] the settings it was computed for, in the sides' names (n,
//            a_band, …, b_method): data-drawn
//   follows  the name of the figures it follows ("decomposition"); each announces its
//            prefix and data-drawn
//   rows     [s] the rows (and columns) of the n × n matrices drawn
//   values   base64 little-endian float32 [s·s], row-major: (band + W A Wᵀ) of B minus A's
//   limit    the colour scale ±limit: max |values| (1 when they are all 0)
//   numbers  [{label, a, b, words}]: one error of A and of B (null: undefined), B against A
//   words    what the picture shows, a paragraph

const DIFFERENCE_HTML = `
<style>
  .strip { display: grid; grid-template-columns: minmax(12rem, 20em) 1fr; gap: 1.2rem;
           align-items: start; }
  .strip figure { margin: 0; }
  .strip canvas[data-picture="D"] { width: 100%; aspect-ratio: 1; border: 1px solid var(--figure-muted);
                                    display: block; }
  .strip canvas[data-picture="bar"] { width: 100%; height: 12px; display: block;
                                      margin-top: 0.3rem; }
  .strip figcaption { font-size: 1em; }
  .changes { display: flex; gap: 1.5rem; flex-wrap: wrap; margin-bottom: 0.5rem; }
  .changes div { min-width: 11rem; }
  .changes b { font-size: 1.15em; display: block; }
  .changes span { font-size: 1em; color: var(--figure-muted); }
</style>
<div class="body strip" data-stale="false">
  <figure><canvas data-picture="D"></canvas><canvas data-picture="bar"></canvas>
    <figcaption class="scale"></figcaption></figure>
  <div><div class="changes"></div><div class="caption words"></div></div>
</div>`;

const BAR_STEPS = 101;  // colours in the scale bar, -limit .. limit

function drawDifference(root, state) {
  const { data } = state;
  const rows = data.rows, s = rows.length;
  const values = decodeArray(data.values, 'float32');  // (s·s,) row-major
  const at = new Map(rows.map((row, a) => [row, a]));  // row index -> position drawn
  drawEntries(root.querySelector('[data-picture="D"]'), rows, rows,
    (i, j) => values[at.get(i) * s + at.get(j)], data.limit);
  const steps = Array.from({ length: BAR_STEPS }, (_, k) => k);
  drawEntries(root.querySelector('[data-picture="bar"]'), [0], steps,
    (_, k) => data.limit * (2 * k / (BAR_STEPS - 1) - 1), data.limit);
  const limit = data.limit.toPrecision(2);
  root.querySelector('.scale').textContent = `(band + W A Wᵀ) of B − of A, row 0 on top. ` +
    `Scale: −${limit} (blue: B lower) … 0 (white: the same) … +${limit} (red: B higher).`;
  const number = (v) => (v === null ? '—' : v.toExponential(2));
  root.querySelector('.changes').innerHTML = data.numbers.map((c) =>
    `<div><span>${c.label}, B vs A</span><b></b><span>A = ${number(c.a)}, B = ${number(c.b)}` +
    `</span></div>`).join('');
  root.querySelectorAll('.changes b').forEach((b, k) => { b.textContent = data.numbers[k].words; });
  root.querySelector('.words').textContent = data.words;
  markDrawn(root, data.drawn);
}

// Stale while a followed figure has drawn a setting other than the one computed for.
function restaleDifference(root, state) {
  const mine = Object.fromEntries(state.data.drawn.map(([k, v]) => [k, String(v)]));
  const stale = Object.values(state.heard).some((params) => Object.entries(params).some(
    ([k, v]) => k in mine && v !== mine[k]));
  markStale(root.querySelector('.body'), stale);
}

export default function (component) {
  const { data, parentElement } = component;
  const [root, created] = figureRoot(parentElement, 'difference', DIFFERENCE_HTML);
  if (created) root.state = { heard: {} };
  const state = root.state;
  state.data = data;
  follow(root, (figure, params) => {
    if (figure !== data.follows || typeof params.drawn !== 'string') return;
    state.heard[params.prefix || ''] = Object.fromEntries(new URLSearchParams(params.drawn));
    restaleDifference(root, state);
  });
  drawDifference(root, state);
  restaleDifference(root, state);
  return () => unfollow(root);
}
