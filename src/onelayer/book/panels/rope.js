// 第 9 章：旋转位置编码。查询转到位置 m、键转到位置 n（两半配对：第 j 维与第 j + d/2 维是一对），
// 旋转之后的分数 q_m·k_n 只依赖 m − n。
(function () {
  "use strict";
  const P = window.onelayerPanels, { el, svgEl, num, slider, radios, fmt } = P.ui;

  // x 转到位置 t：第 j 对 (x_j, x_{j+d/2}) 转过 t·ω_j，ω_j = θ^(−2j/d)
  P.rope = function (x, t, theta) {
    const h = x.length / 2, out = x.slice();
    for (let j = 0; j < h; j++) {
      const angle = t * Math.pow(theta, -2 * j / x.length);
      const c = Math.cos(angle), s = Math.sin(angle);
      out[j] = x[j] * c - x[j + h] * s;
      out[j + h] = x[j + h] * c + x[j] * s;
    }
    return out;
  };
  // 旋转之后的查询、键，每一对对分数的贡献，和分数本身（不除以 √d）
  P.ropeScore = function (q, k, m, n, theta) {
    const qm = P.rope(q, m, theta), kn = P.rope(k, n, theta), h = q.length / 2;
    const pairs = Array.from({ length: h }, (_, j) => qm[j] * kn[j] + qm[j + h] * kn[j + h]);
    return { qm, kn, pairs, score: pairs.reduce((a, b) => a + b, 0) };
  };

  // 第 j 对在平面上：原来的 q、k（虚线）与旋转后的（实线）
  function plane(data, r, j) {
    const h = data.q.length / 2, W = 220, c = W / 2;
    const reach = 1.1 * Math.max(...[data.q, data.k].map((v) => Math.hypot(v[j], v[j + h])), 1e-9);
    const at = (a, b) => [c + (c - 14) * a / reach, c - (c - 14) * b / reach];
    const arrow = (v, color, dashed, label) => {
      const [x, y] = at(v[j], v[j + h]);
      return [svgEl("line", { x1: c, y1: c, x2: x, y2: y, stroke: color, "stroke-width": dashed ? 1.5 : 2.5,
                              "stroke-dasharray": dashed ? "4 3" : "none" }),
              svgEl("circle", { cx: x, cy: y, r: dashed ? 2.5 : 4, fill: color }),
              ...(label ? [svgEl("text", { x: x + 5, y: y - 5 }, [label])] : [])];
    };
    return svgEl("svg", { viewBox: `0 0 ${W} ${W}`, width: W, role: "img",
      "aria-label": `第 ${j} 对维度的平面：查询转了 ${fmt(r.angleQ, 2)} 弧度，键转了 ${fmt(r.angleK, 2)} 弧度，两者夹角只取决于 m − n` }, [
      svgEl("circle", { cx: c, cy: c, r: c - 14, fill: "none", stroke: "currentColor", "stroke-opacity": 0.25 }),
      svgEl("line", { x1: 8, x2: W - 8, y1: c, y2: c, stroke: "currentColor", "stroke-opacity": 0.25 }),
      svgEl("line", { y1: 8, y2: W - 8, x1: c, x2: c, stroke: "currentColor", "stroke-opacity": 0.25 }),
      ...arrow(data.q, "#1f77b4", true), ...arrow(data.k, "#ff7f0e", true),
      ...arrow(r.qm, "#1f77b4", false, "q_m"), ...arrow(r.kn, "#ff7f0e", false, "k_n")]);
  }

  P.kinds.rope = function (root, data) {
    const h = data.q.length / 2, last = data.positions - 1;
    const m = slider({ name: "m", label: "查询的位置 m", min: 0, max: last, step: 1, value: data.m }, draw);
    const n = slider({ name: "n", label: "键的位置 n", min: 0, max: last, step: 1, value: data.n }, draw);
    const pair = radios({ name: "pair", label: "画第几对", value: "0",
                          options: Array.from({ length: h }, (_, j) => [String(j), `j = ${j}`]) }, draw);
    const shift = el("button", { type: "button", "data-control": "shift",
                                 text: "m、n 一起 +1（到头则回到 0）" });
    shift.addEventListener("click", () => {                  // m − n 不变，两个位置一起挪
      const step = Math.max(m.get(), n.get()) < last ? 1 : -Math.min(m.get(), n.get());
      m.set(m.get() + step);
      n.set(n.get() + step);
      draw();
    });
    const out = el("div", { class: "olp-out", "aria-live": "polite" });
    root.append(el("div", { class: "olp-controls" }, [
      el("div", { class: "olp-group" }, [m.node, n.node]),
      el("div", { class: "olp-group" }, [pair.node, shift])]), out);

    function draw() {
      const mm = m.get(), nn = n.get(), j = Number(pair.get());
      const r = P.ropeScore(data.q, data.k, mm, nn, data.theta);
      const omega = Math.pow(data.theta, -2 * j / data.q.length);
      r.angleQ = mm * omega; r.angleK = nn * omega;
      const vec = (key, v) => el("td", {}, v.flatMap((x, i) => [i ? " " : "", num(`${key}.${i}`, x, 3)]));
      out.replaceChildren(
        el("p", {}, ["m − n = ", String(mm - nn), "，旋转之后的分数 q_m·k_n = ", num("score.0", r.score, 4)]),
        el("table", {}, [
          el("tr", {}, [el("th", { scope: "row", text: "q_m" }), vec("q_rot", r.qm)]),
          el("tr", {}, [el("th", { scope: "row", text: "k_n" }), vec("k_rot", r.kn)]),
          el("tr", {}, [el("th", { scope: "row", text: "每一对的贡献" }), vec("pair", r.pairs)])]),
        el("p", { class: "olp-note", text: `第 ${j} 对：ω = ${fmt(omega, 4)}，查询转 m·ω = ${fmt(r.angleQ, 3)}，` +
                                           `键转 n·ω = ${fmt(r.angleK, 3)}，相差 (m − n)·ω = ${fmt(r.angleQ - r.angleK, 3)} 弧度` }),
        plane(data, r, j));
    }
    draw();
  };
})();
