"""Graph-capture state shared by streams and the device modules.

No backend implements graph capture yet (the "sdk.graph" contract extension is
planned, see docs/architecture.md): no stream is ever capturing, so
``Stream.is_capturing()`` and ``is_current_stream_capturing()`` are False.
"""
from __future__ import annotations

from typing import Any

__all__: list[str] = []

#: stream_id of every stream a capture is recording (empty while no backend supports capture).
_capturing_streams: set[int] = set()


def _is_capturing(stream: Any) -> bool:
    """True while a capture records ``stream``'s work."""
    return stream.stream_id in _capturing_streams
