// Typesets TeX for book_math.py: one JSON request a line on stdin ({"tex", "display"}), one
// JSON answer a line on stdout (the request's "output", KaTeX's option, defaults to HTML and
// MathML) ({"html"} or {"error"}). KaTeX comes from node_modules (pinned
// in package.json). Errors are answers, not exits: the build names the formula that failed.
"use strict";
const path = require("path");
const readline = require("readline");
const katex = require(path.join(process.argv[2], "katex"));

const OPTIONS = {
  throwOnError: true,
  // Chinese inside \text{} is text, which KaTeX sets in the page's own font; anything
  // else KaTeX does not know is an error, so the build fails rather than print it wrong.
  strict: (code) => (code === "unknownSymbol" || code === "unicodeTextInMathMode" ? "ignore" : "error"),
};

readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const { tex, display, output = "htmlAndMathml" } = JSON.parse(line);
  let answer;
  try {
    answer = { html: katex.renderToString(tex, { ...OPTIONS, displayMode: display, output }) };
  } catch (error) {
    answer = { error: String(error.message || error) };
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
});
