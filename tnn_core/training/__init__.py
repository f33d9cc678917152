"""Training, evaluation and checkpoints.

    tasks/       charlm, listops, digits, recall: offline, seeded
    loop         the training loop (AdamW, schedules, clipping, NaN guard, DDP)
    cli          ``python -m tnn_core.training``: train one model and save it
    evaluate     metrics, length sweeps, layer kernels; ``python -m tnn_core.training.evaluate``
    checkpoint   safetensors save and load with validation; never unpickles
    background   training and benchmark jobs in a thread, for the app
"""
