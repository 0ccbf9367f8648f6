#!/usr/bin/env python3
"""A webhook consumer for trying fetchd on one machine (README, Webhooks).

    FETCHD_WEBHOOK_SECRET=whsec_… python3 scripts/demo/webhooks.py [PORT]   # default 9999

Receives fetchd's events on http://127.0.0.1:PORT/ and checks each Standard Webhooks signature
as a consumer should: HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}" with the secret's
bytes (base64 after `whsec_`), compared in constant time against each `v1,` signature of the
`webhook-signature` header, and the timestamp within 5 minutes. Prints one line per event and
answers 204 when the signature holds, 400 when it does not. Standard library only; in an
application use a Standard Webhooks library (`pip install standardwebhooks`, and others)."""

import base64
import hashlib
import hmac
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[1]) if len(sys.argv) > 1 else 9999
SECRETS = [base64.b64decode(s.strip().removeprefix("whsec_"))
           for s in os.environ.get("FETCHD_WEBHOOK_SECRET", "").split(",") if s.strip()]


def verified(headers, body: bytes) -> bool:
    msg_id, stamp = headers.get("webhook-id", ""), headers.get("webhook-timestamp", "")
    if not stamp.isdigit() or abs(time.time() - int(stamp)) > 300:
        return False
    signed = f"{msg_id}.{stamp}.".encode() + body
    given = [s.split(",", 1)[1] for s in headers.get("webhook-signature", "").split() if s.startswith("v1,")]
    for key in SECRETS:
        expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
        if any(hmac.compare_digest(expected, g) for g in given):
            return True
    return False


class Consumer(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        ok = verified(self.headers, body)
        event = json.loads(body or b"{}")
        data = event.get("data", {})
        if "destination" in data:  # a download (or a watch that failed)
            what = f"{data['destination']} ({data.get('state')})"
        elif "source" in data:  # an upload
            what = f"{data['source']} ({data.get('state')})"
        elif "watch" in data:  # a watch's file changed: the watch and the check that got it
            watch, check = data["watch"], data.get("download") or {}
            what = f"{watch.get('destination')} (watch {watch.get('id')}, sha256 {str(check.get('sha256'))[:12]}…)"
        else:
            what = f"{data.get('session')} {json.dumps(data.get('counts'), separators=(',', ':'))}"
        print(f"{event.get('type')} {what} webhook-id={self.headers.get('webhook-id')} "
              f"signature={'valid' if ok else 'INVALID'}", flush=True)
        self.send_response(204 if ok else 400)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    if not SECRETS:
        sys.exit("set FETCHD_WEBHOOK_SECRET to the secret fetchd signs with")
    ThreadingHTTPServer.daemon_threads = True
    print(f"receiving webhooks on http://127.0.0.1:{PORT}/", file=sys.stderr)
    ThreadingHTTPServer(("127.0.0.1", PORT), Consumer).serve_forever()
