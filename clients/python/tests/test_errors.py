"""Error responses become one exception class per status, with the gateway's code, param and request id."""

from __future__ import annotations

import json
import unittest

from rollgate import (
    APIError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    NotFoundError,
    RateLimitError,
    RetryPolicy,
    ServerError,
    StoreClient,
    TrainerClient,
    UpstreamError,
    ValidationError,
)
from rollgate.errors import error_from_response

from . import gateway

NO_RETRY = RetryPolicy(max_attempts=1)


class ErrorBodies(unittest.TestCase):
    def test_openai_shaped_body(self) -> None:
        body = {"error": {"message": "unknown batch b9", "type": "invalid_request_error", "param": None,
                          "code": "not_found"}}
        error = error_from_response(404, json.dumps(body).encode(), {"x-request-id": "req-1"})
        self.assertIsInstance(error, NotFoundError)
        self.assertEqual((error.status, error.code, error.type, error.message, error.request_id),
                         (404, "not_found", "invalid_request_error", "unknown batch b9", "req-1"))

    def test_every_status_has_its_class(self) -> None:
        cases = {400: BadRequestError, 401: AuthenticationError, 404: NotFoundError, 409: ConflictError,
                 422: ValidationError, 429: RateLimitError, 500: ServerError, 502: UpstreamError, 418: BadRequestError,
                 599: ServerError}
        for status, cls in cases.items():
            with self.subTest(status=status):
                error = error_from_response(status, b"", {})
                self.assertIs(type(error), cls)
                self.assertIsInstance(error, APIError)
        self.assertTrue(issubclass(ValidationError, BadRequestError))

    def test_retry_after_and_non_json_bodies(self) -> None:
        error = error_from_response(429, b"paused", {"retry-after": "2"})
        self.assertEqual((error.retry_after_s, error.message, error.code), (2.0, "paused", None))
        self.assertIsNone(error_from_response(429, b"", {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}).retry_after_s)

    def test_engine_and_fastapi_shapes(self) -> None:
        flat = error_from_response(400, b'{"object":"error","message":"bad","type":"BadRequestError","code":400}', {})
        self.assertEqual((flat.message, flat.code), ("bad", "400"))
        detail = error_from_response(404, b'{"detail":"Rollout ro-1 not found","error_type":"NotFound"}', {})
        self.assertEqual((detail.message, detail.code), ("Rollout ro-1 not found", "NotFound"))


class GatewayErrors(unittest.TestCase):
    """The same mapping on the real gateway's answers."""

    def setUp(self) -> None:
        self.url, self.key = gateway()
        self.trainer = TrainerClient(self.url, api_key=self.key, retry=NO_RETRY)

    def test_missing_key_is_an_authentication_error(self) -> None:
        anonymous = TrainerClient(self.url, api_key="", retry=NO_RETRY)
        with self.assertRaises(AuthenticationError) as caught:
            anonymous.state()
        self.assertEqual((caught.exception.status, caught.exception.code), (401, "invalid_api_key"))
        self.assertTrue(caught.exception.request_id)

    def test_unknown_batch_is_not_found(self) -> None:
        with self.assertRaises(NotFoundError) as caught:
            self.trainer.ack("no-such-batch")
        self.assertEqual(caught.exception.code, "not_found")
        self.assertIn("no-such-batch", caught.exception.message)

    def test_weights_without_an_rl_algorithm_is_a_conflict(self) -> None:
        with self.assertRaises(ConflictError) as caught:
            self.trainer.post_weights(1, batch_ids=[], lora_path="/nowhere")
        self.assertEqual(caught.exception.code, "conflict")

    def test_two_step_update_without_an_rl_algorithm(self) -> None:
        # Nothing prepared: an abort is an idempotent no-op; a prepare or commit is refused.
        self.assertEqual(self.trainer.abort_weights("test")["status"], "idle")
        with self.assertRaises(ConflictError):
            self.trainer.prepare_weights(1)
        with self.assertRaises(ConflictError):
            self.trainer.commit_weights(1)

    def test_invalid_weights_post_is_a_validation_error_naming_the_field(self) -> None:
        with self.assertRaises(ValidationError) as caught:
            self.trainer.post_weights(1, batch_ids=[""])
        self.assertEqual((caught.exception.status, caught.exception.code), (422, "validation_error"))
        self.assertEqual(caught.exception.param, "batch_ids.0")

    def test_store_validation_and_unknown_route(self) -> None:
        store = StoreClient(self.url, api_key=self.key, retry=NO_RETRY)
        with self.assertRaises(ValidationError) as caught:
            store.enqueue([{"q": 1}], mode="bogus")
        self.assertEqual(caught.exception.param, "rollouts.0.mode")
        with self.assertRaises(NotFoundError) as missing:
            store.post_reward("no-such-rollout", 1.0)
        self.assertEqual(missing.exception.status, 404)
        with self.assertRaises(NotFoundError) as route:
            store._http.request("GET", "/v1/agl/no-such-route")
        self.assertEqual(route.exception.code, "unsupported_path")


if __name__ == "__main__":
    unittest.main()
