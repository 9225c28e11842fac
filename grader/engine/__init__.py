"""The grading engine: stage a submission, run its tests in a jailed child (sandbox, jail,
fork server), fold the signed records into a score (scoring), and the review aids beside it
(static scan, similarity). Imports no report, workflow or CLI code."""
