"""The scripts g6 runs in a captured page: the lockdown (in the page's own world, before its scripts),
and the reader's text, the DOM and the scrolling (in an isolated world of g6's, which the page's
scripts cannot see or change: its prototypes are the browser's own).
"""

from __future__ import annotations

# Before any script of the page or of a frame: the channels the network lockdown already kills are
# also taken away from scripts, so a page that checks for them falls back to requests g6 sees
# (defence in depth: the proxy and the interception hold without this).
LOCKDOWN = r"""(() => {
  const g = globalThis;
  for (const name of ["WebSocket", "WebSocketStream", "WebTransport", "RTCPeerConnection",
                      "webkitRTCPeerConnection", "RTCDataChannel", "RTCIceTransport"]) {
    try { delete g[name]; } catch (e) {}
    try { if (name in g) Object.defineProperty(g, name, {value: undefined, configurable: false}); } catch (e) {}
  }
  try {
    if (g.Navigator && "serviceWorker" in Navigator.prototype)
      Object.defineProperty(Navigator.prototype, "serviceWorker", {get: () => undefined, configurable: false});
  } catch (e) {}
  try {
    if (g.Navigator) Object.defineProperty(Navigator.prototype, "sendBeacon",
                                           {value: () => false, configurable: false, writable: false});
  } catch (e) {}
})();"""

# In the page's own world too, before its scripts: what the page has under way that will change it soon, counted
# as it is started (before any request of it reaches g6): one-shot timers set to fire within ``LIMIT`` ms that have
# not fired or been cleared, intervals of ``LIMIT`` ms or less not cleared (a page that polls often is never taken
# as done early), idle callbacks not yet run, its fetch() calls, response bodies being read and XMLHttpRequests not
# yet answered, and its frames (whose own timers and requests are not counted here, so a page with frames always
# has something). A page with any is about to do something (fetch, render), so a render that finds the network
# quiet waits for it; one with none is settled (render.py: the settle rule). Read by g6 over DevTools
# (``PENDING``). The page can see and undo all of this; doing so changes only when its own capture is taken: a
# count it breaks reads as pending (g6 waits out the quiet window, as before), and one it hides from (timers of
# its own making) is as if it had set none, and the quiet window is not waited for.
SETTLE_PROBE = r"""(() => {
  const g = globalThis, key = Symbol.for("g6.pending-work");
  if (Object.prototype.hasOwnProperty.call(g, key)) return;
  const LIMIT = %d, pending = new Set(), every = new Set(), idle = new Set();
  let asked = 0;
  const done = () => { asked--; };
  const counted = (p) => { asked++; try { p.then(done, done); } catch (e) { asked--; } return p; };
  const wrapped = [];
  const wrap = (obj, name, make) => {
    const orig = obj && obj[name];
    if (typeof orig === "function") wrapped.push([obj, name, make(orig)]);
  };
  wrap(g, "setTimeout", (orig) => function setTimeout(handler, delay, ...args) {
    if (typeof handler !== "function") return Reflect.apply(orig, g, [handler, delay, ...args]);
    let id = 0;
    const fire = function () { pending.delete(id); return Reflect.apply(handler, this, arguments); };
    id = Reflect.apply(orig, g, [fire, delay, ...args]);
    if (!(Number(delay) > LIMIT)) pending.add(id);
    return id;
  });
  wrap(g, "setInterval", (orig) => function setInterval(handler, delay, ...args) {
    const id = Reflect.apply(orig, g, [handler, delay, ...args]);
    if (!(Number(delay) > LIMIT)) every.add(id);
    return id;
  });
  // the two clears take each other's ids in browsers: each forgets the id in both
  for (const name of ["clearTimeout", "clearInterval"])
    wrap(g, name, (orig) => ({[name](id) {
      pending.delete(id); every.delete(id); return Reflect.apply(orig, g, [id]); }})[name]);
  wrap(g, "requestIdleCallback", (orig) => function requestIdleCallback(handler, ...args) {
    if (typeof handler !== "function") return Reflect.apply(orig, g, [handler, ...args]);
    let id = 0;
    const fire = function () { idle.delete(id); return Reflect.apply(handler, this, arguments); };
    id = Reflect.apply(orig, g, [fire, ...args]);
    idle.add(id);
    return id;
  });
  wrap(g, "cancelIdleCallback", (orig) => function cancelIdleCallback(id) {
    idle.delete(id); return Reflect.apply(orig, g, [id]); });
  wrap(g, "fetch", (orig) => function fetch(...args) { return counted(Reflect.apply(orig, g, args)); });
  const R = g.Response && g.Response.prototype;
  for (const name of ["json", "text", "arrayBuffer", "blob", "formData", "bytes"])
    wrap(R, name, (orig) => ({[name](...args) { return counted(Reflect.apply(orig, this, args)); }})[name]);
  const X = g.XMLHttpRequest && g.XMLHttpRequest.prototype;
  wrap(X, "send", (orig) => function send(...args) {
    asked++;
    this.addEventListener("loadend", done, {once: true});
    try { return Reflect.apply(orig, this, args); } catch (e) { asked--; throw e; }
  });
  for (const [obj, name, fn] of wrapped)
    Object.defineProperty(obj, name, {value: fn, writable: true, configurable: true, enumerable: true});
  Object.defineProperty(g, key, {value: () => pending.size + every.size + idle.size + Math.max(0, asked)
                                              + g.frames.length});
})();"""

