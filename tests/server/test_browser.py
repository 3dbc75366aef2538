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
from urllib.parse import quote

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
    driver.execute_script("return fetch('/api/overview')")  # let a late start page arrive: it must stay hidden
    WebDriverWait(driver, 30).until(lambda _: driver.execute_script("return document.readyState") == "complete")
    assert not driver.find_element(By.ID, "start").is_displayed()

    documents = driver.find_elements(By.CSS_SELECTOR, "#group-documents .citation")
    chats = driver.find_elements(By.CSS_SELECTOR, "#group-chat .citation")
    assert documents and chats, "both groups must be shown"
    assert driver.find_element(By.CSS_SELECTOR, "#group-documents h2").text.startswith("文档")
    assert driver.find_element(By.CSS_SELECTOR, "#group-chat h2").text.startswith("聊天讨论")
    for citation in documents + chats:
        head = citation.find_element(By.CSS_SELECTOR, ".citation-head")
        assert DATE.search(head.find_element(By.CSS_SELECTOR, ".date").text)
        # Title and date once per card: the date is not repeated under the head.
        assert len(DATE.findall(citation.text.split("查看完整对话")[0])) == len(DATE.findall(head.text))
        assert citation.get_attribute("title")  # the server's label, as given, on hover
    for chat in chats:
        assert chat.find_element(By.CSS_SELECTOR, ".label").text  # what the state means, in the page's language
    states = [chat.find_element(By.CSS_SELECTOR, ".badge").get_attribute("data-state") for chat in chats]
    assert "resolved" in states
    assert "0x80070005" in documents[0].text
    assert "?q=" in driver.current_url

    first = chats[0]
    first.find_element(By.CSS_SELECTOR, "button.expand").click()
    wait.until(lambda _: first.find_elements(By.CSS_SELECTOR, ".transcript .message.cited"))
    cited = first.find_elements(By.CSS_SELECTOR, ".transcript .message.cited")
    messages = first.find_elements(By.CSS_SELECTOR, ".transcript .message")
    around = first.find_elements(By.CSS_SELECTOR, ".transcript .message.context")
    excerpt_lines = first.find_elements(By.CSS_SELECTOR, ".chat-excerpt .line")
    # Only the quoted messages are marked, and the discussion comes with the messages around it.
    assert 0 < len(cited) <= len(excerpt_lines) < len(messages)
    assert around and all("引用" not in message.text for message in around)
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


def test_document_excerpts_render_markdown(server, driver):
    wait = WebDriverWait(driver, 60)
    driver.get(server.url + "/?q=" + quote("升级到3.2.0以后点图标没反应怎么办"))
    wait.until(seen.presence_of_element_located((By.CSS_SELECTOR, "#answer[data-status='answered']")))
    documents = driver.find_elements(By.CSS_SELECTOR, "#group-documents .citation .markdown")
    assert documents
    rendered = [node.tag_name for doc in documents for node in doc.find_elements(By.CSS_SELECTOR, "*")]
    assert {"ol", "li"} <= set(rendered) or {"h3", "h4", "h5"} & set(rendered)
    assert not any(line.startswith(("#", "1. ")) for doc in documents for line in doc.text.splitlines())


def test_start_page_shows_what_is_in_the_store(server, driver):
    wait = WebDriverWait(driver, 60)
    driver.get(server.url + "/")
    wait.until(lambda _: driver.find_elements(By.CSS_SELECTOR, "#examples .example"))
    conversations = driver.find_elements(By.CSS_SELECTOR, "#start-conversations li")
    assert len(conversations) == 2 and "云枢同步" in conversations[0].text and "条消息" in conversations[0].text
    assert len(driver.find_elements(By.CSS_SELECTOR, "#start-documents li")) == 3
    example = driver.find_element(By.CSS_SELECTOR, "#examples .example")
    question = example.text
    example.click()
    wait.until(seen.presence_of_element_located((By.CSS_SELECTOR, "#answer[data-status='answered']")))
    assert driver.find_element(By.ID, "q").get_attribute("value") == question
    assert not driver.find_element(By.ID, "start").is_displayed()


