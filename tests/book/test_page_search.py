"""Chinese search (_ext/page_search.py): a compound query finds its chapter first, and the
build's Chinese index splits and stems as Sphinx's does. The search of every chapter's term
is in test_site.py.
"""

from __future__ import annotations

import sys

import pytest
from test_site import ROOT
from visits import search

sys.path.insert(0, str(ROOT / "_ext"))
import page_search  # noqa: E402

# Compound queries and the chapter each must bring first (issue 13, item 4).
COMPOUND_QUERIES = {
    "激活函数": "chapters/02_activation",
    "层归一化": "chapters/04_layernorm",
    "前置归一化": "chapters/08_pre_post_norm",
    "召回率": "chapters/07_tiny_gpt",    # defined there (事实召回率)
    "残差连接": "chapters/03_residual",
    "逐位置前馈网络": "chapters/01_ffn",
}
# Latin words allowed in the interface around the text (file types, key names, the book's


@pytest.mark.browser
@pytest.mark.parametrize("query", COMPOUND_QUERIES)
def test_compound_chinese_query_finds_its_chapter_first(search_tab, server, query):
    pages = search(search_tab, server, query)
    terms = search_tab.page.evaluate("q => onelayerSplitQuery(q)", query)
    assert terms and all(t in query for t in terms), terms
    assert pages and pages[0] == f"{COMPOUND_QUERIES[query]}.html", (query, terms, pages[:5])
    assert search_tab.errors == []


def test_the_chinese_index_splits_and_stems_as_sphinx_does():
    from sphinx.search.zh import SearchChinese

    text = "LayerNorm 与 RMSNorm：GPT 的 FFN 把 d_model 放宽到 4 倍，GELU 与 ReLU。" * 3
    words = {}
    for language in (SearchChinese, page_search.ChineseIndex):
        index = language({})
        words[language] = [index.stem(w) for w in index.split(text) if index.word_filter(w)]
    assert words[page_search.ChineseIndex] == words[SearchChinese]
    assert "gpt" in words[SearchChinese] and "放宽" in words[SearchChinese]
    assert isinstance(page_search.ChineseIndex({}).latin_terms, set)
