"""The operator console (API.md, Console) in a real headless chromium: the page
served from the binary, live progress, the job actions, the add form, markup in job data shown
as text, the DNS-rebinding Host check, tokens, the keyboard, and the README's screenshot (docs/console.png).

Tests that need GET /events or POST /downloads/{id}/retry skip only when the fetchd under test
answers 404 for them (console_support.require_endpoint), as a build without them would."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from console_support import (click_job_button, click_watch_button, fresh, job_element, job_state, job_text, raw_request,
                             require_endpoint, start_browser, status_of, watch_element)
from e2e_support import Fault, FetchdFactory, rfc3339, wait_for
from test_uploads import DavServer

ROOT = Path(__file__).resolve().parents[2]
ALLOWED = "fetchd.test"
RATE_TEXT = re.compile(r"\d+(\.\d)? (B|KiB|MiB|GiB)/s")


@pytest.fixture(scope="module")
def console(fetchd_bin, tmp_path_factory):
    """One fetchd without tokens (so the Host check is on) for the module, with FETCHD_ALLOWED_HOSTS."""
    factory = FetchdFactory(fetchd_bin, tmp_path_factory.mktemp("console"))
    fd = factory(env={"FETCHD_ALLOWED_HOSTS": ALLOWED})
    yield fd
    try:
        assert fd.running, f"fetchd died during the module:\n{fd.log_text()}"
    finally:
        factory.close()


@pytest.fixture(scope="module")
def browser():
    driver = start_browser()
    yield driver
    driver.quit()


def open_console(driver, fd):
    """Loads the page afresh and waits until it shows the console (or asks for a token)."""
    driver.set_window_size(1280, 900)
    driver.get(f"{fd.base_url}/ui/")
    wait_for(lambda: driver.execute_script(
        "return !document.getElementById('console').hidden || !document.getElementById('token-form').hidden"),
        message="the console to show")
    driver.get_log("browser")  # what the load logged is checked by test_page_loads_clean


def wait_page_state(driver, job_id, state, timeout=20.0):
    return wait_for(lambda: job_state(driver, job_id) == state, timeout=timeout,
                    message=lambda: f"job {job_id} shown {state}; shown {job_state(driver, job_id)}")


def events_missing_404(fd) -> bool:
    return status_of(fd.port, "GET", "/events", {})[0] == 404


def test_generated_file_matches_the_sources():
    result = subprocess.run([sys.executable, str(ROOT / "scripts/console/generate.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_static_files_csp_etag_gzip(console):
    sizes = {}
    for name in ("", "console.js", "console.css", "icon.svg"):
        status, headers, body = status_of(console.port, "GET", f"/ui/{name}", {})
        assert status == 200, (name, status, body[:200])
        assert headers["content-security-policy"] == "default-src 'self'"
        etag = headers["etag"]
        assert etag.startswith('"') and etag.endswith('"'), etag
        again, again_headers, again_body = status_of(console.port, "GET", f"/ui/{name}", {"If-None-Match": etag})
        assert (again, again_body, again_headers["etag"]) == (304, b"", etag)
        sizes[name or "index.html"] = len(body)
    assert sizes["index.html"] and b"<h1>fetchd</h1>" in status_of(console.port, "GET", "/ui/", {})[2]
    status, headers, body = status_of(console.port, "GET", "/ui/console.js", {"Accept-Encoding": "gzip"})
    assert status == 200 and headers.get("content-encoding") == "gzip", headers
    assert gzip.decompress(body) == status_of(console.port, "GET", "/ui/console.js", {})[2]
    assert status_of(console.port, "GET", "/ui/nothing.js", {})[0] == 404
    assert status_of(console.port, "GET", "/ui", {})[1].get("location") == "/ui/"
    total = sum(sizes.values())
    print(f"\nconsole files: {sizes}, {total} bytes in all, console.js gzipped {len(body)} bytes")
    assert total < 64 * 1024


def test_page_loads_clean(browser, console):
    console.api.submit({"url": "http://127.0.0.1:9/none", "destination": "clean/a.bin",
                        "earliestBeginDate": rfc3339(4_000_000_000)})
    browser.get_log("browser")
    browser.get(f"{console.base_url}/ui/")
    wait_for(lambda: browser.find_elements("css selector", "[data-job-id]"), message="jobs listed")
    assert "fetchd" in browser.title and browser.find_element("tag name", "h1").text == "fetchd"
    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    if events_missing_404(console):
        # A fetchd without GET /events makes the browser log its 404; nothing else may be logged.
        errors = [entry for entry in errors if not ("/events" in entry["message"] and "404" in entry["message"])]
    assert errors == []
    resources = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert resources and all(name.startswith(console.base_url + "/") for name in resources), resources


def test_throttled_job_progress_grows_live_and_completes(browser, console, origin):
    require_endpoint(console.port, "GET", "/events", "live progress needs GET /events")
    body = os.urandom(384 * 1024)
    url = origin.add("/slow.bin", body, rate=64 * 1024)
    open_console(browser, console)
    job = console.api.submit({"url": url, "destination": "live/slow.bin"})
    wait_page_state(browser, job["id"], "running")
    shown = lambda: fresh(lambda: float(job_element(browser, job["id"]).find_element("tag name", "progress")
                                        .get_attribute("value") or 0)) or 0
    first = wait_for(lambda: shown() or None, message="progress shown")
    requests_before = browser.execute_script("return performance.getEntriesByType('resource').length")
    wait_for(lambda: shown() > first, message="the progress bar to grow")
    assert RATE_TEXT.search(job_text(browser, job["id"])), job_text(browser, job["id"])
    # Progress events cause no requests.
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == requests_before
    wait_page_state(browser, job["id"], "completed")
    assert console.api.job(job["id"])["state"] == "completed"
    bars = job_element(browser, job["id"]).find_elements("tag name", "progress")
    assert not bars or bars[0].get_attribute("value") == bars[0].get_attribute("max")
    assert console.dest("live/slow.bin").read_bytes() == body


def test_retry_completes_a_failed_job(browser, console, origin):
    url = origin.add("/flaky.bin", b"x" * 4096, faults=[Fault(status=404)])
    job = console.api.submit({"url": url, "destination": "retry/flaky.bin"})
    console.api.wait_state(job["id"], "failed")
    require_endpoint(console.port, "GET", f"/downloads/{job['id']}/retry", "Retry needs POST /downloads/{id}/retry")
    open_console(browser, console)
    assert "http_status" in job_text(browser, job["id"])
    click_job_button(browser, job["id"], "Retry")
    # The click's POST may still be on its way: the job reads failed until the retry is committed.
    wait_for(lambda: console.api.job(job["id"])["attempts"] > 1, message="the retry's attempt")
    console.api.wait_state(job["id"], "completed")
    wait_page_state(browser, job["id"], "completed")
    assert console.dest("retry/flaky.bin").read_bytes() == b"x" * 4096


def test_pause_resume_cancel_change_the_job(browser, console, origin):
    url = origin.add("/steer.bin", os.urandom(2 << 20), rate=32 * 1024)
    job = console.api.submit({"url": url, "destination": "steer/steer.bin"})
    console.api.wait_state(job["id"], "running")
    open_console(browser, console)
    wait_page_state(browser, job["id"], "running")
    click_job_button(browser, job["id"], "Pause")
    console.api.wait_state(job["id"], "paused")
    wait_page_state(browser, job["id"], "paused")
    click_job_button(browser, job["id"], "Resume")
    console.api.wait_state(job["id"], {"queued", "running"})
    wait_for(lambda: job_state(browser, job["id"]) in ("queued", "running"), message="shown resumed")
    click_job_button(browser, job["id"], "Cancel")
    console.api.wait_state(job["id"], "cancelled")
    wait_page_state(browser, job["id"], "cancelled")


def test_the_form_adds_a_job(browser, console, origin):
    url = origin.add("/form.bin", b"form" * 1000)
    open_console(browser, console)
    browser.find_element("name", "url").send_keys(url)
    destination = browser.find_element("name", "destination")
    destination.send_keys("form/added.bin")
    destination.submit()
    added = wait_for(lambda: [j for j in console.api.list_all() if j["destination"] == "form/added.bin"],
                     message="the job the form added")[0]
    assert added["url"] == url
    console.api.wait_state(added["id"], "completed")
    wait_for(lambda: job_element(browser, added["id"]), message="the added job shown")


def watch_shown(driver, watch_id: str) -> dict:
    """What the page shows of the watch: its state, its text, and the times it names."""
    def read():
        element = watch_element(driver, watch_id)
        if element is None:
            return None
        times = [t.get_attribute("datetime") for t in element.find_elements("tag name", "time")]
        return {"state": element.get_attribute("data-state"), "text": element.text, "times": times}
    return fresh(read) or {"state": None, "text": "", "times": []}


def wait_watch_shown(driver, watch_id: str, what: str, predicate) -> dict:
    return wait_for(lambda: (shown := watch_shown(driver, watch_id)) and predicate(shown) and shown,
                    message=lambda: f"the watch shown {what}; shown {watch_shown(driver, watch_id)}")


def test_watches_show_their_last_check_and_next_and_pause_resume_check_now(browser, console, origin):
    url = origin.add("/watched.bin", b"watched\n" * 512)
    response = console.api.post("/watches", {"url": url, "destination": "watched/feed.bin", "interval": "1h"})
    assert response.status == 201, response.body
    watch_id = response.json()["id"]
    first = wait_for(lambda: (w := console.api.get(f"/watches/{watch_id}").json())["checks"] >= 1 and w,
                     message="the watch's first check")
    open_console(browser, console)
    shown = wait_watch_shown(browser, watch_id, "with its first check", lambda s: "last check changed" in s["text"])
    assert shown["state"] == "active" and url in shown["text"] and "every 1h" in shown["text"].lower()
    assert shown["times"] == [first["lastCheckedAt"], first["nextCheckAt"]]
    assert "1 check, 1 changed the file" in shown["text"]

    # Check now: the origin sends the same bytes again, and the page follows the check's events.
    click_watch_button(browser, watch_id, "Check now")
    second = wait_for(lambda: (w := console.api.get(f"/watches/{watch_id}").json())["checks"] >= 2 and w,
                      message="the check the button asked for")
    assert second["lastResult"] == "unchanged"
    shown = wait_watch_shown(browser, watch_id, "with its second check", lambda s: "last check unchanged" in s["text"])
    assert "2 checks, 1 changed the file" in shown["text"]
    assert len(origin.requests_for("/watched.bin")) == 2

    click_watch_button(browser, watch_id, "Pause")
    wait_for(lambda: console.api.get(f"/watches/{watch_id}").json()["state"] == "paused", message="the watch paused")
    shown = wait_watch_shown(browser, watch_id, "paused", lambda s: s["state"] == "paused")
    assert "next check" not in shown["text"]
    click_watch_button(browser, watch_id, "Resume")
    resumed = wait_for(lambda: (w := console.api.get(f"/watches/{watch_id}").json())["state"] == "active" and w,
                       message="the watch resumed")
    shown = wait_watch_shown(browser, watch_id, "active again", lambda s: s["state"] == "active")
    assert shown["times"][-1] == resumed["nextCheckAt"]
    assert console.dest("watched/feed.bin").read_bytes() == b"watched\n" * 512


MARKUP = '<img src=x onerror="document.title=\'pwned\'">&amp;<script>document.title="pwned"</script>'


def assert_literal(browser, job_id, text):
    wait_for(lambda: job_element(browser, job_id), message="the job shown")
    assert text in job_text(browser, job_id)
    assert browser.find_elements("css selector", "[data-job-id] img, [data-job-id] script") == []
    assert browser.find_elements("css selector", "body img") == []
    assert len(browser.find_elements("tag name", "script")) == 1  # console.js only
    assert browser.title == "fetchd console"
    alerts = browser.execute_script("return 1")  # a pending alert() would make this raise
    assert alerts == 1


def test_markup_in_destination_is_text(browser, console):
    destination = "markup/" + MARKUP.replace("/", "") + ".bin"
    job = console.api.submit({"url": "http://127.0.0.1:9/x", "destination": destination,
                              "earliestBeginDate": rfc3339(4_000_000_000)})
    open_console(browser, console)
    assert_literal(browser, job["id"], destination)
    assert console.api.job(job["id"])["destination"] == destination


def test_markup_in_metadata_is_text(browser, console):
    response = console.api.post("/downloads", {"url": "http://127.0.0.1:9/x", "destination": "markup/meta.bin",
                                               "earliestBeginDate": rfc3339(4_000_000_000), "metadata": {"note": MARKUP}})
    if response.status == 400 and any(e.get("field") == "metadata" for e in response.json().get("errors", [])):
        pytest.skip("this fetchd does not take metadata: it answers 400 for it")
    assert response.status == 201, response
    open_console(browser, console)
    assert_literal(browser, response.json()["id"], MARKUP)


def test_foreign_host_gets_421_and_changes_nothing(console):
    before = len(console.api.list_all())
    body = json.dumps({"url": "http://127.0.0.1:9/x", "destination": "rebound/x.bin"}).encode()
    for host in ("evil.example", f"evil.example:{console.port}", "localhost.evil.example", "127.0.0.1.evil.example"):
        for method, path in (("GET", "/downloads"), ("GET", "/ui/"), ("POST", "/downloads")):
            status, headers, answer = status_of(console.port, method, path, {"Host": host, "Content-Type": "application/json"},
                                                body if method == "POST" else None)
            assert status == 421, (host, method, path, status, answer)
            assert headers["content-type"] == "application/problem+json" and json.loads(answer)["status"] == 421
    assert len(console.api.list_all()) == before
    for host in ("localhost", f"localhost:{console.port}", "127.0.0.1", f"[::1]:{console.port}", ALLOWED,
                 f"{ALLOWED.upper()}:{console.port}"):
        assert status_of(console.port, "GET", "/downloads", {"Host": host})[0] == 200, host
    assert raw_request(console.port, b"GET /downloads HTTP/1.0\r\n\r\n").startswith(b"HTTP/1.1 200")
    assert raw_request(console.port, b"GET /downloads HTTP/1.1\r\nConnection: close\r\n\r\n").startswith(b"HTTP/1.1 400")
    assert raw_request(console.port, b"GET /downloads HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\n"
                                     b"Connection: close\r\n\r\n").startswith(b"HTTP/1.1 400")


def test_with_tokens_any_host_and_the_page_asks_for_one(browser, fetchd):
    fd = fetchd(env={"FETCHD_API_TOKENS": "console-token"})
    fd.api.token = "console-token"
    job = fd.api.submit({"url": "http://127.0.0.1:9/x", "destination": "tokens/a.bin",
                         "earliestBeginDate": rfc3339(4_000_000_000)})
    assert status_of(fd.port, "GET", "/downloads", {"Host": "evil.example"})[0] == 401
    assert status_of(fd.port, "GET", "/downloads", {"Host": "evil.example", "Authorization": "Bearer console-token"})[0] == 200
    for name in ("", "console.js", "console.css"):
        assert status_of(fd.port, "GET", f"/ui/{name}", {})[0] == 200
    open_console(browser, fd)
    field = wait_for(lambda: [i for i in browser.find_elements("tag name", "input")
                              if i.is_displayed() and "token" in i.accessible_name.lower()], message="the token prompt")[0]
    assert browser.find_elements("css selector", "[data-job-id]") == []
    field.send_keys("wrong-token\n")
    wait_for(lambda: "refused" in browser.find_element("id", "token-error").text, message="the refusal shown")
    assert field.is_displayed() and browser.find_elements("css selector", "[data-job-id]") == []
    field.clear()
    field.send_keys("console-token\n")
    wait_for(lambda: job_element(browser, job["id"]), message="jobs after the token")
    assert not field.is_displayed()
    assert "console-token" not in browser.current_url
    assert browser.execute_script("return sessionStorage.getItem('fetchd.token')") == "console-token"


def test_tab_reaches_the_form_and_the_job_buttons(browser, console):
    job = console.api.submit({"url": "http://127.0.0.1:9/x", "destination": "keys/a.bin",
                              "earliestBeginDate": rfc3339(4_000_000_000)})
    open_console(browser, console)
    wait_for(lambda: job_element(browser, job["id"]), message="the job shown")
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys
    reached = []
    for _ in range(80):
        ActionChains(browser).send_keys(Keys.TAB).perform()
        active = browser.switch_to.active_element
        reached.append((active.tag_name, active.get_attribute("name"), active.accessible_name,
                        browser.execute_script("const j = arguments[0].closest('[data-job-id]'); return j && j.dataset.jobId", active)))
        if reached[-1][3] == job["id"]:
            break
    names = [name for _, name, _, _ in reached]
    assert "url" in names and "destination" in names, reached
    assert any(tag == "button" and label.startswith("Add") for tag, _, label, _ in reached), reached
    assert any(tag == "button" and label.startswith(("Pause", "Cancel")) and owner == job["id"]
               for tag, _, label, owner in reached), reached


def test_screenshot_with_running_queued_and_failed_jobs(browser, fetchd, origin, tmp_path):
    """The README's picture (docs/console.png, written when FETCHD_CONSOLE_SCREENSHOT names it:
    `make console-screenshot`), and the page at phone width without sideways scrolling."""
    fd = fetchd()
    done = fd.api.submit({"url": origin.add("/notes.pdf", b"%PDF" * 30000), "destination": "docs/release-notes.pdf"})
    fd.api.wait_state(done["id"], "completed")
    failed = fd.api.submit({"url": origin.add("/gone.iso", b"", status=410), "destination": "isos/old-release.iso"})
    fd.api.wait_state(failed["id"], "failed")
    running = fd.api.submit({"url": origin.add("/debian.iso", os.urandom(8 << 20), rate=96 * 1024),
                             "destination": "isos/debian-13.iso", "session": "nightly"})
    queued = fd.api.submit({"url": origin.url("/backup.tar.zst"), "destination": "backups/backup.tar.zst",
                            "session": "nightly", "earliestBeginDate": rfc3339(4_000_000_000)})
    fd.api.wait_state(running["id"], "running")
    open_console(browser, fd)
    for job, state in ((failed, "failed"), (running, "running"), (queued, "queued"), (done, "completed")):
        wait_page_state(browser, job["id"], state)
    if not events_missing_404(fd):
        wait_for(lambda: " 0 B/s" not in job_text(browser, running["id"]), message="a measured rate")
    assert RATE_TEXT.search(job_text(browser, running["id"]))
    path = Path(os.environ.get("FETCHD_CONSOLE_SCREENSHOT") or tmp_path / "console.png")
    assert browser.save_screenshot(str(path)) and path.stat().st_size > 10_000
    browser.set_window_size(390, 844)
    assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
    browser.set_window_size(1280, 900)


def test_a_job_stored_in_a_bucket_shows_its_key_and_etag(browser, fetchd, origin, s3):
    fd = fetchd(env={**s3.env(), "FETCHD_ALLOW_PRIVATE_NETWORKS": "true"})
    url = origin.add("/stored.bin", os.urandom(100_000))
    open_console(browser, fd)
    job = fd.api.submit({"url": url, "destination": s3.url("shown/stored.bin")})
    wait_page_state(browser, job["id"], "completed")

    etag = s3.head_object("shown/stored.bin")["ETag"]
    assert f"stored as shown/stored.bin · ETag {etag}" in job_text(browser, job["id"])


def test_an_upload_shows_beside_downloads_with_its_progress_and_controls(browser, console, tmp_path):
    dav = DavServer(tmp_path)
    try:
        body = os.urandom(2 << 20)
        (console.uploads / "reports").mkdir(parents=True, exist_ok=True)
        (console.uploads / "reports" / "q4.bin").write_bytes(body)
        resp = console.api.post("/uploads", {"url": dav.url("/in/q4.bin"), "source": "reports/q4.bin",
                                             "maxBytesPerSecond": 256 * 1024})
        assert resp.status == 201, resp
        job = resp.json()
        open_console(browser, console)
        wait_page_state(browser, job["id"], "running")
        assert "upload reports/q4.bin" in job_text(browser, job["id"])
        shown = lambda: fresh(lambda: float(job_element(browser, job["id"]).find_element("tag name", "progress")
                                            .get_attribute("value") or 0)) or 0
        first = wait_for(lambda: shown() or None, message="the upload's progress shown")
        wait_for(lambda: shown() > first, message="the upload's progress bar to grow")
        click_job_button(browser, job["id"], "Pause")
        wait_for(lambda: console.api.get(f"/uploads/{job['id']}").json()["state"] == "paused", message="paused")
        wait_page_state(browser, job["id"], "paused")
        assert console.api.request("PATCH", f"/uploads/{job['id']}", {"maxBytesPerSecond": None}).status == 200
        click_job_button(browser, job["id"], "Resume")
        wait_page_state(browser, job["id"], "completed")
        assert (dav.root / "in" / "q4.bin").read_bytes() == body
    finally:
        dav.stop()
