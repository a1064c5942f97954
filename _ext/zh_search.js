// Chinese queries for Sphinx's search. The index is split into words by jieba at build
// time; a query such as 激活函数 arrives as one word that the index does not hold, and
// Sphinx requires every query word. This splitter cuts each run of Chinese characters
// into the fewest words the index knows (characters it does not know are dropped, since
// they would match nothing) and leaves everything else as Sphinx's default splitter does.
// Loaded on the search page only (_ext/reader_pages.py), before searchtools.js.
(function () {
  const HAN = /\p{Script=Han}/u;

  function defaultSplit(query) {
    return query.split(/[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/gu).filter(Boolean);
  }

  // Fewest pieces, each a word of the index; a character the index lacks costs 100 pieces.
  function segment(run, known) {
    const n = run.length;
    const cost = [0], cut = [0];
    for (let j = 1; j <= n; j++) {
      cost[j] = Infinity;
      for (let i = Math.max(0, j - 12); i < j; i++) {
        const piece = run.slice(i, j);
        const step = known(piece) ? 1 : (j - i === 1 ? 100 : Infinity);
        if (cost[i] + step < cost[j]) { cost[j] = cost[i] + step; cut[j] = i; }
      }
    }
    const pieces = [];
    for (let j = n; j > 0; j = cut[j]) pieces.unshift(run.slice(cut[j], j));
    const words = pieces.filter(known);
    return words.length ? words : [run];
  }

  function zhSplit(query) {
    const terms = defaultSplit(query);
    // searchtools.js declares `const Search`: a global binding, not a window property.
    const index = typeof Search !== "undefined" ? Search._index : null;
    if (!index) return terms;
    const known = (w) => Object.prototype.hasOwnProperty.call(index.terms, w)
      || Object.prototype.hasOwnProperty.call(index.titleterms, w);
    const out = [];
    for (const term of terms) {
      if (!HAN.test(term) || known(term.toLowerCase())) { out.push(term); continue; }
      for (const run of term.match(/\p{Script=Han}+|[^\p{Script=Han}]+/gu)) {
        if (!HAN.test(run) || known(run)) out.push(run);
        else out.push(...segment(run, known));
      }
    }
    return out;
  }

  // Ranking: Sphinx boosts a page title only when the query is at least half of it, so a
  // short section title that contains 激活函数 outranks the chapter 激活函数：从 ReLU 到
  // SwiGLU. Results from a page whose own title contains the whole query come first.
  const normal = (text) => text.toLowerCase().replace(/\s+/g, "");
  function titleBoost(result) {
    const query = normal(new URLSearchParams(window.location.search).get("q") || "");
    const index = typeof Search !== "undefined" ? Search._index : null;
    if (!query || !index) return result[4];
    const page = index.titles[index.docnames.indexOf(result[0])] || "";
    return result[4] + (normal(page).includes(query) ? 100 : 0);
  }
  // The search page runs this file after searchtools.js (which declares `var Scorer` and the
  // default splitQuery) and before the index, whose arrival runs the query
  // (reader_pages.drop_search_scripts puts it there); keep Scorer's own score if it has one.
  if (typeof Scorer !== "undefined" && !Scorer.score) Scorer.score = titleBoost;

  // A result's summary is the text of its page: a formula there is KaTeX's drawing and its
  // MathML (for screen readers) with the TeX, which would read three times; keep the drawing.
  if (typeof Search !== "undefined" && Search.htmlToText) {
    const htmlToText = Search.htmlToText;
    const MATHML = /<span class="katex-mathml">[\s\S]*?<\/math><\/span>/g;
    Search.htmlToText = (html, anchor) => htmlToText(html.replace(MATHML, ""), anchor);
  }

  window.splitQuery = zhSplit;
  window.onelayerSplitQuery = zhSplit;  // for the tests
})();
