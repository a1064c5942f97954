"""The interface around the text in Chinese (_ext/page_language.py): every page's strings
outside the article, and the toggles of folded code.
"""

from __future__ import annotations

import re
import sys

import pytest
from test_site import HTML, ROOT, toc_pages

# own English terms in its titles).
LATIN_ALLOWED = {"pdf", "ipynb", "md", "ctrl", "k", "transformer", "ffn", "layernorm",
                 "pre", "post", "norm", "gpt", "tinygpt", "relu", "gelu", "silu", "glu", "swiglu",
                 "qk"}



@pytest.mark.browser
@pytest.mark.parametrize("page_path", [*toc_pages(), "search.html"])
def test_interface_around_the_text_is_chinese(book_pages, page_path):
    strings = book_pages(page_path).page.evaluate("""() => {
      const out = [];
      // The book's own words: the article, search results, and links to its pages and
      // sections (tables of contents, previous/next) carry the titles the authors wrote.
      const outside = e => !e.closest(
        "article, .bd-article, #search-results, .bd-search, a.reference, .prev-next-title");
      document.querySelectorAll("[title], [aria-label], [placeholder], [data-bs-title]")
        .forEach(e => {
          if (!outside(e) && !e.matches(".bd-search input, .bd-search button")) return;
          for (const a of ["title", "aria-label", "placeholder", "data-bs-title"]) {
            if (e.hasAttribute(a)) out.push(e.getAttribute(a));
          }
        });
      const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        const el = n.parentElement;
        if (el && outside(el) && el.offsetParent !== null
            && !el.closest("script, style, pre, code")) out.push(n.textContent);
      }
      return out;
    }""")
    english = sorted({s.strip() for s in strings
                      if any(w.lower() not in LATIN_ALLOWED
                             for w in re.findall(r"[A-Za-z]{2,}", s))})
    assert english == [], f"{page_path}: 界面上还有英文: {english}"


def test_folded_code_toggles_speak_chinese():
    # myst-nb's default toggle text is "Show code cell source"; _config.yml sets it
    for page in toc_pages():
        text = (HTML / page).read_text(encoding="utf-8")
        assert "Show code cell" not in text and "Hide code cell" not in text, page
        if "tag_hide-input" in text:
            assert ">显示代码<" in text and ">隐藏代码<" in text, page


def test_the_sidebar_toggle_of_study_pages_has_a_name():
    sys.path.insert(0, str(ROOT / "_ext"))
    import page_language

    page = f"<nav>{page_language.TOCTREE_TOGGLE}</summary></nav><article>x</article>"
    named = page_language.translate_template_strings(page)
    assert 'aria-label="展开或收起这一章的研究页"' in named
