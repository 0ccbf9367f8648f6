"""The console's browser: one headless Debian chromium driven by Selenium through the system's
chromedriver (no driver download), and small helpers over the page's contract (API.md, Console:
data-job-id, data-state, <progress>, buttons named Pause/Resume/Cancel/Retry)."""

from __future__ import annotations

import http.client
import shutil
import socket

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


def start_browser():
    """A headless chromium at 1280×900 whose console messages can be read back."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.fail("selenium is not installed: run `make py-deps`", pytrace=False)
    if not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)):
        pytest.fail(f"{CHROMIUM} and {CHROMEDRIVER} are needed: apt-get install chromium chromium-driver", pytrace=False)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1280,900", "--no-first-run", "--disable-extensions",
                     "--disable-background-networking", "--disable-component-update", "--disable-sync"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))


def job_element(driver, job_id: str):
    """The page's element for the job, or None."""
    return element_with(driver, "data-job-id", job_id)


def watch_element(driver, watch_id: str):
    """The page's element for the watch, or None."""
    return element_with(driver, "data-watch-id", watch_id)


def element_with(driver, attribute: str, value: str):
    from selenium.webdriver.common.by import By
    found = driver.find_elements(By.CSS_SELECTOR, f'[{attribute}="{value}"]')
    return found[0] if found else None


def fresh(read):
    """`read()`, or None when the page replaced the element meanwhile (a job's element is redrawn
    on every state change): callers poll, so the next try reads the new one."""
    from selenium.common.exceptions import StaleElementReferenceException
    try:
        return read()
    except StaleElementReferenceException:
        return None


def job_state(driver, job_id: str) -> str | None:
    return fresh(lambda: (element := job_element(driver, job_id)) and element.get_attribute("data-state"))


def job_text(driver, job_id: str) -> str:
    return fresh(lambda: (element := job_element(driver, job_id)) and element.text) or ""


def button_in(element_of, action: str):
    """The button in `element_of()` whose accessible name starts with `action`, or None."""
    from selenium.webdriver.common.by import By

    def find():
        element = element_of()
        buttons = element.find_elements(By.TAG_NAME, "button") if element else []
        return next((b for b in buttons if b.accessible_name.startswith(action)), None)
    return fresh(find)


def click_button_in(element_of, action: str) -> None:
    """Clicks the `action` button in `element_of()` once it is there. The console redraws a
    job's or a watch's row when it changes, so a button found a moment ago may be gone by the
    click: then the button of the redrawn row is clicked, as a user would."""
    from e2e_support import wait_for

    def click() -> bool:
        button = button_in(element_of, action)
        return button is not None and fresh(lambda: button.click() or True) is True
    wait_for(click, message=f"a {action} button to click")


def click_job_button(driver, job_id: str, action: str) -> None:
    click_button_in(lambda: job_element(driver, job_id), action)


def click_watch_button(driver, watch_id: str, action: str) -> None:
    click_button_in(lambda: watch_element(driver, watch_id), action)


def raw_request(port: int, request: bytes) -> bytes:
    """Sends `request` as written (HTTP/1.0 without Host, two Host fields) and reads the whole answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def status_of(port: int, method: str, path: str, headers: dict[str, str],
              body: bytes | None = None) -> tuple[int, dict[str, str], bytes]:
    """A request's status, headers and body, ended after the head for a stream (GET /events).
    A `Host` in `headers` replaces the one http.client would send."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.putrequest(method, path, skip_host="Host" in headers, skip_accept_encoding=True)
        for name, value in headers.items():
            conn.putheader(name, value)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        response = conn.getresponse()
        streaming = (response.getheader("Content-Type") or "").startswith("text/event-stream")
        answer = b"" if streaming else response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, answer
    finally:
        conn.close()


def require_endpoint(port: int, method: str, path: str, what: str, headers: dict[str, str] | None = None) -> None:
    """Skips the test when this fetchd answers 404 for `method path`, as a build without that
    endpoint does. Any other answer lets the test run, so against a complete build nothing here
    skips."""
    status, _, _ = status_of(port, method, path, headers or {})
    if status == 404:
        pytest.skip(f"{what}: this fetchd answers 404 for {method} {path} (a build without it)")
