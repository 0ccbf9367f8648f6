"""RFC 3339 timestamps as fetchd writes them, to and from milliseconds since the epoch."""
from datetime import datetime, timezone


def rfc3339(millis: int) -> str:
    moment = datetime.fromtimestamp(millis / 1000, timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{millis % 1000:03d}Z"


def parse_rfc3339(text: str) -> int:
    return round(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)
