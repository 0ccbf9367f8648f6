"""Every validation rule of POST /downloads (API.md) gets a 4xx problem+json naming the
field, and no request gets a 5xx. One fetchd serves the whole module; its fixture checks
at the end that it is still alive and stops with exit code 0."""

from __future__ import annotations

import uuid

import pytest

from e2e_support import Response

FAR_FUTURE = "2999-01-01T00:00:00Z"  # keeps accepted jobs queued: no network, no interference


def unique_dest(prefix: str = "v") -> str:
    return f"{prefix}/{uuid.uuid4().hex}.bin"


@pytest.fixture
def valid(shared_origin):
    """A valid body; tests break one field of it."""
    url = shared_origin.add("/valid.bin", b"valid")
    return {"url": url, "destination": unique_dest(), "earliestBeginDate": FAR_FUTURE}


@pytest.fixture
def api(shared_fetchd):
    return shared_fetchd.api


def assert_problem(resp: Response, status: int | None = None, field: str | None = None) -> dict:
    assert resp.status < 500, f"5xx for a client mistake: {resp!r}"
    if status is not None:
        assert resp.status == status, resp
    else:
        assert 400 <= resp.status < 500, resp
    assert resp.content_type == "application/problem+json", resp
    problem = resp.json()
    for key in ("type", "title", "status", "detail"):
        assert key in problem, f"problem+json without {key!r}: {problem}"
    assert problem["status"] == resp.status
    if field is not None:
        errors = problem.get("errors")
        assert isinstance(errors, list) and errors, f"no errors array: {problem}"
        for e in errors:
            assert isinstance(e.get("field"), str) and isinstance(e.get("message"), str), e
        assert field in [e["field"] for e in errors], f"no error for {field!r}: {errors}"
    return problem


DROP = object()

# (id, field, value or DROP) -- each breaks exactly one field of a valid body.
INVALID_FIELDS = [
    ("missing-url", "url", DROP),
    ("url-ftp", "url", "gopher://127.0.0.1/file.bin"),
    ("url-file", "url", "file:///etc/passwd"),
    ("url-javascript", "url", "javascript:alert(1)"),
    ("url-relative-path", "url", "/just/a/path.bin"),
    ("url-no-scheme", "url", "example.com/file.bin"),
    ("url-empty", "url", ""),
    ("url-not-a-string", "url", 42),
    ("missing-destination", "destination", DROP),
    ("destination-empty", "destination", ""),
    ("destination-absolute", "destination", "/etc/passwd"),
    ("destination-dotdot-leading", "destination", "../escape.bin"),
    ("destination-dotdot-inside", "destination", "a/../../escape.bin"),
    ("destination-dotdot-harmless-looking", "destination", "a/../b.bin"),
    ("destination-dotdot-only", "destination", ".."),
    ("destination-nul-byte", "destination", "a\u0000b.bin"),
    ("destination-not-a-string", "destination", ["a.bin"]),
    ("session-empty", "session", ""),
    ("session-space", "session", "bad session"),
    ("session-slash", "session", "a/b"),
    ("session-non-ascii", "session", "sessión"),
    ("session-too-long", "session", "s" * 129),
    ("session-not-a-string", "session", 7),
    ("earliestBeginDate-words", "earliestBeginDate", "tomorrow"),
    ("earliestBeginDate-month-13", "earliestBeginDate", "2026-13-01T00:00:00Z"),
    ("earliestBeginDate-date-only", "earliestBeginDate", "2026-01-01"),
    ("earliestBeginDate-no-offset", "earliestBeginDate", "2026-01-01T10:00:00"),
    ("earliestBeginDate-number", "earliestBeginDate", 1767225600),
    ("discretionary-string", "discretionary", "true"),
    ("discretionary-number", "discretionary", 1),
    ("priority-negative", "priority", -0.1),
    ("priority-above-one", "priority", 1.5),
    ("priority-string", "priority", "high"),
    ("priority-bool", "priority", True),
    ("expectedBytesToReceive-negative", "expectedBytesToReceive", -1),
    ("expectedBytesToSend-negative", "expectedBytesToSend", -5),
    ("expectedBytesToReceive-fraction", "expectedBytesToReceive", 1.5),
    ("expectedBytesToReceive-string", "expectedBytesToReceive", "100"),
    ("webhookURL-ftp", "webhookURL", "ftp://127.0.0.1/hook"),
    ("webhookURL-mailto", "webhookURL", "mailto:ops@example.com"),
    ("webhookURL-relative", "webhookURL", "/hooks"),
    ("headers-value-crlf", "headers", {"X-Test": "a\r\nInjected: 1"}),
    ("headers-value-lf", "headers", {"X-Test": "a\nb"}),
    ("headers-value-cr", "headers", {"X-Test": "a\rb"}),
    ("headers-name-crlf", "headers", {"X-Test\r\nInjected": "1"}),
    ("headers-host", "headers", {"Host": "evil.example"}),
    ("headers-host-lowercase", "headers", {"host": "evil.example"}),
    ("headers-content-length", "headers", {"Content-Length": "5"}),
    ("headers-transfer-encoding", "headers", {"Transfer-Encoding": "chunked"}),
    ("headers-range", "headers", {"Range": "bytes=0-10"}),
    ("headers-range-mixed-case", "headers", {"rAnGe": "bytes=0-10"}),
    ("headers-not-an-object", "headers", ["X-Test: 1"]),
    ("headers-value-not-a-string", "headers", {"X-Test": 1}),
    ("sha256-short", "sha256", "abc123"),
    ("sha256-63-hex", "sha256", "a" * 63),
    ("sha256-65-hex", "sha256", "a" * 65),
    ("sha256-not-hex", "sha256", "z" * 64),
    ("overwrite-string", "overwrite", "yes"),
]


