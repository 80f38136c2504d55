"""Security: the cross-cutting checks every component shares.

Bearer tokens, TLS on both sides, secrets in configuration and the start-time access checks
that keep an exposed collector from running open by accident.
"""
