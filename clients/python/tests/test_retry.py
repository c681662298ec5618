"""Retries, backoff and timeouts of the transport, against scripted HTTP servers on real sockets.

The gateway cannot be made to fail on cue, so these servers answer from a script: a list of (status, body)
per request. Every other test talks to the real gateway.
"""

from __future__ import annotations

import socket
import threading
import unittest
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator

from rollgate import (
    NotFoundError,
    RequestTimeoutError,
    Retry,
    RetryPolicy,
    ServiceUnavailableError,
    TransportError,
    UpstreamError,
)
from rollgate._http import HttpClient

ERROR = b'{"error":{"message":"scripted","type":"server_error","param":null,"code":"internal_error"}}'


@contextmanager
def scripted(script: list[tuple[int, bytes, dict[str, str]]]) -> Iterator[tuple[str, list[str]]]:
    """A server answering request i with script[i] (the last entry repeats); yields (url, request log)."""
    log: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            if length:
                self.rfile.read(length)
            log.append(f"{self.command} {self.path}")
            status, body, headers = script[min(len(log) - 1, len(script) - 1)]
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", log
    finally:
        server.shutdown()
        server.server_close()


class Retries(unittest.TestCase):
    def setUp(self) -> None:
        self.sleeps: list[float] = []
        self.policy = RetryPolicy(max_attempts=3, initial_backoff_s=0.1, max_backoff_s=1.0, jitter=0.0)

    def client(self, url: str) -> HttpClient:
        return HttpClient(url, timeout_s=2, retry=self.policy, sleep=self.sleeps.append)

    def test_idempotent_call_is_retried_on_5xx_with_exponential_backoff(self) -> None:
        with scripted([(500, ERROR, {}), (502, ERROR, {}), (200, b'{"ok":true}', {})]) as (url, log):
            response = self.client(url).request("GET", "/v1/rl/state")
        self.assertEqual(response.json(), {"ok": True})
        self.assertEqual(len(log), 3)
        self.assertEqual(self.sleeps, [0.1, 0.2])

    def test_gives_up_after_max_attempts_with_the_last_error(self) -> None:
        with scripted([(503, ERROR, {})]) as (url, log):
            with self.assertRaises(ServiceUnavailableError):
                self.client(url).request("GET", "/x")
        self.assertEqual(len(log), 3)

    def test_retry_after_is_honoured_up_to_the_cap(self) -> None:
        with scripted([(429, ERROR, {"retry-after": "0.5"}), (429, ERROR, {"retry-after": "30"}), (200, b"{}", {})]) as (
            url,
            _,
        ):
            self.client(url).request("GET", "/x")
        self.assertEqual(self.sleeps, [0.5, 1.0])

    def test_unsent_only_call_is_not_retried_once_the_gateway_may_have_acted(self) -> None:
        with scripted([(502, ERROR, {}), (200, b"{}", {})]) as (url, log):
            with self.assertRaises(UpstreamError):
                self.client(url).request("POST", "/v1/rl/weights", json_body={"version": 1}, retry=Retry.UNSENT)
        self.assertEqual(len(log), 1)

    def test_unsent_only_call_is_retried_when_refused_before_any_work(self) -> None:
        with scripted([(503, ERROR, {}), (429, ERROR, {}), (201, b"{}", {})]) as (url, log):
            self.client(url).request("POST", "/reward", json_body={"value": 1}, retry=Retry.UNSENT)
        self.assertEqual(len(log), 3)

    def test_client_errors_are_not_retried(self) -> None:
        with scripted([(404, ERROR, {}), (200, b"{}", {})]) as (url, log):
            with self.assertRaises(NotFoundError):
                self.client(url).request("GET", "/x")
        self.assertEqual(len(log), 1)

    def test_connection_refused_is_retried_then_a_transport_error(self) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        # Nothing listens on the port now: every try is refused before anything is sent, so even a call that
        # must not run twice may be retried.
        with self.assertRaises(TransportError) as caught:
            self.client(f"http://127.0.0.1:{port}").request("POST", "/reward", json_body={}, retry=Retry.UNSENT)
        self.assertNotIsInstance(caught.exception, RequestTimeoutError)
        self.assertEqual(len(self.sleeps), 2)

    def test_a_silent_server_times_out(self) -> None:
        # Accepts connections (the kernel completes them) but never answers.
        with socket.socket() as silent:
            silent.bind(("127.0.0.1", 0))
            silent.listen(8)
            client = HttpClient(f"http://127.0.0.1:{silent.getsockname()[1]}", timeout_s=0.3,
                                retry=RetryPolicy(max_attempts=2, initial_backoff_s=0, jitter=0), sleep=self.sleeps.append)
            with self.assertRaises(RequestTimeoutError):
                client.request("GET", "/v1/rl/batches/next")
            self.assertEqual(len(self.sleeps), 1)
            with self.assertRaises(RequestTimeoutError):
                client.request("POST", "/v1/rl/weights", json_body={}, retry=Retry.UNSENT)
            self.assertEqual(len(self.sleeps), 1, "a call that may have reached the gateway is not repeated")

    def test_backoff_grows_and_is_capped(self) -> None:
        policy = RetryPolicy(initial_backoff_s=1, max_backoff_s=5, multiplier=2, jitter=0)
        self.assertEqual([policy.delay_s(n) for n in (1, 2, 3, 4)], [1, 2, 4, 5])
        spread = RetryPolicy(initial_backoff_s=1, jitter=0.5)
        self.assertTrue(all(0.5 <= spread.delay_s(1) <= 1.5 for _ in range(50)))


if __name__ == "__main__":
    unittest.main()
