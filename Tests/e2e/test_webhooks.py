"""Webhook delivery: retries keep one webhook-id; pending events survive a SIGKILL."""

from __future__ import annotations

import os

from e2e_support import WebhookReceiver, holds_for, wait_for


def test_receiver_answering_500_twice_gets_the_event_on_the_third_attempt(fetchd, origin, receiver):
    fd = fetchd()
    receiver.fail_next(2, status=500, type="download.completed")
    url = origin.add("/retry.bin", os.urandom(4096))
    job = fd.api.submit({"url": url, "destination": "retry.bin", "webhookURL": receiver.url})

    deliveries = receiver.wait_event("download.completed", job["id"])

    assert [d.answered for d in deliveries] == [500, 500, 200]
    assert all(d.verified for d in deliveries), [d.verify_error for d in deliveries]
    assert len({d.webhook_id for d in deliveries}) == 1, "webhook-id must be stable across retries"
    assert len({d.body for d in deliveries}) == 1, "the payload must not change between retries"
    # Delivered once acknowledged: no further attempts.
    assert holds_for(lambda: len(receiver.events("download.completed", job["id"])) == 3, 0.8)


def test_webhook_id_is_stable_across_every_retry_until_the_schedule_ends(fetchd, origin, receiver):
    # Schedule 0,200ms×4 = 5 attempts; all refused. Every attempt carries the same id.
    fd = fetchd()
    receiver.fail_next(100, status=503, type="download.completed")
    url = origin.add("/stubborn.bin", b"abc")
    job = fd.api.submit({"url": url, "destination": "stubborn.bin", "webhookURL": receiver.url})

    deliveries = wait_for(lambda: (ds := receiver.events("download.completed", job["id"])) and len(ds) >= 5 and ds,
                          timeout=20, message="five delivery attempts")
    assert len({d.webhook_id for d in deliveries}) == 1
    assert all(d.verified for d in deliveries), [d.verify_error for d in deliveries]
    assert holds_for(lambda: len(receiver.events("download.completed", job["id"])) == 5, 1.0), \
        "more attempts than FETCHD_WEBHOOK_RETRY_SCHEDULE allows"


def test_event_survives_receiver_down_and_fetchd_sigkill(fetchd, origin):
    receiver = WebhookReceiver()
    receiver.start()
    receiver.stop()  # down; its port is reserved for the restart
    # Many short retries, so the event is still pending when fetchd is killed.
    fd = fetchd(env={"FETCHD_WEBHOOK_RETRY_SCHEDULE": ",".join(["0"] + ["1s"] * 30)})
    try:
        url = origin.add("/persist.bin", os.urandom(10_000))
        job = fd.api.submit({"url": url, "destination": "persist.bin", "webhookURL": receiver.url})
        fd.api.wait_state(job["id"], "completed")

        assert fd.kill() == -9
        receiver.restart()
        fd.start()

        deliveries = receiver.wait_event("download.completed", job["id"], timeout=30)
        assert all(d.verified for d in deliveries), [d.verify_error for d in deliveries]
        assert len({d.webhook_id for d in deliveries}) == 1
        assert deliveries[0].data["state"] == "completed"
    finally:
        receiver.stop()
