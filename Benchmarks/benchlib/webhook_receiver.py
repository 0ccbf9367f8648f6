"""A tiny webhook consumer: answers 204 to every POST and counts deliveries by event type.

Run as `python3 webhook_receiver.py PORT`; GET /stats returns {"download.completed": n, ...};
GET /wait?type=T&count=N answers the same once N deliveries of type T have arrived, so that a
driver waiting for them need not poll (a poll every 10 ms cost the driver and this receiver
~0.1 s of CPU per second, on the cores fetchd was being measured on).

It shares the two cores with fetchd and the origin, and the peers (curl, aria2) send no
webhooks, so it is kept lean: one asyncio loop reading HTTP/1.1 with keep-alive itself, 25-35 µs
of CPU a delivery (0.05-0.07 s for a small-files round's 2,000) where http.server's thread per
connection and its header parser took 0.2-0.3 ms (a fifth of all CPU in the small-files scenario;
`small_counts.py`); one in C with epoll took 0.02-0.03 s, too little a difference to keep. Each
body is still parsed as JSON to count it by its `type`.
"""
import asyncio
import json
import sys
from urllib.parse import parse_qs, urlsplit

counts: dict[str, int] = {}
# (type, count, transport) of the /wait requests not yet answered.
waiters: list[tuple[str, int, asyncio.Transport]] = []
NO_CONTENT = b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n"


def content_length(head: bytes) -> int:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


class Receiver(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport
        self.buffer = b""

    def data_received(self, data: bytes):
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buffer[:end]
            length = content_length(head)
            if len(self.buffer) < end + 4 + length:
                return
            body = self.buffer[end + 4:end + 4 + length]
            self.buffer = self.buffer[end + 4 + length:]
            self.answer(head.split(b" ", 2), body)

    def answer(self, request_line: list, body: bytes):
        if request_line[0] == b"POST":
            kind = json.loads(body).get("type", "?")
            counts[kind] = counts.get(kind, 0) + 1
            self.transport.write(NO_CONTENT)
            if waiters:
                answer_waiters()
            return
        target = urlsplit(request_line[1].decode())
        if target.path == "/wait":
            query = parse_qs(target.query)
            waiters.append((query["type"][0], int(query["count"][0]), self.transport))
            answer_waiters()
        else:
            send_stats(self.transport)


def send_stats(transport):
    stats = json.dumps(counts).encode()
    transport.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                    % (len(stats), stats))


def answer_waiters():
    """Answers the /wait requests whose count has been reached."""
    for waiter in [w for w in waiters if counts.get(w[0], 0) >= w[1]]:
        waiters.remove(waiter)
        send_stats(waiter[2])


async def serve(port: int):
    # fetchd may open many delivery connections at once.
    server = await asyncio.get_running_loop().create_server(Receiver, "127.0.0.1", port, backlog=1024)
    await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(serve(int(sys.argv[1])))
