// 第 7 章：训练好的小 GPT 在页面里运行：词嵌入 + 位置嵌入 → 块（注意力、FFN）→ ln_f → 与词嵌入共享的输出层。
(function () {
  "use strict";
  const P = window.onelayerPanels, { el, num, slider, fmt } = P.ui;
  const { ACTIVATIONS, mean } = P.math;

  // 权重以 float32（与 PyTorch 中的数逐位相同）或 float16（小一半）的字节（base64）存放。
  function floats(b64, dtype) {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    if (dtype !== "float16") return Array.from(new Float32Array(bytes.buffer));
    return Array.from(new Uint16Array(bytes.buffer), (h) => {
      const sign = h & 0x8000 ? -1 : 1, exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
      if (exp === 0) return sign * frac * 2 ** -24;                      // 非规格化数
      if (exp === 31) return frac ? NaN : sign * Infinity;
      return sign * (1 + frac / 1024) * 2 ** (exp - 15);
    });
  }
  // 页面数据里的模型：把每个 base64 字符串解成数组（按 model.dtype）
  P.gptModel = function (model) {
    const decode = (b64) => floats(b64, model.dtype);
    for (const key of ["tok", "pos"]) model[key] = decode(model[key]);
    const unpack = (o) => { for (const [k, v] of Object.entries(o)) if (typeof v === "string") o[k] = decode(v); };
    for (const b of model.blocks) {
      for (const part of [b.ln_1, b.ln_2, b.attn.qkv, b.attn.proj, b.w1, b.w2]) unpack(part);
    }
    if (model.ln_f) unpack(model.ln_f);
    if (model.places) unpack(model.places);
    model.vocab = Array.from(model.vocab);
    return model;
  };
  // y = W·x + b，W 按 nn.Linear 的 [输出, 输入] 存放
  function linear(x, lin) {
    const out = new Array(lin.out);
    for (let j = 0; j < lin.out; j++) {
      let acc = lin.b ? lin.b[j] : 0;
      const row = j * lin.in;
      for (let i = 0; i < lin.in; i++) acc += lin.W[row + i] * x[i];
      out[j] = acc;
    }
    return out;
  }
  function layerNorm(x, ln) {
    const m = mean(x), v = mean(x.map((xi) => (xi - m) ** 2)), s = Math.sqrt(v + ln.eps);
    return x.map((xi, i) => (xi - m) / s * ln.weight[i] + (ln.bias ? ln.bias[i] : 0));
  }
  const softmax = (v) => {
    const mx = Math.max(...v), e = v.map((x) => Math.exp(x - mx)), z = e.reduce((a, b) => a + b, 0);
    return e.map((x) => x / z);
  };

  // 因果自注意力：返回输出，以及每个头的权重 weights[头][t][s]（s ≤ t）
  function attention(xs, attn, nHeads) {
    const d = xs[0].length, dh = d / nHeads, T = xs.length;
    const qkv = xs.map((x) => linear(x, attn.qkv));
    const outs = xs.map(() => new Array(d).fill(0));
    const weights = [];
    for (let h = 0; h < nHeads; h++) {
      const off = h * dh, rows = [];
      for (let t = 0; t < T; t++) {
        const scores = [];
        for (let s = 0; s <= t; s++) {               // 因果掩码：只看自己和前文
          let dot = 0;
          for (let i = 0; i < dh; i++) dot += qkv[t][off + i] * qkv[s][d + off + i];
          scores.push(dot / Math.sqrt(dh));
        }
        const a = softmax(scores);
        rows.push(a);
        for (let s = 0; s <= t; s++) {
          for (let i = 0; i < dh; i++) outs[t][off + i] += a[s] * qkv[s][2 * d + off + i];
        }
      }
      weights.push(rows);
    }
    return { out: outs.map((o) => linear(o, attn.proj)), weights };
  }

  // 前向的每一步：每块每个头的注意力权重 attn[块][头][t][s]，每块 FFN 在每个位置的激活
  // act(x·W1 + b1) hidden[块][t][神经元]，以及最后一块之后的残差流 xs[t]。
  // extra[t]（可不给）：加在位置 t 的词嵌入上的向量（第 10 章押韵研究的位置符号）。
  P.gptTrace = function (model, ids, extra) {
    let xs = ids.map((id, t) => model.tok.slice(id * model.d, (id + 1) * model.d)
      .map((v, i) => v + (extra ? extra[t][i] : 0) + model.pos[t * model.d + i]));
    const act = ACTIVATIONS[model.activation];
    const attn = [], hidden = [];
    for (const block of model.blocks) {
      const pre = model.norm_position === "pre";
      const add = (x, y) => x.map((v, i) => v + y[i]);
      // 前置：x + F(LN(x))；后置：LN(x + F(x))
      const sub = (x, f, ln) => (pre ? add(x, f(layerNorm(x, ln))) : layerNorm(add(x, f(x)), ln));
      const a = attention(pre ? xs.map((x) => layerNorm(x, block.ln_1)) : xs, block.attn, model.n_heads);
      xs = xs.map((x, t) => (pre ? add(x, a.out[t]) : layerNorm(add(x, a.out[t]), block.ln_1)));
      const hid = [];
      const mlp = (h) => {
        const z = linear(h, block.w1).map((v) => act(v)[0]);
        hid.push(z);
        return linear(z, block.w2);
      };
      xs = xs.map((x) => sub(x, mlp, block.ln_2));
      attn.push(a.weights);
      hidden.push(hid);
    }
    return { xs, attn, hidden };
  };

  // 前向：返回最后一个位置的 logits，以及每一块 FFN 在最后一个位置的激活 act(x·W1 + b1)。
  P.gptForward = function (model, ids, extra) {
    const { xs, hidden } = P.gptTrace(model, ids, extra);
    const final = model.ln_f ? layerNorm(xs[xs.length - 1], model.ln_f) : xs[xs.length - 1];
    const logits = [];
    for (let v = 0; v < model.vocab.length; v++) {
      let acc = 0;
      for (let i = 0; i < model.d; i++) acc += final[i] * model.tok[v * model.d + i];
      logits.push(acc);
    }
    return { logits, hidden: hidden.map((h) => h[h.length - 1]) };
  };

  // 提示的检查：空、不在词表里的字、超过 block_size，都在面板里说明。
  P.gptEncode = function (model, text) {
    const chars = Array.from(text);
    if (!chars.length) return { error: "提示是空的：至少输入 1 个字，例如“猫吃”。" };
    const unknown = [...new Set(chars.filter((c) => !model.vocab.includes(c)))];
    if (unknown.length) {
      return { error: `词表里没有这些字：${unknown.join("、")}。词表只有这 ${model.vocab.length} 个字：${model.vocab.join("")}` };
    }
    if (chars.length > model.block_size) {
      return { error: `提示太长：最多 ${model.block_size} 个字（模型的上下文长度 block_size），实际为 ${chars.length} 个。` };
    }
    return { ids: chars.map((c) => model.vocab.indexOf(c)) };
  };
  // 温度、top-k 与核采样（top-p）之后的概率（与 onelayer.model.sampling_logits 的做法相同）
  P.gptProbs = function (logits, temperature, topK, topP = 1) {
    const scaled = logits.map((z) => z / temperature);
    const kth = [...scaled].sort((a, b) => b - a)[Math.min(topK, scaled.length) - 1];
    const probs = softmax(scaled.map((z) => (z < kth ? -Infinity : z)));
    if (topP >= 1) return probs;
    const order = probs.map((p, i) => [p, i]).sort((a, b) => b[0] - a[0]);
    const keep = new Array(probs.length).fill(false);
    let before = 0;                                   // 排在它前面的字的概率之和
    for (const [p, i] of order) { if (before >= topP) break; keep[i] = true; before += p; }
    return softmax(scaled.map((z, i) => (keep[i] && z >= kth ? z : -Infinity)));
  };
  const mulberry32 = P.mulberry32 = function (seed) {
    return function () {
      seed |= 0; seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  };

  P.kinds.gpt = function (root, data) {
    const model = P.gptModel(data.model);
    root.olpModel = model;  // 测试用：页面里的模型

    const text = el("input", { type: "text", value: data.prompt, "data-control": "prompt", size: 12,
                               style: "min-height:28px;font:inherit;color:inherit;background:transparent;",
                               maxlength: 64, autocomplete: "off", spellcheck: "false" });
    text.addEventListener("input", draw);
    const prompt = el("label", { class: "olp-slider" }, [el("span", { text: "提示" }), text]);
    const temp = slider({ name: "log10T", label: "温度 τ", min: -1, max: 1, step: 0.05, value: 0,
                          text: (v) => (10 ** v).toPrecision(3) }, draw);
    const topK = slider({ name: "top_k", label: "top-k", min: 1, max: model.vocab.length, step: 1,
                          value: model.vocab.length }, draw);
    const seed = slider({ name: "seed", label: "随机种子", min: 0, max: 20, step: 1, value: 0 }, draw);
    const out = el("div", { class: "olp-out", "aria-live": "polite" });
    root.append(el("p", { class: "olp-note", text: "上面训练好的模型，权重原样搬进页面，在浏览器里运行（不需要 Python）："
                                                  + "输入提示，看下一个字的分布、温度与 top-k 抽样的续写，以及最后一个字上激活最大的 FFN 神经元。" }),
      el("div", { class: "olp-controls" }, [
      el("div", { class: "olp-group" }, [prompt, seed.node]),
      el("div", { class: "olp-group" }, [temp.node, topK.node])]), out);

    function draw() {
      const enc = P.gptEncode(model, text.value);
      if (enc.error) {
        out.replaceChildren(el("p", { class: "olp-msg", role: "alert", text: enc.error }));
        return;
      }
      const tau = 10 ** temp.get(), k = topK.get();
      const { logits, hidden } = P.gptForward(model, enc.ids);
      const probs = P.gptProbs(logits, tau, k);
      const order = probs.map((p, i) => [p, i]).sort((a, b) => b[0] - a[0]).slice(0, 10);
      const chars = Array.from(text.value);
      const truth = chars.length >= 2 ? data.facts[chars[chars.length - 2] + chars[chars.length - 1]] : undefined;
      const bars = el("table", {}, [
        el("caption", { class: "olp-note", text: `“${text.value}”之后的下一个字（温度 τ = ${tau.toPrecision(3)}，top-k = ${k}；橙色：表里的事实）` }),
        el("tr", {}, ["字", "概率", "logit", ""].map((t) => el("th", { scope: "col", text: t }))),
        ...order.map(([p, i]) => el("tr", {}, [
          el("th", { scope: "row", text: model.vocab[i] === "。" ? "。（句号）" : model.vocab[i] }),
          el("td", {}, [num(`prob.${model.vocab[i]}`, p, 3)]),
          el("td", {}, [num(`logit.${model.vocab[i]}`, logits[i], 3)]),
          el("td", { style: "width:10em" }, [el("div", { "aria-hidden": "true",
            style: `height:0.9em;width:${(100 * p).toFixed(1)}%;background:${model.vocab[i] === truth ? "#ff7f0e" : "#1f77b4"}` })]),
        ])),
      ]);
      // 抽样：与 generate 相同的规则（温度、top-k、上下文取最后 block_size 个字），随机数由种子决定。
      const rand = mulberry32(seed.get() + 1);
      const ids = enc.ids.slice();
      for (let n = 0; n < 12; n++) {
        const p = P.gptProbs(P.gptForward(model, ids.slice(-model.block_size)).logits, tau, k);
        let r = rand(), pick = p.length - 1;
        for (let i = 0; i < p.length; i++) { r -= p[i]; if (r < 0) { pick = i; break; } }
        ids.push(pick);
      }
      const sample = el("p", {}, [el("span", { text: "抽样续写 12 个字：" }),
        el("strong", { text: text.value }), el("span", { text: ids.slice(enc.ids.length).map((i) => model.vocab[i]).join("") })]);
      const neurons = hidden[hidden.length - 1].map((h, i) => [h, i]).sort((a, b) => b[0] - a[0]).slice(0, 5);
      const ffn = el("table", {}, [
        el("caption", { class: "olp-note", text: `最后一个字上，FFN 中激活最大的 5 个神经元（共 ${hidden[0].length} 个）` }),
        el("tr", {}, ["神经元", "act(x·W1 + b1)"].map((t) => el("th", { scope: "col", text: t }))),
        ...neurons.map(([h, i]) => el("tr", {}, [el("th", { scope: "row", text: `#${i}` }),
          el("td", {}, [num(`neuron.${i}`, h, 3)])])),
      ]);
      out.replaceChildren(bars, sample, ffn);
    }
    draw();
  };
})();
