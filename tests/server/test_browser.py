"""The web inspector end to end in a real headless browser (Debian's chromium + chromedriver via Selenium).

Skipped (with the reason) when chromium, chromedriver or a CJK font (fonts-noto-cjk) is missing, except
under ``make test``, which installs them with apt-get and sets HANRAG_REQUIRE_BROWSER=1: there a missing
piece fails the test rather than letting the suite pass without it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_util import BROWSER_MARKS, MISSING

from fixtures.server import TEST_CONFIG, ThreadServer, build_test_index
from hanrag.server import create_app

pytestmark = BROWSER_MARKS


def test_the_browser_test_can_run() -> None:
    """Under `make test` (HANRAG_REQUIRE_BROWSER=1) a missing browser or font is a failure, not a skip."""
    assert not MISSING, f"not installed: {', '.join(MISSING)}; run `make browser` (apt-get) first"


@pytest.fixture(scope="module")
def inspector_url(tmp_path_factory: pytest.TempPathFactory):
    # the default config: the learned ranker is on, so the inspector shows what it added to each hit
    config = TEST_CONFIG
    built = build_test_index(tmp_path_factory.mktemp("browser"), config=config)
    assert built["config"].search.ranker == "lambdamart"
    with ThreadServer(create_app(built["index_dir"], built["config"])) as srv:
        yield srv.url


def test_korean_query_highlights_and_explains(inspector_url: str, driver, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(driver, 60)
    driver.get(inspector_url + "/")
    assert "hanrag" in driver.title
    box = wait.until(ec.element_to_be_clickable((By.ID, "q")))
    box.send_keys("갑목 인월 용신")
    driver.find_element(By.ID, "go").click()

    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#results li.hit")))
    hits = driver.find_elements(By.CSS_SELECTOR, "#results li.hit")
    assert hits
    first = hits[0]
    title = first.find_element(By.CSS_SELECTOR, ".title")
    assert "갑목" in title.text
    # the text is drawn with real glyphs, not empty boxes: two different Hangul (and Han) characters drawn
    # in the title's font give different pixels, and a drawn glyph has width
    drawn = driver.execute_script(_GLYPHS_JS, title)
    assert drawn["width"] > 0, drawn
    assert drawn["hangul_differ"] and drawn["han_differ"], f"CJK text renders as empty boxes: {drawn}"

    # matched query terms and expansion terms are highlighted in different styles
    tokens = [m.text for m in first.find_elements(By.CSS_SELECTOR, ".text mark.hl-token")]
    expansions = [m.text for m in driver.find_elements(By.CSS_SELECTOR, "#results .text mark.hl-expansion")]
    assert "갑목" in tokens or "인월" in tokens, tokens
    assert any(t in ("甲木", "寅月", "用神") for t in expansions), expansions
    token_bg = first.find_element(By.CSS_SELECTOR, "mark.hl-token").value_of_css_property("background-color")
    exp_bg = driver.find_element(By.CSS_SELECTOR, "#results mark.hl-expansion").value_of_css_property(
        "background-color"
    )
    assert token_bg != exp_bg

    # the explanation: per-stage scores and the rule that chose the weights
    rule = first.find_element(By.CSS_SELECTOR, ".explanation .rule-name").text
    assert rule
    table = first.find_element(By.CSS_SELECTOR, "table.explain").text
    for stage in ("BM25", "dense", "fused", "final"):
        assert stage in table
    plan = driver.find_element(By.ID, "plan")
    assert plan.is_displayed() and rule in plan.text
    # the cross-lingual stage's centring of the other languages (the test corpus holds Hanja and English pages)
    centring = plan.find_element(By.CSS_SELECTOR, ".centring").text
    assert centring.startswith("centring") and "ko" not in centring.split()[1:] and "+" in centring, centring
    # and each hit of another language says what the centring added to its cosine
    tables = [t.text for t in driver.find_elements(By.CSS_SELECTOR, "#results table.explain")]
    assert any(" centring)" in t for t in tables), tables
    # the learned ranker: the plan names it, and each hit says what it added to the fused score, feature by feature
    assert "bundled:lambdamart" in plan.find_element(By.CSS_SELECTOR, ".ranker").text
    learned = first.find_element(By.CSS_SELECTOR, "table.explain td.learned").text
    assert learned.split(" = ")[0].lstrip("+-").replace(".", "").isdigit() and "base" in learned, learned
    # source link and badges
    link = first.find_element(By.CSS_SELECTOR, ".meta a.source")
    assert link.get_attribute("href").startswith("https://example.org/")
    badges = first.find_element(By.CSS_SELECTOR, ".badges").text
    assert "tier 0" in badges and "human" in badges and "ko" in badges

    # a result expands to its neighbouring chunks
    first.find_element(By.CSS_SELECTOR, "button.expand").click()
    wait.until(lambda d: first.find_elements(By.CSS_SELECTOR, ".neighbours .neighbour"))
    neighbours = first.find_elements(By.CSS_SELECTOR, ".neighbours .neighbour")
    assert len(neighbours) >= 2
    assert len(first.find_elements(By.CSS_SELECTOR, ".neighbours .neighbour.current")) == 1

    shot = tmp_path / "inspector.png"
    assert driver.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000

    # switching the mode re-runs the search; bm25 explanations carry no dense weight
    driver.find_element(By.CSS_SELECTOR, "input[name=mode][value=bm25]").click()
    wait.until(lambda d: "bm25" in d.find_element(By.ID, "status").text)
    assert driver.find_elements(By.CSS_SELECTOR, "#results li.hit")

    severe = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    assert severe == [], severe


# canvas pixels of a character in the element's font; identical images for 갑/을 (or 甲/乙) mean the same
# fallback box for both
_GLYPHS_JS = """
const el = arguments[0];
const font = getComputedStyle(el).font;
function pixels(ch) {
  const c = document.createElement('canvas'); c.width = 64; c.height = 64;
  const x = c.getContext('2d'); x.font = font.replace(/\\d+(\\.\\d+)?px/, '40px'); x.fillStyle = '#000';
  x.textBaseline = 'top'; x.fillText(ch, 4, 4);
  return Array.from(x.getImageData(0, 0, 64, 64).data).join(',');
}
const ctx = document.createElement('canvas').getContext('2d'); ctx.font = font;
return {font: font, width: ctx.measureText(el.textContent).width,
        hangul_differ: pixels('갑') !== pixels('을'), han_differ: pixels('甲') !== pixels('乙')};
"""


def test_errors_are_shown_not_thrown(inspector_url: str, driver) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(inspector_url + "/")
    driver.find_element(By.ID, "q").send_keys("가" * 1200)  # over server.max_query_chars
    driver.find_element(By.ID, "go").click()
    WebDriverWait(driver, 30).until(lambda d: "error" in d.find_element(By.ID, "status").get_attribute("class"))
    assert "422" in driver.find_element(By.ID, "status").text
    assert driver.find_elements(By.CSS_SELECTOR, "#results li.hit") == []
