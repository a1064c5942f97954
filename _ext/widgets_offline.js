// Glue between the vendored ipywidgets HTML manager and this offline book. Loaded after
// require.js and before embed-amd.js (see nb_ipywidgets_js in _config.yml).
(function () {
  // 1. The manager finds its icon fonts next to its RequireJS module address; point that
  //    at the copy in _static/offline/html-manager instead of the page's own folder.
  const here = document.currentScript.src.replace(/[^/]*$/, "");
  require.config({ paths: { "@jupyter-widgets/html-manager/dist": here + "html-manager" } });

  // 2. It typesets widget labels through MathJax 2's MathJax.Hub.Queue; the book loads
  //    MathJax 3, whose equivalent is MathJax.typesetPromise.
  document.addEventListener("DOMContentLoaded", function () {
    const mj = window.MathJax;
    if (mj && mj.startup && !mj.Hub) {
      mj.Hub = {
        Queue: function (command) {
          mj.startup.promise.then(function () {
            return mj.typesetPromise([command[2]]);
          });
        },
      };
    }
  });
})();
