// 第 1 章：“鱼”的 FFN，x·W1 + b1 → 激活 → ·W2 + b2，可选 ReLU 或 GELU。
(function () {
  "use strict";
  const P = window.onelayerPanels, { el, svgEl, num, slider, radios, fmt } = P.ui;
  const { ACTIVATIONS, affine } = P.math;
  const COLORS = { gelu: "#ff7f0e", relu: "#1f77b4" };

  P.ffn = function (x, activation, data) {
    const pre = affine(x, data.W1, data.b1);
    const post = pre.map((h) => ACTIVATIONS[activation](h)[0]);
    return { pre, post, out: affine(post, data.W2, data.b2) };
  };

  function bars(pre, post, activation) {
    const W = 420, H = 180, top = 10, bottom = 24, left = 30, lim = 3.5;
    const y = (v) => top + (H - top - bottom) * (lim - Math.max(-lim, Math.min(lim, v))) / (2 * lim);
    const slot = (W - left - 6) / pre.length;
    const kids = [];
    for (const t of [-3, 0, 3]) {
      kids.push(svgEl("text", { x: left - 4, y: y(t) + 4, "text-anchor": "end" }, [String(t)]));
    }
    pre.forEach((h, i) => {
      const x0 = left + i * slot;
      const rect = (v, dx, w, fill, key) => {
        const r = svgEl("rect", { x: x0 + dx, width: w, y: Math.min(y(v), y(0)), height: Math.abs(y(v) - y(0)),
                                  fill, "data-key": key, "data-v": String(v) });
        r.append(svgEl("title", {}, [`探测器 ${i + 1}：${fmt(v, 3)}`]));
        return r;
      };
      kids.push(rect(h, slot * 0.1, slot * 0.8, "#aaaaaa", `pre.${i}`));
      kids.push(rect(post[i], slot * 0.3, slot * 0.4, COLORS[activation], `post.${i}`));
      if (i % 3 === 0 || i === pre.length - 1) {
        kids.push(svgEl("text", { x: x0 + slot / 2, y: H - 6, "text-anchor": "middle" }, [String(i + 1)]));
      }
    });
    kids.push(svgEl("line", { x1: left, x2: W, y1: y(0), y2: y(0), stroke: "currentColor", "stroke-width": 1 }));
    return svgEl("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", width: W,
      "aria-label": `柱状图：“鱼”的 16 个探测器激活前（灰）与 ${activation.toUpperCase()} 后的数值` }, kids);
  }

  P.kinds.ffn = function (root, data) {
    const xs = data.x.map((v, i) => slider({ name: `x${i}`, label: `x_鱼 第 ${i + 1} 维`, min: -2, max: 2,
                                              step: 0.1, value: v }, draw));
    const act = radios({ name: "activation", label: "激活函数",
                         options: [["gelu", "GELU"], ["relu", "ReLU"]], value: "gelu" }, draw);
    const out = el("div", { class: "olp-out", "aria-live": "polite" });
    root.append(el("div", { class: "olp-controls" }, [
      el("div", { class: "olp-group" }, xs.map((s) => s.node)), act.node]), out);

    function draw() {
      const x = xs.map((s) => s.get()), a = act.get();
      const t = P.ffn(x, a, data);
      const row = (name, key, v, n) => el("tr", {}, [el("th", { scope: "row", text: name }),
        ...v.slice(0, n).map((value, i) => el("td", {}, [num(`${key}.${i}`, value, 3)]))]);
      const head = el("tr", {}, [el("th", { text: "" }), ...[1, 2, 3, 4].map((i) => el("th", { scope: "col", text: `第 ${i} 个` }))]);
      const table = el("table", {}, [
        el("caption", { class: "olp-note", text: "前 4 个探测器与 FFN 的 4 维输出" }),
        head,
        row("x·W1 + b1", "pre", t.pre, 4),
        row(`${a.toUpperCase()}(·)`, "post", t.post, 4),
        row("FFN 输出", "out", t.out, 4),
      ]);
      out.replaceChildren(table, bars(t.pre, t.post, a),
        el("p", { class: "olp-note", text: `灰：激活前 x·W1 + b1；${a === "gelu" ? "橙" : "蓝"}：${a.toUpperCase()} 之后。横轴是探测器编号 1–16（d_ff = 16）。` }));
    }
    draw();
  };
})();
