// The Lessons page's keys and view (pages/lessons.py puts it in the page once): Left / Right
// click Back / Next wherever the focus is, but in a field being typed in (a figure's focused
// slider keeps them: pages/figures/common.js stops them on the window, before this listener
// on the document); after Reveal the verdict and the notice below it are scrolled onto the
// screen (the sticky figures stay) and kept there while what is above it settles its height
// (a sketch gains the lab's line), until 2 s without a resize or the reader's own scroll,
// key or click; a display formula wider than its column (a phone) is scaled down to fit it
// instead of scrolling sideways. A new step (Next, Back, another lesson) opens at the page's
// top, as its link does: on a phone, scrolled down to a step's figures, Next kept that
// offset, and the browser's scroll anchoring then followed the old step's elements as they
// went, which left the new step's heading and sketch far above the screen (5.2 to 5.3:
// 1,350 px down, the sketch at -450 px). At offset 0 the browser anchors nothing.
if (!window.toeplitzLessonKeys) {
  window.toeplitzLessonKeys = true;
  document.addEventListener("keydown", (event) => {
    const label = {ArrowRight: "Next", ArrowLeft: "Back"}[event.key];
    const target = event.composedPath()[0];  // inside a figure's shadow root too
    const tag = target?.tagName, type = target?.type;
    const typing = ["TEXTAREA", "SELECT"].includes(tag) || (tag === "INPUT" &&
      !["range", "checkbox", "radio"].includes(type));
    if (!label || typing) return;
    const button = [...document.querySelectorAll("[data-testid='stMain'] button")]
      .find((b) => b.innerText.trim().endsWith(label) && !b.disabled);
    if (button) { event.preventDefault(); event.stopPropagation(); button.click(); }
  }, true);  // capture: before a focused radio takes the key
  let revealing = false, queued = false, keeper = null, placed = [null, 0];
  document.addEventListener("click", (event) => {
    const button = event.composedPath().find((e) => e.tagName === "BUTTON");
    if (button && button.innerText.trim().endsWith("Reveal")) revealing = true;
  }, true);
  const placeVerdict = () => {  // the verdict (returned) and the notice below it on screen
    const alerts = [...document.querySelectorAll("[data-testid='stMain'] [data-testid='stAlert']")];
    const verdict = alerts.find((a) => /the answer is/i.test(a.innerText));
    if (!verdict) return null;
    const column = verdict.closest("[data-testid='stColumn']") || document;
    [...column.querySelectorAll("[data-testid='stAlert']")].pop()
      .scrollIntoView({block: "nearest"});
    if (verdict.getBoundingClientRect().top < 0) verdict.scrollIntoView({block: "start"});
    placed = [verdict, verdict.getBoundingClientRect().top];  // where it was left
    return verdict;
  };
  const keepVerdict = (verdict) => {  // through every resize, until the layout is still
    const off = new AbortController(); let quiet;
    const stop = () => { off.abort(); clearTimeout(quiet); keeper?.disconnect(); keeper = null; };
    const moved = () => placed[0].isConnected &&
      Math.abs(placed[0].getBoundingClientRect().top - placed[1]) > 1;
    keeper = new ResizeObserver(() => {
      placeVerdict(); clearTimeout(quiet); quiet = setTimeout(stop, 2000); });
    for (const e of [document.querySelector("[data-testid='stMainBlockContainer']"),
      verdict.closest("[data-testid='stColumn']")]) if (e) keeper.observe(e);
    for (const type of ["keydown", "pointerdown"])
      window.addEventListener(type, stop, {capture: true, signal: off.signal});
    document.addEventListener("scroll", () => { if (moved()) stop(); },  // the reader's
      {capture: true, signal: off.signal});
  };
  const showVerdict = () => {
    const verdict = placeVerdict();
    if (!verdict || !document.querySelector("[data-test-script-state='notRunning']")) return;
    revealing = false; if (!keeper) keepVerdict(verdict);
  };
  const fitFormulas = () => {
    for (const display of document.querySelectorAll("[data-testid='stMain'] .katex-display")) {
      const formula = display.querySelector(":scope > .katex");
      if (!formula) continue;
      formula.style.fontSize = "";
      if (display.scrollWidth > display.clientWidth + 1) {
        formula.style.fontSize = `${1.21 * display.clientWidth / display.scrollWidth}em`;
      }
    }
  };
  let step = null;  // the heading of the step on the screen
  const toNewStepsTop = () => {  // on the Lessons page (its Next): this script outlives it
    const heading = document.querySelector(".st-key-next") &&
      document.querySelector("[data-testid='stMain'] h2")?.innerText;
    if (!heading || heading === step) return;
    if (step !== null) {  // not the page's first step, which opens at the top anyway
      for (const e of [document.scrollingElement,
        document.querySelector("[data-testid='stMain']")]) if (e) e.scrollTop = 0;
    }
    step = heading;
  };
  const settle = () => {
    queued = false; toNewStepsTop(); fitFormulas(); if (revealing) showVerdict(); };
  const later = () => { if (!queued) { queued = true; requestAnimationFrame(settle); } };
  new MutationObserver(later).observe(document.body, {childList: true, subtree: true,
    attributes: true, attributeFilter: ["data-test-script-state"]});
  window.addEventListener("resize", later);
}
