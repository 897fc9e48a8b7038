"""Implementation of ``backend_sdk.library``'s custom-operator API (as ``torch._library``)."""
