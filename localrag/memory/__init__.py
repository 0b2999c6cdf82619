"""Edge memory shared by both papers (edges.py) and the user's verdicts on answers (feedback.py)."""
