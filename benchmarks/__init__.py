"""`make bench`: figures and ratios, never pass/fail."""
