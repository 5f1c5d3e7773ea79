"""`resumeproof verify` (and `python -B verify_resume.py`): run a training command as fresh processes and prove
that it resumes exactly; exit 0 passed, 1 a comparison failed, 2 could not complete."""

from pathlib import Path

import click
from click.core import ParameterSource

from resumeproof.cli.common import (
    CONTEXT,
    DEFAULT_TRAIN_CMD,
    Command,
    debug_option,
    jobs_option,
    parsed,
    timeout_option,
)
from resumeproof.common import observation, protocol
from resumeproof.common.errors import EXIT_ERROR, EXIT_FAILED, EXIT_PASSED, ResumeproofError, one_line
from resumeproof.verify import settings
from resumeproof.verify.plan.script import PRESETS, with_preset
from resumeproof.verify.report.result import Verification
from resumeproof.verify.run import launch as launchers
from resumeproof.verify.settings import DEFAULT_POINT, Allowances, Settings

# What a protocol verification has and `--observe` does not: judged from the observer's records, with no summary.
NOT_OBSERVED = (
    "segments", "check_cadence", "repeat", "no_observe", "plot", "allow_unsafe_pickle", "allow_opaque",
    "torch_load",
)  # fmt: skip
ONLY_OBSERVED = ("checkpoint", "preset", "stop", "resume_from_run", "epochs")


