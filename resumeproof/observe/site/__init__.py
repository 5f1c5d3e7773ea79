"""The directory the verifier puts first on every trajectory's PYTHONPATH: its sitecustomize.py injects the observer."""
