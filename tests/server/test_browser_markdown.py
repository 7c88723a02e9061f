"""The inspector renders a chunk's Markdown (bold, lists, code, links, tables) and never its HTML.

A real headless chromium, skipped like tests/server/test_browser.py when chromium, chromedriver or a CJK
font is missing (and failing instead under ``make test``, which sets HANRAG_REQUIRE_BROWSER=1).
"""

from __future__ import annotations

from urllib.parse import quote

import pytest
from browser_util import BROWSER_MARKS

from fixtures.server import ThreadServer, build_test_index
from hanrag.server import create_app

pytestmark = BROWSER_MARKS

GEAR = """---
title: 장비 점검
source: https://example.org/gear
---
# 장비 점검

## 내 장비

**내 장비** 목록은 _매주_ 점검한다. <img src=x onerror=alert(1)> <img src=y onerror="window.__xss=1">
<script>window.__xss = 2</script>

- 노트북: `ThinkPad X1`
- 모니터 [설명서](https://example.org/monitor) [나쁜 링크](javascript:alert(1))

| 장비 | 수량 |
|------|-----:|
| 키보드 | 2 |

```sh
echo "<b>not bold</b>"
```
"""

CONFIG = """
[chunking]
chunk_size = 1000
overlap = 0
"""


@pytest.fixture(scope="module")
def inspector_url(tmp_path_factory: pytest.TempPathFactory):
    built = build_test_index(tmp_path_factory.mktemp("browser-md"), {"장비.md": GEAR}, CONFIG)
    with ThreadServer(create_app(built["index_dir"], built["config"])) as srv:
        yield srv.url


def test_markdown_renders_and_html_stays_text(inspector_url: str, driver) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(f"{inspector_url}/?mode=bm25&q={quote('내 장비')}")
    WebDriverWait(driver, 60).until(ec.presence_of_element_located((By.CSS_SELECTOR, "#results li.hit")))
    hit = driver.find_element(By.CSS_SELECTOR, "#results li.hit")
    text = hit.find_element(By.CSS_SELECTOR, ".text")

    # Markdown becomes elements; the query's highlight still lands inside the bold text
    assert "내 장비" in [s.text for s in text.find_elements(By.CSS_SELECTOR, "strong")]
    assert "**" not in text.text
    assert [e.text for e in text.find_elements(By.CSS_SELECTOR, "em")] == ["매주"]
    assert text.find_elements(By.CSS_SELECTOR, "strong mark.hl-token")
    assert [h.text for h in text.find_elements(By.CSS_SELECTOR, "h2")] == ["내 장비"]
    items = text.find_elements(By.CSS_SELECTOR, "ul > li")
    assert len(items) == 2 and items[0].find_element(By.CSS_SELECTOR, "code").text == "ThinkPad X1"
    links = text.find_elements(By.CSS_SELECTOR, "a")
    assert [a.get_attribute("href") for a in links] == ["https://example.org/monitor"]
    assert "[나쁜 링크](javascript:alert(1))" in text.text  # not a link: shown as written
    cells = [c.text for c in text.find_elements(By.CSS_SELECTOR, "table td")]
    assert cells == ["키보드", "2"]
    assert [c.text for c in text.find_elements(By.CSS_SELECTOR, "table th")] == ["장비", "수량"]
    assert text.find_element(By.CSS_SELECTOR, "pre code").text == 'echo "<b>not bold</b>"'

    # HTML in the chunk is text: no img, script or b element anywhere in the result, nothing ran
    assert text.find_elements(By.CSS_SELECTOR, "img, script, b") == []
    assert driver.find_elements(By.CSS_SELECTOR, "#results img, #results script") == []
    assert "<img src=x onerror=alert(1)>" in text.text
    assert "<script>window.__xss = 2</script>" in text.text
    assert driver.execute_script("return window.__xss === undefined")

    # the neighbouring-chunks view renders the same way
    hit.find_element(By.CSS_SELECTOR, "button.expand").click()
    WebDriverWait(driver, 30).until(lambda d: hit.find_elements(By.CSS_SELECTOR, ".neighbours .neighbour"))
    current = hit.find_element(By.CSS_SELECTOR, ".neighbours .neighbour.current .ntext")
    assert "내 장비" in [s.text for s in current.find_elements(By.CSS_SELECTOR, "strong")]
    assert current.find_elements(By.CSS_SELECTOR, "img") == []

    severe = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    assert severe == [], severe