@pytest.mark.parametrize("field,value", [(f, v) for _, f, v in INVALID_FIELDS],
                         ids=[case for case, _, _ in INVALID_FIELDS])
def test_invalid_field_is_400_problem_naming_the_field(api, valid, field, value):
    body = dict(valid)
    if value is DROP:
        body.pop(field, None)
    else:
        body[field] = value
    assert_problem(api.post("/downloads", body), 400, field)


@pytest.mark.parametrize("unknown", ["destinaton", "foo", "Priority"])
def test_unknown_field_is_400_naming_it(api, valid, unknown):
    body = dict(valid)
    body[unknown] = "typo"
    assert_problem(api.post("/downloads", body), 400, unknown)


@pytest.mark.parametrize("symlink_kind", ["directory", "file"])
def test_destination_through_symlink_outside_root_is_400(shared_fetchd, api, valid, tmp_path, symlink_kind):
    outside = tmp_path / "outside"
    outside.mkdir()
    name = f"link-{uuid.uuid4().hex}"
    if symlink_kind == "directory":
        (shared_fetchd.root / name).symlink_to(outside, target_is_directory=True)
        destination = f"{name}/file.bin"
    else:
        (outside / "target.bin").write_bytes(b"precious")
        (shared_fetchd.root / name).symlink_to(outside / "target.bin")
        destination = name
    body = dict(valid, destination=destination, overwrite=True)
    assert_problem(api.post("/downloads", body), 400, "destination")
    assert list(outside.iterdir()) in ([], [outside / "target.bin"])
    if symlink_kind == "file":
        assert (outside / "target.bin").read_bytes() == b"precious"


@pytest.mark.parametrize("raw", [
    b"{not json",
    b"",
    b"[]",
    b'"a string"',
    b"null",
    b"42",
    b'{"url": "http://127.0.0.1/x", "destination": ',
    b"\xff\xfe\x00garbage",
], ids=["broken", "empty", "array", "string", "null", "number", "truncated", "invalid-utf8"])
def test_body_that_is_not_a_json_object_is_400(api, raw):
    assert_problem(api.post("/downloads", raw=raw), 400)


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "application/xml"])
def test_wrong_content_type_is_415(api, valid, content_type):
    assert_problem(api.post("/downloads", valid, content_type=content_type), 415)


