"""A protocol trainer judged from its summaries (summary.json): every expectation held against the continuous run
(trainer.py), bit for bit or in two tiers (tiers.py), the rules on the summaries, the evidence they ask for."""
