"""Implementation of ``backend_sdk.library``'s custom-operator API (as ``torch._library``)."""

from . import autograd, utils  # noqa: E402,F401 (torch._library.autograd / .utils are attributes too)
