// 书页里的面板：公式在这里（浏览器和 JupyterLab 里都由这一份脚本计算），
// 权重与输入由 Python 从笔记本用的同一批张量写成 JSON。
(function () {
  "use strict";
  if (window.onelayerPanels && window.onelayerPanels.version === 3) return;
  const P = { version: 3, kinds: {}, data: {} };
  window.onelayerPanels = P;

  // ---- 数学 ----
  // erf：|x| < 2.5 用泰勒级数，否则用 erfc 的连分式（Lentz），双精度下误差 < 1e-13。
  function erfSeries(x) {
    let term = x, sum = x;
    const x2 = x * x;
    for (let n = 1; n < 200; n++) {
      term *= -x2 / n;
      const add = term / (2 * n + 1);
      sum += add;
      if (Math.abs(add) < 1e-17 * Math.abs(sum)) break;
    }
    return (2 / Math.sqrt(Math.PI)) * sum;
  }
  function erfcFraction(x) { // x > 0
    const tiny = 1e-300;
    let f = x, c = x, d = 0;
    for (let n = 1; n < 500; n++) {
      const a = n / 2;
      d = x + a * d; d = Math.abs(d) < tiny ? tiny : d; d = 1 / d;
      c = x + a / c; c = Math.abs(c) < tiny ? tiny : c;
      const delta = c * d;
      f *= delta;
      if (Math.abs(delta - 1) < 1e-16) break;
    }
    return Math.exp(-x * x) / (Math.sqrt(Math.PI) * f);
  }
  function erfc(x) {
    if (x >= 2.5) return erfcFraction(x);
    if (x <= -2.5) return 2 - erfcFraction(-x);
    return 1 - erfSeries(x);
  }
  function erf(x) {
    return Math.abs(x) < 2.5 ? erfSeries(x) : 1 - erfc(x);
  }
  const SQRT2 = Math.SQRT2;
  const normalCdf = (x) => 0.5 * erfc(-x / SQRT2);
  const normalPdf = (x) => Math.exp(-0.5 * x * x) / Math.sqrt(2 * Math.PI);
  const sigmoid = (x) => {
    const e = Math.exp(-Math.abs(x));
    return x >= 0 ? 1 / (1 + e) : e / (1 + e);
  };
  const K = Math.sqrt(2 / Math.PI), C = 0.044715;
  // 每个激活函数：[值, 导数]（导数按公式写出，与 autograd 的结果一致）。
  const ACTIVATIONS = {
    relu: (x) => [x > 0 ? x : 0, x > 0 ? 1 : 0],
    gelu: (x) => [x * normalCdf(x), normalCdf(x) + x * normalPdf(x)],
    gelu_tanh: (x) => {
      const t = Math.tanh(K * (x + C * x * x * x));
      return [0.5 * x * (1 + t), 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * K * (1 + 3 * C * x * x)];
    },
    silu: (x) => { const s = sigmoid(x); return [x * s, s * (1 + x * (1 - s))]; },
    sigmoid: (x) => { const s = sigmoid(x); return [s, s * (1 - s)]; },
  };
  // x·W（W 按 [输入, 输出] 存放）+ b
  function affine(x, W, b) {
    return b.map((bj, j) => x.reduce((acc, xi, i) => acc + xi * W[i][j], 0) + bj);
  }
  const mean = (v) => v.reduce((a, b) => a + b, 0) / v.length;
  P.math = { erf, erfc, normalCdf, sigmoid, ACTIVATIONS, affine, mean };

  // ---- 显示 ----
  // 舍入到 digits 位小数的文字（负号用 U+2212 之外的普通 "-"，避免 "-0.000"）。
  function fmt(v, digits) {
    const s = v.toFixed(digits);
    return /^-0\.?0*$/.test(s) ? s.slice(1) : s;
  }
  function decimals(step) {
    const s = String(step);
    return s.includes(".") ? s.length - s.indexOf(".") - 1 : 0;
  }
  // 控件带上 data-lm-suppress-shortcuts：在 JupyterLab 里按键交给控件（方向键移动滑块），
  // 不被笔记本的快捷键拿走（Lab 从按键的目标元素往上找快捷键，遇到这个属性就停）。
  const CONTROL = /^(input|select|textarea|button)$/;
  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    if (CONTROL.test(tag)) node.setAttribute("data-lm-suppress-shortcuts", "true");
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "text") node.textContent = v;
      else if (v !== undefined && v !== null && v !== false) node.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children || []) node.append(c);
    return node;
  }
  const SVG = "http://www.w3.org/2000/svg";
  function svgEl(tag, attrs, children) {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    for (const c of children || []) node.append(c);
    return node;
  }
  // 一个数：显示舍入后的文字，data-v 里是完整的值（测试与 Python 的结果比较）。
  function num(key, v, digits) {
    return el("span", { class: "olp-num", "data-key": key, "data-v": String(v), text: fmt(v, digits) });
  }
  // 带标签的滑块：值显示在旁边，读屏软件读到舍入后的值（aria-valuetext）。
  function slider(spec, onChange) {
    const digits = spec.digits !== undefined ? spec.digits : decimals(spec.step);
    const text = spec.text || ((v) => fmt(v, digits));
    const input = el("input", { type: "range", min: spec.min, max: spec.max, step: spec.step,
                                value: spec.value, "data-control": spec.name });
    const out = el("output", { "aria-hidden": "true" });
    const sync = () => {
      const v = parseFloat(input.value);
      out.textContent = text(v);
      input.setAttribute("aria-valuetext", text(v));
    };
    input.addEventListener("input", () => { sync(); onChange(); });
    const label = el("label", { class: "olp-slider" }, [el("span", { text: spec.label }), input, out]);
    sync();
    return { node: label, input, get: () => parseFloat(input.value),
             set: (v) => { input.value = String(v); sync(); } };
  }
  // 一组单选按钮（fieldset + legend 给出这一组的名字）。
  let groupCount = 0;
  function radios(spec, onChange) {
    const name = `olp-${spec.name}-${++groupCount}`;
    const inputs = spec.options.map(([value, text]) => {
      const input = el("input", { type: "radio", name, value, "data-control": spec.name,
                                  checked: value === spec.value });
      input.addEventListener("change", onChange);
      return el("label", { class: "olp-choice" }, [input, el("span", { text })]);
    });
    const node = el("fieldset", { class: "olp-radios" }, [el("legend", { text: spec.label }), ...inputs]);
    return { node, get: () => node.querySelector("input:checked").value };
  }
  function checkbox(spec, onChange) {
    const input = el("input", { type: "checkbox", "data-control": spec.name, checked: spec.value });
    input.addEventListener("change", onChange);
    return { node: el("label", { class: "olp-choice" }, [input, el("span", { text: spec.label })]),
             input, get: () => input.checked };
  }
  function select(spec, onChange) {
    const input = el("select", { "data-control": spec.name },
      spec.options.map(([value, text]) => el("option", { value, text, selected: value === spec.value })));
    input.addEventListener("change", onChange);
    return { node: el("label", { class: "olp-slider" }, [el("span", { text: spec.label }), input]),
             input, get: () => input.value };
  }
  P.ui = { fmt, el, svgEl, num, slider, radios, checkbox, select, decimals };

  // ---- 挂载 ----
  // 面板接近屏幕时才计算和绘制：长的一章打开时不必先把每个面板都算一遍。数据很大的面板
  // （例如整个模型的权重），书在构建时把数据移到单独的文件（data-src），也在这时才加载。
  function start(root, data) {
    root.dataset.mounted = "1";
    const fallback = root.querySelector(".olp-fallback");
    if (fallback) fallback.remove();
    P.kinds[root.dataset.kind](root, data);
  }
  function load(root) {
    const holder = root.querySelector('script[type="application/json"]');
    const file = holder.dataset.src;
    if (!file) return start(root, JSON.parse(holder.textContent));
    const script = document.createElement("script");
    script.src = file;
    script.onload = () => start(root, P.data[root.id]);
    script.onerror = () => {
      const fallback = root.querySelector(".olp-fallback");
      if (fallback) fallback.textContent = "面板的数据没有加载：" + file;
    };
    document.head.appendChild(script);
  }
  P.mount = function (root) {
    if (!root || root.dataset.mounted || root.dataset.waiting) return;
    root.dataset.waiting = "1";
    if (!("IntersectionObserver" in window)) return load(root);
    const near = new IntersectionObserver((entries) => {
      if (!entries.some((e) => e.isIntersecting)) return;
      near.disconnect();
      load(root);
    }, { rootMargin: "600px 0px" });
    near.observe(root);
  };
})();
