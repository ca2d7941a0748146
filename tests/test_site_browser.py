"""The leaderboard site in a real browser: the system's Chromium, headless, through Playwright
(`scripts/site_screenshot.py`), the pages opened from the file system. Skipped without
Playwright or /usr/bin/chromium; `pytest -m slow tests/test_site_browser.py`."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from scripts_loader import load_script
from test_site import write_committed

pytestmark = pytest.mark.slow

pytest.importorskip("playwright.sync_api")
shot = load_script("site_screenshot")
if not Path(shot.CHROMIUM).exists():
    pytest.skip(f"no {shot.CHROMIUM} (Debian's chromium package)", allow_module_level=True)

REFS = """() => [
  ...Array.from(document.querySelectorAll('a[href]'), a => a.href),
  ...Array.from(document.querySelectorAll('[src]'), e => e.src),
  ...Array.from(document.querySelectorAll('link[href]'), l => l.href),
]"""
ROWS = "() => Array.from(document.querySelectorAll('#matrix tbody tr'))"
SHOWN = ROWS + ".filter(r => !r.hidden).map(r => r.cells[0].textContent)"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return write_committed(tmp_path_factory.mktemp("web") / "site")


@pytest.fixture(scope="module")
def browser():
    with shot.chromium() as context:
        yield context


def open_page(browser, path: Path):
    """A page opened from the file system, with the console errors and uncaught exceptions it
    raised (`page.errors`)."""
    page = browser.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("requestfailed", lambda r: errors.append(f"{r.url}: {r.failure}"))
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    page.errors = errors
    return page


def resolves(page) -> None:
    """Every href and src of `page` is a file that exists; every image decoded."""
    refs = page.evaluate(REFS)
    assert refs
    for ref in refs:
        url = urlsplit(ref)
        assert url.scheme == "file", f"{page.url} links off the file system: {ref}"
        assert Path(unquote(url.path)).is_file(), f"{page.url} names a missing {ref}"
    broken = page.evaluate(
        "() => Array.from(document.images).filter(i => !i.complete || !i.naturalWidth)"
        ".map(i => i.src)"
    )
    assert not broken


def test_overview_loads_sorts_and_filters(site, browser):
    page = open_page(browser, site)
    assert page.title() == "marl leaderboard"
    first = page.evaluate(SHOWN)
    assert first == ["combat/3m", "particle/spread"]
    page.click("#matrix thead th:has-text('mappo')")  # mappo ran particle/spread only
    assert page.evaluate(SHOWN) == ["particle/spread", "combat/3m"]
    assert page.get_attribute("#matrix thead th:has-text('mappo')", "aria-sort") == "descending"
    page.click("#matrix thead th:has-text('task')")
    assert page.evaluate(SHOWN) == first
    page.click("#matrix thead th:has-text('task')")
    assert page.evaluate(SHOWN) == first[::-1]
    page.select_option("#filter-family", "particle")
    assert page.evaluate(SHOWN) == ["particle/spread"]
    assert page.inner_text("#shown") == "1 of 2 tasks"
    page.select_option("#filter-family", "all")
    page.select_option("#filter-tier", "cpu")
    assert page.evaluate(SHOWN) == ["combat/3m"]
    assert not page.errors
    resolves(page)


@pytest.mark.parametrize("path", ["tasks/particle_spread.html", "cells/combat_3m/qmix.html"])
def test_task_and_cell_pages_resolve(site, browser, path):
    page = open_page(browser, site.parent / path)
    assert not page.errors
    resolves(page)


def _inside(site: Path, page) -> None:
    """Every link and image of `page` lies inside the site's folder."""
    root = site.parent.resolve()
    for ref in page.evaluate(REFS):
        url = urlsplit(ref)
        assert url.scheme == "file", f"{page.url} links off the file system: {ref}"
        target = Path(unquote(url.path)).resolve()
        assert target.is_relative_to(root), f"{page.url} links outside the site: {ref}"


def test_no_link_leaves_the_site_folder(site, browser):
    pages = [site, site.parent / "groups.html", *sorted((site.parent / "tasks").glob("*.html"))]
    pages += sorted((site.parent / "cells").rglob("*.html"))
    for path in pages:
        page = open_page(browser, path)
        assert not page.errors, path
        _inside(site, page)
        page.close()


def test_a_phone_sees_a_score_on_the_first_screen(site, browser):
    page = browser.new_page()
    page.set_viewport_size({"width": 400, "height": 800})
    page.goto(site.as_uri())
    page.wait_for_load_state("load")
    box = page.locator("#matrix td.score .v").first.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 400, box
    assert box["y"] >= 0 and box["y"] + box["height"] <= 800, box
    for path in sorted(site.parent.rglob("*.html")):  # no page wider than the phone
        page.goto(path.as_uri())
        width = page.evaluate("() => document.documentElement.scrollWidth")
        assert width <= 400, f"{path.relative_to(site.parent)} is {width} px wide at 400 px"
    page.close()


def test_the_bulk_download_opens_offline(site, browser):
    page = open_page(browser, site)
    for name in ("data/cells.csv", "data/seeds.csv"):
        link = page.locator(f'a[href="{name}"]')
        assert link.count() == 1
        target = Path(unquote(urlsplit(link.evaluate("a => a.href")).path))
        assert target.is_file() and target.resolve().is_relative_to(site.parent.resolve())
        text = target.read_text()
        assert text.startswith("task,learner,") and text.count("\n") > 1
    cell = open_page(browser, site.parent / "cells/combat_3m/qmix.html")
    data = cell.locator("a:has-text('JSON')")
    target = Path(unquote(urlsplit(data.evaluate("a => a.href")).path))
    assert target.is_file() and '"seeds"' in target.read_text()
    assert cell.locator("svg.seeds polyline.seed").count() == 5  # a curve per seed


def test_the_learner_filter_keeps_one_learners_column(site, browser):
    page = open_page(browser, site)
    page.select_option("#filter-learner", "qmix")
    shown = page.evaluate(
        "() => Array.from(document.querySelectorAll('#matrix th[data-learner]'))"
        ".filter(c => !c.hidden).map(c => c.textContent)"
    )
    assert shown == ["qmix"]
    page.select_option("#filter-learner", "all")
    assert (
        page.evaluate("() => document.querySelectorAll('#matrix [data-learner][hidden]').length")
        == 0
    )
