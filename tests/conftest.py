"""Every test process computes on one thread, as the chapter notebooks do (``setup()``).

The tests run two at a time (pytest-xdist) on machines with a few cores: two processes each
spinning a thread pool over the same cores make the small matrices of this book several
times slower, and a result must not depend on how many cores the machine has.
"""

import re

import torch

torch.set_num_threads(1)


# make test runs the tests on two processes (pytest-xdist, --dist loadfile): the tests of one
# file run one after another in one process, so a notebook's cells share a kernel and a
# module's fixtures are made once. Browser checks of one page of the book are grouped by that
# page instead, whatever their file, so they share one visit of it (tests/book/visits.py);
# in a page's group the checks marked changes_page run last.
PAGE = re.compile(r"\[(?:.*-)?([\w/]+\.html)\]$")


def scope_of(nodeid: str) -> str:
    """The page a browser check is parametrized with, else the file of the test."""
    page = PAGE.search(nodeid)
    return page.group(1) if page else nodeid.split("::", 1)[0]


def pytest_xdist_make_scheduler(config, log):
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByFileOrPage(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return ByFileOrPage(config, log)


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: item.get_closest_marker("changes_page") is not None
               and PAGE.search(item.nodeid) is not None)
