"""GET /downloads: newest first, filters by state and session, cursor pagination."""

from __future__ import annotations

import pytest

FAR_FUTURE = "2999-01-01T00:00:00Z"


@pytest.fixture(scope="module")
def populated(shared_fetchd, shared_origin):
    """Session list-a: 7 jobs (the 2nd and 5th cancelled); session list-b: 3 jobs. All
    wait for a far-future date, so nothing touches the network and states stay put."""
    api = shared_fetchd.api
    url = shared_origin.add("/list.bin", b"list")
    created = {"list-a": [], "list-b": []}
    for i in range(10):
        session = "list-a" if i % 10 < 7 else "list-b"
        job = api.submit({"url": url, "destination": f"list/{i}.bin", "session": session,
                          "earliestBeginDate": FAR_FUTURE})
        created[session].append(job["id"])
    cancelled = [created["list-a"][1], created["list-a"][4]]
    for job_id in cancelled:
        assert api.delete(f"/downloads/{job_id}").status == 200
    return api, created, cancelled


def ids(items):
    return [j["id"] for j in items]


def test_list_is_newest_first(populated):
    api, created, _ = populated
    resp = api.get("/downloads")
    assert resp.status == 200, resp
    page = resp.json()
    assert set(page) >= {"items", "nextCursor"}
    every = created["list-a"] + created["list-b"]  # creation order
    listed = [i for i in ids(page["items"]) if i in set(every)]
    assert listed == list(reversed(every))
    assert page["nextCursor"] is None


def test_ids_sort_by_creation(populated):
    _, created, _ = populated
    every = created["list-a"] + created["list-b"]
    assert sorted(every) == every


def test_filter_by_session(populated):
    api, created, _ = populated
    page = api.get("/downloads?session=list-b").json()
    assert ids(page["items"]) == list(reversed(created["list-b"]))
    assert all(j["session"] == "list-b" for j in page["items"])


def test_filter_by_state(populated):
    api, created, cancelled = populated
    page = api.get("/downloads?state=cancelled").json()
    assert ids(page["items"]) == list(reversed(cancelled))
    queued = api.get("/downloads?state=queued").json()["items"]
    assert all(j["state"] == "queued" for j in queued)
    assert set(cancelled).isdisjoint(ids(queued))
    assert api.get("/downloads?state=completed").json()["items"] == []


def test_filter_by_state_and_session(populated):
    api, created, cancelled = populated
    items = api.get("/downloads?state=queued&session=list-a").json()["items"]
    expected = [i for i in reversed(created["list-a"]) if i not in cancelled]
    assert ids(items) == expected
    # Finished jobs are listed from the other part of the session index than live ones.
    assert ids(api.get("/downloads?state=cancelled&session=list-a").json()["items"]) == list(reversed(cancelled))
    assert api.get("/downloads?state=cancelled&session=list-b").json()["items"] == []


def test_unknown_session_lists_nothing(populated):
    api, _, _ = populated
    page = api.get("/downloads?session=no-such-session").json()
    assert page == {"items": [], "nextCursor": None}


@pytest.mark.parametrize("limit", [1, 2, 3, 7])
def test_cursor_pagination_walks_every_item_once_in_order(populated, limit):
    api, created, _ = populated
    pages = []
    cursor = None
    while True:
        q = f"session=list-a&limit={limit}" + (f"&cursor={cursor}" if cursor else "")
        resp = api.get(f"/downloads?{q}")
        assert resp.status == 200, resp
        page = resp.json()
        assert len(page["items"]) <= limit
        pages.append(ids(page["items"]))
        cursor = page["nextCursor"]
        if cursor is None:
            break
        assert len(pages) < 20, "pagination does not end"
    walked = [i for p in pages for i in p]
    assert walked == list(reversed(created["list-a"]))
    assert all(len(p) == limit for p in pages[:-1])


def test_limit_1000_is_accepted(populated):
    api, _, _ = populated
    assert api.get("/downloads?limit=1000").status == 200


@pytest.mark.parametrize("query", ["limit=0", "limit=1001", "limit=-1", "limit=abc", "limit=",
                                   "state=bogus", "cursor="])
def test_bad_list_parameters_are_400(populated, query):
    api, _, _ = populated
    resp = api.get(f"/downloads?{query}")
    assert resp.status == 400, resp
    assert resp.content_type == "application/problem+json", resp
