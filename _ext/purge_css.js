// Prunes the theme's stylesheets for reader_pages.py: keeps each rule whose selectors name only
// classes, ids, tags and attribute values that occur in the built book — its pages and the
// theme's and extensions' scripts, which add classes at run time (menus, dark mode, search).
// The vendored libraries in _static/offline are not read (the widget manager's 3.6 MB would
// keep every Font Awesome icon, whose names are common words).
// Usage: node purge_css.js <node_modules> <output dir> <stylesheet>... (paths in the output
// dir); each stylesheet is rewritten in place and one JSON line reports the sizes.
"use strict";
const fs = require("fs");
const path = require("path");
const { PurgeCSS } = require(path.join(process.argv[2], "purgecss"));

async function main() {
  const [outdir, ...sheets] = process.argv.slice(3);
  const results = await new PurgeCSS().purge({
    content: [path.join(outdir, "**/*.html"), path.join(outdir, "_static/**/*.js")],
    skippedContentGlobs: [path.join(outdir, "_static/offline/**"), path.join(outdir, "_static/panels/**")],
    css: sheets.map((sheet) => path.join(outdir, sheet)),
    // Kept by name: the widget manager's classes; Bootstrap's tooltips, whose classes its
    // script builds from pieces (bs-tooltip-auto); the theme's keyboard focus ring, a rule
    // with no class or tag in its selector, which PurgeCSS would otherwise drop.
    safelist: {
      standard: [/focus-visible/],
      greedy: [/(^|-)widget/, /^jupyter-/, /^jp-/, /^lm-/, /^bs-/, /tooltip/, /popover/, /popper/],
    },
    // Fonts, animations and custom properties are kept whole: they are named from other rules.
    fontFace: false,
    keyframes: false,
    variables: false,
  });
  const sizes = {};
  for (const result of results) {
    sizes[path.relative(outdir, result.file)] = [fs.statSync(result.file).size, result.css.length];
    fs.writeFileSync(result.file, result.css);
  }
  process.stdout.write(JSON.stringify(sizes) + "\n");
}

main().catch((error) => {
  process.stderr.write(String(error.stack || error) + "\n");
  process.exit(1);
});
