"""Fixtures of the provider tests: the loopback chat-completions endpoint."""

from tests.providers.endpoint import endpoint as endpoint
