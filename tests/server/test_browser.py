"""The web page in headless Debian chromium: ask, read the grouped answer, open a cited thread.

Skips only when /usr/bin/chromium is absent and THREADKEEP_REQUIRE_BROWSER is unset
(`bash scripts/install-browser.sh` installs chromium, its driver and a CJK font).
Saves a screenshot into pytest's tmp dir; with THREADKEEP_UPDATE_SCREENSHOT=1 also to docs/screenshot.png.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from threadkeep.server.http import create_app
from threadkeep.server.service import Service

from .conftest import ASK_QUESTION, LiveServer

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
REQUIRED = bool(os.environ.get("THREADKEEP_REQUIRE_BROWSER"))
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "screenshot.png"
DATE = re.compile(r"\d{4}-\d{2}-\d{2}")

if not CHROMIUM.exists() and not REQUIRED:
    pytest.skip(
        "/usr/bin/chromium is not installed (run scripts/install-browser.sh; "
        "set THREADKEEP_REQUIRE_BROWSER=1 to make this a failure)",
        allow_module_level=True,
    )

if REQUIRED:
    from selenium import webdriver  # a missing driver library must fail, not skip
else:
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")

from selenium.webdriver.chrome.service import Service as DriverService  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as seen  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


@pytest.fixture(scope="module")
def server(sample_db, embedder) -> Iterator[LiveServer]:
    service = Service.open(str(sample_db), embedder=embedder)
    try:
        with LiveServer(create_app(service)) as live:
            yield live
    finally:
        service.close()


def make_driver(language: str):
    assert CHROMIUM.exists(), "THREADKEEP_REQUIRE_BROWSER is set but /usr/bin/chromium is missing"
    assert CHROMEDRIVER.exists(), "/usr/bin/chromedriver is missing (apt-get install chromium-driver)"
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    options.add_argument("--window-size=1280,1000")
    options.add_argument(f"--lang={language}")
    options.add_experimental_option("prefs", {"intl.accept_languages": language})
    # The Debian driver is given explicitly, so Selenium Manager never tries to download one.
    return webdriver.Chrome(options=options, service=DriverService(executable_path=str(CHROMEDRIVER)))


@pytest.fixture(scope="module")
def driver() -> Iterator:
    browser = make_driver("zh-CN")
    try:
        yield browser
    finally:
        browser.quit()


def test_ask_and_open_a_cited_thread(server, driver, tmp_path):
    wait = WebDriverWait(driver, 60)
    driver.get(server.url + "/")
    assert driver.execute_script("return document.documentElement.lang") == "zh-CN"  # follows the browser
    assert driver.find_element(By.ID, "ask-button").text == "提问"

    box = driver.find_element(By.ID, "q")
    box.send_keys(ASK_QUESTION)
    driver.find_element(By.ID, "ask-button").click()
    wait.until(seen.presence_of_element_located((By.CSS_SELECTOR, "#answer[data-status='answered']")))

    documents = driver.find_elements(By.CSS_SELECTOR, "#group-documents .citation")
    chats = driver.find_elements(By.CSS_SELECTOR, "#group-chat .citation")
    assert documents and chats, "both groups must be shown"
    assert driver.find_element(By.CSS_SELECTOR, "#group-documents h2").text.startswith("文档")
    assert driver.find_element(By.CSS_SELECTOR, "#group-chat h2").text.startswith("聊天讨论")
    for citation in documents + chats:
        assert DATE.search(citation.find_element(By.CSS_SELECTOR, ".date").text)
        assert citation.find_element(By.CSS_SELECTOR, ".label").text  # the server's label, as given
    states = [chat.find_element(By.CSS_SELECTOR, ".badge").get_attribute("data-state") for chat in chats]
    assert "resolved" in states
    assert "0x80070005" in documents[0].text
    assert "?q=" in driver.current_url

    first = chats[0]
    first.find_element(By.CSS_SELECTOR, "button.expand").click()
    wait.until(lambda _: first.find_elements(By.CSS_SELECTOR, ".transcript .message.cited"))
    cited = first.find_elements(By.CSS_SELECTOR, ".transcript .message.cited")
    messages = first.find_elements(By.CSS_SELECTOR, ".transcript .message")
    assert 0 < len(cited) <= len(messages)
    assert first.find_element(By.CSS_SELECTOR, "button.expand").get_attribute("aria-expanded") == "true"
    assert "引用" in cited[0].text

    height = driver.execute_script("return document.documentElement.scrollHeight")
    metrics = {"width": 1280, "height": min(height, 3000), "deviceScaleFactor": 1, "mobile": False}
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)  # the whole page in one shot
    shot = tmp_path / "answer.png"
    assert driver.save_screenshot(str(shot))
    if os.environ.get("THREADKEEP_UPDATE_SCREENSHOT"):  # refresh the README's picture on purpose only
        SCREENSHOT.parent.mkdir(exist_ok=True)
        shutil.copyfile(shot, SCREENSHOT)
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    assert shot.stat().st_size > 20_000


def test_english_and_no_answer(server, driver):
    wait = WebDriverWait(driver, 60)
    driver.get(server.url + "/?lang=en&q=" + "What%20is%20a%20good%20recipe%20for%20sourdough%20bread%3F")
    wait.until(seen.presence_of_element_located((By.CSS_SELECTOR, "#answer[data-status='no_answer']")))
    assert driver.find_element(By.ID, "ask-button").text == "Ask"
    refusal = driver.find_element(By.ID, "no-answer")
    assert refusal.is_displayed() and "No answer" in refusal.text
    assert not driver.find_element(By.ID, "groups").is_displayed()
