"""Adapters that capture and replay agents written against a framework, unchanged."""
