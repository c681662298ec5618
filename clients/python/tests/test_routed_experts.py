"""A sample's routed experts (R3) decode from the gateway's base64 .npy to int32 (rows, layers, top_k)."""

import base64
import io
import unittest

from rollgate.batch import Sample, decode_routed_experts
from rollgate.errors import BatchDecodeError

try:
    import numpy as np
except ImportError:  # pragma: no cover
    np = None


def _npy(array) -> str:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


@unittest.skipIf(np is None, "needs NumPy")
class RoutedExpertsTest(unittest.TestCase):
    def test_decodes_every_dtype_to_int32(self) -> None:
        routes = (np.arange(5 * 3 * 2) * 37 % 300).reshape(5, 3, 2)
        for dtype in ("uint16", "int32"):
            got = decode_routed_experts(_npy(routes.astype(dtype)))
            self.assertEqual(got.dtype, np.int32)
            self.assertEqual(got.tolist(), routes.tolist())
        small = routes % 256
        self.assertEqual(decode_routed_experts(_npy(small.astype("uint8"))).tolist(), small.tolist())

    def test_sample_property_and_absence(self) -> None:
        routes = np.ones((2, 1, 2), dtype=np.uint8)
        sample = Sample("r", "g", [1], [2, 3], [1, 1], None, 1.0, 0.0, 0, [1], extra={"routed_experts": _npy(routes)})
        self.assertEqual(sample.routed_experts.shape, (2, 1, 2))
        self.assertIsNone(Sample("r", "g", [1], [2], [1], None, 1.0, 0.0, 0, [1]).routed_experts)

    def test_refuses_what_is_no_3d_npy(self) -> None:
        with self.assertRaises(BatchDecodeError):
            decode_routed_experts("not base64!")
        with self.assertRaises(BatchDecodeError):
            decode_routed_experts(_npy(np.zeros((2, 2), dtype=np.uint8)))


if __name__ == "__main__":
    unittest.main()
