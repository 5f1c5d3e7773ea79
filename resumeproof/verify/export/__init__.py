"""`resumeproof export RUN DEST`: a run's resume points copied to a destination, read back, checked, and resumed
from for one update, the earlier export kept until the new one has passed (docs/export.md).

    settings.py    what an export is asked to do
    source.py      what RUN holds: its resume points, newest first, checked; the files that go with them; the command
    store.py       the destination: a local folder, or any fsspec URL (s3://, gs://, file://)
    transfer.py    the files sent and read back; the destination's layout: exports/<id>/ and the CURRENT marker
    restorable.py  one update resumed from the copy, compared bit for bit with the reference update
    signature.py   --sign-key: model.sig, an OpenSSF Model Signing signature over the export's folder, and its check
    result.py      the typed result (EXPORT.json), report.py its PROOF.md and terminal report, run.py the steps
"""
