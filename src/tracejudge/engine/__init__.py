"""The judging engine: rules over runs, producing verdicts."""
