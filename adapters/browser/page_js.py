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

# One scroll step down by a viewport; resolves after two frames (so IntersectionObserver callbacks of
# lazy-loaded content have run) with whether the bottom was reached and the page's height.
SCROLL_STEP = r"""new Promise((resolve) => {
  const el = document.scrollingElement || document.documentElement || document.body;
  if (!el) { resolve({bottom: true, height: 0}); return; }
  window.scrollBy(0, Math.max(200, window.innerHeight || 800));
  const done = () => resolve({bottom: window.scrollY + (window.innerHeight || 800) >= el.scrollHeight - 2,
                              height: el.scrollHeight});
  let frames = 0;
  const tick = () => { if (++frames >= 2) done(); else requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
  setTimeout(done, 250);  // a page whose frames do not run (hidden, throttled) still answers
})"""

SCROLL_TOP = "window.scrollTo(0, 0); (document.scrollingElement || document.documentElement || {}).scrollHeight || 0"

LOCATION = "location.href"

HEIGHT = "(document.scrollingElement || document.documentElement || {}).scrollHeight || 0"

# The DOM after scripts, with the page's shadow roots (open, and the closed ones g6 found over the
# DevTools DOM domain, passed in) kept as declarative shadow DOM where the browser can serialise them.
DOM = r"""function (...roots) {
  const doctype = document.doctype ? new XMLSerializer().serializeToString(document.doctype) + "\n" : "";
  const root = document.documentElement;
  if (!root) return doctype;
  try {
    if (root.getHTML) return doctype + "<html" + [...root.attributes].map(
        (a) => " " + a.name + '="' + a.value.replace(/&/g, "&amp;").replace(/"/g, "&quot;") + '"').join("")
      + ">" + root.getHTML({serializableShadowRoots: true, shadowRoots: roots}) + "</html>";
  } catch (e) {}
  return doctype + root.outerHTML;
}"""

# The text a reader sees. Where no shadow root is below an element, it is the browser's own innerText of
# that element; on the way to a shadow root (open, or closed: passed in as host, root pairs found over
# the DevTools DOM domain) the flat tree is walked instead, so text inside shadow roots and slotted text
# are read where they are shown, which Chromium's innerText leaves out.
READER_TEXT = r"""function (...pairs) {
  const closed = new Map();
  for (let i = 0; i + 1 < pairs.length; i += 2) closed.set(pairs[i], pairs[i + 1]);
  const rootOf = (el) => el.shadowRoot || closed.get(el) || null;
  const onPath = new Set();
  const mark = (node) => {
    for (let n = node; n && !onPath.has(n);) {
      onPath.add(n);
      const p = n.parentNode;
      n = p instanceof ShadowRoot ? p.host : p;
    }
  };
  const scan = (root, inShadow) => {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT);
    for (let el = walker.nextNode(); el; el = walker.nextNode()) {
      const sr = rootOf(el);
      if (sr) { mark(el); scan(sr, true); }
      if (inShadow && el.localName === "slot") mark(el);
    }
  };
  scan(document, false);
  const style = (el) => getComputedStyle(el);
  const out = [];
  const block = (el) => {
    const d = style(el).display;
    return !(d.startsWith("inline") || d === "contents" || d === "ruby" || d === "none");
  };
  const emit = (node) => {
    if (node.nodeType === Node.TEXT_NODE) {
      const p = node.parentElement;
      if (p && style(p).visibility === "visible") out.push(node.data.replace(/\s+/g, " "));
      return;
    }
    if (node.nodeType !== Node.ELEMENT_NODE) return;
    const el = node;
    if (["script", "style", "template", "noscript", "head", "title", "meta", "link"].includes(el.localName)) return;
    const contents = style(el).display === "contents";
    if (!contents && !el.checkVisibility()) return;
    if (!onPath.has(el) && !contents && el.innerText !== undefined) {
      const t = el.innerText;
      if (t) block(el) ? out.push("\n", t, "\n") : out.push(t);
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
  return out.join("").replace(/[ \t]+\n/g, "\n").replace(/\n[ \t]+/g, "\n").replace(/\n{3,}/g, "\n\n").trim();
}"""
