// 第 11 章：拆开第 10 章的模型（前向计算用 gpt.js 的 gptTrace）。
// 上半：一个头从提问的位置放在前面每个字上的注意力权重；
// 下半：一个 FFN 神经元激活最大的上下文（键），与它的值向量最提升的字
// （同 onelayer.chapters.ch11_inside.neuron_memories）。
(function () {
  "use strict";
  const P = window.onelayerPanels, { el, num, slider, select, fmt } = P.ui;
  const SHOWN = 3;                                   // 权重写出数字的字数
  // 这个面板自己的样式（放在 panel.css 里会改变前面各章存下的面板输出）
  const CSS = `.onelayer-panel .olp-ci { display: flex; flex-wrap: wrap; gap: 2px; margin: 0.3em 0; line-height: 1.3; }
.onelayer-panel .olp-ch { display: inline-flex; flex-direction: column; align-items: center; min-width: 1.9em;
  padding: 1px 0; border: 1px solid transparent; border-radius: 2px; cursor: pointer; box-sizing: border-box; }
.onelayer-panel .olp-ch small, .onelayer-panel .olp-up small { font-size: 0.7em; font-variant-numeric: tabular-nums; }
.onelayer-panel .olp-query { outline: 2px solid #d62728; outline-offset: -1px; }
.onelayer-panel .olp-later { border: 1px dashed color-mix(in srgb, currentColor 40%, transparent); }
.onelayer-panel .olp-up { display: inline-block; margin: 0 0.3em; }
.onelayer-panel .olp-head { margin: 0.6em 0 0.2em; }`;

  const visible = (c, end) => (c === end ? "⏎" : c);

  // 神经元 i 的上下文：所有词、所有位置上 act(x·W1 + b1) 最大的 top 处，各取到那个位置为止的
  // span 个字，和它后面的字（词的最后一个位置后面是换行）。同样大的激活，先取前面的词、前面的位置。
  P.insideContexts = function (traces, texts, layer, neuron, top, span) {
    const all = [];
    traces.forEach((trace, b) => trace.hidden[layer].forEach((h, t) => all.push([h[neuron], b, t])));
    all.sort((p, q) => q[0] - p[0] || p[1] - q[1] || p[2] - q[2]);
    return all.slice(0, top).map(([act, b, t]) => ({
      act, row: b, position: t,
      context: texts[b].slice(Math.max(0, t - span + 1), t + 1).join(""), next: texts[b][t + 1],
    }));
  };
  // 神经元 i 的值：W2 的第 i 列与每个字的词嵌入的点积 E·W2[:, i]，最大的 top 个字。
  P.insidePromoted = function (model, layer, neuron, top) {
    const w2 = model.blocks[layer].w2, d = model.d, column = [];
    for (let j = 0; j < d; j++) column.push(w2.W[j * w2.in + neuron]);
    const scores = model.vocab.map((_, v) => {
      let acc = 0;
      for (let j = 0; j < d; j++) acc += model.tok[v * d + j] * column[j];
      return acc;
    });
    return scores.map((s, v) => [s, v]).sort((p, q) => q[0] - p[0] || p[1] - q[1]).slice(0, top)
      .map(([score, v]) => ({ score, char: model.vocab[v] }));
  };

  P.kinds.inside = function (root, data) {
    const model = P.gptModel(data.model);
    root.olpModel = model;  // 测试用：页面里的模型
    const end = data.end;
    // 模型读的是“词牌：正文”和结尾的换行；x 是去掉换行的部分，texts[b][t + 1] 是 t 之后的字
    const texts = data.texts.map((t) => Array.from(data.tune + data.separator + t + end));
    const T = texts[0].length - 1;
    const ids = texts.map((chars) => chars.slice(0, T).map((c) => model.vocab.indexOf(c)));
    let traces = null;                               // 全部词的前向，第一次用到时算
    const trace = () => traces || (traces = ids.map((row) => P.gptTrace(model, row)));
    root.olpTraces = trace;                          // 测试用

    const first = (s) => Array.from(s).slice(0, 7).join("") + "…";
    const ci = select({ name: "ci", label: "词", value: "0",
                        options: data.texts.map((t, b) => [String(b), `${b + 1}. ${first(t)}`]) }, draw);
    const blocks = model.blocks.map((_, l) => [String(l), `块 ${l}`]);
    const heads = Array.from({ length: model.n_heads }, (_, h) => [String(h), `头 ${h}`]);
    const layer = select({ name: "layer", label: "块", value: "0", options: blocks }, draw);
    const head = select({ name: "head", label: "头", value: "0", options: heads }, draw);
    const charAt = (t) => texts[Number(ci.get())][t];
    const position = slider({ name: "position", label: "提问的位置", min: 0, max: T - 1, step: 1,
                              value: T - 2, text: (v) => `${v + 1}：${charAt(v)}` }, draw);
    const ffnLayer = select({ name: "ffn_layer", label: "FFN 的块", value: "0", options: blocks }, draw);
    const dff = model.blocks[0].w1.out;
    const neuron = slider({ name: "neuron", label: "神经元", min: 0, max: dff - 1, step: 1, value: 0,
                            text: (v) => `#${v}` }, draw);
    const out = el("div", { class: "olp-out", "aria-live": "polite" });
    root.append(el("style", { text: CSS }), el("p", { class: "olp-note", text: `第 10 章的模型，权重以 float16 存进页面，在浏览器里读这 ${texts.length} 首${data.tune}。`
                                                  + "上：选一首词、一块里的一个头和一个提问的位置（拖滑块，或点一个字），"
                                                  + "看这个头从那里放在前面每个字上的注意力权重（底色越深权重越大，最大的一个最深；最大的三个写出数）。"
                                                  + `下：选一个 FFN 神经元（每块 ${dff} 个），看在这些词里最能激发它的 ${data.top_contexts} 处上下文，`
                                                  + `和它的值向量最提升的 ${data.top_promoted} 个字。` }),
      el("div", { class: "olp-controls" }, [
        el("div", { class: "olp-group" }, [ci.node, layer.node, head.node, position.node]),
        el("div", { class: "olp-group" }, [ffnLayer.node, neuron.node])]), out);

    function attentionView() {
      const b = Number(ci.get()), l = Number(layer.get()), h = Number(head.get()), q = position.get();
      position.set(q);                               // 换了词，滑块旁的字也跟着换
      const row = trace()[b].attn[l][h][q], chars = texts[b].slice(0, T);
      const order = row.map((w, s) => [w, s]).sort((x, y) => y[0] - x[0] || x[1] - y[1]);
      const top = new Set(order.slice(0, SHOWN).map(([, s]) => s)), most = order[0][0];
      const cells = chars.map((c, s) => {
        if (s > q) {
          return el("span", { class: "olp-ch olp-later", title: `第 ${s + 1} 个字“${c}”：在提问的位置之后，看不到` },
                    [el("span", { text: c }), el("small", { text: "\u00a0" })]);
        }
        const w = row[s];
        return el("span", { class: `olp-ch${s === q ? " olp-query" : ""}`, "data-key": `w.${s}`, "data-v": String(w),
                            title: `第 ${s + 1} 个字“${c}”：权重 ${fmt(w, 3)}`,
                            style: `background:color-mix(in srgb, #1f77b4 ${(75 * w / most).toFixed(1)}%, transparent)` },
                  [el("span", { text: c }), el("small", { text: top.has(s) ? fmt(w, 2) : "\u00a0" })]);
      });
      cells.forEach((node, s) => node.addEventListener("click", () => {
        position.set(s);
        draw();
      }));
      const best = order.slice(0, SHOWN).map(([w, s]) => `第 ${s + 1} 个字“${visible(chars[s], end)}” ${fmt(w, 2)}`);
      return [
        el("p", { class: "olp-note", text: `头 ${l}.${h}：第 ${q + 1} 个字“${chars[q]}”（红框）放在它和前面每个字上的权重，合计为 1；虚线框里的字在它之后，看不到。` }),
        el("div", { class: "olp-ci", role: "img",
                    "aria-label": `${chars.join("")}：头 ${l}.${h} 从第 ${q + 1} 个字看，权重最大的是${best.join("，")}` }, cells),
        el("p", { text: `权重最大的 ${SHOWN} 个：${best.join("；")}。` }),
      ];
    }

    function neuronView() {
      const l = Number(ffnLayer.get()), i = neuron.get();
      const contexts = P.insideContexts(trace(), texts, l, i, data.top_contexts, data.span);
      const promoted = P.insidePromoted(model, l, i, data.top_promoted);
      const up = new Set(promoted.map((p) => p.char));
      const rows = contexts.map((c, k) => el("tr", {}, [
        el("th", { scope: "row", text: `${k + 1}` }),
        el("td", { class: "olp-ctx", "data-key": `act.${k}`, "data-v": String(c.act), "data-text": c.context, "data-next": c.next },
           [el("span", { text: c.context }), el("span", { "aria-hidden": "true", text: " → " }),
            el("strong", { text: visible(c.next, end) }),
            el("span", { text: up.has(c.next) ? "（在提升的字里 ✓）" : "" })]),
        el("td", {}, [el("span", { text: fmt(c.act, 3) })]),
        el("td", { text: `第 ${c.row + 1} 首` }),
      ]));
      return [
        el("table", {}, [
          el("caption", { class: "olp-note", text: `块 ${l} 的神经元 #${i}：激活 act(x·W1 + b1) 最大的 ${contexts.length} 处（到那个字为止的 ${data.span} 个字 → 后面的字）` }),
          el("tr", {}, ["", "上下文 → 下一个字", "激活", "哪首"].map((t) => el("th", { scope: "col", text: t }))),
          ...rows]),
        el("p", {}, [el("span", { text: `它的值向量（W2 的第 ${i} 列）与词嵌入的点积 E·W2[:, ${i}] 最大的 ${promoted.length} 个字：` }),
          ...promoted.map((p, k) => el("span", { class: "olp-up", "data-key": `up.${k}`, "data-v": String(p.score), "data-text": p.char,
                                                  title: `E·W2[:, ${i}] = ${fmt(p.score, 3)}` },
                                        [el("strong", { text: visible(p.char, end) }), el("small", { text: ` ${fmt(p.score, 2)}` })]))]),
      ];
    }

    function draw() {
      out.replaceChildren(el("p", { class: "olp-head" }, [el("strong", { text: "注意力" })]), ...attentionView(),
                          el("p", { class: "olp-head" }, [el("strong", { text: "FFN 神经元：键与值" })]), ...neuronView());
    }
    draw();
  };
})();
