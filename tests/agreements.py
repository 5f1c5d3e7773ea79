"""The fields of a verification.json that must agree with each other: a document that contradicts itself is a bug
of the verifier, whatever its verdict. `contradictions` reads a real document (tests/e2e) or one written from a
hand-built evaluation (tests/verify/report/test_result.py) and names every pair that disagrees."""

from typing import Any

from resumeproof.common.protocol import CONTINUOUS, INTERRUPTED, REPEAT, RESUMED, STANDARD_PARTS, STATE

POSITIVE = ("prefix", "resume", "cadence", "checkpoint")  # the kinds `positive` covers (verify/report/result.py)
CONCORDANT_KINDS = ("resume", "cadence")  # each has its entry in comparison.resumes
RESTORE_RULES = ("restore", "first-update")  # a diagnosis read off the restore: a resume of 0 updates, or the observer
NAMED = ("prefix", "resume", "cadence", "negative-control", "fault", "finite")  # about one trajectory, which ran


def contradictions(doc: dict[str, Any], faults_all: bool = False) -> list[str]:
    """Every pair of fields of `doc` that disagree, said in a few words; [] for a document that agrees with itself.
    `faults_all`: the verification ran --faults all, so its faults are the declared parts (or the standard set)."""
    found: list[str] = []

    def agree(ok: bool, what: str) -> None:
        if not ok:
            found.append(what)

    checks, error, det = doc["checks"], doc["error"], doc["determinism"]
    passed = error is None and bool(checks) and all(c["passed"] for c in checks)
    agree(doc["all_checks_passed"] == passed, "all_checks_passed vs every check's passed")
    covered = error is None and all(c["passed"] for c in checks if c["kind"] in POSITIVE)
    agree(doc["positive"] == covered, "positive vs the prefix, resume, cadence and checkpoint checks")
    agree(doc["deterministic"] == det["deterministic"], "deterministic vs determinism.deterministic")
    missed = [p for p, f in doc["faults"].items() if not f["detected"] and f.get("not_applicable") is None]
    agree(doc["blind_to"] == missed, "blind_to vs faults")
    found += _verdict(doc, passed)
    if error is not None:
        agree(not checks and not doc["comparison"] and not doc["faults"], "an error vs checks, comparison or faults")
        return found
    kinds = _by_kind(checks)
    diagnoses = [c["diagnosis"] for c in checks] + [f["diagnosis"] for f in doc["faults"].values()]
    diagnoses += [r["diagnosis"] for r in doc["comparison"]["resumes"].values()]
    named = all(d["lost"] == (", ".join(d["parts"]) or "unknown") for d in diagnoses if d is not None)
    agree(named, "a diagnosis's lost vs its parts")
    done = {name for name, t in doc["trajectories"].items() if t["status"] == "done"}
    saved = {name for name in done if doc["trajectories"][name].get("stopped_after") != 0}  # 0: ended before a step
    agree({c["trajectory"] for c in kinds.get("checkpoint", [])} == saved, "checkpoint checks vs the trajectories done")
    agree(all(c["trajectory"] in done for c in checks if c["kind"] in NAMED), "a check's trajectory vs those done")
    found += _comparison(doc, kinds)
    found += _faults(doc, kinds, faults_all)
    found += _determinism(doc, kinds, done)
    found += _finite(doc, kinds)
    return found


