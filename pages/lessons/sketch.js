// Figure "sketch": a prediction drawn by hand on empty axes, then the true curve over it
// (a lesson step's question: pages/lessons/sketch.py, whose curves the lab computes).
//
// Data, from pages/lessons/sketch.py:
//   axes    {x: [lo, hi], y: [lo, hi], logX, logY, xLabel, yLabel}: fixed, so the sketch
//           and the curve share them
//   guess   [[x, y], ...] the sketch the server has (the state sent back), or []
//   truth   null until the answer is revealed; then {x: [...], y: [...], label, dashed}:
//           dashed when the figure beside it draws the same curve so (A fitted, LAB_DASHED)
//   title   what to sketch, in words
// The drawing area is 200 px high, or --sketch-height where a page sets it (presenter mode:
// from the screen's height, pages/lessons.py).
// By pointer (mouse, pen or touch alike: pointer events, and touch-action none so a finger
// draws instead of scrolling), per move: the sketch so far, one point per pixel column, x
// increasing (a later stroke over an x replaces what was there); on release its points go
// back as the state value "guess". By keyboard: the drawing area takes focus (Tab; a
// visible ring), a cursor cross starts mid-left, Left/Right move it along x and Up/Down
// its value (KEY_STEPS steps across each axis; with Shift, ten times as far), Enter
// places a point there and Backspace removes the last point placed; each sends the
// sketch back at once. These keys are the sketch's while it has focus: a capture listener
// on the window (before the lesson's own, on the document) takes them, so they never
// change the lesson's step. Once the truth is shown, the sketch is fixed. After each draw:
// data-drawn = points=<how many>&truth=<0 or 1>&cursor=<x>,<y> (cursor: the keyboard
// cursor in data units, empty before the first key).

const SKETCH_LAYOUT = `
<style>
  canvas { width: 100%; height: var(--sketch-height, 200px); display: block; touch-action: none;
           cursor: crosshair; }
  canvas:focus { outline: none; }
  canvas:focus-visible { outline: 3px solid var(--figure-series-1); outline-offset: 2px; }
  canvas.fixed { cursor: default; }
  .legend span { margin-right: 1.2em; font-size: 1em; }
</style>
<div class="caption title"></div>
<canvas tabindex="0" role="application"
        aria-label="Sketch area: arrow keys move the cursor, Enter places a point, Backspace removes the last"></canvas>
<div class="legend">
  <span class="key dashed" style="color: var(--figure-series-5)">your sketch</span>
  <span class="truth-label key"></span>
</div>`;

const KEY_STEPS = { x: 40, y: 20 };  // cursor steps across the plot's width and height
const CURSOR_COLOUR = 'series-4';  // a palette name (figure.css)
// The student's line in a colour no lab curve beside it uses; the lab's curve solid in the
// first series, or dashed in the second as the error curve draws A fitted.
const GUESS = { colour: 'series-5', dash: [5, 4] };
const LAB = { colour: 'series-1' };
const LAB_DASHED = { colour: 'series-2', dash: [5, 4] };

// The sketch with `point` added: points at the same or a later x than the stroke's
// previous point, up to this one, are replaced, so a function of x is drawn.
function addPoint(guess, point, previous) {
  const [lo, hi] = previous ? [Math.min(previous[0], point[0]), Math.max(previous[0], point[0])]
    : [point[0], point[0]];
  const kept = guess.filter(([x]) => x < lo || x > hi || (previous && x === previous[0]));
  kept.push(point);
  return kept.sort((a, b) => a[0] - b[0]);
}

// The keyboard cursor's canvas pixel: `cursor` holds fractions [0, 1] of the plot's width
// (from the left) and height (from the bottom).
function cursorPixel(frame, cursor) {
  return [frame.left + cursor[0] * frame.width, frame.top + (1 - cursor[1]) * frame.height];
}

function drawCursor(canvas, frame, cursor) {
  const [xp, yp] = cursorPixel(frame, cursor);
  const ctx = canvas.getContext('2d');
  ctx.save();
  ctx.strokeStyle = canvasStyle(canvas).colour(CURSOR_COLOUR); ctx.lineWidth = 2;
  ctx.beginPath();
  ctx.moveTo(xp - 9, yp); ctx.lineTo(xp + 9, yp); ctx.moveTo(xp, yp - 9); ctx.lineTo(xp, yp + 9);
  ctx.stroke();
  ctx.beginPath(); ctx.arc(xp, yp, 5, 0, 2 * Math.PI); ctx.stroke();
  ctx.restore();
}

