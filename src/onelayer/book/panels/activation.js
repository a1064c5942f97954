// 第 2 章：几个激活函数在 [下限, 上限] 上的函数值与导数，圆点标出一个预激活值 z。
(function () {
  "use strict";
  const P = window.onelayerPanels, { el, svgEl, num, slider, checkbox, fmt } = P.ui;
  const { ACTIVATIONS } = P.math;
  const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"];

  function plot(names, lo, hi, z, which, title) {
    const W = 300, H = 200, left = 34, right = 8, top = 20, bottom = 26, n = 201;
    const curves = names.map((name) => {
      const pts = [];
      for (let k = 0; k < n; k++) {
        const x = lo + (hi - lo) * k / (n - 1);
        pts.push([x, ACTIVATIONS[name](x)[which]]);
      }
      return pts;
    });
    const ys = curves.flat().map((p) => p[1]).concat(names.map((name) => ACTIVATIONS[name](z)[which]), [0]);
    let ymin = Math.min(...ys), ymax = Math.max(...ys);
    const pad = 0.05 * (ymax - ymin || 1); ymin -= pad; ymax += pad;
    const sx = (x) => left + (W - left - right) * (x - lo) / (hi - lo);
    const sy = (y) => top + (H - top - bottom) * (ymax - y) / (ymax - ymin);
    const kids = [
      svgEl("text", { x: W / 2, y: 13, "text-anchor": "middle" }, [title]),
      svgEl("line", { x1: left, x2: W - right, y1: sy(0), y2: sy(0), stroke: "currentColor", "stroke-width": 0.8 }),
      svgEl("line", { x1: sx(z), x2: sx(z), y1: top, y2: H - bottom, stroke: "currentColor", "stroke-dasharray": "2 3", "stroke-width": 1 }),
      svgEl("text", { x: left, y: H - 8, "text-anchor": "start" }, [fmt(lo, 1)]),
      svgEl("text", { x: W - right, y: H - 8, "text-anchor": "end" }, [fmt(hi, 1)]),
      svgEl("text", { x: left - 3, y: sy(ymax) + 8, "text-anchor": "end" }, [fmt(ymax, 1)]),
      svgEl("text", { x: left - 3, y: sy(ymin), "text-anchor": "end" }, [fmt(ymin, 1)]),
    ];
    curves.forEach((pts, i) => {
      const color = COLORS[Object.keys(ACTIVATIONS).indexOf(names[i])];
      kids.push(svgEl("polyline", { fill: "none", stroke: color, "stroke-width": 1.8,
        points: pts.map(([x, y]) => `${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join(" ") }));
      kids.push(svgEl("circle", { cx: sx(z), cy: sy(ACTIVATIONS[names[i]](z)[which]), r: 3.5, fill: color }));
    });
    return svgEl("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", width: W,
      "aria-label": `曲线图：${names.join("、")} 在 [${fmt(lo, 1)}, ${fmt(hi, 1)}] 上的${title}，圆点标出 z = ${fmt(z, 2)}` }, kids);
  }

  P.kinds.activation = function (root, data) {
    const names = Object.keys(ACTIVATIONS);
    const checks = names.map((name) => checkbox({ name: `act-${name}`, label: name,
                                                   value: data.selected.includes(name) }, draw));
    const lo = slider({ name: "lo", label: "范围下限", min: -8, max: 8, step: 0.5, value: data.range[0] }, draw);
    const hi = slider({ name: "hi", label: "范围上限", min: -8, max: 8, step: 0.5, value: data.range[1] }, draw);
    const z = slider({ name: "z", label: "预激活 z", min: -8, max: 8, step: 0.05, value: data.z }, draw);
    const out = el("div", { class: "olp-out", "aria-live": "polite" });
    root.append(el("div", { class: "olp-controls" }, [
      el("fieldset", { class: "olp-radios" }, [el("legend", { text: "激活函数" }), ...checks.map((c) => c.node)]),
      el("div", { class: "olp-group" }, [lo.node, hi.node, z.node])]), out);

    function draw() {
      const chosen = names.filter((_, i) => checks[i].get());
      const zv = z.get();
      if (!chosen.length) {
        out.replaceChildren(el("p", { class: "olp-msg", text: "请至少选一个激活函数。" }));
        return;
      }
      // 范围的两端若颠倒就交换；z 在范围外时把范围扩到 z。
      let a = Math.min(lo.get(), hi.get()), b = Math.max(lo.get(), hi.get());
      if (a === b) b = a + 0.5;
      a = Math.min(a, zv); b = Math.max(b, zv);
      const rows = chosen.map((name) => {
        const [y, g] = ACTIVATIONS[name](zv);
        return el("tr", {}, [el("th", { scope: "row", text: name }),
          el("td", {}, [num(`${name}.value`, y, 4)]), el("td", {}, [num(`${name}.grad`, g, 4)])]);
      });
      const table = el("table", {}, [
        el("caption", { class: "olp-note", text: `预激活值 z = ${fmt(zv, 2)}` }),
        el("tr", {}, [el("th", { scope: "col", text: "激活函数" }), el("th", { scope: "col", text: "act(z)" }),
                      el("th", { scope: "col", text: "act′(z)" })]), ...rows]);
      const figs = el("div", { class: "olp-controls" }, [
        plot(chosen, a, b, zv, 0, "函数值 act(z)"), plot(chosen, a, b, zv, 1, "导数 act′(z)")]);
      out.replaceChildren(table, figs);
    }
    draw();
  };
})();