def test_search_mode(server, driver):
    wait = WebDriverWait(driver, 60)
    driver.get(server.url + "/?lang=en")
    driver.find_element(By.CSS_SELECTOR, "label:has(#mode-search)").click()
    assert driver.find_element(By.ID, "ask-button").text == "Search"
    driver.find_element(By.ID, "q").send_keys("0x80070005")
    driver.find_element(By.ID, "ask-button").click()
    wait.until(lambda _: driver.find_elements(By.CSS_SELECTOR, "#hits .hit"))
    hits = driver.find_elements(By.CSS_SELECTOR, "#hits .hit")
    assert any("0x80070005" in hit.text for hit in hits)
    chat = [hit for hit in hits if "chat" in hit.get_attribute("class")]
    assert chat and all(hit.find_element(By.CSS_SELECTOR, ".title").text.startswith("云枢同步") for hit in chat)
    assert "mode=search" in driver.current_url
    assert not driver.find_element(By.ID, "answer").is_displayed()


def test_english_and_no_answer(server, driver):
    wait = WebDriverWait(driver, 60)
    driver.get(server.url + "/?lang=en&q=" + "What%20is%20a%20good%20recipe%20for%20sourdough%20bread%3F")
    wait.until(seen.presence_of_element_located((By.CSS_SELECTOR, "#answer[data-status='no_answer']")))
    assert driver.find_element(By.ID, "ask-button").text == "Ask"
    refusal = driver.find_element(By.ID, "no-answer")
    assert refusal.is_displayed() and "No answer" in refusal.text
    assert not driver.find_element(By.ID, "groups").is_displayed()


def test_the_language_follows_the_browser(server):
    browser = make_driver("en-US")
    try:
        browser.get(server.url + "/")
        WebDriverWait(browser, 60).until(lambda _: browser.find_elements(By.CSS_SELECTOR, "#start-documents li"))
        assert browser.execute_script("return document.documentElement.lang") == "en"
        assert browser.find_element(By.ID, "ask-button").text == "Ask"
        assert "Documents" in browser.find_element(By.ID, "start-documents").text
    finally:
        browser.quit()


class NearestService(Service):
    """The answer shape with `reason` and `nearest` (what a no_answer carries when the server has them)."""

    def ask(self, question: str, k: int = 10, conversation: str | None = None) -> dict:
        answer = super().ask(question, k, conversation)
        if answer["status"] == "no_answer":
            found = self.search("0x80070005", 1, None, "document")["hits"][0]
            answer["reason"] = "Nothing in the knowledge base is about sourdough bread."
            answer["nearest"] = [
                {
                    "chunk_id": found["chunk_id"],
                    "source_type": "document",
                    "source_ref": found["source_ref"],
                    "title": found["title"],
                    "date": found["occurred_at"],
                    "started_at": None,
                    "label": "Not an answer: the closest document section, about something else",
                    "excerpt": "1. Run the installer as administrator",
                    "score": 0.1,
                    "relevance": 0.5,
                    "heading_path": found["heading_path"],
                    "evidence_ids": None,
                    "resolution_state": None,
                    "notes": [],
                }
            ]
        return answer


def test_no_answer_shows_its_reason_and_the_nearest_passages_as_not_answers(sample_db, embedder, driver):
    service = NearestService.open(str(sample_db), embedder=embedder)
    try:
        with LiveServer(create_app(service)) as live:
            wait = WebDriverWait(driver, 60)
            driver.get(live.url + "/?lang=en&q=" + quote("What is a good recipe for sourdough bread?"))
            wait.until(seen.presence_of_element_located((By.CSS_SELECTOR, "#answer[data-status='no_answer']")))
            assert "sourdough" in driver.find_element(By.ID, "no-answer-reason").text
            box = driver.find_element(By.ID, "nearest-box")
            assert box.is_displayed() and "not an answer" in box.text
            [nearest] = box.find_elements(By.CSS_SELECTOR, ".citation")
            assert "Not an answer" in nearest.find_element(By.CSS_SELECTOR, ".badge").text
            assert "Not an answer: the closest" in nearest.text
            assert not driver.find_element(By.ID, "groups").is_displayed()
    finally:
        service.close()


def test_the_interactive_api_docs_try_a_call(server, driver):
    wait = WebDriverWait(driver, 60)
    driver.get(server.url + "/docs")
    wait.until(lambda _: driver.find_elements(By.CSS_SELECTOR, ".operation"))
    stats = driver.find_element(By.CSS_SELECTOR, ".operation[data-path='/api/stats']")
    stats.find_element(By.CSS_SELECTOR, "button").click()
    wait.until(lambda _: "HTTP 200" in stats.find_element(By.CSS_SELECTOR, ".response").text)
    assert '"conversations": 2' in stats.find_element(By.CSS_SELECTOR, ".response").text
