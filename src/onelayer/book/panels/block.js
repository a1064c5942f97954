// 第 6 章：一个块的参数与前向 FLOPs 按部件分解（闭式计数，与 onelayer.params 的约定相同）。
(function () {
  "use strict";
  const P = window.onelayerPanels, { el, num, slider, radios, checkbox, select } = P.ui;
  const PARAM_NAMES = { attention: "注意力", ffn: "FFN", norms: "归一化" };
  const FLOP_NAMES = { attention_proj: "注意力的投影", attention_scores: "注意力分数与加权", ffn: "FFN" };
  const COLORS = { attention: "#1f77b4", attention_proj: "#1f77b4", attention_scores: "#9ec3e6",
                   ffn: "#ff7f0e", norms: "#2ca02c" };

  // Python 的 round：恰在 .5 时取偶数。
  const roundHalfEven = (v) => {
    const f = Math.floor(v), d = v - f;
    return d > 0.5 || (d === 0.5 && f % 2 !== 0) ? f + 1 : f;
  };
  P.block = function (d, ratio, gated, norm, bias, T) {
    const dff = Math.max(1, roundHalfEven(ratio * d));
    const nUp = gated ? 2 : 1;
    const params = {
      attention: 4 * d * d + (bias ? 4 * d : 0),                                // qkv d→3d 与输出投影 d→d
      ffn: (nUp + 1) * d * dff + (bias ? nUp * dff + d : 0),                   // W1（与门 W3）、W2
      norms: 2 * (norm === "layernorm" ? 2 * d : d),                           // 两个归一化：γ（与 β）
    };
    const flops = {
      attention_proj: T * 2 * 4 * d * d,                                       // 每个乘加 2 FLOPs
      attention_scores: 2 * 2 * T * T * d,                                     // Q·Kᵀ 与 A·V
      ffn: T * 2 * (nUp + 1) * d * dff,
    };
    return { dff, nHeads: Math.max(1, Math.floor(d / 64)), params, flops };
  };

  function stacked(parts, names, label) {
    const total = Object.values(parts).reduce((a, b) => a + b, 0);
    const bar = el("div", { role: "img", style: "display:flex;height:26px;border-radius:3px;overflow:hidden;",
      "aria-label": label + "：" + Object.entries(parts).map(([k, v]) => `${names[k]} ${(100 * v / total).toFixed(0)}%`).join("，") });
    for (const [k, v] of Object.entries(parts)) {
      const share = v / total;
      bar.append(el("div", { title: `${names[k]} ${(100 * share).toFixed(1)}%`,
        style: `width:${(100 * share).toFixed(3)}%;background:${COLORS[k]};color:${k === "attention" || k === "attention_proj" ? "#fff" : "#000"};` +
               "font-size:12px;line-height:26px;text-align:center;overflow:hidden;white-space:nowrap;",
        text: share >= 0.08 ? `${(100 * share).toFixed(0)}%` : "" }));
    }
    const legend = el("div", { class: "olp-note" }, Object.keys(parts).map((k) => el("span", { style: "margin-right:1em;white-space:nowrap;" }, [
      el("span", { style: `display:inline-block;width:0.8em;height:0.8em;background:${COLORS[k]};margin-right:0.3em;` }), names[k]])));
    return el("div", { style: "margin:0.4em 0;" }, [el("div", { text: label }), bar, legend]);
  }

  P.kinds.block = function (root, data) {
    const dModel = select({ name: "d_model", label: "d_model", value: String(data.d_model),
                            options: data.d_models.map((d) => [String(d), String(d)]) }, draw);
    const ratio = slider({ name: "ratio", label: "d_ff/d_model", min: 0.5, max: 8, step: 0.5, value: data.ratio }, draw);
    const gated = radios({ name: "gated", label: "FFN", options: [["plain", "普通 GELU"], ["gated", "SwiGLU"]], value: "plain" }, draw);
    const norm = radios({ name: "norm", label: "归一化", options: [["layernorm", "LayerNorm"], ["rmsnorm", "RMSNorm"]], value: "layernorm" }, draw);
    const bias = checkbox({ name: "bias", label: "偏置", value: true }, draw);
    const logT = slider({ name: "log2T", label: "序列长度 T", min: 6, max: 16, step: 1, value: Math.log2(data.seq_len),
                          text: (v) => String(2 ** v) }, draw);
    const out = el("div", { class: "olp-out", "aria-live": "polite" });
    root.append(el("div", { class: "olp-controls" }, [
      el("div", { class: "olp-group" }, [dModel.node, ratio.node, logT.node]),
      el("div", { class: "olp-group" }, [gated.node, norm.node, bias.node])]), out);

    function draw() {
      const d = Number(dModel.get()), T = 2 ** logT.get(), isGated = gated.get() === "gated";
      const b = P.block(d, ratio.get(), isGated, norm.get(), bias.get(), T);
      const totalP = Object.values(b.params).reduce((a, c) => a + c, 0);
      const totalF = Object.values(b.flops).reduce((a, c) => a + c, 0);
      const count = (key, v) => {
        const s = num(key, v, 0); s.textContent = v.toLocaleString("en-US"); return s;
      };
      const percent = (key, share) => {
        const s = num(key, share, 3); s.textContent = `${(100 * share).toFixed(1)}%`; return s;
      };
      const table = (parts, names, kind, total, caption) => el("table", {}, [
        el("caption", { class: "olp-note", text: caption }),
        el("tr", {}, ["", "数量", "占比"].map((t) => el("th", { scope: "col", text: t }))),
        ...Object.entries(parts).map(([k, v]) => el("tr", {}, [
          el("th", { scope: "row", text: names[k] }), el("td", {}, [count(`${kind}.${k}`, v)]),
          el("td", {}, [percent(`${kind}.${k}.share`, v / total)])])),
        el("tr", {}, [el("th", { scope: "row", text: "合计" }), el("td", {}, [count(`${kind}.total`, total)]), el("td")]),
      ]);
      const setting = el("p", { class: "olp-note", text: `d_model = ${d}，n_heads = ${b.nHeads}，d_ff = ${b.dff}，${isGated ? "SwiGLU" : "GELU"}，${norm.get()}，偏置${bias.get() ? "有" : "无"}，T = ${T}` });
      out.replaceChildren(setting, table(b.params, PARAM_NAMES, "params", totalP, "参数"),
                          table(b.flops, FLOP_NAMES, "flops", totalF, `前向 FLOPs（T = ${T}）`),
                          stacked(b.params, PARAM_NAMES, "参数占比"),
                          stacked(b.flops, FLOP_NAMES, `前向 FLOPs 占比（T = ${T}）`));
    }
    draw();
  };
})();
