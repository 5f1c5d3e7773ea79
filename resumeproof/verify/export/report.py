"""The same `Export` for people: PROOF.md beside the files it proves, and the report on the terminal."""

import shlex
from pathlib import PurePosixPath
from typing import Any

from rich.console import Console
from rich.markup import escape

from resumeproof.common.protocol import META_IDENTITY, META_VERSIONS, OUTPUT_FLAG, RESUME_FLAG, STEPS_FLAG
from resumeproof.verify.export.result import Export
from resumeproof.verify.export.signature import Method, Signed
from resumeproof.verify.export.source import Point
from resumeproof.verify.export.transfer import EXPORT_JSON


def proof_md(e: Export) -> str:
    """A short proof a person can read: the command, the step found, every check, versions, how to load it."""
    point = e.points[0]
    where = "NOT current: the earlier export stays" if not e.proven else "named by `CURRENT`"
    where += f" (it replaced `exports/{e.replaces}`)" if e.replaces and e.proven else ""
    lines = [
        f"# Export of step {e.step}: {'proven' if e.proven else 'NOT proven'}",
        "",
        f"- Command: `{e.command}`",
        f"- Run: `{e.run}` ({e.kind}), exported {e.created}",
        f"- To: `{e.location}/`, {where}",
        f"- Step found: {point.step}, `{point.path}` (sha256 `{point.sha256}`)",
        *(f"- Also exported: `{p.path}` (step {p.step})" for p in e.points[1:]),
        *(f"- Skipped: `{s.path}`: {s.reason}" for s in e.skipped),
        *(f"- Note: {note}" for note in e.notes),
        "",
        "## Checks",
        "",
        "| check | result | detail |",
        "|---|---|---|",
        *(f"| {c.name} | {'passed' if c.passed else 'FAILED'} | {c.detail or ''} |" for c in e.checks),
        "",
        "## Versions",
        "",
        f"- The run: {_pairs(e.recorded.get(META_VERSIONS))}; identity: {_pairs(e.recorded.get(META_IDENTITY))}",
        f"- Exported with: {_pairs(e.exporter)}",
        f"- Every file with its size and sha256: `{EXPORT_JSON}`",
        "",
        *(_signature(e.signature) if e.signature is not None else []),
        "## How to load it",
        "",
        *_loading(e, point),
    ]
    return "\n".join(lines) + "\n"


def _signature(signed: Signed) -> list[str]:
    """How to verify the signature with the OpenSSF tool, unmodified, and with `resumeproof check`."""
    if signed.method is Method.KEY:
        tool = f"model_signing verify key . --signature {signed.file} --public_key PUB.pem"
        ours, by = "resumeproof check . --public-key PUB.pem", f"the key `{signed.signer}`"
    else:
        tool = f"model_signing verify certificate . --signature {signed.file} --certificate_chain CHAIN.pem"
        ours = "resumeproof check . --cert-chain CHAIN.pem"
        by = f"the certificate `{signed.certificate}`, of the key `{signed.signer}`"
    return [
        "## Signature",
        "",
        f"`{signed.file}` is an OpenSSF Model Signing signature over every file of this folder, this one and",
        f"`{EXPORT_JSON}` included, by {by}; the export verified it before `CURRENT` named the export. A key's",
        "fingerprint is the sha256 of its DER SubjectPublicKeyInfo: `openssl pkey -pubin -in PUB.pem -outform DER |",
        "sha256sum`. In the export's folder (downloaded first where DEST is a URL):",
        "",
        "```",
        f"{tool}   # pip install model-signing",
        f"{ours}",
        "```",
        "",
    ]


def _loading(e: Export, point: Point) -> list[str]:
    path = PurePosixPath(point.path)
    inside = f"cd {shlex.quote(str(path.parent))} && " if str(path.parent) != "." else ""
    resume = [*e.trainer.argv, STEPS_FLAG, "N", OUTPUT_FLAG, "runs/continued", RESUME_FLAG, point.path]
    lines = [
        "In the export's folder (downloaded first where DEST is a URL):",
        "",
        "```",
        (f"({inside}sha256sum -c {shlex.quote(path.name)}.sha256)" if inside else f"sha256sum -c {point.path}.sha256")
        + "   # the fingerprint",
        f"resumeproof check {shlex.quote(point.path)}   # loads under weights_only, checked without torch",
        f"{shlex.join(resume)}   # resume: N more updates, into a new folder",
        "```",
        "",
    ]
    if point.directory:
        return [*lines, "A directory checkpoint (DCP or a framework's folder): resume it with the training command."]
    python = f'torch.load("{point.path}", map_location="cpu", weights_only=True)'
    return [*lines, f"In Python, the state as plain data and tensors: `{python}`."]


def _pairs(found: Any) -> str:
    if not isinstance(found, dict) or not found:
        return "not recorded"
    return ", ".join(f"{key} {value}" for key, value in found.items())


def print_export(out: Console, e: Export, left: list[str]) -> None:
    """Every skipped point, note and check, then the verdict, last."""
    for s in e.skipped:
        out.print(f"[yellow]skipped[/] {escape(s.path)}: {escape(s.reason)}")
    for note in (*e.notes, *left):
        out.print(f"[yellow]note[/] {escape(note)}")
    for c in e.checks:
        mark = "[green]passed[/]" if c.passed else "[red]FAILED[/]"
        out.print(f"{mark} {escape(c.name)}: {escape(c.detail or '')}")
    if e.proven:
        out.print(f"[green]exported[/] step {e.step} to {escape(e.location)}/: proven (CURRENT names it; PROOF.md)")
        return
    failed = next(c for c in e.checks if not c.passed)
    kept = f"exports/{e.replaces} stays current" if e.replaces else "no export is current"
    out.print(f"[red]not exported[/]: failed: {escape(failed.name)}; {escape(kept)}; the copy: {escape(e.location)}/")
    if e.logs:
        out.print(f"logs of the resuming processes: {escape(e.logs)}")
