"""Training, evaluation and checkpoints.

    tasks/       charlm, listops, digits, recall: offline, seeded
    config       TrainConfig: optimisation and runtime, holding the ModelConfig it trains
    budget       what running a model costs (memory, time); refuses what would not fit
    objective    the task loss, the objective, AdamW, the learning-rate schedule
    update       one process's optimizer update (NaN guard) and its resumable state
    distributed  torchrun: ranks, device, process group, collective timeouts
    loop         the training loop: train(config, task, callbacks) -> TrainResult
    snapshots    a few channels' kernels kept every few steps of a run
    history      the one schema of a run's history, as checkpoints store it
    resume       the resume file beside a checkpoint: optimizer state, batch generators
    arguments    the command line's options and the configs they give
    cli          ``python -m tnn_core.training``: train one model and save it
    evaluate     metrics, length sweeps, layer kernels; ``python -m tnn_core.training.evaluate``
    scores       results per sequence and their 95 % intervals
    verdicts     what two measurements allow to conclude
    answer       how a one-JSON-line command ends
    checkpoint   safetensors save and load with validation; never unpickles
    checkpoint_header  a checkpoint's bytes and header, checked before anything is built
"""