# The count, or -1 when the probe is not there (a page that took it away, or a document it never ran in). Read in
# the page's world, where the page may answer for it: whatever it answers, what comes back is a number
PENDING = ('(() => { const f = globalThis[Symbol.for("g6.pending-work")]; '
           'const n = typeof f === "function" ? f() : -1; return typeof n === "number" ? n : -1; })()')

# One scroll step down by a viewport; resolves after two frames (so IntersectionObserver callbacks of
# lazy-loaded content have run) with whether the bottom was reached and the page's height. A page that fits its
# viewport is not scrolled and is answered at once (everything on it is in view already).
SCROLL_STEP = r"""new Promise((resolve) => {
  const el = document.scrollingElement || document.documentElement || document.body;
  if (!el) { resolve({bottom: true, height: 0}); return; }
  const view = window.innerHeight || 800;
  if (window.scrollY === 0 && el.scrollHeight <= view + 2) { resolve({bottom: true, height: el.scrollHeight}); return; }
  window.scrollBy(0, Math.max(200, view));
  const done = () => resolve({bottom: window.scrollY + view >= el.scrollHeight - 2, height: el.scrollHeight});
  let frames = 0;
  const tick = () => { if (++frames >= 2) done(); else requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
  setTimeout(done, 250);  // a page whose frames do not run (hidden, throttled) still answers
})"""

SCROLL_TOP = "window.scrollTo(0, 0); (document.scrollingElement || document.documentElement || {}).scrollHeight || 0"

LOCATION = "location.href.slice(0, 8193)"  # a receipt keeps 8,192 characters of it (and marks a longer one cut)

# The elements a walk of the page from g6's world reaches (the document and its open shadow roots): what
# DOM.getDocument would bring over before the closed roots are counted.
ELEMENT_COUNT = r"""(() => {
  let n = 0;
  const walk = (root) => {
    const w = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT);
    for (let e = w.nextNode(); e; e = w.nextNode()) { n++; if (e.shadowRoot) walk(e.shadowRoot); }
  };
  walk(document);
  return n;
})()"""

# What the DOM and the text functions return: {value, cut}, the value at most ``limit`` bytes of UTF-8 (cut at a
# character), so what g6 is handed is bounded whatever a script wrote.
_CAP = r"""const cap = (s, limit) => {
    const buf = new Uint8Array(Math.min(limit, s.length * 3));
    const {read} = new TextEncoder().encodeInto(s, buf);
    return read < s.length ? {value: s.slice(0, read), cut: true} : {value: s, cut: false};
  };"""

HEIGHT = "(document.scrollingElement || document.documentElement || {}).scrollHeight || 0"

