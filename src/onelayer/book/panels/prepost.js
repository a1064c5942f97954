// 第 8 章：“鱼”的向量走 L 次同一个子层 F(v) = v ⊙ s，后置归一化 LN(x + F(x)) 与前置归一化 x + F(LN(x))。
(function () {
  "use strict";
  const P = window.onelayerPanels, { el, num, slider, fmt } = P.ui;
  const { mean } = P.math;

  const layerNorm = (v, eps) => {
    const m = mean(v), s2 = mean(v.map((x) => (x - m) ** 2));
    return v.map((x) => (x - m) / Math.sqrt(s2 + eps));
  };
  const rms = (v) => Math.sqrt(mean(v.map((x) => x * x)));
  P.prepost = function (x, s, L, eps) {
    const F = (v) => v.map((vi, i) => vi * s[i]);
    const streams = { post: [], pre: [] };
    let post = x, pre = x;
    for (let l = 0; l < L; l++) {
      post = layerNorm(post.map((v, i) => v + F(post)[i]), eps);   // LN(x + F(x))
      const f = F(layerNorm(pre, eps));
      pre = pre.map((v, i) => v + f[i]);                            // x + F(LN(x))
      streams.post.push(post); streams.pre.push(pre);
    }
    return streams;
  };

  P.kinds.prepost = function (root, data) {
    const xs = data.x.map((v, i) => slider({ name: `x${i}`, label: `x_鱼[${i}]`, min: -3, max: 3, step: 0.1, value: v }, draw));
    const ss = data.s.map((v, i) => slider({ name: `s${i}`, label: `s[${i}]`, min: -3, max: 3, step: 0.1, value: v }, draw));
    const L = slider({ name: "L", label: "层数 L", min: 1, max: 12, step: 1, value: data.L }, draw);
    const out = el("div", { class: "olp-out", "aria-live": "polite" });
    root.append(el("div", { class: "olp-controls" }, [
      el("div", { class: "olp-group" }, xs.map((c) => c.node)),
      el("div", { class: "olp-group" }, [...ss.map((c) => c.node), L.node])]), out);

    function draw() {
      const n = L.get();
      const r = P.prepost(xs.map((c) => c.get()), ss.map((c) => c.get()), n, data.eps);
      const last = (key, v) => v.map((value, i) => el("td", {}, [num(`${key}.${n}.${i}`, value, 3)]));
      const vectors = el("table", {}, [
        el("caption", { class: "olp-note", text: `经过 ${n} 层之后的残差流（F(v) = v ⊙ s，LayerNorm 的 γ = 1、β = 0）` }),
        el("tr", {}, ["", "第 1 维", "第 2 维", "第 3 维", "第 4 维"].map((t) => el("th", { scope: "col", text: t }))),
        el("tr", {}, [el("th", { scope: "row", text: "后置 LN(x + F(x))" }), ...last("post", r.post[n - 1])]),
        el("tr", {}, [el("th", { scope: "row", text: "前置 x + F(LN(x))" }), ...last("pre", r.pre[n - 1])]),
      ]);
      const rows = r.post.map((p, l) => el("tr", {}, [el("th", { scope: "row", text: String(l + 1) }),
        el("td", {}, [num(`post.${l + 1}.rms`, rms(p), 3)]), el("td", {}, [num(`pre.${l + 1}.rms`, rms(r.pre[l]), 3)])]));
      const table = el("table", {}, [
        el("caption", { class: "olp-note", text: "每一层之后残差流的均方根 RMS" }),
        el("tr", {}, ["层", "后置归一化", "前置归一化"].map((t) => el("th", { scope: "col", text: t }))), ...rows]);
      out.replaceChildren(vectors, table);
    }
    draw();
  };
})();