def test_missing_content_type_is_415(api, valid):
    assert_problem(api.post("/downloads", valid, content_type=None), 415)


def test_json_content_type_with_charset_is_accepted(api, valid):
    resp = api.post("/downloads", valid, content_type="application/json; charset=utf-8")
    assert resp.status == 201, resp


def test_boundary_values_are_accepted(api, valid):
    body = dict(valid, session="A-z_0.9" + "x" * 121, priority=1, discretionary=True,
                expectedBytesToSend=0, expectedBytesToReceive=0,
                headers={"X-Custom": "value", "Authorization": "Bearer secret-token"},
                sha256="ABCDEF" + "0" * 58, overwrite=False, webhookURL="http://127.0.0.1:9/hooks")
    assert len(body["session"]) == 128
    resp = api.post("/downloads", body)
    assert resp.status == 201, resp
    job = resp.json()
    assert job["session"] == body["session"]
    assert job["priority"] == 1
    assert "secret-token" not in resp.body.decode(), "origin header values must never be echoed"
    assert "secret-token" not in api.get(f"/downloads/{job['id']}").body.decode()
    assert api.post("/downloads", dict(valid, destination=unique_dest(), priority=0)).status == 201


def test_destination_that_exists_without_overwrite_is_409(shared_fetchd, api, valid):
    dest = unique_dest("exists")
    path = shared_fetchd.dest(dest)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"already here")
    assert_problem(api.post("/downloads", dict(valid, destination=dest)), 409)
    assert path.read_bytes() == b"already here"
    resp = api.post("/downloads", dict(valid, destination=dest, overwrite=True))
    assert resp.status == 201, resp


def test_second_job_for_a_destination_owned_by_a_non_terminal_job_is_409(api, valid):
    first = api.post("/downloads", valid)
    assert first.status == 201, first
    second = api.post("/downloads", dict(valid, url=valid["url"] + "?other"))
    assert_problem(second, 409)
    # Once the first job is terminal, the destination is free again.
    assert api.delete(f"/downloads/{first.json()['id']}").status == 200
    third = api.post("/downloads", valid)
    assert third.status == 201, third


def test_idempotency_key_with_same_body_returns_the_same_job_201(api, valid):
    key = uuid.uuid4().hex
    first = api.post("/downloads", valid, headers={"Idempotency-Key": key})
    assert first.status == 201, first
    again = api.post("/downloads", valid, headers={"Idempotency-Key": key})
    assert again.status == 201, again
    assert again.json()["id"] == first.json()["id"]
    assert again.header("Location") == first.header("Location")


def test_idempotency_key_quoted_or_bare_is_the_same_key(api, valid):
    key = uuid.uuid4().hex
    first = api.post("/downloads", valid, headers={"Idempotency-Key": f'"{key}"'})
    assert first.status == 201, first
    bare = api.post("/downloads", valid, headers={"Idempotency-Key": key})
    assert bare.status == 201, bare
    assert bare.json()["id"] == first.json()["id"]


def test_idempotency_key_with_different_body_is_422(api, valid):
    key = uuid.uuid4().hex
    first = api.post("/downloads", valid, headers={"Idempotency-Key": key})
    assert first.status == 201, first
    other = dict(valid, destination=unique_dest())
    assert_problem(api.post("/downloads", other, headers={"Idempotency-Key": key}), 422)


def test_idempotency_key_longer_than_255_chars_is_400(api, valid):
    assert_problem(api.post("/downloads", valid, headers={"Idempotency-Key": "k" * 256}), 400)
    ok = api.post("/downloads", dict(valid, destination=unique_dest()), headers={"Idempotency-Key": "k" * 255})
    assert ok.status == 201, ok


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_unknown_job_id_is_404(api, method):
    assert_problem(api.request(method, "/downloads/no-such-job-" + uuid.uuid4().hex), 404)


