"""rollgate's Python client: the RL trainer protocol, the store API and a helper for runner-launched agents.

Standard library only; NumPy is used when installed (batches decode into arrays), PyTorch only by
:func:`rollgate.layouts.to_torch`.

* :class:`TrainerClient` -- long-poll training batches, acknowledge them, publish weights (``/v1/rl/*``).
* :class:`StoreClient` -- enqueue tasks, read rollouts and spans, post rewards, wait (``/v1/agl/*``).
* :class:`AgentContext` -- inside an agent started by ``rollgate runner``: the task, the model endpoint, the reward.
* :class:`Row` -- the canonical trainable row; :mod:`rollgate.adapters` -- rows as TRL's and Tinker's own types.
* :mod:`rollgate.layouts` -- padded arrays for verl and TRL; :mod:`rollgate.errors` -- the exceptions.
"""

from ._http import Retry, RetryPolicy
from .agent import AgentContext
from .batch import Batch, BatchStats, Sample, decode_binary, decode_json, numpy_available
from .errors import (
    AgentEnvironmentError,
    APIError,
    AuthenticationError,
    BadRequestError,
    BatchDecodeError,
    ConflictError,
    GatewayTimeoutError,
    GoneError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    ProtocolError,
    RateLimitError,
    RequestTimeoutError,
    RollgateError,
    ServerError,
    ServiceUnavailableError,
    TransportError,
    UpstreamError,
    ValidationError,
)
from .rows import Row, RowError, rows_from_batch, rows_from_export
from .store import Page, StoreClient
from .trainer import Delivery, TrainerClient, TrainerState, WeightsResult

__version__ = "0.1.0"

__all__ = [
    "TrainerClient",
    "Delivery",
    "WeightsResult",
    "TrainerState",
    "StoreClient",
    "Page",
    "AgentContext",
    "Batch",
    "BatchStats",
    "Sample",
    "Row",
    "RowError",
    "rows_from_batch",
    "rows_from_export",
    "decode_binary",
    "decode_json",
    "numpy_available",
    "RetryPolicy",
    "Retry",
    "RollgateError",
    "TransportError",
    "RequestTimeoutError",
    "ProtocolError",
    "BatchDecodeError",
    "AgentEnvironmentError",
    "APIError",
    "BadRequestError",
    "AuthenticationError",
    "PermissionDeniedError",
    "NotFoundError",
    "ConflictError",
    "GoneError",
    "PayloadTooLargeError",
    "ValidationError",
    "RateLimitError",
    "ServerError",
    "UpstreamError",
    "ServiceUnavailableError",
    "GatewayTimeoutError",
]
