"""The trainer client against a real gateway whose trainer hub holds the fixture batches, in manifest order."""

from __future__ import annotations

import time
import unittest

from rollgate import TrainerClient, decode_json, numpy_available
from rollgate.batch import samples_equal

from . import fixture_json, fixtures, gateway


class TrainerProtocol(unittest.TestCase):
    def test_batches_in_both_layouts_redelivered_until_acknowledged(self) -> None:
        url, key = gateway()
        names = [str(n) for n in fixture_json("manifest.json")["batches"]]
        json_client = TrainerClient(url, api_key=key, binary=False)
        binary_client = TrainerClient(url, api_key=key, binary=True)
        before = binary_client.state()
        self.assertEqual(before.queued, len(names))
        self.assertFalse(before.attached)
        self.assertIsNone(before.model_version)

        for name in names:
            with self.subTest(batch=name):
                expected = decode_json((fixtures() / "batches" / f"{name}.json").read_bytes(), use_numpy=False)
                first = json_client.next_batch(timeout_s=5)
                assert first is not None
                self.assertEqual((first.layout, first.delivery, first.redelivered), ("json", 1, False))
                self.assertEqual(first.batch_id, expected.batch_id)

                # Not acknowledged: the same batch comes again, and the client shows it is a redelivery.
                second = binary_client.next_batch(timeout_s=5)
                assert second is not None
                self.assertEqual((second.layout, second.delivery, second.redelivered), ("binary", 2, True))
                self.assertEqual(second.batch_id, expected.batch_id)
                self.assertEqual(second.batch.stats, expected.stats)
                for got in second.batch.samples:
                    self.assertEqual(type(got.prompt_ids).__name__, "ndarray" if numpy_available() else "list")
                for got, want in zip(second.batch.samples, expected.samples):
                    self.assertTrue(samples_equal(got, want, logprob_tolerance=1e-6))
                for got, want in zip(first.batch.samples, expected.samples):
                    self.assertTrue(samples_equal(got, want))

                self.assertEqual(binary_client.ack(expected.batch_id), [expected.batch_id])
                # Acknowledging again is accepted and removes nothing.
                self.assertEqual(binary_client.ack(expected.batch_id), [])

        # Queue drained: a zero-second poll answers at once with nothing, and the iterator stops when idle.
        started = time.monotonic()
        self.assertIsNone(binary_client.next_batch(timeout_s=0))
        self.assertEqual(list(binary_client.batches(poll_s=0, stop_when_idle=True)), [])
        self.assertLess(time.monotonic() - started, 5)

        after = binary_client.state()
        self.assertEqual((after.queued, after.acknowledged), (0, len(names)))
        self.assertEqual(after.redeliveries - before.redeliveries, len(names))
        schema = binary_client.schema()
        self.assertIn("binary_batch_layout", schema)
        self.assertIn("RGB1", schema["binary_batch_layout"])


if __name__ == "__main__":
    unittest.main()
