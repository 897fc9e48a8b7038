"""``backend_sdk.testing``: helpers for testing operators and backends."""
from ._opcheck import OpCheckError, opcheck  # noqa: F401
