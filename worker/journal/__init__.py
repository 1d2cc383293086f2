"""The journal pipeline: capture, seal, digest, publication, recovery and cleanup."""
