// Figure "sketch": a prediction drawn by hand on empty axes, then the true curve over it
// (a lesson step's question: pages/figures/sketch.py, whose curves the lab computes).
//
// Data, from pages/figures/sketch.py:
//   axes    {x: [lo, hi], y: [lo, hi], logX, logY, xLabel, yLabel}: fixed, so the sketch
//           and the curve share them
//   guess   [[x, y], ...] the sketch the server has (the state sent back), or []
//   truth   null until the answer is revealed; then {x: [...], y: [...], label}
//   title   what to sketch, in words
// Per pointer move, here: the sketch so far, one point per pixel column, x increasing (a
// later stroke over an x replaces what was there). On release its points go back as the
// state value "guess". Once the truth is shown, the sketch is fixed. After each draw:
// data-drawn = points=<how many>&truth=<0 or 1>.

const SKETCH_LAYOUT = `
<style>
  canvas { width: 100%; height: 200px; display: block; touch-action: none; cursor: crosshair; }
  canvas.fixed { cursor: default; }
  .legend span { margin-right: 1.2rem; font-size: 0.85rem; }
</style>
<div class="caption title"></div>
<canvas></canvas>
<div class="legend">
  <span style="color: #ff7f0e">┅ your sketch</span>
  <span class="truth-label" style="color: #1f77b4"></span>
</div>`;

// The sketch with `point` added: points at the same or a later x than the stroke's
// previous point, up to this one, are replaced, so a function of x is drawn.
function addPoint(guess, point, previous) {
  const [lo, hi] = previous ? [Math.min(previous[0], point[0]), Math.max(previous[0], point[0])]
    : [point[0], point[0]];
  const kept = guess.filter(([x]) => x < lo || x > hi || (previous && x === previous[0]));
  kept.push(point);
  return kept.sort((a, b) => a[0] - b[0]);
}

function drawSketch(root, state) {
  const { data, guess } = state;
  const canvas = root.querySelector('canvas');
  canvas.width = canvas.clientWidth || 480;
  canvas.height = canvas.clientHeight || 200;
  const series = [{ x: guess.map((p) => p[0]), y: guess.map((p) => p[1]), colour: '#ff7f0e',
                    dash: [5, 4] }];
  if (data.truth) series.push({ x: data.truth.x, y: data.truth.y, colour: '#1f77b4' });
  const axes = data.axes;
  state.frame = drawLines(canvas, series, { logX: axes.logX, logY: axes.logY,
    xLabel: axes.xLabel, yLabel: axes.yLabel, bounds: { x: axes.x, y: axes.y } });
  canvas.classList.toggle('fixed', Boolean(data.truth));
  root.querySelector('.title').textContent = data.title;
  root.querySelector('.truth-label').textContent = data.truth ? `━ ${data.truth.label}` : '';
  markDrawn(root, [['points', guess.length], ['truth', data.truth ? 1 : 0]]);
}

export default function (component) {
  const { data, parentElement, setStateValue } = component;
  const [root, created] = figureRoot(parentElement, 'sketch', SKETCH_LAYOUT);
  if (created) {
    root.state = { guess: [], stroke: null };
    const canvas = root.querySelector('canvas');
    const at = (event) => {
      const box = canvas.getBoundingClientRect();
      const scale = canvas.width / box.width;
      return frameToData(root.state.frame, (event.clientX - box.left) * scale,
                         (event.clientY - box.top) * scale);
    };
    canvas.addEventListener('pointerdown', (event) => {
      const state = root.state;
      if (state.data.truth || !state.frame) return;
      canvas.setPointerCapture(event.pointerId);
      const point = at(event);
      state.stroke = point;
      state.guess = addPoint(state.guess, point, null);
      drawSketch(root, state);
    });
    canvas.addEventListener('pointermove', (event) => {
      const state = root.state;
      if (!state.stroke) return;
      const point = at(event);
      state.guess = addPoint(state.guess, point, state.stroke);
      state.stroke = point;
      drawSketch(root, state);
    });
    const settle = () => {
      if (!root.state.stroke) return;
      root.state.stroke = null;
      setStateValue('guess', root.state.guess);
    };
    canvas.addEventListener('pointerup', settle);
    canvas.addEventListener('pointercancel', settle);
  }
  const state = root.state;
  state.data = data;
  if (!state.stroke && data.guess.length) state.guess = data.guess;
  drawSketch(root, state);
}