def _by_kind(checks: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for c in checks:
        out.setdefault(c["kind"], []).append(c)
    return out


def _comparison(doc: dict[str, Any], kinds: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Every resume check against its entry in comparison.resumes; the negative control against no_rng_resume."""
    found = []
    comparison = doc["comparison"]
    resumes, negative = comparison["resumes"], comparison["no_rng_resume"]
    if comparison["full_resume"] != resumes.get(RESUMED):
        found.append("comparison.full_resume vs comparison.resumes.resumed")
    concordant = [c for kind in CONCORDANT_KINDS for c in kinds.get(kind, [])]
    if {c["trajectory"] for c in concordant} != set(resumes):
        found.append("the resume and cadence checks vs comparison.resumes")
    for c in concordant:
        entry = resumes.get(c["trajectory"], {})
        matched = entry.get("verdict") in ("concordant", "within-spread")
        if (matched, entry.get("first_mismatch"), entry.get("diagnosis")) != (
            c["passed"],
            c["first_mismatch"],
            c["diagnosis"],
        ):
            found.append(f"check {c['trajectory']} vs comparison.resumes.{c['trajectory']}")
        if (entry.get("mismatches") == 0) != (entry.get("first_mismatch") is None) or (
            c["passed"] and c["diagnosis"] is not None
        ):
            found.append(f"comparison.resumes.{c['trajectory']}: mismatches, first_mismatch and diagnosis")
    [control] = kinds["negative-control"]
    divergent = negative["verdict"] == "divergent"
    unapplied = negative["verdict"] == "not-applicable"  # verify --observe: it blocked nothing, and claims nothing
    if unapplied != (control.get("not_applicable") is not None):
        found.append("comparison.no_rng_resume.verdict vs the negative control's not_applicable")
    if doc["negative_divergence_detected"] != divergent or control["passed"] != (divergent or unapplied):
        found.append("negative_divergence_detected vs comparison.no_rng_resume.verdict vs the negative control")
    if control["diagnosis"] != negative["diagnosis"]:
        found.append("the negative control's diagnosis vs comparison.no_rng_resume.diagnosis")
    for prefix in kinds["prefix"]:
        if prefix["passed"] == (prefix["diagnosis"] is not None):
            found.append(f"prefix {prefix['trajectory']}: passed vs its diagnosis")
    k, names = doc["interrupt_at"], {c["trajectory"] for c in kinds["prefix"] + kinds["resume"]}
    expected = {INTERRUPTED, RESUMED, *(f"{name}-{point}" for point in k[1:] for name in (INTERRUPTED, RESUMED))}
    if not expected <= names:
        found.append("interrupt_at vs the prefix and resume checks")
    coverage = doc["coverage"]
    if coverage.get("epoch_boundaries") is not None:
        untried = set(coverage["untried_boundaries"])
        outside = set(coverage["epoch_boundaries"]) - set(k)
        if not untried <= outside or (not doc["segments"] and untried != outside):
            found.append("coverage.untried_boundaries vs epoch_boundaries and interrupt_at")
    return found


def _faults(doc: dict[str, Any], kinds: dict[str, list[dict[str, Any]]], faults_all: bool) -> list[str]:
    found = []
    faults, by_part = doc["faults"], {c["part"]: c for c in kinds.get("fault", [])}
    if set(by_part) != set(faults):
        found.append("the fault checks vs faults")
    for part, fault in faults.items():
        check = by_part.get(part, {})
        unapplied = fault.get("not_applicable")  # verify --observe: it blocked nothing, neither caught nor failed
        if (check.get("passed"), check.get("diagnosis")) != (
            fault["detected"] or unapplied is not None,
            fault["diagnosis"],
        ):
            found.append(f"the fault check of {part} vs faults.{part}")
        if check.get("not_applicable") != unapplied or (unapplied is not None) != (
            part in doc.get("not_applicable", {})
        ):
            found.append(f"faults.{part}.not_applicable vs its check and not_applicable")
        if fault["detected"] != bool(fault["caught_by"]) or fault["detected"] != (fault["mismatches"] > 0):
            found.append(f"faults.{part}: detected vs caught_by and mismatches")
    if faults_all and set(faults) != set(doc["parts"] or STANDARD_PARTS):
        found.append("parts vs the faults of --faults all")
    return found


def _determinism(doc: dict[str, Any], kinds: dict[str, list[dict[str, Any]]], done: set[str]) -> list[str]:
    found = []
    det, checks = doc["determinism"], kinds.get("determinism", [])
    if det["repeated"] != (REPEAT in done):
        found.append("determinism.repeated vs the repeat that ran (evidence in hand is used)")
    if det["repeated"] and det["deterministic"] is None:
        found.append("determinism.repeated vs determinism.deterministic null")
    if det["deterministic"] is True and not det["repeated"]:
        found.append("determinism.deterministic true without a repeat")
    if (det["deterministic"] is False) != (det["first_mismatch"] is not None):
        found.append("determinism.deterministic vs determinism.first_mismatch")
    if len(checks) != (1 if det["repeated"] or det["deterministic"] is False else 0):
        found.append("a determinism check vs determinism.repeated and deterministic")
    within = det.get("spread") is not None  # not deterministic, judged by its restore and its measured spread
    if within and det["deterministic"] is not False:
        found.append("determinism.spread vs a deterministic trainer")
    for c in checks:
        if (c["passed"], c["first_mismatch"]) != (det["deterministic"] is not False or within, det["first_mismatch"]):
            found.append("the determinism check vs determinism")
    if det["deterministic"] is False:
        # only the restore, compared bit for bit, names a part of a trainer that differs from itself
        said = [c["diagnosis"] for c in doc["checks"]] + [f["diagnosis"] for f in doc["faults"].values()]
        blamed = [d for d in said if d and d["parts"] and not (within and d["rule"] in RESTORE_RULES)]
        if blamed:
            found.append("not deterministic vs a diagnosis that names a part from the trajectory")
    return found


def _finite(doc: dict[str, Any], kinds: dict[str, list[dict[str, Any]]]) -> list[str]:
    found = []
    checks, nonfinite = kinds.get("finite", []), doc["nonfinite"]
    if [c["trajectory"] for c in checks] != [CONTINUOUS]:
        return ["one finite check, of the continuous run"]
    [check] = checks
    if check["passed"] != (check["first_mismatch"] is None) or check["diagnosis"] is not None:
        found.append("the finite check: passed vs first_mismatch, and no diagnosis")
    if check["first_mismatch"] in nonfinite:
        found.append("nonfinite (matched, accepted) vs the finite check (not a usable output)")
    if nonfinite != sorted(set(nonfinite)) or not all(p.startswith(f"{STATE}.") for p in nonfinite):
        found.append("nonfinite: sorted paths under state")
    return found


def _verdict(doc: dict[str, Any], passed: bool) -> list[str]:
    """The verdict line against the checks: its outcome, and each failed check's sentence against its diagnosis."""
    found, verdict, checks = [], doc["verdict"], doc["checks"]
    failing = ("failed", "not-deterministic")
    outcomes = ("could-not-complete",) if doc["error"] is not None else ("passed",) if passed else failing
    if verdict["outcome"] not in outcomes:
        found.append("verdict.outcome vs error and all_checks_passed")
    if any((c["failure"] is None) != c["passed"] for c in checks):
        found.append("a check's failure vs its passed")
    failed = [c for c in checks if not c["passed"]]
    if verdict["outcome"] == "failed" and not any(c["failure"] in verdict["line"] for c in failed):
        found.append("verdict.line vs the failed checks' sentences")
    det = doc["determinism"]
    blames = det["deterministic"] is not False or det.get("spread") is not None  # else no part is blamed
    for c in failed:
        d, said = c["diagnosis"], c["failure"]
        if d is not None and d["parts"] and blames:
            if f"lost {d['lost']}" not in said:
                found.append(f"the failure of {c['trajectory']} vs the part its diagnosis names")
        elif d is not None and "lost " in said:
            found.append(f"the failure of {c['trajectory']} names a part its diagnosis does not")
    return found
