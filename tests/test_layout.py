"""The built pages' layout, measured in a real browser: Chromium driven by WebDriver (selenium).

At a desktop width (1280 px) no code block, printed output, display equation or table may be wider
than the text column; a folded cell (hide-input) opens when its toggle is clicked. Each page is also
saved as a screenshot at 1280 and 390 px under ``_build/screenshots`` for a person to look at.

Like ``tests/test_browser.py`` these run when a built book is present, and ``make browser-test``
(``PAVLOV_BROWSER_TEST=1``) turns a missing book, browser or driver into a failure.
"""

from __future__ import annotations

import shutil
import time

import pytest

from tools.ceilings import BROWSER_SCRIPT_S

# the same pages, browser and rule for when to run as the browser checks
from test_browser import CHAPTERS, CHROMIUM, HTML, PAGES, ROOT, pytestmark  # noqa: F401

DESKTOP, PHONE = 1280, 390

# What must fit the text column, by kind: CSS selectors inside the article.
KINDS = {
    "code block": "div.cell_input pre, div.highlight pre",
    "output": "div.cell_output pre, div.cell_output .output",
    "display equation": 'mjx-container[display="true"]',
    "table": "table",
}

# For each element of a kind: how far (px) it reaches past the article's text column, on either side,
# counting content it would scroll to; the article's own padding is the column's edge.
OVERFLOW = """
const article = document.querySelector('article.bd-article');
const style = getComputedStyle(article), box = article.getBoundingClientRect();
const left = box.left + parseFloat(style.paddingLeft), right = box.right - parseFloat(style.paddingRight);
const wide = [];
for (const element of article.querySelectorAll(arguments[0])) {
  if (!element.getClientRects().length) continue;            // not shown (inside a closed dropdown)
  const r = element.getBoundingClientRect();
  const past = Math.max(left - r.left, r.left + Math.max(r.width, element.scrollWidth) - right);
  if (past > 1) wide.push([Math.round(past), element.textContent.replace(/\\s+/g, ' ').slice(0, 60)]);
}
return wide;
"""


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    driver_path = shutil.which("chromedriver")
    if CHROMIUM is None or driver_path is None:
        pytest.fail("Chromium and its WebDriver are not installed (Debian: apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    yield driver
    driver.quit()


TYPESET = """
const done = arguments[arguments.length - 1];
const started = Date.now();
(function wait() {
  if (!document.querySelector('.math')) return done(true);               // no math on the page
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) return MathJax.startup.promise.then(() => done(true));
  if (Date.now() - started > 20000) return done(false);
  setTimeout(wait, 100);
})();
"""


def load(driver, page: str, width: int) -> None:
    """Open ``page`` at ``width`` px and wait until MathJax has typeset it."""
    driver.set_window_size(width, 1000)
    driver.set_script_timeout(BROWSER_SCRIPT_S)
    driver.get((HTML / f"{page}.html").as_uri())
    assert driver.execute_async_script(TYPESET), f"{page}: MathJax did not finish typesetting"


@pytest.mark.parametrize("page", PAGES)
def test_nothing_is_wider_than_the_column_at_desktop_width(browser, page):
    load(browser, page, DESKTOP)
    wide = {kind: found for kind, selector in KINDS.items() if (found := browser.execute_script(OVERFLOW, selector))}
    assert not wide, f"{page} at {DESKTOP} px, past the column by (px, text): {wide}"


# Each figure's displayed width over its own (natural) width: below 1 the page shrinks it, and its
# smallest text, pavlov.plotting.SMALLEST_TEXT_PT at the natural size, falls below that. On a phone each figure, and
# each explorer's frame, shows its version for a narrow column (pavlov.plotting.phone_svg: panels stacked at the
# column's width; a diagram whose text is placed by hand: its own phone layout, pavlov.diagrams' narrow=True), which
# fits the column: nothing is shrunk and nothing scrolls sideways.
FIGURE_SCALES = """
return [...document.querySelectorAll(arguments[0])]
  .filter(img => img.getClientRects().length && img.naturalWidth)
  .map(img => [img.getAttribute('src').split('/').pop().slice(0, 40), img.getBoundingClientRect().width / img.naturalWidth,
                img.getBoundingClientRect().right - (document.querySelector('article.bd-article').getBoundingClientRect().right
                  - parseFloat(getComputedStyle(document.querySelector('article.bd-article')).paddingRight))]);
"""
FIGURES = {DESKTOP: "article.bd-article div.cell_output img", PHONE: "article.bd-article div.cell_output img"}


@pytest.mark.parametrize("width", FIGURES)
@pytest.mark.parametrize("page", CHAPTERS)
def test_figures_are_shown_at_full_size_so_their_text_reads(browser, page, width):
    from pavlov import plotting

    load(browser, page, width)
    browser.execute_script("window.scrollTo(0, document.body.scrollHeight)")   # load lazy images
    time.sleep(0.5)
    scales = browser.execute_script(FIGURE_SCALES, FIGURES[width])
    assert scales, f"{page}: no figures found"
    shrunk = [(src, round(scale, 2)) for src, scale, _ in scales if scale < 0.99]
    assert not shrunk, (f"{page} at {width} px: figures shrunk by the page, so their {plotting.SMALLEST_TEXT_PT:g} "
                        f"pt text shows smaller: {shrunk}")
    past = [(src, round(over)) for src, _, over in scales if over > 1]
    assert not past, f"{page} at {width} px: figures past the text column (px), to be scrolled sideways: {past}"


@pytest.mark.parametrize("page", CHAPTERS[:1])
def test_a_folded_cell_opens_when_clicked(browser, page):
    load(browser, page, DESKTOP)
    cell = browser.find_element("css selector", "div.cell.tag_hide-input")
    source = cell.find_element("css selector", "div.cell_input")
    assert not source.is_displayed(), "a hide-input cell shows its code before it is opened"
    cell.find_element("css selector", "summary").click()
    for _ in range(50):                       # the toggle may animate
        if source.is_displayed():
            break
        time.sleep(0.1)
    assert source.is_displayed(), "clicking the toggle did not show the cell's code"


@pytest.mark.parametrize("page", PAGES)
def test_screenshots_at_desktop_and_phone_width(browser, page):
    out = ROOT / "_build" / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    for width in (DESKTOP, PHONE):
        load(browser, page, width)
        height = browser.execute_script("return document.documentElement.scrollHeight")
        browser.set_window_size(width, min(height, 16_000))
        shot = out / f"{page.replace('/', '_')}-{width}.png"
        browser.save_screenshot(str(shot))
        assert shot.stat().st_size > 10_000


# For every explorer on a page: move each control that has more than one setting away from its first
# setting (a menu to its next option, a slider to its other end), as a reader would, and report which
# frame is shown before and after and how many frames are shown at once.
MOVE_EXPLORERS = """
const moves = [];
for (const explorer of document.querySelectorAll('article.bd-article .pavlov-explorer')) {
  const shown = () => [...explorer.querySelectorAll('img.pavlov-explorer-frame')].filter(f => !f.hidden && f.getClientRects().length);
  for (const field of explorer.querySelectorAll('.pavlov-explorer-controls select, .pavlov-explorer-controls input')) {
    const first = field.value, last = field.tagName === 'SELECT' ? field.options.length - 1 : +field.max;
    const before = shown().map(f => f.dataset.keys);
    field.value = String(+first === 0 ? Math.min(1, last) : 0);
    if (field.tagName !== 'SELECT' && +first === 0) field.value = String(last);
    field.dispatchEvent(new Event(field.tagName === 'SELECT' ? 'change' : 'input', {bubbles: true}));
    const after = shown().map(f => f.dataset.keys);
    moves.push([field.closest('label').dataset.control, before, after]);
    field.value = first;
    field.dispatchEvent(new Event(field.tagName === 'SELECT' ? 'change' : 'input', {bubbles: true}));
  }
}
return moves;
"""


@pytest.mark.parametrize("page", CHAPTERS)
def test_every_explorer_moves_in_the_static_page(browser, page):
    from test_browser import notebook

    explorers = sum(c.cell_type == "code" and "plotting.explorer(" in c.source for c in notebook(page).cells)
    load(browser, page, DESKTOP)
    found = browser.execute_script("return document.querySelectorAll('article.bd-article .pavlov-explorer').length")
    assert found == explorers, f"{page}: {found} static explorers for {explorers} explorer cells"
    for control, before, after in browser.execute_script(MOVE_EXPLORERS):
        assert len(before) == len(after) == 1, f"{page}: {control}: frames shown {before} then {after}"
        assert before != after, f"{page}: moving {control} left the figure as it was"


# At phone width: how far each equation's or table's box (the box that scrolls it sideways, when one
# does) reaches past the column, and how far the page itself scrolls sideways.
PHONE_OVERFLOW = """
const article = document.querySelector('article.bd-article');
const style = getComputedStyle(article), box = article.getBoundingClientRect();
const left = box.left + parseFloat(style.paddingLeft), right = box.right - parseFloat(style.paddingRight);
const scrolls = e => ['auto', 'scroll'].includes(getComputedStyle(e).overflowX);
const wide = [];
for (const element of article.querySelectorAll(arguments[0])) {
  if (!element.getClientRects().length) continue;
  let shown = element;
  while (shown !== article && !scrolls(shown)) shown = shown.parentElement;
  const r = (shown === article ? element : shown).getBoundingClientRect();
  const past = Math.max(left - r.left, r.right - right);
  if (past > 1) wide.push([Math.round(past), element.textContent.replace(/\\s+/g, ' ').slice(0, 60)]);
}
return [wide, document.documentElement.scrollWidth - window.innerWidth];
"""


@pytest.mark.parametrize("page", PAGES)
def test_no_equation_or_table_is_wider_than_the_column_at_phone_width(browser, page):
    # on a phone a wide equation or table scrolls inside its own box: the page itself never does
    load(browser, page, PHONE)
    selector = ", ".join(KINDS[kind] for kind in ("display equation", "table"))
    wide, page_scroll = browser.execute_script(PHONE_OVERFLOW, selector)
    assert not wide, f"{page} at {PHONE} px, past the column by (px, text): {wide}"
    assert page_scroll <= 0, f"{page} at {PHONE} px scrolls sideways by {page_scroll} px"
