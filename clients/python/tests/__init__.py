"""The client's own tests: ``cd clients/python && python3 -m unittest``.

They test the source tree (``src/`` and ``recipes/`` are put first on ``sys.path``). Tests that need a real
gateway or fixtures made by the gateway's TypeScript encoder read them from the environment, which the vitest
wrapper (``test/integration/python-client/unittest.test.ts``) sets up; run alone, those tests are skipped.

Environment:
    ROLLGATE_TEST_FIXTURES     folder with batches/<name>.json|.bin, manifest.json, policy-gradient.json
    ROLLGATE_TEST_GATEWAY_URL  a gateway (auth on) whose trainer hub holds the manifest's batches, in order
    ROLLGATE_TEST_ADMIN_KEY    its admin key
    ROLLGATE_TEST_MODEL        the model it serves (the vLLM stand-in)
    ROLLGATE_TEST_STRICT       "1": what is missing (NumPy, the gateway) fails instead of skipping
"""

from __future__ import annotations

import json
import os
import sys
import unittest
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parent.parent
for _path in (_ROOT / "recipes", _ROOT / "src"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

STRICT = os.environ.get("ROLLGATE_TEST_STRICT") == "1"


def _missing(what: str) -> None:
    if STRICT:
        raise AssertionError(f"{what} is required here (ROLLGATE_TEST_STRICT=1)")
    raise unittest.SkipTest(f"{what} not available")


def require_numpy() -> Any:
    """NumPy, or a skip (a failure under ROLLGATE_TEST_STRICT)."""
    try:
        import numpy
    except ImportError:
        _missing("NumPy")
    return numpy


def fixtures() -> Path:
    raw = os.environ.get("ROLLGATE_TEST_FIXTURES")
    if not raw:
        _missing("ROLLGATE_TEST_FIXTURES (fixtures from the TypeScript encoder)")
    return Path(raw)


def fixture_json(name: str) -> Any:
    return json.loads((fixtures() / name).read_text(encoding="utf-8"))


def gateway() -> tuple[str, str]:
    """(url, admin key) of the test gateway."""
    url = os.environ.get("ROLLGATE_TEST_GATEWAY_URL")
    key = os.environ.get("ROLLGATE_TEST_ADMIN_KEY")
    if not url or not key:
        _missing("ROLLGATE_TEST_GATEWAY_URL / ROLLGATE_TEST_ADMIN_KEY (a real gateway)")
    return url, key


def model() -> str:
    name = os.environ.get("ROLLGATE_TEST_MODEL")
    if not name:
        _missing("ROLLGATE_TEST_MODEL")
    return name