function drawSketch(root, state) {
  const { data, guess } = state;
  const canvas = root.querySelector('canvas');
  canvas.width = canvas.clientWidth || 480;
  canvas.height = canvas.clientHeight || 200;
  const lab = data.truth?.dashed ? LAB_DASHED : LAB;
  const series = [{ x: guess.map((p) => p[0]), y: guess.map((p) => p[1]), ...GUESS }];
  if (data.truth) series.push({ x: data.truth.x, y: data.truth.y, ...lab });
  const axes = data.axes;
  state.frame = drawLines(canvas, series, { logX: axes.logX, logY: axes.logY,
    xLabel: axes.xLabel, yLabel: axes.yLabel, bounds: { x: axes.x, y: axes.y } });
  canvas.classList.toggle('fixed', Boolean(data.truth));
  canvas.setAttribute('aria-disabled', data.truth ? 'true' : 'false');
  let cursorText = '';
  if (state.cursor && state.frame && !data.truth) {
    drawCursor(canvas, state.frame, state.cursor);
    const point = frameToData(state.frame, ...cursorPixel(state.frame, state.cursor));
    cursorText = point.map((v) => Number(v.toPrecision(3))).join(',');
  }
  root.querySelector('.title').textContent = data.title;
  const labKey = root.querySelector('.truth-label');
  labKey.textContent = data.truth ? data.truth.label : '';
  labKey.hidden = !data.truth;
  labKey.style.color = `var(--figure-${lab.colour})`;
  labKey.classList.toggle('dashed', Boolean(lab.dash));
  markDrawn(root, [['points', guess.length], ['truth', data.truth ? 1 : 0],
                   ['cursor', cursorText]]);
}

// A key pressed on the focused sketch: true if the sketch took it (a cursor move, a point
// placed or removed), so that nothing else acts on it.
function sketchKey(root, event, setStateValue) {
  const state = root.state;
  if (state.data.truth || !state.frame) return false;
  const far = event.shiftKey ? 10 : 1;
  const moves = { ArrowLeft: [-far / KEY_STEPS.x, 0], ArrowRight: [far / KEY_STEPS.x, 0],
                  ArrowUp: [0, far / KEY_STEPS.y], ArrowDown: [0, -far / KEY_STEPS.y] };
  const clamp = (v) => Math.max(0, Math.min(1, v));
  const cursor = state.cursor || [0, 0.5];
  if (event.key in moves) {
    const [dx, dy] = moves[event.key];
    state.cursor = [clamp(cursor[0] + dx), clamp(cursor[1] + dy)];
  } else if (event.key === 'Enter' || event.key === ' ') {
    state.cursor = cursor;
    const point = frameToData(state.frame, ...cursorPixel(state.frame, cursor));
    state.guess = addPoint(state.guess, point, null);
    state.placed = [...state.placed, point];
    setStateValue('guess', state.guess);
  } else if (event.key === 'Backspace' || event.key === 'Delete') {
    const last = state.placed.at(-1) || state.guess.at(-1);
    if (!last) return true;
    state.placed = state.placed.slice(0, -1);
    state.guess = state.guess.filter((p) => p !== last && !(p[0] === last[0] && p[1] === last[1]));
    setStateValue('guess', state.guess);
  } else {
    return false;
  }
  drawSketch(root, state);
  return true;
}

// Once per page: keys on a focused sketch canvas go to its handler (canvas.sketchKey),
// before any listener on the document sees them.
if (!window.toeplitzSketchKeys) {
  window.toeplitzSketchKeys = true;
  window.addEventListener('keydown', (event) => {
    const target = event.composedPath()[0];
    if (target && typeof target.sketchKey === 'function' && target.sketchKey(event)) {
      event.preventDefault();
      event.stopPropagation();
    }
  }, true);
}

export default function (component) {
  const { data, parentElement, setStateValue } = component;
  const [root, created] = figureRoot(parentElement, 'sketch', SKETCH_LAYOUT);
  if (created) {
    root.state = { guess: [], stroke: null, cursor: null, placed: [] };
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
      event.preventDefault();  // a touch draws: no scroll, no emulated mouse events
      canvas.focus({ preventScroll: true });
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
  // the latest setStateValue: a rerun may hand the figure a new one
  root.querySelector('canvas').sketchKey = (event) => sketchKey(root, event, setStateValue);
  const state = root.state;
  state.data = data;
  if (!state.stroke && data.guess.length) state.guess = data.guess;
  drawSketch(root, state);
}
