"""The configuration tests/trainers/out_dir_loop.py runs with in the tests: assignments over its defaults, overridden
by --key=value."""

batch_size = 4
n_embd = 8
warmup_iters = 2
lr_decay_iters = 6
