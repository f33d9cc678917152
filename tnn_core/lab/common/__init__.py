"""What two or more of the lab's page units share, one concept per module.

It imports the core (``tnn_core`` outside ``lab``) and itself, never a unit; each unit
exposes to its page what it uses from here (tests/test_layout.py holds the rule).

    kernel_sources       presets, typed coefficients, one learned channel's kernel
    kernel_view          a kernel and its Toeplitz matrix as a heatmap and a line draw them
    heatmap_image        matrices drawn as images
    cells_image          a matrix as an image whose cells need not be square
    linked_cell          one cell (i, j) of T and everything that belongs to it
    browser_data         numbers as the browser's figures get them
    decomposition_figures  the band + W A Wᵀ figure's data, its settings and view names
    rank_curve           SKI's error against r at one band
    recurrent_fit        a causal kernel as s damped exponentials (an SSM), for every s
    decay_curve          a kernel's decay on log axes, and where round-off starts
    live                 the quick SKI timings (live_speed, ski_pareto)
    quiet_timing         timings taken off the request path, while the server is quiet
    background           long work on a thread, and the threads it gets (JOB_THREADS)
    work_slots           places for heavy work, per server and per session
    checkpoints          the checkpoints the app knows, by key, and opening one
    uploads              uploaded checkpoints within byte budgets
    saving               saving a model under a new name in the user folder
    checkpoint_summary   what a checkpoint says about itself
    snapshot_view        kernels forming during training, for the replay
    evaluation           a model's score on its evaluation set
    atlas                the kernel atlas of a trained model
    band_ablation        the model with its layers kept to the band
    decay_pair           TNN's Table 10 pair, and the sentence beyond the training length
    conversion           which models convert to band + low rank, and a quick conversion
    server               the app server's process set-up (keep_freed_memory)
"""
