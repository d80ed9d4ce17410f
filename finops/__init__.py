"""Cost collection, rates, the cost store, the reaper and cost reports."""
