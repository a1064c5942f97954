// 第 10 章：训练好的小 GPT 在页面里写一首词（前向计算用 gpt.js 的 gptForward），
// 每个字标出平仄，韵脚句标出押韵与否；“押韵约束”打开时，韵脚句的最后一个字只能押首句的韵。
(function () {
  "use strict";
  const P = window.onelayerPanels, { el, slider, select, checkbox } = P.ui;
  const BREAKS = "，。？！、；", SEPARATOR = "：", END = "\n", NO_TONE = "·";

  // 押韵：在一个声调的韵脚上，两个字有这个声调的共同韵部（多音字只用这个声调的读音）；
  // 字表里缺一个就不判（null），与 onelayer.metre.rhymes 相同。rhymes.ids[声调][i] 是第 i 个
  // 字在这个声调里的韵部编号，rhymes.listed[i] 说字表里有没有它。
  const rhymeOf = (rhymes, tone, a, b) => {
    if (rhymes.listed[a] !== "1" || rhymes.listed[b] !== "1") return null;
    const gb = rhymes.ids[tone][b];
    return rhymes.ids[tone][a].some((g) => gb.includes(g));
  };
  const slotTone = (form, line) => form.slotTones[form.slots.indexOf(line)];

  // 押韵约束（与 onelayer.chapters.ch10_songci 的 _RhymeAtSlots 相同）：跟着写出的字数句与
  // 句中的字数；到首句的末字，只留有韵脚声调读音的字；到韵脚句的最后一个字，只留与首句末字
  // 押韵的字。每个断句符号都进到下一句，
  // “：”开始一首新词也算，首句的末字在第一个断句符号处记下。
  P.songciRhymeTracker = function (model, form, rhymes) {
    const breaks = BREAKS + SEPARATOR + END;
    let line = 0, count = 0, anchor = null, last = null;
    const masks = new Map();
    return {
      mask(logits) {
        const first = line === 0 && form.slots.length > 0 && count === form.pattern[0] - 1;
        if (!first && (anchor === null || !form.slots.includes(line) || count !== form.pattern[line] - 1)) return;
        // 首句末字（起韵）：只留有韵脚声调读音的字；韵脚句的末字：只留与首句末字同韵的字
        const tone = first ? form.slotTones[0] : slotTone(form, line), key = first ? `起${tone}` : `${anchor}${tone}`;
        if (!masks.has(key)) masks.set(key, model.vocab.map((_, i) => (first
          ? rhymes.listed[i] === "1" && rhymes.ids[tone][i].length > 0 : rhymeOf(rhymes, tone, anchor, i) === true)));
        const keep = masks.get(key);
        if (keep.some(Boolean)) keep.forEach((k, i) => { if (!k) logits[i] = -Infinity; });
      },
      update(id) {
        if (breaks.includes(model.vocab[id])) {
          if (count) {                     // 连着的标点不算一句（同 onelayer.metre.ci_lines）
            if (line === 0) anchor = last;
            line += 1; count = 0;
          }
        } else count += 1;
        last = id;
      },
    };
  };

  // 每个字之后、下一个字的位置符号 [离句末还有几个字, 是否韵脚]：按词牌的句长数着写出的字
  // （与 onelayer.chapters.ch10_place.form_places 相同）；“：”之前和换行之后都在句外。
  P.songciPlaces = function (form, text, longest) {
    const outside = longest + 1, places = [];
    let line = 0, count = 0, started = false;
    const place = () => {
      if (line >= form.pattern.length || count >= form.pattern[line]) return [outside, 0];
      const left = form.pattern[line] - count - 1;
      const slot = left === 0 && form.slots.length > 0 && (line === 0 || form.slots.includes(line));
      return [Math.min(left, longest), slot ? 1 : 0];
    };
    for (const c of Array.from(text)) {
      if (!started) started = c === SEPARATOR;
      else if (c === END) line = form.pattern.length;
      else if (BREAKS.includes(c)) { if (count) line += 1; count = 0; }
      else count += 1;
      places.push(started ? place() : [outside, 0]);
    }
    return places;
  };
  // 下一个字的 logits；读位置符号的模型（model.places）在每个位置的词嵌入上加两张表的行。
  P.songciForward = function (model, form, ids) {
    if (!model.places) return P.gptForward(model, ids).logits;
    const { countdown, slot, longest } = model.places, d = model.d;
    const text = ids.map((id) => model.vocab[id]).join("");
    const extra = P.songciPlaces(form, text, longest).map(([left, s]) => Array.from(
      { length: d }, (_, i) => countdown[left * d + i] + slot[s * d + i]));
    return P.gptForward(model, ids, extra).logits;
  };

  // 从“词牌：”开始，一次一个字，写到换行或上下文的尽头；□ 不写（它代表任何一个罕见的字）。
  // rhyme：押韵约束（songciRhymeTracker），不给就不约束。
  P.songciWrite = function (model, form, temperature, topP, seed, rhyme) {
    const prompt = form.name + SEPARATOR;
    const rand = P.mulberry32(seed + 1);
    const ids = Array.from(prompt).map((c) => model.vocab.indexOf(c));
    const unknown = model.vocab.indexOf("□"), end = model.vocab.indexOf(END);
    const written = [];
    while (ids.length < model.block_size) {
      const logits = P.songciForward(model, form, ids);
      if (unknown >= 0) logits[unknown] = -Infinity;
      if (rhyme) rhyme.mask(logits);
      const p = P.gptProbs(logits, temperature, logits.length, topP);
      let r = rand(), pick = p.length - 1;
      for (let i = 0; i < p.length; i++) { r -= p[i]; if (r < 0) { pick = i; break; } }
      while (p[pick] === 0) pick -= 1;                  // 舍入误差落到了被剪掉的尾巴上
      if (rhyme) rhyme.update(pick);
      if (pick === end) break;
      ids.push(pick);
      written.push(model.vocab[pick]);
    }
    return written.join("");
  };
  // 句子与句长：以逗号、句号、问号、叹号、顿号、分号断句，“：”开始一首新词也断句，
  // 连着的标点不算一句（与 onelayer.songci.line_lengths 相同）
  P.songciLines = function (text) {
    const lines = [];
    let current = "";
    for (const c of Array.from(text)) {
      if (!BREAKS.includes(c) && c !== SEPARATOR) { current += c; continue; }
      if (current) lines.push({ text: current + c, chars: Array.from(current) });
      else if (lines.length) lines[lines.length - 1].text += c;
      current = "";
    }
    if (current) lines.push({ text: current, chars: Array.from(current) });
    return lines;
  };

  const TONE_CLASS = { 平: "olp-ping", 仄: "olp-ze" };
  P.kinds.songci = function (root, data) {
    const model = P.gptModel(data.model);
    root.olpModel = model;  // 测试用：页面里的模型
    const tunes = data.tunes, index = new Map(model.vocab.map((c, i) => [c, i]));
    const toneOf = (c) => (index.has(c) ? data.tones[index.get(c)] : NO_TONE);
    const tune = select({ name: "tune", label: "词牌", value: tunes[0].name,
                          options: tunes.map((t) => [t.name, t.name]) }, draw);
    const temp = slider({ name: "temperature", label: "温度 τ", min: 0.3, max: 1.5, step: 0.05,
                          value: 0.8, text: (v) => v.toFixed(2) }, draw);
    const topP = slider({ name: "top_p", label: "top-p", min: 0.5, max: 1, step: 0.05, value: 1,
                          text: (v) => v.toFixed(2) }, draw);
    const seed = slider({ name: "seed", label: "随机种子", min: 0, max: 50, step: 1, value: 0 }, draw);
    const rhymeOn = checkbox({ name: "rhyme", label: "押韵约束", value: false }, draw);
    const out = el("div", { class: "olp-out", "aria-live": "polite" });
    root.append(el("p", { class: "olp-note", text: data.about + "，权重以 float16 存进页面，在浏览器里运行："
                                                  + "从“词牌：”开始一个字一个字地写，直到它写出换行。每句后面是它的字数，与这个词牌最常见的格式对照；"
                                                  + "每个字上面标着平仄（蓝底为平，橙底为仄，“中”两读，“·”字表里没有），✗ 表示违反了九成以上的词都守的定声；"
                                                  + "韵脚句标出末字是否押首句的韵。top-p = 1 表示不剪。"
                                                  + "打开“押韵约束”，韵脚句的最后一个字只能从押首句韵的字里挑。" }),
      el("div", { class: "olp-controls" }, [
        el("div", { class: "olp-group" }, [tune.node, temp.node, topP.node]),
        el("div", { class: "olp-group" }, [seed.node, rhymeOn.node])]), out);

    // 一个字与它的平仄：<ruby>字<rt>平</rt></ruby>；在定声处与格律相反时加 ✗。
    function marked(c, fixed) {
      const t = toneOf(c), off = (t === "平" || t === "仄") && (fixed === "平" || fixed === "仄") && t !== fixed;
      return el("ruby", { class: `${TONE_CLASS[t] || "olp-tone-x"}${off ? " olp-off" : ""}`,
                          "data-tone": t, title: off ? `此处格律为${fixed}，这个字是${t}` : null },
                [document.createTextNode(c), el("rt", { text: off ? `${t}✗` : t })]);
    }

    function draw() {
      const tau = temp.get(), p = topP.get(), name = tune.get();
      const form = tunes.find((t) => t.name === name), pattern = form.pattern;
      const rhymes = data.rhymes[form.book], groupNames = rhymes.names;
      const tracker = rhymeOn.get() ? P.songciRhymeTracker(model, form, rhymes) : null;
      const text = P.songciWrite(model, form, tau, p, seed.get(), tracker);
      const lines = P.songciLines(text);
      const ok = lines.map((line, i) => line.chars.length === pattern[i]);
      const fits = lines.length === pattern.length && ok.every(Boolean);
      const lastId = (i) => index.get(lines[i].chars[lines[i].chars.length - 1]);
      const groupsOf = (i, tone) => (lastId(i) === undefined || rhymes.listed[lastId(i)] !== "1" ? "字表里没有"
        : rhymes.ids[tone][lastId(i)].map((g) => groupNames[g]).join("、") || `没有${tone}声读音`);
      let toneHits = 0, toneCounted = 0, rhymeHits = 0, rhymeCounted = 0;
      const rows = lines.map((line, i) => {
        const chars = line.chars.map((c, j) => {
          const fixed = ok[i] ? form.grid[i][j] : NO_TONE, t = toneOf(c);
          if (fixed !== NO_TONE && (t === "平" || t === "仄")) { toneCounted += 1; toneHits += t === fixed; }
          return marked(c, fixed);
        });
        const notes = [ok[i] ? `${line.chars.length} 字 ✓` : `${line.chars.length} 字 ✗（应为 ${pattern[i] ?? "无此句"}）`];
        const attrs = { "data-key": `line.${i}`, "data-v": String(line.chars.length), "data-text": line.text };
        let rhymeMark = null;
        if (i === 0 && form.slots.length) notes.push(`首句韵：${groupsOf(0, form.slotTones[0])}`);
        if (form.slots.includes(i)) {
          if (!ok[i] || !ok[0]) notes.push("句长不对，不判韵");
          else {
            const r = rhymeOf(rhymes, slotTone(form, i), lastId(0), lastId(i));
            if (r !== null) { rhymeCounted += 1; rhymeHits += r; }
            rhymeMark = el("span", { "data-key": `rhyme.${i}`, "data-v": r === null ? "-1" : String(Number(r)),
                                     text: `韵 ${r === null ? "?" : r ? "✓" : "✗"}（${groupsOf(i, slotTone(form, i))}）` });
          }
        }
        const punct = Array.from(line.text).slice(line.chars.length).join("");
        return el("li", attrs, [
          el("span", { class: "olp-line" }, [...chars, document.createTextNode(punct)]),
          el("span", { class: "olp-note", style: "margin-left:0.5em" },
             [document.createTextNode(notes.join("；")), ...(rhymeMark ? [document.createTextNode(" "), rhymeMark] : [])]),
        ]);
      });
      const rhymeText = form.slots.length ? `押韵：${rhymeHits}/${rhymeCounted} 个韵脚押首句的韵` : "这个词牌没有多数词都押的韵脚句";
      out.replaceChildren(
        el("p", { class: "olp-note", text: `${name}（${pattern.join("·")}），温度 τ = ${tau.toFixed(2)}，top-p = ${p.toFixed(2)}，随机种子 ${seed.get()}，韵按${form.book}${tracker ? "，押韵约束" : ""}` }),
        el("ol", { style: "padding-left:1.6em;margin:0.3em 0;line-height:2.2;" }, rows),
        el("p", { "data-key": "fits", "data-v": fits ? "1" : "0",
                  text: (fits ? `句长 ✓：全部符合 ${pattern.join("·")}` : `句长 ✗：${lines.length} 句，${ok.filter(Boolean).length} 句字数对（${pattern.join("·")}）`)
                        + `；平仄：${toneHits}/${toneCounted} 个定声处合律；${rhymeText}。` }));
    }
    draw();
  };
})();
