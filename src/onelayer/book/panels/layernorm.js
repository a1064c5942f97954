// 第 4 章：一个词元向量经过 LayerNorm 或 RMSNorm：输入 → 归一化 → 乘 γ（加 β）。
(function () {
  "use strict";
  const P = window.onelayerPanels, { el, svgEl, num, slider, radios, fmt } = P.ui;
  const { mean } = P.math;
  const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c"];

  P.norm = function (x, gamma, beta, kind, data) {
    let xhat;
    if (kind === "LayerNorm") {
      const m = mean(x), v = mean(x.map((xi) => (xi - m) ** 2));
      xhat = x.map((xi) => (xi - m) / Math.sqrt(v + data.eps.LayerNorm));
    } else {
      const ms = mean(x.map((xi) => xi * xi));
      xhat = x.map((xi) => xi / Math.sqrt(ms + data.eps.RMSNorm));
    }
    const y = xhat.map((v, i) => v * gamma[i] + (kind === "LayerNorm" ? beta[i] : 0));
    return { x, xhat, y };
  };
  P.normStats = function (v) {
    const m = mean(v);
    return { mean: m, var: mean(v.map((vi) => (vi - m) ** 2)), rms: Math.sqrt(mean(v.map((vi) => vi * vi))) };
  };

  function bars(rows, labels) {
    const W = 380, H = 180, top = 10, bottom = 40, left = 26, lim = 3;
    const y = (v) => top + (H - top - bottom) * (lim - Math.max(-lim, Math.min(lim, v))) / (2 * lim);
    const group = (W - left) / 4, width = group * 0.8 / rows.length;
    const kids = [];
    for (const t of [-3, 0, 3]) kids.push(svgEl("text", { x: left - 4, y: y(t) + 4, "text-anchor": "end" }, [String(t)]));
    rows.forEach((v, r) => v.forEach((value, i) => {
      const x0 = left + i * group + group * 0.1 + r * width;
      kids.push(svgEl("rect", { x: x0, width: width * 0.95, y: Math.min(y(value), y(0)),
                                height: Math.abs(y(value) - y(0)), fill: COLORS[r] },
                      [svgEl("title", {}, [`${labels[r]} 第 ${i + 1} 维：${fmt(value, 3)}`])]));
    }));
    for (let i = 0; i < 4; i++) {
      kids.push(svgEl("text", { x: left + (i + 0.5) * group, y: H - 24, "text-anchor": "middle" }, [`第 ${i + 1} 维`]));
    }
    labels.forEach((label, r) => {
      kids.push(svgEl("rect", { x: left + r * 110, y: H - 14, width: 10, height: 10, fill: COLORS[r] }));
      kids.push(svgEl("text", { x: left + r * 110 + 14, y: H - 5 }, [label]));
    });
    kids.push(svgEl("line", { x1: left, x2: W, y1: y(0), y2: y(0), stroke: "currentColor", "stroke-width": 1 }));
    return svgEl("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", width: W,
      "aria-label": "分组柱状图：输入、归一化后与输出在 4 个维度上的数值" }, kids);
  }

  P.kinds.layernorm = function (root, data) {
    const tokens = Object.keys(data.tokens);
    const token = radios({ name: "token", label: "词元", options: tokens.map((t) => [t, t]),
                           value: data.token }, () => {
      data.tokens[token.get()].forEach((v, i) => xs[i].set(v));
      draw();
    });
    const kind = radios({ name: "kind", label: "归一化",
                          options: [["LayerNorm", "LayerNorm"], ["RMSNorm", "RMSNorm"]], value: "LayerNorm" }, draw);
    const xs = data.tokens[data.token].map((v, i) => slider({ name: `x${i}`, label: `x[${i}]`, min: -3, max: 3, step: 0.1, value: v }, draw));
    const gs = [0, 1, 2, 3].map((i) => slider({ name: `g${i}`, label: `γ[${i}]`, min: -2, max: 2, step: 0.1, value: 1 }, draw));
    const bs = [0, 1, 2, 3].map((i) => slider({ name: `b${i}`, label: `β[${i}]`, min: -2, max: 2, step: 0.1, value: 0 }, draw));
    const out = el("div", { class: "olp-out", "aria-live": "polite" });
    root.append(el("div", { class: "olp-controls" }, [token.node, kind.node]),
      el("div", { class: "olp-controls" }, [xs, gs, bs].map((g) => el("div", { class: "olp-group" }, g.map((s) => s.node)))),
      out);

    function draw() {
      const k = kind.get();
      bs.forEach((s) => { s.input.disabled = k === "RMSNorm"; });
      const r = P.norm(xs.map((s) => s.get()), gs.map((s) => s.get()), bs.map((s) => s.get()), k, data);
      const labels = ["输入 x", "归一化 x̂", "输出 y"];
      const keys = [["x", r.x], ["xhat", r.xhat], ["y", r.y]];
      const head = (cols) => el("tr", {}, ["", ...cols].map((t) => el("th", { scope: "col", text: t })));
      const vectors = keys.map(([key, v], i) => el("tr", {}, [el("th", { scope: "row", text: labels[i] }),
        ...v.map((value, j) => el("td", {}, [num(`${key}.${j}`, value, 3)]))]));
      const stats = keys.map(([key, v], i) => {
        const s = P.normStats(v);
        return el("tr", {}, [el("th", { scope: "row", text: labels[i] }),
          el("td", {}, [num(`${key}.mean`, s.mean, 4)]), el("td", {}, [num(`${key}.var`, s.var, 4)]),
          el("td", {}, [num(`${key}.rms`, s.rms, 4)])]);
      });
      out.replaceChildren(
        el("table", {}, [el("caption", { class: "olp-note", text: `${k}：输入 x → 归一化 x̂ → 输出 y = ${k === "LayerNorm" ? "γ⊙x̂ + β" : "γ⊙x̂（无 β）"}` }),
                         head(["第1维", "第2维", "第3维", "第4维"]), ...vectors]),
        el("table", {}, [head(["均值", "有偏方差", "RMS"]), ...stats]),
        bars([r.x, r.xhat, r.y], ["输入 x", "归一化", "输出 y"]));
    }
    draw();
  };
})();
