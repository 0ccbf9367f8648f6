"""POST /downloads/batch: many submissions in one request, each judged alone, one transaction,
per-item results in order, and an Idempotency-Key that covers the whole batch."""

from __future__ import annotations

import json
import time

from e2e_support import sha256_hex


def later(seconds: float = 3600) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + seconds))


def mixed_items(url: str, count: int) -> tuple[list[dict], list[int]]:
    """Valid jobs, with every 5th missing its destination (400), every 7th a bad URL (400) and
    every 11th aiming at the destination of the job before it (409): items and expected statuses."""
    items, expected = [], []
    for i in range(count):
        item = {"url": url, "destination": f"batch/{i}.bin", "session": "batch", "earliestBeginDate": later(),
                "metadata": {"i": i, "pad": "x" * 1200}}
        status = 201
        if i % 5 == 4:
            del item["destination"]
            status = 400
        elif i % 7 == 6:
            item["url"] = "gopher://nope/"
            status = 400
        elif i % 11 == 10 and expected[-1] == 201:
            item["destination"] = items[-1]["destination"]
            status = 409
        items.append(item)
        expected.append(status)
    return items, expected


def test_a_batch_of_1000_mixed_items_answers_each_in_order_and_replays(fetchd, origin):
    fd = fetchd()
    url = origin.add("/b.bin", b"b")
    items, expected = mixed_items(url, 1000)
    raw = json.dumps({"items": items}).encode()
    assert len(raw) > 1024 * 1024, "the batch must exceed the 1 MiB cap of other routes"

    resp = fd.api.post("/downloads/batch", raw=raw, headers={"Idempotency-Key": "batch-1"})
    assert resp.status == 200, resp
    results = resp.json()["items"]
    assert [r["status"] for r in results] == expected
    for item, result in zip(items, results):
        if result["status"] == 201:
            assert result["download"]["destination"] == item["destination"]
            assert result["download"]["metadata"] == item["metadata"]
        else:
            problem = result["problem"]
            assert problem["status"] == result["status"] and problem["detail"]
            if result["status"] == 400:
                assert problem["errors"][0]["field"] in ("destination", "url")
    created = [r["download"]["id"] for r in results if r["status"] == 201]
    stored = fd.api.list_all("session=batch")
    assert sorted(j["id"] for j in stored) == sorted(created)

    replay = fd.api.post("/downloads/batch", raw=raw, headers={"Idempotency-Key": "batch-1"})
    assert replay.status == 200 and sha256_hex(replay.body) == sha256_hex(resp.body), "the original answer again"
    assert len(fd.api.list_all("session=batch")) == len(created)

    other = json.dumps({"items": items[:3]}).encode()
    mismatch = fd.api.post("/downloads/batch", raw=other, headers={"Idempotency-Key": "batch-1"})
    assert mismatch.status == 422 and mismatch.content_type == "application/problem+json", mismatch


def test_a_batch_refuses_a_body_it_cannot_take(fetchd, origin):
    fd = fetchd()
    url = origin.add("/c.bin", b"c")
    too_many = [{"url": url, "destination": f"m/{i}"} for i in range(1001)]
    for body in ({"items": too_many}, {}, {"items": {}}, [], {"items": [], "extra": 1}):
        resp = fd.api.post("/downloads/batch", body)
        assert resp.status == 400 and resp.content_type == "application/problem+json", (body, resp)
    assert fd.api.post("/downloads/batch", {"items": []}).json() == {"items": []}
    assert fd.api.post("/downloads/batch", {"items": []}, content_type="text/plain").status == 415
    assert fd.api.list_all() == []
    # The raised cap is the batch route's alone.
    big = json.dumps({"url": url, "destination": "big.bin", "metadata": {"x": "y" * (1100 * 1024)}}).encode()
    assert fd.api.post("/downloads", raw=big).status == 413