# The DOM after scripts, with the page's shadow roots (open, found here, and the closed ones g6 found over the
# DevTools DOM domain, passed in) kept as declarative shadow DOM where the browser can serialise them; at most
# ``limit`` bytes.
DOM = r"""function (limit, ...closed) {
  """ + _CAP + r"""
  const byHost = new Map(closed.filter((r) => r && r.host).map((r) => [r.host, r]));
  const roots = [...byHost.values()];
  const walk = (root) => {
    const w = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT);
    for (let e = w.nextNode(); e; e = w.nextNode()) {
      const sr = e.shadowRoot || byHost.get(e);
      if (sr) { if (e.shadowRoot) roots.push(sr); walk(sr); }
    }
  };
  walk(document);
  const doctype = document.doctype ? new XMLSerializer().serializeToString(document.doctype) + "\n" : "";
  const root = document.documentElement;
  if (!root) return cap(doctype, limit);
  try {
    if (root.getHTML) return cap(doctype + "<html" + [...root.attributes].map(
        (a) => " " + a.name + '="' + a.value.replace(/&/g, "&amp;").replace(/"/g, "&quot;") + '"').join("")
      + ">" + root.getHTML({serializableShadowRoots: true, shadowRoots: roots}) + "</html>", limit);
  } catch (e) {}
  return cap(doctype + root.outerHTML, limit);
}"""

