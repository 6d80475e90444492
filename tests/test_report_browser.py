"""report.html opened in a real headless browser (Debian's chromium + chromedriver, via selenium).

It must load from a file with no network, log no console errors, and lay out every chart at a
non-zero size. A full-page screenshot is saved to test-artifacts/report.png for review.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from compiler.catalog import load_catalog
from compiler.report import render_report
from plan_fixtures import hybrid_plan

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(),
                                reason="/usr/bin/chromium is absent (apt-get install chromium chromium-driver)")


@pytest.fixture()
def browser(tmp_path):
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    driver_path = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    if not Path(driver_path).exists():
        pytest.skip("chromedriver is absent (apt-get install chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1280,900",
                 f"--user-data-dir={tmp_path / 'profile'}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # An explicit driver path: selenium-manager never tries to download one.
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=driver_path))
    try:
        yield driver
    finally:
        driver.quit()


@pytest.mark.slow
def test_report_opens_without_errors_and_charts_have_size(browser, tmp_path):
    page = tmp_path / "report.html"
    page.write_text(render_report(hybrid_plan(), load_catalog())["report.html"], encoding="utf-8")
    browser.get(page.as_uri())

    assert browser.title == "Design review: acme-ml-platform"
    sizes = browser.execute_script(
        "return Array.from(document.querySelectorAll('svg.chart')).map(function (s) {"
        "  var r = s.getBoundingClientRect();"
        "  return [s.getAttribute('aria-label'), r.width, r.height, s.querySelectorAll('text').length];"
        "});")
    assert len(sizes) == 3, sizes
    for label, width, height, texts in sizes:
        assert width > 100 and height > 100, (label, width, height)
        assert texts > 0, f"{label}: no axis text was rendered"
    # The page's own network use: a self-contained report fetches nothing.
    fetched = browser.execute_script(
        "return performance.getEntriesByType('resource').map(function (e) { return e.name; });")
    assert fetched == []

    errors = [e for e in browser.get_log("browser") if e.get("level") in ("SEVERE", "ERROR")]
    assert errors == []

    ARTIFACTS.mkdir(exist_ok=True)
    height = browser.execute_script("return document.documentElement.scrollHeight;")
    browser.set_window_size(1280, min(int(height) + 40, 16000))
    shot = ARTIFACTS / "report.png"
    browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
