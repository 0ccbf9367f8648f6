"""Shared helpers of the fetchd benchmark suite: processes, origin, fetchd client, wrk, table."""