# The text a reader sees. Where nothing below an element needs a closer look, it is the browser's own innerText
# of that element. The flat tree is walked instead on the way to a shadow root (open, or closed: passed in as
# roots found over the DevTools DOM domain), so text inside shadow roots and slotted text are read
# where they are shown, which Chromium's innerText leaves out; and on the way to any text that the computed
# style and layout say no reader sees, which innerText keeps: text whose opacity (or filter: opacity()) is 0,
# of font-size 0, in a transparent colour or the colour of what lies behind it, outside the page (left of or
# above it), clipped away (overflow hidden or clip, the clip property, clip-path, a zero box, scale(0)), or the
# options a closed <select> does not show. Text partly clipped (an ellipsis, a line clamp) keeps the words shown.
# When the page does not say enough to tell (a background image, a blend mode, something painted under the
# text), the text is kept: this leaves out what is plainly hidden, it does not guess.
READER_TEXT = r"""function (limit, ms, ...roots) {
  """ + _CAP + r"""
  // a page of very many text nodes: the walk stops at ``ms`` and the text is cut where it got to (never innerText
  // of what it did not look at)
  const t0 = performance.now(), scanUntil = t0 + ms * 0.7, emitUntil = t0 + ms;
  let late = false, done = false;
  const closed = new Map(roots.filter((r) => r && r.host).map((r) => [r.host, r]));
  const rootOf = (el) => el.shadowRoot || closed.get(el) || null;
  const SKIP = ["script", "style", "template", "noscript", "head", "title", "meta", "link"];
  const styles = new Map();
  const style = (el) => { let c = styles.get(el); if (!c) { c = getComputedStyle(el); styles.set(el, c); } return c; };
  const slotOf = new Map();  // a slotted node -> its slot (assignedSlot is null for a closed root's slots)
  const flatParent = (n) => {
    const s = slotOf.get(n);
    if (s) return s;
    const p = n.parentNode;
    return p instanceof ShadowRoot ? p.host : (p && p.nodeType === Node.ELEMENT_NODE ? p : null);
  };

  // -- geometry: rectangles in viewport coordinates --------------------------------------------------------
  const I = Infinity;
  const cut = (a, b) => ({l: Math.max(a.l, b.l), t: Math.max(a.t, b.t), r: Math.min(a.r, b.r), b: Math.min(a.b, b.b)});
  const area = (a) => Math.max(0, a.r - a.l) * Math.max(0, a.b - a.t);
  const R = (d) => ({l: d.left, t: d.top, r: d.right, b: d.bottom});
  const se = document.scrollingElement || document.documentElement;
  // a reader can scroll over the page, never left of or above it; a fixed element shows in the viewport
  const page = {l: -scrollX, t: -scrollY, r: -scrollX + Math.max(se ? se.scrollWidth : 0, innerWidth),
                b: -scrollY + Math.max(se ? se.scrollHeight : 0, innerHeight)};
  const TOP = {all: page, abs: page, fixed: {l: 0, t: 0, r: innerWidth, b: innerHeight}, alpha: 1, unsure: false};
  const px = (v, whole) => v.endsWith("%") ? parseFloat(v) / 100 * whole : parseFloat(v) || 0;
  const clipPath = (v, box) => {  // the box a clip-path leaves (its bounds), null when it cannot tell
    let m = /^inset\(([^)]*)\)/.exec(v);
    if (m) {
      const q = m[1].split(/\s+round\s+/)[0].trim().split(/\s+/);
      const [t, r, b, l] = [q[0], q[1] ?? q[0], q[2] ?? q[0], q[3] ?? q[1] ?? q[0]];
      const w = box.r - box.l, h = box.b - box.t;
      return {l: box.l + px(l, w), t: box.t + px(t, h), r: box.r - px(r, w), b: box.b - px(b, h)};
    }
    m = /^(circle|ellipse)\(\s*([-\d.]+(?:px|%)?)?(?:\s+([-\d.]+(?:px|%)?))?/.exec(v);
    if (m && ((m[2] && parseFloat(m[2]) === 0) || (m[3] && parseFloat(m[3]) === 0))) return {l: 0, t: 0, r: 0, b: 0};
    m = /^polygon\(([^)]*)\)/.exec(v);
    if (m) {
      const w = box.r - box.l, h = box.b - box.t, xs = [], ys = [];
      for (const pt of m[1].replace(/^\s*(nonzero|evenodd)\s*,/, "").split(",")) {
        const [x, y] = pt.trim().split(/\s+/);
        if (x === undefined || y === undefined || /calc|var/.test(pt)) return null;
        xs.push(box.l + px(x, w)); ys.push(box.t + px(y, h));
      }
      if (xs.length) return {l: Math.min(...xs), t: Math.min(...ys), r: Math.max(...xs), b: Math.max(...ys)};
    }
    return null;
  };
  const clipProp = (v, box) => {  // the clip property: rect(top, right, bottom, left) from the border box's corner
    const m = /^rect\(([^)]*)\)/.exec(v);
    if (!m) return null;
    const q = m[1].split(/[\s,]+/).filter(Boolean);
    if (q.length !== 4) return null;
    const at = (x, edge, from) => x === "auto" ? edge : from + (parseFloat(x) || 0);
    return {t: at(q[0], box.t, box.t), r: at(q[1], box.r, box.l), b: at(q[2], box.b, box.t), l: at(q[3], box.l, box.l)};
  };
  const filterAlpha = (f) => {
    let a = 1;
    for (const m of (f || "").matchAll(/opacity\(\s*([\d.]+)(%?)\s*\)/g)) a *= parseFloat(m[1]) / (m[2] ? 100 : 1);
    return a;
  };
  const htmlVisible = () => { const c = style(document.documentElement); return c.overflowX === "visible"
                                                                                && c.overflowY === "visible"; };
  const viewportOverflow = (el) => el === document.documentElement || (el === document.body && htmlVisible());
  // Per element: what clips its in-flow content (all), its absolutely positioned and its fixed descendants (which
  // escape an overflow clip below their containing block), the opacity it is painted with, and whether a blend
  // mode or filter makes its colours unknowable.
  const states = new Map();
  const stateOf = (el) => {
    const chain = [];
    for (let n = el; n && !states.has(n); n = flatParent(n)) chain.push(n);
    for (let i = chain.length - 1; i >= 0; i--) {
      const e = chain[i], p = flatParent(e), ps = p ? states.get(p) : TOP;
      const c = style(e), pos = c.position, d = c.display, f = c.filter, cp = c.clipPath, contain = c.contain || "";
      const own = pos === "fixed" ? ps.fixed : pos === "absolute" ? ps.abs : ps.all;
      const o = parseFloat(c.opacity);
      const alpha = ps.alpha * (isNaN(o) ? 1 : o) * (f === "none" ? 1 : filterAlpha(f));
      let all = own, effects = null;
      if (d !== "contents" && d !== "none") {
        const boxy = d !== "inline" && !d.startsWith("table-row") && !d.startsWith("table-column");
        const ox = c.overflowX, oy = c.overflowY, paint = /paint|strict|content/.test(contain);
        const clips = boxy && !viewportOverflow(e) && (ox !== "visible" || oy !== "visible" || paint);
        const clipped = (pos === "absolute" || pos === "fixed") && c.clip !== "auto" && c.clip;
        if (clips || (cp && cp !== "none") || clipped) {
          const box = R(e.getBoundingClientRect());
          if (clips) {
            const x = paint ? "clip" : ox, y = paint ? "clip" : oy;
            // hidden and clip cut the content off; scroll and auto let a reader scroll to all of it
            const sx = x === "scroll" || x === "auto", sy = y === "scroll" || y === "auto";
            const l = box.l - (sx ? e.scrollLeft : 0), t = box.t - (sy ? e.scrollTop : 0);
            all = cut(all, {l: x === "visible" ? -I : l,
                            r: x === "visible" ? I : (sx ? l + Math.max(e.scrollWidth, box.r - box.l) : box.r),
                            t: y === "visible" ? -I : t,
                            b: y === "visible" ? I : (sy ? t + Math.max(e.scrollHeight, box.b - box.t) : box.b)});
          }
          for (const k of [cp && cp !== "none" ? clipPath(cp, box) : null, clipped ? clipProp(c.clip, box) : null]) {
            if (k) { all = cut(all, k); effects = effects ? cut(effects, k) : k; }
          }
        }
      }
      const isCB = f !== "none" || /paint|layout|strict|content/.test(contain) || c.transform !== "none"
        || c.perspective !== "none" || /transform|perspective|filter/.test(c.willChange || "")
        || (c.backdropFilter && c.backdropFilter !== "none");
      const abs = pos !== "static" || isCB ? all : (effects ? cut(ps.abs, effects) : ps.abs);
      const fixed = isCB ? all : (effects ? cut(ps.fixed, effects) : ps.fixed);
      const unsure = ps.unsure || (c.mixBlendMode && c.mixBlendMode !== "normal")
        || (f !== "none" && !/^(opacity\([^)]*\)\s*)+$/.test(f));
      states.set(e, {all, abs, fixed, alpha, unsure});
    }
    return states.get(el) || TOP;
  };

  // -- colour ---------------------------------------------------------------------------------------------
  const rgba = (v) => {
    const m = /^rgba?\(\s*([\d.]+)[\s,]+([\d.]+)[\s,]+([\d.]+)(?:\s*[,/]\s*([\d.]+)(%?))?\s*\)$/.exec(v || "");
    if (!m) return null;
    return [+m[1], +m[2], +m[3], m[4] === undefined ? 1 : parseFloat(m[4]) / (m[5] ? 100 : 1)];
  };
  const over = (top, under) => [0, 1, 2].map((i) => top[i] * top[3] + under[i] * (1 - top[3])).concat(1);
  const lum = (c) => {
    const f = (v) => { v /= 255; return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
  };
  const contrast = (a, b) => {
    const x = lum(a), y = lum(b);
    return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05);
  };
  const textClip = new Map();  // whether a background is painted through the text (background-clip: text)
  const clippedToText = (el) => {
    for (let n = el; n; n = flatParent(n)) {
      if (textClip.has(n)) return textClip.get(n);
      const c = style(n);
      if (c.backgroundClip === "text" || c.webkitBackgroundClip === "text") { textClip.set(el, true); return true; }
    }
    textClip.set(el, false);
    return false;
  };
  // what lies behind an element's text, from its own and its ancestors' backgrounds: [colour, the element whose
  // opaque background it is]; null when it cannot be told (a background image, a dark canvas)
  const backdrops = new Map();
  const canvas = () => /dark/.test(style(document.documentElement).colorScheme || "") ? null
    : [[255, 255, 255, 1], null];
  const backdrop = (el) => {
    const chain = [];
    for (let n = el; n && !backdrops.has(n); n = flatParent(n)) chain.push(n);
    for (let i = chain.length - 1; i >= 0; i--) {
      const e = chain[i], p = flatParent(e), under = p ? backdrops.get(p) : canvas(), c = style(e);
      const b = rgba(c.backgroundColor);
      let v = under;
      if (c.backgroundImage && c.backgroundImage !== "none") v = null;
      else if (b && b[3] >= 0.999) v = [b, e];
      else if (b && b[3] > 0) v = under && [over(b, under[0]), under[1]];
      backdrops.set(e, v);
    }
    return backdrops.get(el);
  };
  let painters = null;  // elements that paint something of their own (an image, a background) and where
  const painted = () => {
    if (painters) return painters;
    painters = [];
    const REPLACED = ["img", "video", "canvas", "svg", "picture", "iframe", "object", "embed", "input", "textarea",
                      "select", "button", "meter", "progress"];
    const walk = (root) => {
      const w = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT);
      for (let e = w.nextNode(); e; e = w.nextNode()) {
        const sr = rootOf(e);
        if (sr) walk(sr);
        const c = style(e);
        if (c.visibility !== "visible" || c.display === "none") continue;
        const b = rgba(c.backgroundColor);
        const image = REPLACED.includes(e.localName) || (c.backgroundImage && c.backgroundImage !== "none")
          || (c.boxShadow && c.boxShadow !== "none");
        if (image || (b && b[3] > 0)) painters.push([e, R(e.getBoundingClientRect()), b, !image]);
      }
    };
    walk(document);
    return painters;
  };
  // how the letters of an element's text are drawn: "ink" (a colour a reader tells from what is behind), "none"
  // (not at all), or "background" (the colour of the backgrounds behind them: hidden unless something else is
  // painted where they are, which only their boxes tell)
  const inkOf = (el, c, s) => {
    if (el instanceof SVGElement) {
      const none = (paint, op) => paint === "none" || parseFloat(op) === 0;
      return none(c.fill, c.fillOpacity) && (none(c.stroke, c.strokeOpacity) || parseFloat(c.strokeWidth) === 0)
        ? "none" : "ink";
    }
    if (s.unsure || (c.textShadow && c.textShadow !== "none")) return "ink";
    const fill = rgba(c.webkitTextFillColor) || rgba(c.color);
    const stroke = parseFloat(c.webkitTextStrokeWidth) > 0 ? rgba(c.webkitTextStrokeColor) : null;
    if (!fill) return "ink";
    const inks = [fill, stroke].filter((k) => k && k[3] >= 0.05);
    if (!inks.length) return clippedToText(el) ? "ink" : "none";  // transparent: seen only as a window on a background
    const behind = backdrop(el);
    if (!behind || inks.some((k) => contrast(over(k, behind[0]), behind[0]) >= 1.1)) return "ink";
    return {bg: behind[0], owner: behind[1]};
  };
  const paintedUnder = (el, look, rects) => {
    for (const [e, box, b, plain] of painted()) {
      if (e === look.owner || e.contains(el)) continue;  // the backgrounds behind it, counted already
      if (plain && contrast(over(b, look.bg), look.bg) < 1.1) continue;  // the same colour changes nothing
      for (const r of rects) if (area(cut(r, box)) > 0) return true;
    }
    return false;
  };
  // what of a text's look is its element's: null when no text of it is shown at all
  const looks = new Map();
  const lookOf = (el) => {
    if (looks.has(el)) return looks.get(el);
    let v = null;
    const c = style(el);
    if (c.visibility === "visible" && el.checkVisibility()) {
      const s = stateOf(el);
      if (s.alpha >= 0.05 && parseFloat(c.fontSize) >= 1) {
        const ink = inkOf(el, c, s);
        if (ink !== "none") v = {s, ink, skipped: !el.checkVisibility({contentVisibilityAuto: true})};
      }
    }
    looks.set(el, v);
    return v;
  };

  // -- each text node: shown whole ("v"), not at all ("h"), or only some of its words (the words shown) ----------
  const range = document.createRange();
  const shownPart = (r, clip) => { const a = area(r); return a > 0 && r.b - r.t >= 2 ? area(cut(r, clip)) / a : 0; };
  const classify = (t) => {
    const el = flatParent(t);
    const look = el ? lookOf(el) : null;
    if (!look) return "h";
    const s = look.s;
    range.selectNodeContents(t);
    const rects = [...range.getClientRects()].map(R);
    const parts = rects.map((r) => shownPart(r, s.all));
    if (!parts.some((f) => f > 0) || (look.ink !== "ink" && !paintedUnder(el, look.ink, rects))) return "h";
    // shown whole; text off-screen under content-visibility: auto is too, but innerText leaves it out: walked
    if (parts.every((f) => f >= 0.99)) return look.skipped ? t.data : "v";
    let out = "";
    for (const m of t.data.matchAll(/(\s*)(\S+)/g)) {  // part shown: each word on its own
      range.setStart(t, m.index + m[1].length);
      range.setEnd(t, m.index + m[0].length);
      const w = [...range.getClientRects()].map(R);
      const all = w.reduce((x, r) => x + area(r), 0), seen = w.reduce((x, r) => x + area(cut(r, s.all)), 0);
      if (all > 0 && seen / all >= 0.5) out += (out ? " " : (m[1] ? " " : "")) + m[2];
    }
    return out ? out + (/\s$/.test(t.data) ? " " : "") : "h";
  };
  const isSelect = (el) => el.localName === "select";

  // -- which elements need the walk: those on the way to a shadow root, a slot, a closed select, or text that
  // is not shown whole; below any other element its innerText is taken as it is
  const onPath = new Set();
  const mark = (node) => {
    for (let n = node; n && !onPath.has(n);) {
      onPath.add(n);
      const p = n.parentNode;
      n = p instanceof ShadowRoot ? p.host : p;
    }
  };
  const texts = new Map();
  const seen = new Set();
  let visited = 0;
  const scan = (root, inShadow) => {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT, {
      acceptNode: (n) => n.nodeType === Node.ELEMENT_NODE && SKIP.includes(n.localName)
        ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT});
    for (let n = walker.nextNode(); n && !late; n = walker.nextNode()) {
      if ((++visited & 255) === 0 && performance.now() > scanUntil) { late = true; mark(n); return; }
      seen.add(n);
      if (n.nodeType === Node.TEXT_NODE) {
        if (!n.data.trim()) continue;
        const k = classify(n);
        if (k !== "v") { texts.set(n, k); mark(n); }
        continue;
      }
      const sr = rootOf(n);
      if (sr) { mark(n); scan(sr, true); }
      if ((inShadow && n.localName === "slot") || isSelect(n)) mark(n);
    }
  };
  // slots first (a slotted node's style and clip are its slot's), then the text
  const slots = (root) => {
    const w = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT);
    for (let e = w.nextNode(); e; e = w.nextNode()) {
      const sr = rootOf(e);
      if (!sr) continue;
      for (const slot of sr.querySelectorAll("slot")) for (const a of slot.assignedNodes()) slotOf.set(a, slot);
      slots(sr);
    }
  };
  slots(document);
  scan(document, false);

  const out = [];
  const block = (el) => {
    const d = style(el).display;
    return !(d.startsWith("inline") || d === "contents" || d === "ruby" || d === "none");
  };
  const emit = (node) => {
    if (done || ((late && !seen.has(node)) || performance.now() > emitUntil)) { done = true; return; }
    if (node.nodeType === Node.TEXT_NODE) {
      const k = texts.get(node);
      if (k === "h") return;
      const p = flatParent(node);
      if (p && style(p).visibility === "visible") out.push((k === undefined ? node.data : k).replace(/\s+/g, " "));
      return;
    }
    if (node.nodeType !== Node.ELEMENT_NODE) return;
    const el = node;
    if (SKIP.includes(el.localName)) return;
    const contents = style(el).display === "contents";
    if (!contents && !el.checkVisibility()) return;
    if (!onPath.has(el) && !contents && el.innerText !== undefined) {
      const t = el.innerText;
      if (t) block(el) ? out.push("\n", t, "\n") : out.push(t);
      return;
    }
    if (isSelect(el)) {  // its options are painted by the control: a drop-down shows its selected one, a list all
      const s = stateOf(el);
      if (s.alpha < 0.05 || shownPart(R(el.getBoundingClientRect()), s.all) < 0.5) return;
      const shown = !el.multiple && (el.size || 0) <= 1 ? [...el.selectedOptions].slice(0, 1) : [...el.options];
      out.push("\n", shown.map((o) => o.label || o.text).join("\n"), "\n");
      return;
    }
    const sr = rootOf(el);
    let kids = sr ? sr.childNodes : el.childNodes;
    if (!sr && el.localName === "slot") {
      const assigned = el.assignedNodes({flatten: true});
      if (assigned.length) kids = assigned;
    }
    const b = !contents && block(el);
    if (b) out.push("\n");
    for (const k of kids) emit(k);
    if (b) out.push("\n");
  };
  emit(document.body || document.documentElement);
  const text = cap(out.join("").replace(/[ \t]+\n/g, "\n").replace(/\n[ \t]+/g, "\n").replace(/\n{3,}/g, "\n\n")
    .trim(), limit);
  if (done) text.late = true;
  return text;
}"""
