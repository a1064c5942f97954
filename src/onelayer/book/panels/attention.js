// 第 5 章：一个查询与“猫吃鱼”的三个键（W_Q = W_K = W_V = I）：分数、注意力权重、输出。
(function () {
  "use strict";
  const P = window.onelayerPanels, { el, svgEl, num, slider, select, checkbox, fmt } = P.ui;

  // 查询 q 对位置 0…pos 的分数 q·x_j（可选除以 √d_k）、softmax 权重、加权求和的输出
  P.attention = function (q, X, pos, scaled) {
    const s = scaled ? Math.sqrt(q.length) : 1;
    const scores = X.slice(0, pos + 1).map((x) => x.reduce((a, xi, i) => a + xi * q[i], 0) / s);
    const top = Math.max(...scores);
    const e = scores.map((v) => Math.exp(v - top));
    const z = e.reduce((a, b) => a + b, 0);
    const weights = e.map((v) => v / z);
    const out = q.map((_, i) => weights.reduce((a, w, j) => a + w * X[j][i], 0));
    return { scores, weights, out };
  };

  function bars(tokens, weights) {
    const W = 360, H = 150, left = 34, top = 10, bottom = 26;
    const slot = (W - left - 6) / tokens.length;
    const y = (v) => top + (H - top - bottom) * (1 - v);
    const kids = [0, 0.5, 1].map((t) => svgEl("text", { x: left - 4, y: y(t) + 4, "text-anchor": "end" }, [String(t)]));
    tokens.forEach((t, j) => {
      const x0 = left + j * slot;
      if (j < weights.length) {
        const r = svgEl("rect", { x: x0 + slot * 0.2, width: slot * 0.6, y: y(weights[j]),
                                  height: y(0) - y(weights[j]), fill: "#1f77b4" });
        r.append(svgEl("title", {}, [`${t}：${fmt(weights[j], 3)}`]));
        kids.push(r);
      } else {
        kids.push(svgEl("text", { x: x0 + slot / 2, y: y(0) - 4, "text-anchor": "middle" }, ["看不见"]));
      }
      kids.push(svgEl("text", { x: x0 + slot / 2, y: H - 8, "text-anchor": "middle" }, [t]));
    });
    kids.push(svgEl("line", { x1: left, x2: W, y1: y(0), y2: y(0), stroke: "currentColor", "stroke-width": 1 }));
    return svgEl("svg", { viewBox: `0 0 ${W} ${H}`, width: W, role: "img",
      "aria-label": `柱状图：查询给 ${tokens.slice(0, weights.length).join("、")} 的注意力权重` }, kids);
  }

  P.kinds.attention = function (root, data) {
    const tokens = data.tokens;
    const qs = data.q.map((v, i) => slider({ name: `q${i}`, label: `查询 q[${i}]`, min: -2, max: 2,
                                             step: 0.1, value: v }, draw));
    const token = select({ name: "token", label: "提问的词元", value: data.token,
                           options: tokens.map((t) => [t, t]) }, () => {
      data.X[tokens.indexOf(token.get())].forEach((v, i) => qs[i].set(v));
      draw();
    });
    const scaled = checkbox({ name: "scale", label: "除以 √d_k", value: true }, draw);
    const out = el("div", { class: "olp-out", "aria-live": "polite" });
    root.append(el("div", { class: "olp-controls" }, [
      el("div", { class: "olp-group" }, qs.map((s) => s.node)),
      el("div", { class: "olp-group" }, [token.node, scaled.node])]), out);

    function draw() {
      const q = qs.map((s) => s.get()), pos = tokens.indexOf(token.get());
      const t = P.attention(q, data.X, pos, scaled.get());
      const seen = tokens.slice(0, pos + 1);
      const head = el("tr", {}, [el("th", { text: "" }), ...seen.map((s) => el("th", { scope: "col", text: s }))]);
      const row = (name, key, v) => el("tr", {}, [el("th", { scope: "row", text: name }),
        ...v.map((value, j) => el("td", {}, [num(`${key}.${j}`, value, 3)]))]);
      const outRow = el("tr", {}, [el("th", { scope: "row", text: "输出 Σ 权重·x_j" }),
        el("td", { colspan: String(Math.max(1, seen.length)) }, t.out.flatMap((v, i) => [i ? " " : "", num(`out.${i}`, v, 3)]))]);
      out.replaceChildren(
        el("table", {}, [el("caption", { class: "olp-note", text: `“${token.get()}”的查询看得见 ${seen.join("、")}（因果掩码）` }),
          head, row(scaled.get() ? "分数 q·x_j/√d_k" : "分数 q·x_j", "score", t.scores),
          row("注意力权重", "weight", t.weights), outRow]),
        bars(tokens, t.weights));
    }
    draw();
  };
})();
