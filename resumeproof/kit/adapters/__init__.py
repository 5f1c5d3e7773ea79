"""One small module per framework that turns a script using the framework's own resume path into a protocol trainer.

    from resumeproof.kit.adapters import accelerate     # Accelerator.save_state / load_state
    from resumeproof.kit.adapters import lightning      # Trainer.fit(ckpt_path=) with ModelCheckpoint
    from resumeproof.kit.adapters import transformers   # Trainer.train(resume_from_checkpoint=)

Each imports its framework, so it is imported only by scripts that use that framework; nothing
else in the package imports them. The script keeps the framework's documented resume path; the
adapter verifies the checkpoint folder before the framework reads it, records one history
record per update, honours `--omit` and `--omit-rng-restore`, says so where the framework fails
silently, and turns the framework's folder into `OUTPUT/checkpoint.pt/` (docs/kit.md, docs/audit.md).
"""
