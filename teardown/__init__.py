"""Ordered destroy, verify-empty inventory and journal-based resume for everything the demo made."""