@click.command(name="verify", cls=Command, context_settings=CONTEXT)
@click.option("--output", type=click.Path(path_type=Path), required=True, help="Directory for this verification.")
@click.option("--steps", type=click.IntRange(min=2), default=10, show_default=True, help="N: continuous updates.")
@click.option(
    "--interrupt-at",
    default=str(DEFAULT_POINT),
    show_default=True,
    help="k, k1,k2,..., 'all', 'epochs' (every epoch boundary and mid-epoch point, read off the continuous run), or "
    "with --observe 'checkpoints' (every update after which the continuous run wrote a file --checkpoint matches).",
)
@click.option("--atol", type=float, default=1e-12, show_default=True, help="Absolute tolerance; no relative one.")
@click.option(
    "--train-cmd",
    default=DEFAULT_TRAIN_CMD,
    help="Training command (docs/protocol.md).  [default: the bundled reference trainer]",
)
@click.option(
    "--resume-cmd",
    metavar="CMD",
    help="Command of every resuming process (e.g. torchrun at another world size).  [default: --train-cmd]",
)
@jobs_option
@timeout_option("a trajectory")
@click.option(
    "--faults",
    metavar="all|PART[,PART...]",
    help="Also resume once per omitted part, each must be caught: all (the parts the trainer declares in meta.parts, "
    f"else {', '.join(protocol.STANDARD_PARTS)}), a list of parts, or flat.",
)
@click.option("--segments", multiple=True, metavar="N1,N2,...", help="Also run a chain of processes (repeatable).")
@click.option(
    "--check-cadence",
    is_flag=True,
    help=f"Also run continuous with {protocol.CHECKPOINT_EVERY_FLAG} 1: writing a checkpoint every step must change "
    "nothing.",
)
@click.option(
    "--repeat",
    is_flag=True,
    help="Always repeat the continuous run (it is repeated anyway when a comparison fails); a difference is exit 1.",
)
@click.option(
    "--require-deterministic",
    is_flag=True,
    help="A trainer that differs from itself fails (exit 1), whatever its restore; by default it is judged by its "
    "restore, bit for bit, and its trajectory within its own measured run-to-run spread.",
)
@click.option(
    "--no-observe",
    is_flag=True,
    help="Do not watch the trainer's processes (no first-update evidence): judge from the summaries alone.",
)
@click.option(
    "--observe",
    "script",
    is_flag=True,
    help="Verify an unmodified script from the observer's records: no protocol flag, placeholders {run}, {steps} "
    "(or {epochs}) and {checkpoint} in the commands (docs/observe.md).",
)
@click.option(
    "--checkpoint",
    metavar="PATTERN",
    help="With --observe: the interrupted run's checkpoint, e.g. '{run}/ckpt_{step}.pt' (a directory is fine), or "
    "'{run}/checkpoint-{epoch}.pth.tar' with --epochs.",
)
@click.option(
    "--preset",
    type=click.Choice(sorted(PRESETS)),
    help="With --observe: the flags a framework's script takes (transformers: a Trainer script's "
    "--max_steps, --save_steps, --output_dir, --resume_from_checkpoint, checkpoint-N; lightning: a LightningCLI "
    "script's fit --trainer.max_steps, a ModelCheckpoint every step, --ckpt_path, step=N.ckpt).",
)
@click.option(
    "--stop",
    type=click.Choice(observation.STOPS),
    default=observation.EXIT,
    show_default=True,
    help="With --observe: end the interrupted run just before update k+1's step (exit), or SIGTERM it after "
    "update k and let its handler save (sigterm).",
)
@click.option(
    "--resume-from-run",
    is_flag=True,
    help="With --observe: each resuming process gets {run} = its own fresh copy of the interrupted run's folder, "
    "checkpoint and all, for a script that resumes from its output folder ({checkpoint} then optional).",
)
@click.option(
    "--epochs",
    type=click.IntRange(min=1),
    help="With --observe: the run length in epochs, filled in for {epochs} instead of --steps; N and the updates "
    "per epoch are read off the continuous run, and {epoch} in --checkpoint is the 0-based index of the last epoch "
    "the interrupted run completed.",
)
@click.option(
    "--reuse-runs",
    type=click.Path(path_type=Path),
    metavar="PREVIOUS",
    help="Copy from the verification in PREVIOUS each run it made with the same command, settings and environment "
    "from source files unchanged since (size and mtime), instead of running it again (docs/observe.md).",
)
@click.option("--plot", is_flag=True, help="Write DIR/verification.png (needs the 'plot' extra: matplotlib).")
@click.option(
    "--allow-unsafe-pickle",
    multiple=True,
    metavar="GLOB",
    help="Accept checkpoint files matching GLOB that are pickles able to run code (recorded; repeatable).",
)
@click.option(
    "--allow-opaque",
    multiple=True,
    metavar="GLOB",
    help="Accept checkpoint files matching GLOB whose kind cannot be told (recorded; repeatable).",
)
@click.option("--torch-load", is_flag=True, help="Also load each checkpoint with torch.load (imports torch).")
@click.option(
    "--launcher",
    type=click.Choice(launchers.LAUNCHERS),
    default=launchers.LOCAL,
    show_default=True,
    help="Where the trajectories run: processes here, one Slurm job each through submitit, or one Ray job each (the "
    "'cluster' extra; --output must be on a file system every node sees: docs/cluster.md).",
)
@click.option(
    "--slurm-partition", metavar="NAME", help="With --launcher slurm: the partition.  [default: the cluster's]"
)
@click.option("--slurm-nodes", type=int, default=1, show_default=True, help="With --launcher slurm: nodes (torchrun).")
@click.option("--slurm-gpus-per-node", type=int, default=0, show_default=True, help="With --launcher slurm: GPUs.")
@click.option(
    "--slurm-time",
    type=int,
    metavar="MINUTES",
    help="With --launcher slurm: each job's time limit.  [default: the partition's]",
)
@click.option(
    "--preempt",
    type=click.Choice(launchers.PREEMPTS),
    help="With --launcher slurm: one more trajectory, a requeueable job Slurm preempts after the --interrupt-at point "
    "and restarts: by the job's --signal (it must save and requeue itself) or by `scontrol requeue` (docs/cluster.md).",
)
@click.option(
    "--slurm-signal",
    default="USR1",
    show_default=True,
    metavar="[B:]SIG[@SECONDS]",
    help="With --preempt signal: the job's --signal, as sbatch reads it (B: to the batch shell, which passes it on).",
)
@click.option(
    "--ray-address",
    metavar="URL",
    help="With --launcher ray: the cluster's dashboard, e.g. http://head:8265.  [default: $RAY_ADDRESS]",
)
@click.option("--ray-cpus-per-job", type=float, default=1, show_default=True, help="With --launcher ray: CPUs.")
@click.option("--ray-gpus-per-job", type=float, default=0, show_default=True, help="With --launcher ray: GPUs.")
@click.option(
    "--junit-xml",
    type=click.Path(path_type=Path),
    metavar="FILE",
    help="Also write JUnit XML: a testcase per trajectory and per check (for CI test views).",
)
@click.option(
    "--summary-md",
    type=click.Path(path_type=Path),
    metavar="FILE",
    help="Also write a short Markdown verdict (e.g. $GITHUB_STEP_SUMMARY).",
)
@debug_option
def run_verify(
    output,
    steps,
    interrupt_at,
    atol,
    train_cmd,
    resume_cmd,
    jobs,
    timeout,
    faults,
    segments,
    check_cadence,
    repeat,
    require_deterministic,
    no_observe,
    script,
    checkpoint,
    preset,
    stop,
    resume_from_run,
    epochs,
    reuse_runs,
    plot,
    allow_unsafe_pickle,
    allow_opaque,
    torch_load,
    launcher,
    slurm_partition,
    slurm_nodes,
    slurm_gpus_per_node,
    slurm_time,
    preempt,
    slurm_signal,
    ray_address,
    ray_cpus_per_job,
    ray_gpus_per_job,
    junit_xml,
    summary_md,
    debug,
) -> int:
    """Verify that TRAIN_CMD resumes as if it had never stopped."""
    wrong = [f"--{n.replace('_', '-')}" for n in (NOT_OBSERVED if script else ONLY_OBSERVED) if _given(n)]
    if wrong:
        where = "does not apply with --observe" if script else "applies only with --observe"
        raise click.UsageError(f"{wrong[0]} {where} (docs/observe.md)")
    if script:
        train_cmd, resume_cmd, checkpoint = with_preset(preset, train_cmd, resume_cmd, checkpoint)
        atol = atol if _given("atol") else 0.0  # a script is judged bit for bit unless asked
    if epochs and _given("steps"):
        raise click.UsageError(
            "--steps does not apply with --epochs: N is read off the continuous run (docs/observe.md)"
        )
    steps = 0 if epochs else steps  # with --epochs, N is known once the continuous run ends
    asked = parsed(
        lambda: Settings(
            output=output,
            steps=steps,
            interrupt_at=settings.parse_interrupt_at(interrupt_at, steps),
            atol=atol,
            train_cmd=train_cmd,
            jobs=jobs,
            timeout=timeout,
            faults=settings.parse_faults(faults, script=script),
            resume_cmd=resume_cmd,
            require_deterministic=require_deterministic,
            reuse_runs=reuse_runs,
            subject=(
                settings.parse_script(checkpoint, stop, resume_from_run, epochs or 0)
                if script
                else settings.Trainer(
                    segments=settings.parse_segments(segments, steps),
                    cadence=1 if check_cadence else 0,
                    repeat=repeat,
                    observe=not no_observe,
                    plot=plot,
                    allow=Allowances(unsafe_pickle=tuple(allow_unsafe_pickle), opaque=tuple(allow_opaque)),
                    torch_load=torch_load,
                )
            ),
            launch=launchers.Launch(
                launcher=launcher,
                partition=slurm_partition,
                nodes=slurm_nodes,
                gpus_per_node=slurm_gpus_per_node,
                minutes=slurm_time,
                ray_address=ray_address,
                cpus_per_job=ray_cpus_per_job,
                gpus_per_job=ray_gpus_per_job,
                preempt=preempt,
                slurm_signal=settings.parse_slurm_signal(slurm_signal),
            ),
        )
    )
    missing = launchers.missing(launcher)
    if missing:
        raise click.UsageError(missing)
    if plot:
        from resumeproof.verify.report.plot import INSTALL, available

        if not available():
            raise click.UsageError(f"--plot needs matplotlib, the 'plot' extra: {INSTALL}")
    return _verified(asked, junit_xml, summary_md)


