// Loads the ipywidgets HTML manager of this offline book on demand. myst-nb puts this script
// (see nb_ipywidgets_js in _config.yml) only on pages with saved widget state. The manager
// (embed-amd.js, about 3.6 MB), RequireJS and the saved widget state (the frame players'
// frames) are fetched when the first panel comes near the screen, or before printing, so they
// never delay the text of the page.
(function () {
  const here = document.currentScript.src.replace(/[^/]*$/, "");
  const VIEWS = 'script[type="application/vnd.jupyter.widget-view+json"]';
  const STATE = 'script[type="application/vnd.jupyter.widget-state+json"]';
  let started = null;

  function load(src) {
    return new Promise(function (resolve, reject) {
      const script = document.createElement("script");
      script.src = src;
      script.onload = resolve;
      script.onerror = function () { reject(new Error("无法加载 " + src)); };
      document.head.appendChild(script);
    });
  }

  // A frame player's slider handle gets the slider's label as its accessible name and the
  // shown value (the short text of the frame, e.g. "0.6") as its announced value.
  function nameFrameSliders() {
    document.querySelectorAll(".frame-player .widget-slider").forEach(function (slider) {
      const handle = slider.querySelector(".noUi-handle");
      const label = slider.querySelector(".widget-label");
      const readout = slider.querySelector(".widget-readout");
      if (!handle) return;
      if (label && label.textContent.trim() && handle.getAttribute("aria-label") !== label.textContent.trim()) {
        handle.setAttribute("aria-label", label.textContent.trim());
      }
      const value = readout ? (readout.value || readout.textContent || "").trim() : "";
      if (value && handle.getAttribute("aria-valuetext") !== value) {
        handle.setAttribute("aria-valuetext", value);
      }
    });
  }

  function watchFrameSliders() {
    let queued = false;
    new MutationObserver(function () {
      if (queued) return;
      queued = true;
      requestAnimationFrame(function () { queued = false; nameFrameSliders(); });
    }).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true,
      attributeFilter: ["aria-valuenow", "aria-valuetext"] });
  }

  // The saved widget state: in the page, or (in the HTML book, built by reader_pages.py) in a
  // file of its own that sets window.onelayerWidgetState, named by the empty holder's data-src.
  function loadState() {
    const holder = document.querySelector(STATE + "[data-src]");
    if (!holder) return Promise.resolve();
    return load(holder.dataset.src).then(function () {
      holder.textContent = JSON.stringify(window.onelayerWidgetState);
      holder.removeAttribute("data-src");
    });
  }

  function start() {
    if (!started) {
      started = Promise.all([loadState(), load(here + "require.js")]).then(function () {
        // Each module of the manager finds its icon fonts next to its RequireJS module
        // address (the modules are defined inside embed-amd.js, never fetched by name):
        // point them all at the copy in _static/offline/html-manager.
        const manager = here + "html-manager";
        window.require.config({ paths: {
          "@jupyter-widgets/html-manager/dist": manager,
          "@jupyter-widgets/html-manager": manager + "/html-manager",
          "@jupyter-widgets/base": manager + "/base",
          "@jupyter-widgets/controls": manager + "/controls",
          "@jupyter-widgets/output": manager + "/output",
        } });
        watchFrameSliders();
        return load(here + "html-manager/embed-amd.js");
      });
    }
    return started;
  }
  window.onelayerLoadWidgets = start;

  function watch() {
    const views = document.querySelectorAll(VIEWS);
    if (!views.length) return;
    if (!("IntersectionObserver" in window)) { start(); return; }
    const observer = new IntersectionObserver(function (entries) {
      if (entries.some(function (e) { return e.isIntersecting; })) {
        observer.disconnect();
        start();
      }
    }, { rootMargin: "600px 0px" });
    views.forEach(function (view) { observer.observe(view.parentElement); });
    window.addEventListener("beforeprint", start);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", watch);
  else watch();
})();
