// Code, outputs, tables and formulas (inline ones too: MathML does not break across lines)
// that scroll inside their box on a narrow screen (book.css)
// get a tab stop, so they can be scrolled with the keyboard (the theme's own version of this
// is switched off by page_speed.py: it measured every box of the page when it loaded).
// A box is measured when it comes near the screen, where the browser lays it out anyway, and
// every box at the first press of Tab, before the focus moves; again after a resize or a
// change of the page. Widths are all read before any attribute changes (one layout). Until it
// is measured, a box has a tab stop (an attribute, no layout): one that scrolls is never out
// of the keyboard's reach, and the first Tab takes the stops off the boxes that do not scroll.
(() => {
  const SCROLLERS = [
    "pre", ".cell_output", ".widget-box", ".katex-display", ".math-display", "span.math",
    ".olp-out", ".table-wrapper",
    ".pst-scrollable-table-container", ".jp-RenderedHTMLCommon",
  ].map((s) => ".bd-article " + s).join(", ");

  const stop = (e) => {
    e.tabIndex = 0;
    e.dataset.bookScroll = "";
  };
  const update = (elements) => {
    const scrolls = elements.map(
      (e) => e.scrollWidth > e.clientWidth + 1 || e.scrollHeight > e.clientHeight + 1);
    elements.forEach((e, i) => {
      if (scrolls[i] && !(e.tabIndex >= 0 && e.hasAttribute("tabindex"))) {
        stop(e);
      } else if (!scrolls[i] && e.dataset.bookScroll !== undefined) {
        e.removeAttribute("tabindex");
        delete e.dataset.bookScroll;
      }
    });
  };

  let sweptAll = false;
  const near = new IntersectionObserver((entries) => {
    update(entries.filter((entry) => entry.isIntersecting).map((entry) => entry.target));
  }, { rootMargin: "50% 0px" });
  const watch = () => {
    sweptAll = false;
    near.disconnect();
    // Widths may have changed: every box without a stop gets one until it is measured again.
    for (const e of document.querySelectorAll(SCROLLERS)) {
      if (!e.hasAttribute("tabindex")) stop(e);
      near.observe(e);
    }
  };
  const everyBoxOnTab = (event) => {
    if (event.key === "Tab" && !sweptAll) {
      sweptAll = true;
      update([...document.querySelectorAll(SCROLLERS)]);
    }
  };

  let timer;
  const later = () => {
    clearTimeout(timer);
    timer = setTimeout(watch, 200);
  };
  const start = () => {
    // The show/hide toggles of folded code are named by their visible text, not by an English
    // aria-label that differs from it (axe: label-content-name-mismatch).
    for (const s of document.querySelectorAll("details.hide > summary[aria-label]")) {
      s.removeAttribute("aria-label");
    }
    watch();
    document.addEventListener("keydown", everyBoxOnTab, true);
    window.addEventListener("resize", later);
    const main = document.getElementById("main-content");
    if (main) new MutationObserver(later).observe(main, { subtree: true, childList: true });
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