def _given(name: str) -> bool:
    """Whether an option was typed on the command line (not its default)."""
    return click.get_current_context().get_parameter_source(name) is ParameterSource.COMMANDLINE


def _verified(s: Settings, junit_xml: Path | None, summary_md: Path | None) -> int:
    """Run one verification, write the CI reports (also when nothing could run), print it; its exit code."""
    from resumeproof.verify.report import terminal
    from resumeproof.verify.verification import verify

    out = terminal.console()
    try:
        result = verify(s, out)
    except ResumeproofError as err:  # nothing was run: the CI reports still say why
        _ci_reports(junit_xml, summary_md, Verification(error=one_line(err), train_cmd=s.train_cmd), s.output)
        raise
    _ci_reports(junit_xml, summary_md, result, s.output)
    terminal.print_report(out, result)
    return EXIT_ERROR if result.error else EXIT_PASSED if result.all_checks_passed else EXIT_FAILED


def _ci_reports(junit_xml: Path | None, summary_md: Path | None, result: "Verification", output: Path) -> None:
    if junit_xml is not None:
        from resumeproof.verify.report import junit

        junit.write(junit_xml, result, output / "verification.json")
    if summary_md is not None:
        from resumeproof.verify.report import markdown

        markdown.write(summary_md, result, output / "verification.json")
