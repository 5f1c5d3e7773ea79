"""The observer's records judged, of any trainer: the first resumed update against the continuous run's
(first_update.py, first_generators.py), bit for bit (exact.py) or in two tiers (tiers.py); a script
(`--observe`) from them alone (script.py)."""
