"""The binary layout decoder against batches encoded by the gateway's own TypeScript encoder."""

from __future__ import annotations

import math
import struct
import unittest
from typing import Any

from rollgate import BatchDecodeError, decode_binary, decode_json
from rollgate.batch import samples_equal

from . import fixture_json, fixtures, require_numpy

FLOAT32_TOLERANCE = 1e-6


def _names() -> list[str]:
    return [str(name) for name in fixture_json("manifest.json")["batches"]]


def _read(name: str) -> tuple[bytes, bytes]:
    folder = fixtures() / "batches"
    return (folder / f"{name}.bin").read_bytes(), (folder / f"{name}.json").read_bytes()


class BinaryLayoutAgainstTypeScriptEncoder(unittest.TestCase):
    def assert_same_batch(self, binary: Any, reference: Any) -> None:
        self.assertEqual(binary.batch_id, reference.batch_id)
        self.assertEqual(
            (binary.step, binary.model_version, binary.advantage_estimator, binary.created_at),
            (reference.step, reference.model_version, reference.advantage_estimator, reference.created_at),
        )
        self.assertEqual(binary.stats, reference.stats)
        self.assertEqual(len(binary.samples), len(reference.samples))
        for a, b in zip(binary.samples, reference.samples):
            self.assertTrue(samples_equal(a, b, logprob_tolerance=FLOAT32_TOLERANCE), f"{a}\n!=\n{b}")

    def test_every_fixture_decodes_to_its_json_form_as_plain_lists(self) -> None:
        names = _names()
        self.assertGreaterEqual(len(names), 3)
        for name in names:
            with self.subTest(name=name):
                binary, text = _read(name)
                decoded = decode_binary(binary, use_numpy=False)
                reference = decode_json(text, use_numpy=False)
                self.assert_same_batch(decoded, reference)
                for sample in decoded.samples:
                    self.assertIsInstance(sample.prompt_ids, list)
                    self.assertTrue(all(isinstance(x, int) for x in sample.response_mask))

    def test_every_fixture_decodes_to_numpy_views_without_copies(self) -> None:
        np = require_numpy()
        for name in _names():
            with self.subTest(name=name):
                binary, text = _read(name)
                decoded = decode_binary(binary, use_numpy=True)
                self.assert_same_batch(decoded, decode_json(text, use_numpy=True))
                for sample in decoded.samples:
                    self.assertEqual(sample.prompt_ids.dtype, np.dtype("<i4"))
                    self.assertEqual(sample.response_ids.dtype, np.dtype("<i4"))
                    self.assertEqual(sample.response_mask.dtype, np.uint8)
                    if sample.token_versions is not None:
                        self.assertEqual(sample.token_versions.dtype, np.dtype("<i4"))
                    if sample.logprobs is not None:
                        self.assertEqual(sample.logprobs.dtype, np.dtype("<f4"))
                        # Zero-copy: the arrays are read-only views into the response bytes.
                        self.assertFalse(sample.logprobs.flags.writeable)
                        self.assertFalse(sample.logprobs.flags.owndata)

    def test_what_the_fixtures_cover(self) -> None:
        # The edge cases the fixtures were built for, so a fixture change cannot quietly drop one.
        batches = [decode_json(_read(name)[1], use_numpy=False) for name in _names()]
        samples = [s for b in batches for s in b.samples]
        self.assertTrue(any(len(b.samples) == 0 for b in batches), "an empty batch")
        self.assertTrue(any(s.logprobs is None for s in samples), "a sample without logprobs")
        self.assertTrue(any(s.response_len == 0 for s in samples), "an empty response")
        self.assertTrue(any(max(s.response_ids, default=0) > 0x10FFFF for s in samples), "special-token ids")
        self.assertTrue(any(s.rollout_id.encode() != s.rollout_id.encode("latin-1", "ignore") for s in samples),
                        "non-ASCII text in the header (its byte length differs from its character count)")
        self.assertTrue(any(0 in s.response_mask[s.response_mask.index(1):] for s in samples if 1 in s.response_mask),
                        "a masked gap between turns")
        paddings = {(8 + struct.unpack_from("<I", _read(n)[0], 4)[0]) % 8 for n in _names()}
        self.assertGreater(len(paddings), 1, "headers needing different zero padding")
        self.assertTrue(any(b.extra for b in batches), "a batch field this client does not know")
        self.assertTrue(
            any({s.token_versions is None for s in b.samples} == {True, False} for b in batches),
            "a batch where one sample has token versions and another has none",
        )

    def test_the_header_reports_nan_free_logprobs_only_for_samples_that_have_them(self) -> None:
        for name in _names():
            decoded = decode_binary(_read(name)[0], use_numpy=False)
            for sample in decoded.samples:
                if sample.logprobs is not None:
                    self.assertFalse(any(math.isnan(x) for x in sample.logprobs))


class MalformedBuffers(unittest.TestCase):
    def setUp(self) -> None:
        self.binary = _read(_names()[0])[0]

    def test_bad_magic(self) -> None:
        with self.assertRaisesRegex(BatchDecodeError, "bad magic"):
            decode_binary(b"RGB2" + self.binary[4:], use_numpy=False)
        with self.assertRaisesRegex(BatchDecodeError, "bad magic"):
            decode_binary(b"RG", use_numpy=False)

    def test_truncated_arrays(self) -> None:
        with self.assertRaisesRegex(BatchDecodeError, "truncated"):
            decode_binary(self.binary[:-1], use_numpy=False)

    def test_truncated_header(self) -> None:
        with self.assertRaisesRegex(BatchDecodeError, "truncated"):
            decode_binary(self.binary[:12], use_numpy=False)

    def test_header_that_is_not_a_batch(self) -> None:
        header = b'{"samples": 3}'
        data = b"RGB1" + struct.pack("<I", len(header)) + header
        with self.assertRaisesRegex(BatchDecodeError, "bad header"):
            decode_binary(data, use_numpy=False)

    def test_negative_lengths(self) -> None:
        header = b'{"batch_id":"b","samples":[{"prompt_len":-1,"response_len":0,"has_logprobs":false}]}'
        data = b"RGB1" + struct.pack("<I", len(header)) + header
        with self.assertRaisesRegex(BatchDecodeError, "negative"):
            decode_binary(data, use_numpy=False)

    def test_json_whose_lengths_disagree(self) -> None:
        reference = fixture_json(f"batches/{_names()[0]}.json")
        reference["samples"][0]["response_mask"].append(1)
        with self.assertRaisesRegex(BatchDecodeError, "differ in length"):
            decode_json(reference, use_numpy=False)


if __name__ == "__main__":
    unittest.main()
