"""Every test process computes on one thread, as the chapter notebooks do (``setup()``).

The tests run two at a time (pytest-xdist) on machines with a few cores: two processes each
spinning a thread pool over the same cores make the small matrices of this book several
times slower, and a result must not depend on how many cores the machine has.
"""

import re

import pytest
import torch

torch.set_num_threads(1)


# make test runs the tests on two processes (pytest-xdist, --dist loadfile): the tests of one
# file run one after another in one process, so a notebook's cells share a kernel and a
# module's fixtures are made once. Browser checks of one page of the book are grouped by that
# page instead, whatever their file, so they share one visit of it (tests/book/visits.py);
# in a page's group the checks marked changes_page run last. A test is a page's when its id
# ends with the page (its last parameter, page_path): checked below for every test that
# uses the shared visit.
# The groups are handed out so that neither process idles: first the groups holding a test
# marked slow (half a minute or more), so that none is left alone at the end; then the
# notebooks, which keep a core busy computing, each followed by a page of the book, whose
# checks mostly wait for the browser (two pages at once would leave the cores half idle);
# then the rest (seconds each). The chapters go last first (the later chapters train longer),
# the appendices after them; the other kinds keep their collection order.
PAGE = re.compile(r"\[(?:.*-)?([\w/]+\.html)\]$")


def scope_of(nodeid: str) -> str:
    """The page a test is parametrized with (the end of its id), else the test's file."""
    page = PAGE.search(nodeid)
    return page.group(1) if page else nodeid.split("::", 1)[0]


@pytest.hookimpl(optionalhook=True)  # an xdist hook: pytest -p no:xdist runs without it
def pytest_xdist_make_scheduler(config, log):
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByFileOrPage(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    config.option.loadscopereorder = False   # keep the order set below, not xdist's by count
    return ByFileOrPage(config, log)


def chapter_number(path: str) -> int:
    """A chapter notebook's number (chapters/07_tiny_gpt.ipynb: 7); 0 for an appendix."""
    number = re.match(r"chapters/(\d+)_", path)
    return int(number.group(1)) if number else 0


def queue_places(items) -> dict[str, tuple[int, int, int]]:
    """Each group's place in the queue: (0, …) when it holds a slow test; (1, k, 0) for the
    k-th notebook, last chapter first, and (1, k, 1) for the k-th page, so that they alternate;
    (2, …) for the rest."""
    scopes = list(dict.fromkeys(scope_of(item.nodeid) for item in items))
    slow = {scope_of(item.nodeid) for item in items if item.get_closest_marker("slow")}
    notebooks = [s for s in scopes if s not in slow and s.endswith(".ipynb")]
    pages = [s for s in scopes if s not in slow and s.endswith(".html")]
    place = {scope: (2, i, 0) for i, scope in enumerate(scopes)}
    place |= {scope: (0, i, 0) for i, scope in enumerate(scopes) if scope in slow}
    last_first = sorted(notebooks, key=lambda s: -chapter_number(s))
    place |= {scope: (1, k, 0) for k, scope in enumerate(last_first)}
    place |= {scope: (1, k, 1) for k, scope in enumerate(pages)}
    return place


def pytest_collection_modifyitems(items):
    for item in items:
        if "book_pages" in getattr(item, "fixturenames", ()) or item.get_closest_marker(
                "changes_page"):
            page = getattr(item, "callspec", None) and item.callspec.params.get("page_path")
            if not page or scope_of(item.nodeid) != page:
                raise pytest.UsageError(
                    f"{item.nodeid}：用 book_pages 或标记 changes_page 的检查应以参数 page_path "
                    f"给出页面，并且页面是测试 id 的最后一段（实际 page_path={page!r}）")
    place = queue_places(items)
    items.sort(key=lambda item: (place[scope_of(item.nodeid)],
                                 item.get_closest_marker("changes_page") is not None))
