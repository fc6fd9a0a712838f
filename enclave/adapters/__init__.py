"""Capture and replay seams for agents built on other frameworks: one module each."""
