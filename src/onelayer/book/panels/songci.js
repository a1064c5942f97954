// 第 10 章：训练好的小 GPT 在页面里写一首词（前向计算用 gpt.js 的 gptForward）。
(function () {
  "use strict";
  const P = window.onelayerPanels, { el, slider, select } = P.ui;

  // 从“词牌：”开始，一次一个字，写到换行或上下文的尽头；□ 不写（它代表任何一个罕见的字）。
  P.songciWrite = function (model, prompt, temperature, topP, seed) {
    const rand = P.mulberry32(seed + 1);
    const ids = Array.from(prompt).map((c) => model.vocab.indexOf(c));
    const unknown = model.vocab.indexOf("□"), end = model.vocab.indexOf("\n");
    const written = [];
    while (ids.length < model.block_size) {
      const logits = P.gptForward(model, ids).logits;
      if (unknown >= 0) logits[unknown] = -Infinity;
      const p = P.gptProbs(logits, temperature, logits.length, topP);
      let r = rand(), pick = p.length - 1;
      for (let i = 0; i < p.length; i++) { r -= p[i]; if (r < 0) { pick = i; break; } }
      while (p[pick] === 0) pick -= 1;                  // 舍入误差落到了被剪掉的尾巴上
      if (pick === end) break;
      ids.push(pick);
      written.push(model.vocab[pick]);
    }
    return written.join("");
  };
  // 句子与句长：以逗号、句号、问号、叹号、顿号、分号断句，连着的标点不算一句
  // （与 onelayer.songci.line_lengths 相同）
  const BREAKS = "，。？！、；";
  P.songciLines = function (text) {
    const lines = [];
    let current = "";
    for (const c of Array.from(text)) {
      if (!BREAKS.includes(c)) { current += c; continue; }
      if (current) lines.push({ text: current + c, length: Array.from(current).length });
      else if (lines.length) lines[lines.length - 1].text += c;
      current = "";
    }
    if (current) lines.push({ text: current, length: Array.from(current).length });
    return lines;
  };

  P.kinds.songci = function (root, data) {
    const model = P.gptModel(data.model);
    root.olpModel = model;  // 测试用：页面里的模型
    const tunes = data.tunes;
    const tune = select({ name: "tune", label: "词牌", value: tunes[0].name,
                          options: tunes.map((t) => [t.name, t.name]) }, draw);
    const temp = slider({ name: "temperature", label: "温度 τ", min: 0.3, max: 1.5, step: 0.05,
                          value: 0.8, text: (v) => v.toFixed(2) }, draw);
    const topP = slider({ name: "top_p", label: "top-p", min: 0.5, max: 1, step: 0.05, value: 1,
                          text: (v) => v.toFixed(2) }, draw);
    const seed = slider({ name: "seed", label: "随机种子", min: 0, max: 50, step: 1, value: 0 }, draw);
    const out = el("div", { class: "olp-out", "aria-live": "polite" });
    root.append(el("p", { class: "olp-note", text: "上面读过全宋词的模型，权重以 float16 存进页面，在浏览器里运行："
                                                  + "从“词牌：”开始一个字一个字地写，直到它写出换行。每句后面是它的字数，与这个词牌最常见的格式对照。top-p = 1 表示不剪。" }),
      el("div", { class: "olp-controls" }, [
        el("div", { class: "olp-group" }, [tune.node, temp.node, topP.node]),
        el("div", { class: "olp-group" }, [seed.node])]), out);

    function draw() {
      const tau = temp.get(), p = topP.get(), name = tune.get();
      const pattern = tunes.find((t) => t.name === name).pattern;
      const text = P.songciWrite(model, name + "：", tau, p, seed.get());
      const lines = P.songciLines(text);
      const ok = lines.map((line, i) => line.length === pattern[i]);
      const fits = lines.length === pattern.length && ok.every(Boolean);
      const rows = lines.map((line, i) => el("li", { "data-key": `line.${i}`, "data-v": String(line.length) }, [
        el("span", { text: line.text }),
        el("span", { class: "olp-note", style: "margin-left:0.5em",
                     text: ok[i] ? `${line.length} 字 ✓` : `${line.length} 字 ✗（应为 ${pattern[i] ?? "无此句"}）` }),
      ]));
      out.replaceChildren(
        el("p", { class: "olp-note", text: `${name}（${pattern.join("·")}），温度 τ = ${tau.toFixed(2)}，top-p = ${p.toFixed(2)}，随机种子 ${seed.get()}` }),
        el("ol", { style: "padding-left:1.6em;margin:0.3em 0;" }, rows),
        el("p", { "data-key": "fits", "data-v": fits ? "1" : "0",
                  text: fits ? `句长全部符合 ${pattern.join("·")}。`
                             : `${lines.length} 句，${ok.filter(Boolean).length} 句字数对；格式 ${pattern.join("·")} 不完全符合。` }));
    }
    draw();
  };
})();
