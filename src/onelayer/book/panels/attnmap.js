// 第 7 章：训练好的事实模型的注意力图。权重由 Python 算好写进 JSON，这里只负责选择与绘制。
(function () {
  "use strict";
  const P = window.onelayerPanels, { el, svgEl, num, radios, select, fmt } = P.ui;

  function heatmap(chars, map, pos) {
    const T = chars.length, cell = 30, left = 26, top = 6, W = left + T * cell + 4, H = top + T * cell + 24;
    const kids = [];
    map.forEach((r, i) => r.forEach((w, j) => {
      if (j > i) return;                                         // 因果掩码：右上角没有权重
      const rect = svgEl("rect", { x: left + j * cell, y: top + i * cell, width: cell - 1, height: cell - 1,
                                   fill: "#1f77b4", "fill-opacity": String(0.08 + 0.92 * w) });
      rect.append(svgEl("title", {}, [`${chars[i]} 看 ${chars[j]}：${fmt(w, 3)}`]));
      kids.push(rect);
    }));
    kids.push(svgEl("rect", { x: left - 1, y: top + pos * cell - 1, width: (pos + 1) * cell + 1, height: cell + 1,
                              fill: "none", stroke: "#d62728", "stroke-width": 2 }));
    chars.forEach((c, k) => {
      kids.push(svgEl("text", { x: left - 6, y: top + k * cell + cell * 0.65, "text-anchor": "end" }, [c]));
      kids.push(svgEl("text", { x: left + k * cell + cell / 2, y: H - 6, "text-anchor": "middle" }, [c]));
    });
    return svgEl("svg", { viewBox: `0 0 ${W} ${H}`, width: W, role: "img",
      "aria-label": `热力图：行是提问的位置，列是被看的位置，颜色越深权重越大；红框是第 ${pos + 1} 个字“${chars[pos]}”那一行` }, kids);
  }

  P.kinds.attnmap = function (root, data) {
    const prompts = data.prompts, T = prompts[0].text.length;
    const chars = () => Array.from(prompts[Number(prompt.get())].text);
    const prompt = select({ name: "prompt", label: "提示", value: "0",
                            options: prompts.map((p, i) => [String(i), p.text]) }, () => { relabel(); draw(); });
    const headOptions = Array.from({ length: data.n_heads }, (_, h) =>
      [String(h), `头 ${h}` + (h === data.marked_head ? "（搬主语的头）" : "")]);
    const head = radios({ name: "head", label: "注意力头", options: headOptions,
                          value: String(data.marked_head === null ? 0 : data.marked_head) }, draw);
    const position = select({ name: "position", label: "提问的位置", value: String(T - 1),
                              options: Array.from({ length: T }, (_, t) => [String(t), String(t + 1)]) }, draw);
    function relabel() {
      const c = chars();
      Array.from(position.input.options).forEach((o, t) => { o.textContent = `${t + 1}：${c[t]}`; });
    }
    const out = el("div", { class: "olp-out", "aria-live": "polite" });
    root.append(el("div", { class: "olp-controls" }, [prompt.node, head.node, position.node]), out);

    function draw() {
      const c = chars(), h = Number(head.get()), pos = Number(position.get());
      const map = prompts[Number(prompt.get())].maps[h];
      const seen = c.slice(0, pos + 1);
      out.replaceChildren(
        el("table", {}, [
          el("caption", { class: "olp-note", text: `头 ${h}：第 ${pos + 1} 个字“${c[pos]}”给前面各个字的注意力权重` }),
          el("tr", {}, [el("th", { text: "被看的字" }), ...seen.map((s) => el("th", { scope: "col", text: s }))]),
          el("tr", {}, [el("th", { scope: "row", text: "权重" }),
            ...seen.map((_, j) => el("td", {}, [num(`w.${j}`, map[pos][j], 3)]))])]),
        heatmap(c, map, pos));
    }
    relabel();
    draw();
  };
})();
