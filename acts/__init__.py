"""The nine acts: each sets up, observes, checks its claim (a list of named clauses in `assertions/`) from
observed state, and reports timings; `expect` holds the named predicates their waits use."""
