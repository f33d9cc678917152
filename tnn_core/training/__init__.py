"""Training, evaluation and checkpoints.

    tasks/       charlm, listops, digits, recall: offline, seeded
    config       TrainConfig: optimisation and runtime, holding the ModelConfig it trains
    loop         the training loop (AdamW, schedules, clipping, NaN guard, DDP)
    cli          ``python -m tnn_core.training``: train one model and save it
    evaluate     metrics, length sweeps, layer kernels; ``python -m tnn_core.training.evaluate``
    checkpoint   safetensors save and load with validation; never unpickles
    background   training runs and benchmark jobs on a thread, for the app
"""