@pytest.mark.parametrize("path", ["/nope", "/downloads/x/y/z", "/download", "/"])
def test_unknown_path_is_404(api, path):
    assert_problem(api.get(path), 404)


@pytest.mark.parametrize("method,path,allowed", [
    ("PUT", "/downloads", {"GET", "POST"}),
    ("PATCH", "/downloads", {"GET", "POST"}),
    ("PUT", "/downloads/{id}", {"GET", "DELETE"}),
    ("POST", "/downloads/{id}", {"GET", "DELETE"}),
    ("POST", "/healthz", {"GET"}),
    ("DELETE", "/readyz", {"GET"}),
    ("BREW", "/downloads", {"GET", "POST"}),
], ids=["put-collection", "patch-collection", "put-item", "post-item", "post-healthz", "delete-readyz",
        "unknown-method"])
def test_wrong_method_is_405_with_allow(api, valid, method, path, allowed):
    if "{id}" in path:
        job = api.submit(dict(valid))
        path = path.replace("{id}", job["id"])
    body = b"{}" if method in {"PUT", "PATCH", "POST"} else None
    resp = api.request(method, path, raw=body)
    assert_problem(resp, 405)
    allow = {m.strip().upper() for m in (resp.header("Allow") or "").split(",") if m.strip()}
    assert allowed <= allow, f"Allow: {resp.header('Allow')!r}"
    assert method not in allow


@pytest.mark.parametrize("raw", [
    b'{"url": "http://127.0.0.1/x", "destination": "a.bin", "priority": 1e999}',
    b'{"url": "http://127.0.0.1/x", "destination": "a.bin", "expectedBytesToReceive": 99999999999999999999999}',
    b'{"url": "http://127.0.0.1/x", "destination": "a.bin", "expectedBytesToReceive": 1e30}',
    b'{"url": null, "destination": null}',
    b'{"url": "http://127.0.0.1/x", "destination": "a.bin", "headers": {"X": {"nested": 1}}}',
    b'{"url": "http://127.0.0.1/x", "destination": "a.bin", "url": "ftp://dup/"}',
    b"[" * 5000 + b"]" * 5000,
    b'{"a":' * 3000 + b"1" + b"}" * 3000,
    b'{"url": "http://' + b"h" * 70000 + b'/x", "destination": "a.bin"}',
    b'{"url": "http://127.0.0.1:99999/x", "destination": "a.bin"}',
    b'{"url": "http://[::1/x", "destination": "a.bin"}',
    b'{"url": "http:///x", "destination": "a.bin"}',
    b'{"url": "http://127.0.0.1/x", "destination": "' + b"d/" * 3000 + b'a.bin"}',
    b'{"url": "http://127.0.0.1/x", "destination": "' + b"n" * 300 + b'.bin"}',
], ids=["huge-float", "huge-int", "float-bytes", "nulls", "nested-header", "duplicate-key", "deep-array",
        "deep-object", "long-host", "bad-port", "bad-ipv6", "empty-host", "deep-destination", "long-name"])
def test_malformed_bodies_never_get_a_5xx(shared_fetchd, api, raw):
    resp = api.post("/downloads", raw=raw)
    assert resp.status < 500, resp
    if resp.status >= 400:
        assert_problem(resp)
    assert shared_fetchd.running, "fetchd died"


def test_no_request_in_this_module_got_a_5xx(api):
    fivexx = [r for r in api.responses if r[2] >= 500]
    assert not fivexx, fivexx


@pytest.mark.parametrize("content_type", ["application/json; charset=utf-8", "Application/JSON", " application/json "])
def test_json_media_type_is_matched_case_insensitively_with_parameters(api, valid, content_type):
    assert api.submit(valid, content_type=content_type)["state"] == "queued"
