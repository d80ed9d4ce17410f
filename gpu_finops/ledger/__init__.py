"""The fleet ledger: every installed GPU-hour in exactly one named bucket with an owner.

`conventions` holds the label keys and thresholds, `rules` renders the Prometheus recording rules from
them (committed as `rules.yaml`), `accounting` is the integer arithmetic of the monthly table, `source`
reads the recorded series from Prometheus, `measures` holds the per-class honest measures, and `cli` is
`gpu-finops ledger`. See docs/ledger.md.
"""
