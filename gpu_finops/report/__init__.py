"""`gpu-finops report`: one self-contained HTML page of what a run recorded (acts, cost, ledger,
diagnosis), each section drawn only from its data and saying why when that data is missing. See
docs/report.md."""
