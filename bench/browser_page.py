"""What `bench.browser` installs in every page before its scripts run: the
record of when each token's word first appears in the DOM (and Enter, and the
clock's offset), and of the main thread's long tasks."""

from __future__ import annotations

# Installed in every page before its scripts run. Records when each token's word
# w<i> first appears in an answer, when Enter was pressed, and the clock offset.
MEASURE_TOKENS = r"""
(() => {
  const bench = (window.__bench = { visible: [], enterAt: null, offset: 0 });
  let max = -1;
  window.__benchReset = () => {
    bench.visible = [];
    bench.arrived = [];
    bench.enterAt = null;
    max = arrivedMax = -1;
  };
  const wall = () => performance.timeOrigin + performance.now();
  const samples = [];
  for (let k = 0; k < 15; k++) {
    const tick = Date.now();
    while (Date.now() === tick);
    samples.push(Date.now() - wall());
  }
  samples.sort((a, b) => a - b);
  bench.offset = samples[7];
  const word = /\bw(\d+)\b/g;
  const scan = (text, at) => {
    let high = max;
    word.lastIndex = 0;
    for (let m; (m = word.exec(text)); ) high = Math.max(high, Number(m[1]));
    for (let i = max + 1; i <= high; i++) bench.visible.push([i, at]);
    max = high;
  };
  const inAnswer = (node) => {
    const element = node.nodeType === 1 ? node : node.parentElement;
    return element && element.closest("article.assistant .answer");
  };
  const observer = new MutationObserver((records) => {
    const at = wall() + bench.offset;
    for (const record of records) {
      if (!inAnswer(record.target)) continue;
      if (record.type === "characterData") scan(record.target.data, at);
      else for (const node of record.addedNodes) scan(node.textContent, at);
    }
  });
  document.addEventListener("DOMContentLoaded", () => {
    observer.observe(document.getElementById("messages"), {
      subtree: true, childList: true, characterData: true,
    });
  });
  // When each token reached the page (before any of the page's own handling).
  bench.arrived = [];
  let arrivedMax = -1;
  const add = WebSocket.prototype.addEventListener;
  WebSocket.prototype.addEventListener = function (type, listener, options) {
    if (type === "message") {
      add.call(this, type, (event) => {
        const at = wall() + bench.offset;
        const frame = JSON.parse(event.data);
        if (frame.type !== "content") return;
        word.lastIndex = 0;
        let high = arrivedMax;
        for (let m; (m = word.exec(frame.delta)); ) high = Math.max(high, Number(m[1]));
        for (let i = arrivedMax + 1; i <= high; i++) bench.arrived.push([i, at]);
        arrivedMax = high;
      });
    }
    return add.call(this, type, listener, options);
  };
  window.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || bench.enterAt !== null) return;
    bench.enterAt = wall() + bench.offset;
  }, true);
})();
"""

# Main-thread cost while an answer streams: long tasks (> 50 ms), and the time
# spent in each animation-frame callback and each WebSocket message handler.
MEASURE_MAIN_THREAD = r"""
(() => {
  const main = (window.__main = {
    longtasks: [], frames: [], handlers: [], gaps: [], recording: false,
  });
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      main.longtasks.push([entry.startTime, entry.duration, main.recording]);
    }
  }).observe({ type: "longtask", buffered: true });
  // What ran in frames over 50 ms (Long Animation Frames, Chromium 123+).
  main.loaf = [];
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      if (!main.recording) continue;
      main.loaf.push({
        duration: entry.duration,
        blocking: entry.blockingDuration,
        render: entry.renderStart
          ? entry.startTime + entry.duration - entry.renderStart : 0,
        scripts: entry.scripts.map((s) => [s.invoker, s.duration]),
      });
    }
  }).observe({ type: "long-animation-frame", buffered: false });
  const raf = window.requestAnimationFrame.bind(window);
  let last = null;
  window.requestAnimationFrame = (callback) => raf((time) => {
    const start = performance.now();
    callback(time);
    if (!main.recording) return;
    main.frames.push(performance.now() - start);
    if (last !== null) main.gaps.push(time - last);
    last = time;
  });
  const add = WebSocket.prototype.addEventListener;
  WebSocket.prototype.addEventListener = function (type, listener, options) {
    if (type !== "message") return add.call(this, type, listener, options);
    return add.call(this, type, (event) => {
      const start = performance.now();
      listener(event);
      if (main.recording) main.handlers.push(performance.now() - start);
    }, options);
  };
})();
"""
