// Code, outputs and formulas that scroll sideways on a narrow screen (book.css) get a tab stop,
// so they can be scrolled with the keyboard. The theme does this for code blocks only on a
// resize or a change of the page, which can come before the figures and formulas are drawn.
(() => {
  const SCROLLERS =
    ".bd-article pre, .bd-article .cell_output, .bd-article .widget-box, .bd-article mjx-container," +
    " .bd-article .olp-out";
  const update = () => {
    // The show/hide toggles of folded code are named by their visible text, not by an English
    // aria-label that differs from it (axe: label-content-name-mismatch).
    for (const s of document.querySelectorAll("details.hide > summary[aria-label]")) {
      s.removeAttribute("aria-label");
    }
    for (const e of document.querySelectorAll(SCROLLERS)) {
      const scrolls = e.scrollWidth > e.clientWidth + 1;
      if (scrolls && !(e.tabIndex >= 0 && e.hasAttribute("tabindex"))) {
        e.tabIndex = 0;
        e.dataset.bookScroll = "";
      } else if (!scrolls && e.dataset.bookScroll !== undefined) {
        e.removeAttribute("tabindex");
        delete e.dataset.bookScroll;
      }
    }
  };
  let timer;
  const later = () => {
    clearTimeout(timer);
    timer = setTimeout(update, 200);
  };
  const start = () => {
    update();
    window.addEventListener("resize", later);
    window.addEventListener("load", later);
    const main = document.getElementById("main-content");
    if (main) new MutationObserver(later).observe(main, { subtree: true, childList: true });
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
