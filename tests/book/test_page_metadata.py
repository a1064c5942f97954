"""Page metadata (_ext/page_metadata.py): every page's own meta description, and the
footer's date of the page's last commit, or why it is unknown (a shallow clone, no git).
The git tests run without a browser.
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_site import HTML, ROOT, toc_files, toc_pages

sys.path.insert(0, str(ROOT / "_ext"))
import page_metadata  # noqa: E402


def source_of(doc: str) -> Path:
    matches = [p for p in ROOT.glob(f"{doc}.*") if p.suffix in {".md", ".ipynb"}]
    assert len(matches) == 1, (doc, matches)
    return matches[0]



def test_every_page_has_its_own_meta_description():
    seen = {}
    for page in toc_pages():
        text = (HTML / page).read_text(encoding="utf-8")
        found = [html.unescape(d) for d in
                 re.findall(r'<meta name="description" content="([^"]*)"', text)]  # &quot; 算一个字
        assert len(found) == 1, page
        assert 20 <= len(found[0]) <= page_metadata.DESCRIPTION_CHARS, (page, found[0])
        assert re.search(r"[\u4e00-\u9fff]", found[0]), (page, found[0])
        seen.setdefault(found[0], []).append(page)
    assert all(len(pages) == 1 for pages in seen.values()), seen


def test_every_page_shows_the_date_of_its_last_commit():
    if page_metadata.git_history_problem(str(ROOT)) is not None:
        pytest.skip(f"此检出没有完整的 git 历史：{page_metadata.git_history_problem(str(ROOT))}")
    for doc in toc_files():
        text = (HTML / f"{doc}.html").read_text(encoding="utf-8")
        shown = re.search(r"最后更新于\s*([^<]*?)\s*[。.]?\s*<", text)
        assert shown, f"{doc}: 页脚没有最后更新日期"
        date = subprocess.run(["git", "log", "-1", "--format=%cs", "--", str(source_of(doc))],
                              cwd=ROOT, capture_output=True, text=True).stdout.strip()
        assert shown.group(1) == (date or "尚未提交"), (doc, shown.group(1), date)


@pytest.fixture(scope="module")
def clones(tmp_path_factory):
    if shutil.which("git") is None or page_metadata.git_history_problem(str(ROOT)) is not None:
        pytest.skip("需要 git 和完整历史的检出")
    base = tmp_path_factory.mktemp("clones")
    run = dict(cwd=base, check=True, capture_output=True)
    subprocess.run(["git", "clone", "--quiet", "--no-checkout", str(ROOT), "full"], **run)
    subprocess.run(["git", "clone", "--quiet", "--no-checkout", "--depth", "1",
                    f"file://{ROOT}", "shallow"], **run)
    return base


def test_last_updated_from_a_fresh_clone(clones):
    page_metadata.git_history_problem.cache_clear()
    full = str(clones / "full")
    assert page_metadata.git_history_problem(full) is None
    source = Path("chapters") / "01_ffn.ipynb"
    expected = subprocess.run(["git", "log", "-1", "--format=%cs", "HEAD", "--", str(source)],
                              cwd=ROOT, capture_output=True, text=True).stdout.strip()
    assert page_metadata.last_commit_date(full, source) == expected != ""


def test_last_updated_says_why_it_is_unknown(clones, tmp_path, monkeypatch):
    page_metadata.git_history_problem.cache_clear()
    assert "浅克隆" in page_metadata.git_history_problem(str(clones / "shallow"))
    assert "不在 git 仓库" in page_metadata.git_history_problem(str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))  # no git on PATH
    page_metadata.git_history_problem.cache_clear()
    assert "没有 git" in page_metadata.git_history_problem(str(ROOT))
    page_metadata.git_history_problem.cache_clear()

